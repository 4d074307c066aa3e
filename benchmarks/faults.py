"""The fault scenarios of issue 18 with their figures: one command for the tables of
docs/reliability.md ("Faults between client and broker" and "Consumer processes killed
and frozen").

Runs the fault tests on every broker x protocol case with ``JMSLIKE_FAULT_REPORT`` set
(tests/faultreport.py: each test writes what it saw before asserting) and prints a
table per scenario: messages sent, processed, lost, unflagged duplicates, groups
misordered, and the seconds until the application had its answer (``recover_s``: the
loss reported, or another process started on the groups of one that was killed or
frozen). The broker restarts have their own command (benchmarks/broker_restart.py), the
soak too (benchmarks/soak.py).

    python benchmarks/faults.py [--json FILE] [-k EXPR]   # runs the tests (a few minutes)
    python benchmarks/faults.py --from-json FILE          # the tables of an earlier run

Needs the shared test brokers (``scripts/brokers.sh start``). A failed check fails the
run (exit 1), and the tables still say what was found.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/integration/test_faults.py",
    "tests/integration/test_failover.py::test_reconnects_resubscribes_and_redelivers_in_group_order",
    "tests/integration/test_failover.py::test_rolls_back_an_open_transaction",
    "tests/integration/test_partitions_processes.py::test_groups_kept_when_a_process_is_killed",
    "tests/integration/test_partitions_processes.py::test_groups_kept_when_a_process_freezes",
    "tests/integration/test_partitions_processes.py::test_broker_kept_groups_when_a_process_freezes",
]
COLUMNS = [
    ("case", "broker x protocol"),
    ("sent", "sent"),
    ("confirmed", "confirmed"),
    ("raised", "send raised"),
    ("raised_but_stored", "raised, stored anyway"),
    ("processed", "processed"),
    ("lost", "lost"),
    ("unflagged_duplicates", "unflagged duplicates"),
    ("misordered", "groups misordered"),
    ("recover_s", "recovered after (s)"),
]


def markdown(rows: list[dict[str, Any]]) -> str:
    """A table per scenario, a row per case (the last run of a case stands)."""
    by_scenario: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        by_scenario[row["scenario"]][row["case"]] = row
    out: list[str] = []
    for scenario in sorted(by_scenario):
        rows = by_scenario[scenario]
        # A column no row of the scenario has is left out (the sends' columns, say).
        columns = [c for c in COLUMNS if any(c[0] in row for row in rows.values())]
        out += [f"**{scenario}**", ""]
        out.append("| " + " | ".join(title for _key, title in columns) + " |")
        out.append("| --- |" + " ---: |" * (len(columns) - 1))
        for case in sorted(rows):
            row = rows[case]
            out.append("| " + " | ".join(_cell(row.get(key)) for key, _title in columns) + " |")
        out.append("")
    return "\n".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also keep the figures here (JSON lines)")
    parser.add_argument("--from-json", type=Path, help="print the tables of an earlier run")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression (e.g. a case)")
    args = parser.parse_args()
    if args.from_json:
        print(markdown(_read(args.from_json)))
        return 0
    report = args.json or Path(tempfile.mkstemp(prefix="faults-", suffix=".jsonl")[1])
    report.write_text("")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS]
    if args.keyword:
        command += ["-k", args.keyword]
    env = {**os.environ, "JMSLIKE_FAULT_REPORT": str(report.resolve())}
    code = subprocess.run(command, cwd=_REPO, env=env, check=False).returncode
    print(markdown(_read(report)))
    return 0 if code == 0 else 1


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
