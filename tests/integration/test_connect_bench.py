"""``benchmarks/connect.py`` at a tiny scale on the embedded broker and on every broker
and protocol: a line per target with the median and worst milliseconds of a
connection's set-up. Checks that the benchmark runs, never how fast (its figures are for
docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from brokercases import BENCH_TARGETS, bench_target_url

BENCH = Path(__file__).parents[2] / "benchmarks" / "connect.py"


@pytest.mark.parametrize("target", BENCH_TARGETS)
def test_connect_bench_reports_each_target(target: str) -> None:
    bench_target_url(target)
    command = [sys.executable, str(BENCH), "--targets", target, "--runs", "3"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [line.split() for line in finished.stdout.splitlines() if line.startswith(target)]
    assert len(rows) == 1, finished.stdout
    _target, median, worst = rows[0]
    assert 0 <= float(median) <= float(worst), finished.stdout  # embedded: 0.0x ms
