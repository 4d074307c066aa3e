"""PNG figures from a bench's JSON document (matplotlib, Agg: no display needed).

One throughput figure per target (a bar per client and workload, log scale since
persistent sends are 100 times slower than the rest, the whiskers the lowest and highest
run), one latency figure (p50 and p99 per target and client) and one figure of the
jmslike / raw ratios against the 0.9 goal.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from jmslike_bench.report import GOALS
from jmslike_bench.suite import CLIENTS
from jmslike_bench.workloads import Kind

__all__ = ["write_plots"]

log = logging.getLogger("jmslike.bench.plots")

_RATIO_CLIP = 2.0
"""The ratio figure's axis ends here; a larger ratio is written beside its bar."""

_COLOURS = {"jmslike": "#1f77b4", "defaults": "#aec7e8", "raw": "#ff7f0e", "java": "#7f7f7f"}


def _line(document: dict[str, Any], target: str, workload: str, client: str) -> Any:
    for line in document["lines"]:
        if (line["target"], line["workload"], line["client"]) == (target, workload, client):
            return line
    return None


def _bars(
    axes: Any,
    groups: list[str],
    values: dict[str, list[dict[str, Any] | None]],
) -> None:
    """Grouped bars with min/max whiskers; ``values[client][i]`` is the summary for
    ``groups[i]`` (None: no bar)."""
    clients = [c for c in CLIENTS if any(values.get(c, []))]
    width = 0.8 / max(1, len(clients))
    for index, client in enumerate(clients):
        xs, heights, below, above = [], [], [], []
        for position, summary in enumerate(values[client]):
            if not summary:
                continue
            xs.append(position + (index - (len(clients) - 1) / 2) * width)
            heights.append(summary["median"])
            below.append(summary["median"] - summary["low"])
            above.append(summary["high"] - summary["median"])
        axes.bar(
            xs,
            heights,
            width,
            yerr=[below, above],
            capsize=2,
            label=client,
            color=_COLOURS[client],
        )
    axes.set_xticks(range(len(groups)))
    axes.set_xticklabels(groups, rotation=30, ha="right")
    axes.legend(fontsize="small")


def _slug(name: str) -> str:
    return name.replace("/", "-")


def write_plots(document: dict[str, Any], folder: Path) -> list[Path]:
    """Write the PNGs into ``folder``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    runs = document["runs"]
    targets = [t["name"] for t in document["targets"] if not t["skipped"]]
    throughput = [w for w in document["workloads"] if w["kind"] != Kind.LATENCY.value]
    for target in targets:
        values = {
            c: [
                (line or {}).get("msgs_per_s")
                for line in (_line(document, target, w["name"], c) for w in throughput)
            ]
            for c in CLIENTS
        }
        if not any(any(v) for v in values.values()):
            continue
        figure, axes = plt.subplots(figsize=(9, 4.5))
        _bars(axes, [w["name"] for w in throughput], values)
        axes.set_yscale("log")
        axes.set_ylabel("msg/s (log scale)")
        axes.set_title(f"{target}: median of {runs} run(s), whiskers min-max")
        axes.grid(axis="y", which="both", alpha=0.3)
        figure.tight_layout()
        path = folder / f"throughput-{_slug(target)}.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(path)

    latency = [w["name"] for w in document["workloads"] if w["kind"] == Kind.LATENCY.value]
    if latency:
        labels = [f"{t} {p}" for t in targets for p in ("p50", "p99")]
        values = {
            c: [
                (_line(document, t, latency[0], c) or {}).get(f"{p}_ms")
                for t in targets
                for p in ("p50", "p99")
            ]
            for c in CLIENTS
        }
        if any(any(v) for v in values.values()):
            rate = document["sizes"]["rate"]
            figure, axes = plt.subplots(figsize=(10, 4.5))
            _bars(axes, labels, values)
            axes.set_yscale("log")
            axes.set_ylabel("ms (log scale)")
            axes.set_title(f"latency at {rate:g} msg/s offered: median of {runs} run(s)")
            axes.grid(axis="y", which="both", alpha=0.3)
            figure.tight_layout()
            path = folder / "latency.png"
            figure.savefig(path, dpi=100)
            plt.close(figure)
            written.append(path)

    ratios = [c for c in document["checks"] if c["check"] == "jmslike / raw"]
    if ratios:
        figure, axes = plt.subplots(figsize=(8, max(3.0, 0.22 * len(ratios) + 1)))
        labels = [f"{c['target']} {c['workload']}" for c in ratios]
        measured: list[float] = [c["value"] or 0.0 for c in ratios]
        heights = [min(value, _RATIO_CLIP) for value in measured]
        colours = ["#2ca02c" if c["met"] else "#d62728" for c in ratios]
        axes.barh(range(len(ratios)), heights, color=colours)
        axes.set_xlim(0, _RATIO_CLIP + 0.3)
        for position, value in enumerate(measured):
            if value > _RATIO_CLIP:  # one outlier must not squash every other bar
                axes.text(_RATIO_CLIP, position, f" {value:.1f}", va="center", fontsize="small")
        axes.set_yticks(range(len(ratios)))
        axes.set_yticklabels(labels, fontsize="small")
        axes.invert_yaxis()
        axes.axvline(GOALS["raw"], color="black", linestyle="--", label="goal 0.9")
        axes.set_xlabel(
            "jmslike / raw library (median over median; latency: raw p50 / jmslike p50)"
        )
        axes.legend(fontsize="small")
        figure.tight_layout()
        path = folder / "ratios.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(path)
    log.info("wrote %d plots into %s", len(written), folder)
    return written
