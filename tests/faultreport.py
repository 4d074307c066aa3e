"""Figures of the fault tests, for docs/reliability.md.

Each fault test asserts the promise (nothing lost, no unflagged duplicate, no group
reordered); with ``JMSLIKE_FAULT_REPORT`` set to a file, it also appends what it saw
there, one JSON object a line: the scenario, the broker x protocol case, messages sent,
confirmed and processed, lost, unflagged duplicates, groups misordered, and the seconds
until the application had its answer (the loss reported, or the first message processed
again). ``benchmarks/faults.py`` runs the tests with it set and prints the tables.
A failing run records too: the figures are written before the assertions.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

__all__ = ["record"]

_LOCK = threading.Lock()


def record(scenario: str, case: str, **figures: Any) -> None:
    """Append one line of figures to ``$JMSLIKE_FAULT_REPORT`` (nothing if unset)."""
    path = os.environ.get("JMSLIKE_FAULT_REPORT")
    if not path:
        return
    line = json.dumps({"scenario": scenario, "case": case, **figures}, sort_keys=True)
    with _LOCK, open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
