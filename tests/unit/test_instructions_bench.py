"""``benchmarks/instructions.py``'s child run, the part valgrind counts: it sends and
receives every message through the public API, grouped or not, and says so when one is
missing. (Whether it runs fast is the benchmark's business, not a test's.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "benchmarks" / "instructions.py"


@pytest.mark.parametrize("groups", ["0", "10"])
@pytest.mark.parametrize("receive", ["0", "1"])
def test_child_run_sends_and_receives_every_message(groups: str, receive: str) -> None:
    command = [sys.executable, str(BENCH), "--child", "200", groups, receive]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]


def test_large_must_exceed_small() -> None:
    command = [sys.executable, str(BENCH), "--small", "500", "--large", "500"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 2
    assert "--large 500 must be more than --small 500" in finished.stderr
