"""``jmslike bench``: the command line of the suite (also ``python -m jmslike bench``)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from jmslike_bench.env import quiet_partition_advice
from jmslike_bench.report import checks, format_markdown, format_table, to_json
from jmslike_bench.suite import CLIENTS, run_suite
from jmslike_bench.targets import BROKERS, PROTOCOLS, Target, discover
from jmslike_bench.workloads import QUICK, WORKLOADS, Sizes, select

__all__ = ["WARMUP", "add_arguments", "run"]

WARMUP = 5_000
"""Messages per warm-up run: enough for the JVM's JIT to compile a client's send and
receive paths before anything is timed."""

log = logging.getLogger("jmslike.bench.command")


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
        "--clients",
        default=",".join(CLIENTS),
        help="comma-separated, of jmslike (tuned: the others' prefetch), defaults (jmslike "
        "with no setting changed), raw, java",
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
        "--warmup",
        type=int,
        default=None,
        help=f"messages per untimed warm-up run of each client, in the process or JVM of its "
        f"timed runs (default {WARMUP:,}; 0: none)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--plots", type=Path, default=None, help="write PNG plots here")
    parser.add_argument(
        "--markdown", type=Path, default=None, help="write the tables as Markdown here"
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        default=None,
        metavar="FILE",
        help="measure nothing: print the table and draw the plots of saved --json files "
        "(several: their targets merged, e.g. a target measured again on its own)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny counts, one run, no warm-up: a smoke test"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="measure each broker and protocol in a process of its own (a crash in a "
        "native library then costs one target, not the run)",
    )


_PASSED = (
    "clients",
    "workloads",
    "count",
    "persistent_count",
    "latency_count",
    "rate",
    "container_count",
    "prefetch",
    "runs",
    "warmup",
)


def _isolated(args: argparse.Namespace, targets: list[Target]) -> dict[str, Any]:
    """Each target measured by a child ``jmslike bench``, the documents merged; a child
    that dies is reported as a skipped target with its exit code."""
    documents: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="jmslike-bench-") as folder:
        for index, target in enumerate(targets):
            if target.skipped:
                extra.append({"name": target.name, "skipped": target.skipped})
                continue
            out = Path(folder) / f"{index}.json"
            command = [sys.executable, "-m", "jmslike", "bench", "--brokers", target.broker]
            command += ["--protocols", target.protocol, "--json", str(out)]
            for name in _PASSED:
                value = getattr(args, name)
                if value is not None:
                    command += [f"--{name.replace('_', '-')}", str(value)]
            if args.quick:
                command.append("--quick")
            if args.no_progress:
                command.append("--no-progress")
            log.info("running %s", " ".join(command))
            done = subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
            if done.returncode != 0 or not out.exists():
                extra.append(
                    {"name": target.name, "skipped": f"bench process died ({done.returncode})"}
                )
                continue
            documents.append(json.loads(out.read_text(encoding="utf-8")))
    if not documents:
        raise SystemExit("jmslike bench: no target could be measured")
    merged = merge(documents)
    for skipped in extra:
        merged["targets"].append({**skipped, "clients": {}, "skipped_clients": {}})
    order = [t.name for t in targets]
    merged["targets"].sort(key=lambda t: order.index(t["name"]))
    merged["checks"] = checks(merged)
    return merged


def merge(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One document from several (the first one's sizes and runs): a target measured in
    a later document replaces the same target of an earlier one, so that a target run
    again on its own can stand in for a failed one."""
    merged = dict(documents[0])
    for document in documents[1:]:
        names = {t["name"] for t in document["targets"] if not t["skipped"]}
        merged["targets"] = [t for t in merged["targets"] if t["name"] not in names] + [
            t for t in document["targets"] if t["name"] in names
        ]
        merged["lines"] = [line for line in merged["lines"] if line["target"] not in names] + [
            line for line in document["lines"] if line["target"] in names
        ]
    merged["checks"] = checks(merged)
    return merged


def run(args: argparse.Namespace) -> int:
    """Measure (or load), then print the table, write the JSON and the plots."""
    quiet_partition_advice()
    # Proton and the JVM clients' peers are native code: a crash should say where it was.
    if not faulthandler.is_enabled() and sys.__stderr__ is not None:
        with contextlib.suppress(OSError, ValueError):
            faulthandler.enable(file=sys.__stderr__)
    if args.from_json is not None:
        document = merge([json.loads(p.read_text(encoding="utf-8")) for p in args.from_json])
        if args.json is not None:
            args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
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
        warmup = args.warmup if args.warmup is not None else (0 if args.quick else WARMUP)
        targets = discover(brokers, protocols)
        if args.isolate and len(targets) > 1:
            document = _isolated(args, targets)
        else:
            results = run_suite(
                targets,
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
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(format_markdown(document), encoding="utf-8")
    if args.plots is not None:
        from jmslike_bench.plots import write_plots

        for path in write_plots(document, args.plots):
            print(f"wrote {path}")
    return 0
