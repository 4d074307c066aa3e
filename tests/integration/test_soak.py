"""Soak: request/reply over temporary queues, connections, consumers and refused client
ids in a loop on every broker x protocol case, with the process's RSS, threads and open
fds bounded (jmslike/testing/soak.py does the work).

``JMSLIKE_SOAK_SECONDS`` is the time per case (10 s: a minute for the six cases in CI);
benchmarks/soak.py is the ten-minute run. The figures go to stdout (``pytest -s``) and to
docs/reliability.md.

The bounds, second half of the run against the first (so a slow leak shows whatever the
level it started from):

* threads: at most 2 more at the peak. Threads of a closed connection end
  asynchronously (the exception notifier, stomp.py's receiver, Proton's loop), so a
  sample may catch one or two on their way out; a leak of one per round would add
  dozens in a few seconds.
* fds: at most 6 more at the peak, for the same reason (a connection holds a socket and,
  for AMQP, a wake-up pipe: up to three per round are in flight).
* RSS: at most 16 MiB more at the median. CPython's allocator and the brokers' client
  libraries keep freed memory in their pools, so the level steps up now and then and
  does not come down; a leak of even 10 KiB per round is more than that in ten minutes,
  but ten seconds only catch large leaks: benchmarks/soak.py is the real measurement.

* Python's heap (tracemalloc, after a collection): at most 1 MiB more at the median.
  Bounded caches still fill in the first minutes (the STOMP codec's destinations, up
  to 1,024, and temporary queues' wire names, up to 4,096: 100 to 200 KiB in ten
  seconds); a leak of a kilobyte a round passes 1 MiB within about 2,000 rounds, which
  the ten-minute run makes on every case and CI's ten seconds on none.

And at the end, after every connection is closed: no more threads than at the start
(the warm-up started every long-lived one) and at most 2 more fds.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from brokercases import CASES, case_url, delete_rabbitmq_queues

from jmslike.testing.soak import sample, soak

SECONDS = float(os.environ.get("JMSLIKE_SOAK_SECONDS", "10"))
BOUNDS = {"threads": 2, "fds": 6, "rss_kib": 16 * 1024, "heap_kib": 1024}


@pytest.mark.parametrize("case", CASES)
def test_soak(case: str) -> None:
    report = soak(case_url(case), SECONDS)
    try:
        print(f"\nsoak {case}: {report.summary()}")
        print("\n".join(f"  curve {line}" for line in report.curve_lines()))
        assert report.rounds >= 3, report.summary()
        assert report.refused_client_ids == report.rounds + 3  # the warm-up's too
        growth = report.growth()
        for resource, bound in BOUNDS.items():
            assert growth[resource] <= bound, f"{resource}: {report.summary()}"
        start = report.start
        assert start is not None
        # Closed threads take a moment to end: wait for them before the final count.
        deadline = time.monotonic() + 10.0
        while sample().threads > start.threads and time.monotonic() < deadline:
            time.sleep(0.1)
        end = sample()
        assert end.threads <= start.threads, (
            f"threads left: {[t.name for t in threading.enumerate()]}; {report.summary()}"
        )
        assert end.fds <= start.fds + 2, report.summary()
    finally:
        delete_rabbitmq_queues(case, "soak-")
