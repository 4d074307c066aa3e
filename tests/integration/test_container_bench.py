"""``benchmarks/container.py`` at a tiny scale on the embedded broker and on every broker
and protocol: a line for each concurrency, with its rate, the client's CPU and switches
a message, and the broker's CPU. Checks that the benchmark runs, never how fast (its figures are for
docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from brokercases import BENCH_TARGETS, bench_target_url

BENCH = Path(__file__).parents[2] / "benchmarks" / "container.py"


@pytest.mark.parametrize("target", BENCH_TARGETS)
def test_container_bench_reports_every_concurrency(target: str) -> None:
    bench_target_url(target)
    options = {
        "--targets": target,
        "--count": "200",
        "--groups": "10",
        "--runs": "1",
        "--concurrency": "1,4",
        "--work-ms": "0",
        "--prefetch": "100",
    }
    command = [sys.executable, str(BENCH), *(part for item in options.items() for part in item)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "keeps no ordering groups" not in finished.stderr  # silenced: one process only
    assert "prefetch 100" in finished.stdout
    rows = [line.split() for line in finished.stdout.splitlines() if line.startswith(target)]
    assert [row[1] for row in rows] == ["1", "4"], finished.stdout
    assert rows[0][3] == "1.00", finished.stdout
    for _target, _conc, rate, _ratio, client_us, switches, broker_us, work, between in rows:
        assert float(rate.replace(",", "")) > 0 and float(client_us) > 0, finished.stdout
        assert float(switches) >= 0, finished.stdout
        assert broker_us == "-" or float(broker_us) >= 0, finished.stdout
        assert float(work) >= 0 and float(between) >= 0, finished.stdout
