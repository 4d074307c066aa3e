"""The ten-minute soak: tests/integration/test_soak.py with 100 s per broker x protocol
case instead of CI's 10 s, same workload (jmslike/testing/soak.py), same bounds.

    python benchmarks/soak.py [--seconds-per-case 100] [-k artemis] [pytest options...]

Needs the test brokers (``scripts/brokers.sh start``). Prints each case's start and end
figures (RSS, threads, open fds) and the growth from the run's first half to its second;
docs/reliability.md keeps the last results.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds-per-case", type=float, default=100.0)
    args, rest = parser.parse_known_args(argv)
    env = {**os.environ, "JMSLIKE_SOAK_SECONDS": str(args.seconds_per_case)}
    # Six cases of --seconds-per-case, with room for the warm-up and the brokers.
    timeout = int(args.seconds_per_case * 2 + 120)
    command = [
        sys.executable, "-m", "pytest", str(ROOT / "tests/integration/test_soak.py"),
        "-s", "-q", "-p", "no:randomly", f"--timeout={timeout}", *rest,
    ]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
