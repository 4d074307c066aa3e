"""``benchmarks/container.py`` on the embedded broker: it handles every message at each
concurrency and prints a line for each, and refuses bad input by name. (Whether the
container runs fast is the benchmark's business, not a test's.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "benchmarks" / "container.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(BENCH), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def test_runs_every_concurrency_on_the_embedded_broker() -> None:
    finished = _run(
        "--targets",
        "embedded",
        "--count",
        "300",
        "--groups",
        "10",
        "--runs",
        "1",
        "--concurrency",
        "1,4",
        "--work-ms",
        "0",
        "--prefetch",
        "100",
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    lines = [line.split() for line in finished.stdout.splitlines() if line.startswith("embedded")]
    assert [line[1] for line in lines] == ["1", "4"]
    assert lines[0][3] == "1.00"
    assert "prefetch 100" in finished.stdout


def test_bad_input_is_named() -> None:
    unknown = _run("--targets", "embedded,nowhere/stomp")
    assert unknown.returncode != 0 and "'nowhere/stomp'" in unknown.stderr
    zero = _run("--targets", "embedded", "--concurrency", "0")
    assert zero.returncode == 2 and "--concurrency '0'" in zero.stderr
    negative = _run("--targets", "embedded", "--work-ms", "-1")
    assert negative.returncode == 2 and "--work-ms -1" in negative.stderr
