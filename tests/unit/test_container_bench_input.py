"""``benchmarks/container.py`` refuses bad input by name, before it connects anywhere
(tests/integration/test_container_bench.py runs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "benchmarks" / "container.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(BENCH), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def test_bad_input_is_named() -> None:
    unknown = _run("--targets", "embedded,nowhere/stomp")
    assert unknown.returncode != 0 and "'nowhere/stomp'" in unknown.stderr
    zero = _run("--targets", "embedded", "--concurrency", "0")
    assert zero.returncode == 2 and "--concurrency '0'" in zero.stderr
    negative = _run("--targets", "embedded", "--work-ms", "-1")
    assert negative.returncode == 2 and "--work-ms -1" in negative.stderr
    interval = _run("--targets", "embedded", "--switch-interval", "0")
    assert interval.returncode == 2 and "--switch-interval 0.0" in interval.stderr
