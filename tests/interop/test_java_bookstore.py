"""The bookstore with a Java consumer and a Python consumer competing on one queue (issue 5,
item 5): no customer's cancel overtakes its order, whichever language processes it.

The scenario is tests/integration/test_stomp_bookstore.py's, reused as it is: a jmslike
STOMP producer sends, for each of 40 customers, an order, a few updates and a cancel,
interleaved, one ordering group per customer (ORD-5). Two consumers compete for the queue:

* a Java JMS application (tests/interop/java, ``bookstore`` mode) over the broker's other
  protocol: Qpid JMS over AMQP 1.0 or Artemis' core client on Artemis, the OpenWire client
  on ActiveMQ Classic; it "applies" each event with a short random delay, acknowledges it
  (CLIENT_ACKNOWLEDGE) and prints a JSON line with its start and end times;
* a jmslike consumer over STOMP (or over ``amqp://`` in one case), the bookstore test's
  own consumer process (``client-receive`` mode, CLIENT_ACKNOWLEDGE, the same delays).

On ActiveMQ Classic a jmslike STOMP producer does not send ``JMSXGroupSeq`` (a 1 there
re-pins the group, ORD-4), so the Java consumer reads the sequence from jmslike's own
``jmslikeGroupSeq`` property, as a Java application on Classic would.

Both processes write their lines with the same clock (Java's ``System.nanoTime`` and
Python's ``time.monotonic_ns`` both read CLOCK_MONOTONIC on Linux; checked at start), and
the bookstore's own checker reads them together: every event processed once, each
customer's events in send order and never two at once across the two processes (ORD-8,
ORD-9, ORD-10), the group and sequence read as sent (ORD-4, ORD-20), both consumers got
work (ORD-17), and each customer stayed with one consumer, since neither closed (ORD-15):
the broker pins a group to one consumer whatever protocol that consumer speaks.

Run: ``JMSLIKE_BROKERS_DIR=... .venv/bin/python -m pytest tests/interop/test_java_bookstore.py -v``
"""

from __future__ import annotations

import contextlib
import random
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from brokerenv import broker_url
from integration import test_stomp_bookstore as bookstore
from javapeer import Endpoint, java_process, java_url

REPO = Path(__file__).parents[2]


@dataclass(frozen=True)
class Case:
    id: str
    stomp_variable: str
    """jmslike's URL (producer and Python consumer), STOMP unless the case says AMQP."""
    java_protocol: str
    java_variable: str
    """The brokerenv variable the Java client's host and port come from."""


CASES = [
    pytest.param(
        Case(
            "artemis-amqp",
            "JMSLIKE_TEST_ARTEMIS_STOMP_URL",
            "amqp",
            "JMSLIKE_TEST_ARTEMIS_AMQP_URL",
        ),
        id="artemis-java-amqp-jmslike-stomp",
        marks=(
            pytest.mark.java,
            pytest.mark.artemis,
            pytest.mark.amqp,
            pytest.mark.stomp,
            pytest.mark.slow,
        ),
    ),
    pytest.param(
        Case(
            "artemis-core",
            "JMSLIKE_TEST_ARTEMIS_STOMP_URL",
            "core",
            "JMSLIKE_TEST_ARTEMIS_AMQP_URL",
        ),
        id="artemis-java-core-jmslike-stomp",
        marks=(pytest.mark.java, pytest.mark.artemis, pytest.mark.stomp, pytest.mark.slow),
    ),
    pytest.param(
        Case(
            "artemis-core-jmslike-amqp",
            "JMSLIKE_TEST_ARTEMIS_AMQP_URL",
            "core",
            "JMSLIKE_TEST_ARTEMIS_AMQP_URL",
        ),
        id="artemis-java-core-jmslike-amqp",
        marks=(pytest.mark.java, pytest.mark.artemis, pytest.mark.amqp, pytest.mark.slow),
    ),
    pytest.param(
        Case(
            "activemq-openwire",
            "JMSLIKE_TEST_ACTIVEMQ_STOMP_URL",
            "openwire",
            "JMSLIKE_TEST_ACTIVEMQ_OPENWIRE_URL",
        ),
        id="activemq-java-openwire-jmslike-stomp",
        marks=(pytest.mark.java, pytest.mark.activemq, pytest.mark.stomp, pytest.mark.slow),
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_java_and_python_consumers_keep_each_customer_in_order(
    case: Case, java_jar: Path, tmp_path: Path
) -> None:
    """ORD-4, ORD-8, ORD-9, ORD-10, ORD-15, ORD-17, ORD-20 across languages: one Java and
    one Python consumer compete on one queue; per customer, the order is processed first,
    the cancel last, one event at a time, and both consumers get customers."""
    url = broker_url(case.stomp_variable)
    endpoint = Endpoint(
        url, case.java_protocol, java_url(case.java_protocol, broker_url(case.java_variable))
    )
    seed = random.randrange(2**32)
    plan = bookstore._plan(bookstore.CUSTOMERS, random.Random(seed))
    run_id = uuid.uuid4().hex
    name = f"bookstore-java-{run_id[:12]}"
    queue = f"queue://{name}"
    context = f"[{case.id} seed={seed} queue={name}]"

    outs = [tmp_path / "python.jsonl", tmp_path / "java.jsonl"]
    logs = [tmp_path / "python.log", tmp_path / "java.log"]
    files: list[IO[bytes]] = []
    procs: list[subprocess.Popen[bytes]] = []
    failure = None
    before = time.monotonic_ns()
    try:
        python_log = logs[0].open("wb")
        files.append(python_log)
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    bookstore.__file__,
                    "--url",
                    url,
                    "--queue",
                    queue,
                    "--out",
                    str(outs[0]),
                    "--mode",
                    "client-receive",
                    "--seed",
                    str(seed),
                ],
                stdin=subprocess.PIPE,
                stdout=python_log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
        )
        java_out, java_log = outs[1].open("wb"), logs[1].open("wb")
        files += [java_out, java_log]
        procs.append(
            subprocess.Popen(
                java_process(java_jar, "bookstore", endpoint, "--queue", name, "--seed", str(seed)),
                stdin=subprocess.PIPE,
                stdout=java_out,
                stderr=java_log,
                cwd=REPO,
            )
        )

        def ready() -> list[dict[str, Any]]:
            return [r for r in bookstore._read_records(outs) if r["event"] == "ready"]

        bookstore._wait_for(
            "both consumers to subscribe", lambda: len(ready()) == 2, procs, logs, 60.0
        )
        java_ready = [r for r in ready() if "nano" in r]
        assert len(java_ready) == 1, f"{context} ready lines {ready()}"
        # One clock for both languages, or the overlap check below means nothing.
        assert before <= java_ready[0]["nano"] <= time.monotonic_ns(), (
            f"{context} Java's System.nanoTime {java_ready[0]['nano']} is not on Python's "
            f"monotonic clock ({before}..{time.monotonic_ns()})"
        )

        bookstore._send_plan(url, queue, run_id, plan)

        def all_processed() -> bool:
            done = {
                (r["customer"], r["seq"])
                for r in bookstore._read_records(outs)
                if r["event"] == "processed"
            }
            return len(done) >= len(plan)

        bookstore._wait_for(
            f"{len(plan)} messages to be processed",
            all_processed,
            procs,
            logs,
            bookstore.CONSUME_DEADLINE,
        )
        time.sleep(bookstore.SETTLE)
    finally:
        for proc in procs:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                failure = f"consumer process {proc.args!r} did not stop; killed"
        for file in files:
            file.close()
    for proc, log in zip(procs, logs, strict=True):
        assert proc.returncode == 0, (
            f"{context} {proc.args!r} exited with {proc.returncode}:\n"
            f"{log.read_text(errors='replace')[-4000:]}"
        )
    assert failure is None, f"{context} {failure}"

    records = bookstore._read_records(outs)
    problems = bookstore._check(records, plan, run_id)
    summary = bookstore._summary(records)
    assert not problems, f"{context} {len(problems)} problems ({summary}):\n" + "\n".join(
        problems[:40]
    )

    processed = [r for r in records if r["event"] == "processed"]
    java_pid = procs[1].pid
    by_language = {
        "java": sum(1 for r in processed if r["pid"] == java_pid),
        "python": sum(1 for r in processed if r["pid"] != java_pid),
    }
    # ORD-17: groups are spread over both consumers, whatever language each is written in.
    assert all(by_language.values()), f"{context} only one consumer got work: {by_language}"

    # ORD-15: neither consumer closed during the run, so each customer stayed with one.
    moved = {}
    for customer in range(bookstore.CUSTOMERS):
        workers = sorted({r["worker"] for r in processed if r["customer"] == customer})
        if len(workers) > 1:
            moved[customer] = workers
    assert not moved, f"{context} customers moved between consumers (ORD-15): {moved}"

    left = bookstore._leftovers(url, queue)
    assert not left, f"{context} still on the queue after the run (not acknowledged): {left}"
    print(f"{context} {len(plan)} messages, {by_language}, {summary}")
