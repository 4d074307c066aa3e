"""``jmslike bench``: the command line of the suite (also ``python -m jmslike bench``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from jmslike.bench.report import format_table, to_json
from jmslike.bench.suite import CLIENTS, run_suite
from jmslike.bench.targets import BROKERS, PROTOCOLS, discover
from jmslike.bench.workloads import QUICK, WORKLOADS, Sizes, select

__all__ = ["add_arguments", "run"]


def _names(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = set(names) - set(allowed)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {sorted(unknown)}; choose from {', '.join(allowed)}"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = Sizes()
    parser.add_argument(
        "--brokers",
        default=",".join(BROKERS),
        help=f"comma-separated, of {', '.join(BROKERS)} (default: all)",
    )
    parser.add_argument(
        "--protocols",
        default=",".join(PROTOCOLS),
        help=f"comma-separated, of {', '.join(PROTOCOLS)} (default: all)",
    )
    parser.add_argument(
        "--clients", default=",".join(CLIENTS), help="comma-separated, of jmslike,raw,java"
    )
    parser.add_argument(
        "--workloads", default=None, help=f"comma-separated, of {', '.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--count", type=int, default=None, help=f"non-persistent messages ({defaults.count})"
    )
    parser.add_argument(
        "--persistent-count",
        type=int,
        default=None,
        help=f"persistent messages ({defaults.persistent_count})",
    )
    parser.add_argument("--latency-count", type=int, default=None)
    parser.add_argument("--rate", type=float, default=None, help="latency: offered msg/s")
    parser.add_argument("--container-count", type=int, default=None)
    parser.add_argument("--prefetch", type=int, default=None)
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median)")
    parser.add_argument(
        "--warmup", type=int, default=None, help="messages per warm-up load (default 2000)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--plots", type=Path, default=None, help="write PNG plots here")
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="measure nothing: print the table and draw the plots of a saved --json file",
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny counts, one run, no warm-up: a smoke test"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Measure (or load), then print the table, write the JSON and the plots."""
    if args.from_json is not None:
        document = json.loads(args.from_json.read_text(encoding="utf-8"))
    else:
        try:
            brokers = _names(args.brokers, BROKERS, "brokers")
            protocols = _names(args.protocols, PROTOCOLS, "protocols")
            clients = _names(args.clients, CLIENTS, "clients")
            workloads = select(args.workloads)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            print(f"jmslike bench: {exc}", file=sys.stderr)
            return 2
        sizes = QUICK if args.quick else Sizes()
        overrides = {
            "count": args.count,
            "persistent_count": args.persistent_count,
            "latency_count": args.latency_count,
            "rate": args.rate,
            "container_count": args.container_count,
            "prefetch": args.prefetch,
        }
        sizes = dataclasses.replace(sizes, **{k: v for k, v in overrides.items() if v})
        runs = 1 if args.quick and args.runs == 3 else args.runs
        warmup = args.warmup if args.warmup is not None else (0 if args.quick else 2000)
        results = run_suite(
            discover(brokers, protocols),
            workloads,
            sizes,
            runs,
            clients,
            warmup=warmup,
            progress=not args.no_progress and sys.stderr.isatty(),
        )
        document = to_json(results)
    print(format_table(document))
    if args.json is not None and args.from_json is None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if args.plots is not None:
        from jmslike.bench.plots import write_plots

        for path in write_plots(document, args.plots):
            print(f"wrote {path}")
    return 0
