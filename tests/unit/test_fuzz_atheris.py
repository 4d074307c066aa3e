"""Runs the atheris selector target (tests/fuzz/atheris_selector.py) for a few thousand
inputs, in a process of its own since libFuzzer ends the process it runs in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TARGET = Path(__file__).parents[1] / "fuzz" / "atheris_selector.py"
RUNS = int(os.environ.get("JMSLIKE_FUZZ_ATHERIS_RUNS", "2000"))


def test_atheris_selector_target_finds_nothing(tmp_path: Path) -> None:
    root = Path(__file__).parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), str(root / "providers"), str(root / "plugins")]),
    }
    done = subprocess.run(
        [
            sys.executable,
            str(TARGET),
            f"-runs={RUNS}",
            "-seed=1",
            "-max_len=200",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = re.search(r"Done (\d+) runs", done.stderr)
    assert ran is not None and int(ran.group(1)) >= RUNS, done.stderr[-2000:]
    print(f"\natheris: {ran.group(0)}")
