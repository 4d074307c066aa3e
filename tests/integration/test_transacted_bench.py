"""``benchmarks/transacted.py`` at a tiny scale on the embedded broker and on every
broker and protocol: a line per commit size, with the raw library's figure and the
ratio beside jmslike's on a broker. Checks that the benchmark runs and both sides
commit, never how fast (its figures are for docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from brokercases import BENCH_TARGETS, bench_target_url

BENCH = Path(__file__).parents[2] / "benchmarks" / "transacted.py"


@pytest.mark.parametrize("target", BENCH_TARGETS)
def test_transacted_bench_reports_each_commit_size(target: str) -> None:
    bench_target_url(target)
    command = [sys.executable, str(BENCH), "--targets", target, "--every", "1,5"]
    command += ["--count", "10", "--runs", "1"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [line.split() for line in finished.stdout.splitlines() if line.startswith(target)]
    assert [row[1:3] for row in rows] == [["1", "10"], ["5", "10"]], finished.stdout
    for _target, _every, _count, ours, raw, ratio in rows:
        assert float(ours.replace(",", "")) > 0, finished.stdout
        if target == "embedded":
            assert (raw, ratio) == ("-", "-"), finished.stdout
        else:
            assert float(raw.replace(",", "")) > 0 and float(ratio) > 0, finished.stdout
