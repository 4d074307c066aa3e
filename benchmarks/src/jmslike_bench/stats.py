"""Medians and spreads of repeated runs: what every figure of the report is made of.

A figure is the median of its runs, with the lowest and highest run as the spread: with
3 to 7 runs an inter-quartile range says little more than min/max and hides the outlier
one wants to see on a shared machine.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "percentile", "ratio", "summarize"]


@dataclass(frozen=True)
class Summary:
    """The median of ``samples`` and their range."""

    median: float
    low: float
    high: float
    samples: tuple[float, ...]

    @property
    def spread(self) -> float:
        """(high - low) / median: 0.2 means the runs lie within 20% of the figure."""
        return (self.high - self.low) / self.median if self.median else math.inf


def summarize(samples: Sequence[float]) -> Summary | None:
    """None for no samples (every run failed), so that a gap is never read as zero."""
    if not samples:
        return None
    return Summary(statistics.median(samples), min(samples), max(samples), tuple(samples))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of unsorted ``values``: the value below
    which ``q`` of them lie, always one that was measured (as Bench.java computes it)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def ratio(numerator: Summary | None, denominator: Summary | None) -> float | None:
    """Ratio of two medians; None where either is missing or the denominator is zero."""
    if numerator is None or denominator is None or not denominator.median:
        return None
    return numerator.median / denominator.median
