"""The bookstore on a real broker over STOMP: one ordering group per customer, many consumers.

The scenario of ``jmslike demo`` (jmslike/demo.py), played end to end on ActiveMQ Classic,
Artemis and RabbitMQ. A shop sends, for each of 40 customers, an ``order``, a few
``update``s and a ``cancel``, interleaved across customers the way a real shop's queue
is; each customer is one ordering group (ORD-5, one producer bound per customer, so the
group's order is its producer's send order, ORD-8). Four competing consumers then work
through the queue, each recording every message it processes as one JSON line:
``(customer, seq, pid, worker, start, end, ...)``.

The parent process reads those lines back and checks the promise of docs/ordering.md:

* every message processed, and processed once; a message seen again must be a marked
  redelivery (ORD-11), and then the group's final outcome must still be in order;
* per customer, events processed in send order (ORD-8, ORD-9), never two at once, across
  processes too: the end of event i is at or before the start of event i+1 (ORD-9,
  ORD-10);
* the group name and sequence a receiver reads are the ones sent (ORD-4, ORD-20);
* the work spread over more than one consumer: groups run in parallel (ORD-17);
* on brokers that pin groups (ActiveMQ Classic, Artemis) a customer stays with one
  consumer process for the whole run, since no consumer closes meanwhile (ORD-15);
* every message was acknowledged: nothing is left on the queue afterwards.

ActiveMQ Classic and Artemis keep groups themselves, across processes, so the consumers
run as four separate processes. RabbitMQ ignores ``JMSXGroupID``; jmslike's client-side
gate keeps groups there, and only within one process (ORD-16), so on RabbitMQ the four
consumers are four sessions of one process.

Each consumer process is this file run as a script (see :func:`_consume`), with its own
connection. Times are ``time.monotonic_ns()``, which is one system-wide clock on Linux
and macOS, so start and end times compare across processes.

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_bookstore.py -v -p no:randomly``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CUSTOMERS = 40
CONSUMERS = 4
WORK_MS = {"order": (1.0, 5.0), "update": (0.0, 3.0), "cancel": (0.0, 1.0)}
"""Simulated processing time per action, uniform, in milliseconds. An order is the slow
one (as in jmslike/demo.py), so without groups a later update or cancel of the same
customer would overtake it."""
CONSUME_DEADLINE = 40.0
"""Seconds the consumers get to process the whole plan."""
SETTLE = 0.5
"""Seconds to wait after the last expected record, to catch late duplicates."""

MODES = {
    "auto-listener": "MessageListenerContainer (AUTO_ACKNOWLEDGE), one listener per session",
    "client-receive": "receive() loop per session (CLIENT_ACKNOWLEDGE), acknowledge per message",
}


# ------------------------------------------------------------------------ brokers


@dataclass(frozen=True)
class BrokerCase:
    id: str
    variable: str
    processes: int
    """Consumer processes."""
    sessions: int
    """Consumer sessions in each process."""
    pinned: bool
    """The broker pins groups to consumers (ORD-15): each customer stays in one process."""


CASES = [
    pytest.param(
        BrokerCase("activemq", "JMSLIKE_TEST_ACTIVEMQ_STOMP_URL", CONSUMERS, 1, pinned=True),
        id="activemq",
        marks=(pytest.mark.stomp, pytest.mark.activemq, pytest.mark.slow),
    ),
    pytest.param(
        BrokerCase("artemis", "JMSLIKE_TEST_ARTEMIS_STOMP_URL", CONSUMERS, 1, pinned=True),
        id="artemis",
        marks=(pytest.mark.stomp, pytest.mark.artemis, pytest.mark.slow),
    ),
    pytest.param(
        # ORD-16: the client gate holds groups within one process only.
        BrokerCase("rabbitmq", "JMSLIKE_TEST_RABBITMQ_STOMP_URL", 1, CONSUMERS, pinned=False),
        id="rabbitmq",
        marks=(pytest.mark.stomp, pytest.mark.rabbitmq, pytest.mark.slow),
    ),
]


# --------------------------------------------------------------------------- plan


def _plan(customers: int, rng: random.Random) -> list[tuple[int, int, str]]:
    """Each customer orders, updates 1-4 times, then cancels: ``(customer, seq, action)``
    with ``seq`` counted from 1 in the customer's own send order.

    Customers arrive at random and act at their own pace, so the queue interleaves them
    (as jmslike/demo.py's script does)."""
    timed: list[tuple[float, int, int, str]] = []
    for customer in range(customers):
        at = rng.uniform(0.0, 10.0)
        actions = ["order"] + ["update"] * rng.randint(1, 4) + ["cancel"]
        for seq, action in enumerate(actions, start=1):
            timed.append((at, customer, seq, action))
            # Close enough that a customer's next event is often among the next few
            # messages, which competing consumers take at the same time.
            at += rng.uniform(0.02, 0.5)
    timed.sort()
    return [entry[1:] for entry in timed]


def _group(customer: int) -> str:
    return f"customer-{customer:02d}"


def _send_plan(url: str, queue: str, run_id: str, plan: list[tuple[int, int, str]]) -> None:
    """One producer per customer, bound to the customer's group (ORD-5)."""
    from jmslike import ConnectionFactory

    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        producers: dict[int, Any] = {}
        for customer, seq, action in plan:
            producer = producers.get(customer)
            if producer is None:
                producer = producers[customer] = session.create_producer(queue)
                producer.enable_ordering_group(_group(customer))
            message = session.create_text_message(f"{action} #{seq} of customer {customer}")
            message.set_string_property("run", run_id)
            message.set_int_property("customer", customer)
            message.set_int_property("seq", seq)
            message.set_string_property("action", action)
            producer.send(message)


# ----------------------------------------------------------------- consumer process


class _Recorder:
    """Processes one message (a random short sleep) and appends its JSON line."""

    def __init__(self, out: Path, seed: int) -> None:
        self._file = out.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.pid = os.getpid()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps({"pid": self.pid, **record}) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def process(self, message: Any) -> None:
        start = time.monotonic_ns()
        with self._lock:
            work = self._rng.uniform(*WORK_MS[message.get_string_property("action")]) / 1000
        time.sleep(work)
        end = time.monotonic_ns()
        self.write(
            {
                "event": "processed",
                "worker": f"{self.pid}/{threading.current_thread().name}",
                "run": message.get_string_property("run"),
                "customer": message.get_int_property("customer"),
                "seq": message.get_int_property("seq"),
                "action": message.get_string_property("action"),
                "group": message.ordering_group,
                "group_seq": message.get_int_property("JMSXGroupSeq"),
                "redelivered": bool(message.jms_redelivered),
                "delivery_count": message.get_int_property("JMSXDeliveryCount"),
                "start": start,
                "end": end,
            }
        )

    def close(self) -> None:
        self._file.close()


def _consume(argv: list[str]) -> int:
    """A consumer process: consume ``--queue`` until stdin closes, one JSON line per
    processed message in ``--out`` (the first line says the process is ready)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--mode", required=True, choices=sorted(MODES))
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from jmslike import ConnectionFactory, MessageListenerContainer, Session

    recorder = _Recorder(args.out, args.seed)
    factory = ConnectionFactory(args.url)

    def on_error(error: Exception) -> None:
        recorder.write({"event": "error", "error": f"{type(error).__name__}: {error}"})

    stop = threading.Event()
    threads: list[threading.Thread] = []
    if args.mode == "auto-listener":
        container = MessageListenerContainer(
            factory,
            args.queue,
            recorder.process,
            concurrency=args.sessions,
            acknowledge_mode=Session.AUTO_ACKNOWLEDGE,
            exception_listener=on_error,
        )
        connection = container.connection
        close = container.stop
    else:
        connection = factory.create_connection()
        connection.set_exception_listener(on_error)
        close = connection.close
        subscribed = threading.Barrier(args.sessions + 1)

        def loop(index: int) -> None:
            session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = session.create_consumer(args.queue)
            consumer.receive_no_wait()  # subscribes now, before the parent sends
            subscribed.wait()
            while not stop.is_set():
                try:
                    message = consumer.receive(0.1)
                    if message is None:
                        continue
                    recorder.process(message)
                    message.acknowledge()
                except Exception as error:
                    if stop.is_set():
                        return
                    on_error(error)

        connection.start()
        for index in range(args.sessions):
            thread = threading.Thread(target=loop, args=(index,), name=f"receiver-{index}")
            thread.start()
            threads.append(thread)
        subscribed.wait(timeout=20)
    # A listener subscribes on its dispatcher thread, shortly after start.
    time.sleep(0.3)
    caps = connection.capabilities
    recorder.write(
        {
            "event": "ready",
            "broker": caps.broker,
            "ordering_mode": str(caps.ordering_mode),
            "group_scope": caps.group_scope,
        }
    )
    sys.stdin.read()  # the parent closes our stdin when it has seen enough
    stop.set()
    for thread in threads:
        thread.join(timeout=10)
    close()
    recorder.close()
    return 0


# ------------------------------------------------------------------------- parent


def _read_records(paths: list[Path]) -> list[dict[str, Any]]:
    """Every complete JSON line written so far (a consumer may be mid-line)."""
    records: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines(keepends=True):
            if line.endswith("\n"):
                records.append(json.loads(line))
    return records


def _child_failure(procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> str | None:
    for proc, log in zip(procs, logs, strict=True):
        if proc.poll() is not None:
            return (
                f"consumer process {proc.pid} exited with {proc.returncode}:\n"
                f"{log.read_text(errors='replace')[-4000:]}"
            )
    return None


def _wait_for(
    what: str,
    done: Any,
    procs: list[subprocess.Popen[bytes]],
    logs: list[Path],
    timeout: float,
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        failure = _child_failure(procs, logs)
        if failure is not None:
            pytest.fail(f"while waiting for {what}: {failure}")
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def _leftovers(url: str, queue: str) -> list[str]:
    """What is still on the queue once every consumer is gone: should be nothing."""
    from jmslike import ConnectionFactory

    found: list[str] = []
    with ConnectionFactory(url).create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        while (message := consumer.receive(0.5)) is not None:
            found.append(
                f"customer {message.get_int_property('customer')} "
                f"seq {message.get_int_property('seq')} "
                f"(redelivered={message.jms_redelivered})"
            )
    return found


def _check(
    records: list[dict[str, Any]],
    plan: list[tuple[int, int, str]],
    run_id: str,
) -> list[str]:
    """Every broken promise in ``records``, as readable lines (empty: all kept)."""
    problems: list[str] = []
    expected = {(customer, seq): action for customer, seq, action in plan}
    per_customer: dict[int, list[dict[str, Any]]] = defaultdict(list)
    seen: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    mislabelled: list[str] = []
    for rec in records:
        if rec["event"] == "error":
            problems.append(f"process {rec['pid']} reported {rec['error']}")
            continue
        if rec["event"] != "processed":
            continue
        key = (rec["customer"], rec["seq"])
        if rec["run"] != run_id or key not in expected:
            problems.append(f"unexpected message {rec}")
            continue
        seen[key].append(rec)
        per_customer[rec["customer"]].append(rec)
        # ORD-4 / ORD-20: the receiver reads the group and its sequence as sent.
        if rec["group"] != _group(rec["customer"]) or rec["group_seq"] != rec["seq"]:
            mislabelled.append(
                f"customer {rec['customer']} seq {rec['seq']}: group {rec['group']!r} "
                f"JMSXGroupSeq {rec['group_seq']!r}"
            )

    missing = sorted(set(expected) - set(seen))
    if missing:
        problems.append(f"{len(missing)} messages never processed: {missing[:20]}")

    def where(rec: dict[str, Any]) -> str:
        flag = f", redelivered #{rec['delivery_count']}" if rec["redelivered"] else ""
        return f"seq {rec['seq']} ({rec['action']}) in {rec['worker']}{flag}"

    for customer, recs in sorted(per_customer.items()):
        recs.sort(key=lambda r: (r["start"], r["end"]))
        # In order (ORD-8, ORD-9): no event before every earlier one was processed; an
        # event seen again must be a marked redelivery, given back in order (ORD-11).
        highest = 0
        for rec in recs:
            if rec["seq"] > highest + 1:
                problems.append(
                    f"customer {customer}: {where(rec)} processed before seq {highest + 1}; "
                    f"order seen: {[r['seq'] for r in recs]} (ORD-9)"
                )
            elif rec["seq"] <= highest and not rec["redelivered"]:
                problems.append(
                    f"customer {customer}: {where(rec)} processed again after seq {highest} "
                    f"without being a redelivery; order seen: {[r['seq'] for r in recs]} "
                    "(exactly once, ORD-11)"
                )
            highest = max(highest, rec["seq"])
        # One at a time, across processes (ORD-9, ORD-10).
        for before, after in itertools.pairwise(recs):
            if before["end"] > after["start"]:
                overlap = (before["end"] - after["start"]) / 1e6
                problems.append(
                    f"customer {customer}: {where(after)} started {overlap:.3f} ms before "
                    f"{where(before)} ended (ORD-9)"
                )
        # The bookstore's own view: the first thing done is the order, the last the cancel.
        if recs[0]["action"] != "order" or recs[-1]["action"] != "cancel":
            problems.append(
                f"customer {customer}: processed {[r['action'] for r in recs]}, "
                "not order ... cancel"
            )
    if mislabelled:
        problems.append(
            f"{len(mislabelled)} messages received with a group or JMSXGroupSeq other than "
            f"the one sent (customer-NN, seq; ORD-4, ORD-20): {mislabelled[:5]}"
        )
    return problems


def _summary(records: list[dict[str, Any]]) -> str:
    processed = [r for r in records if r["event"] == "processed"]
    by_worker: dict[str, int] = defaultdict(int)
    for rec in processed:
        by_worker[rec["worker"]] += 1
    redelivered = sum(1 for r in processed if r["redelivered"])
    return (
        f"{len(processed)} processed, {redelivered} redelivered, per worker: "
        f"{dict(sorted(by_worker.items()))}"
    )


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", CASES)
def test_bookstore_groups_keep_each_customer_in_order(
    case: BrokerCase, mode: str, tmp_path: Path
) -> None:
    """ORD-5, ORD-8, ORD-9, ORD-10, ORD-15, ORD-16, ORD-17, ORD-20 on a real broker over
    STOMP: 40 customers' interleaved order/update/cancel events, one group per customer,
    consumed by 4 competing consumers (4 processes where the broker keeps groups, 4
    sessions of one process where jmslike's client gate does, ORD-16). Every event is
    processed exactly once (or redelivered as ORD-11 says), each customer's events in
    send order and never two at once across processes (ORD-9), groups spread over the
    consumers (ORD-17), and a pinned group stays in one process (ORD-15)."""
    from brokerenv import broker_url  # here: consumer processes run this file alone

    url = broker_url(case.variable)
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    plan = _plan(CUSTOMERS, rng)
    run_id = uuid.uuid4().hex
    queue = f"queue://bookstore-{run_id[:12]}"
    context = f"[{case.id} {mode} seed={seed} queue={queue}]"

    outs = [tmp_path / f"consumer-{i}.jsonl" for i in range(case.processes)]
    logs = [tmp_path / f"consumer-{i}.log" for i in range(case.processes)]
    procs: list[subprocess.Popen[bytes]] = []
    log_files = []
    try:
        for i, (out, log) in enumerate(zip(outs, logs, strict=True)):
            log_file = log.open("wb")
            log_files.append(log_file)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--url",
                        url,
                        "--queue",
                        queue,
                        "--out",
                        str(out),
                        "--mode",
                        mode,
                        "--sessions",
                        str(case.sessions),
                        "--seed",
                        str(seed + i),
                    ],
                    stdin=subprocess.PIPE,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    cwd=Path(__file__).parents[2],
                )
            )

        def ready() -> list[dict[str, Any]]:
            return [r for r in _read_records(outs) if r["event"] == "ready"]

        _wait_for(
            "the consumers to subscribe",
            lambda: len(ready()) == case.processes,
            procs,
            logs,
            30.0,
        )
        modes = {r["ordering_mode"] for r in ready()}
        if case.processes > 1:
            # Across processes only the broker (or partitions) can keep a group (ORD-16).
            assert modes <= {"broker", "partitioned"}, f"{context} ordering modes {modes}"

        _send_plan(url, queue, run_id, plan)

        def all_processed() -> bool:
            done = {
                (r["customer"], r["seq"]) for r in _read_records(outs) if r["event"] == "processed"
            }
            return len(done) >= len(plan)

        _wait_for(
            f"{len(plan)} messages to be processed", all_processed, procs, logs, CONSUME_DEADLINE
        )
        time.sleep(SETTLE)
    finally:
        failure = None
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
                failure = f"consumer process {proc.pid} did not stop; killed"
        for log_file in log_files:
            log_file.close()
    records = _read_records(outs)
    for proc, log in zip(procs, logs, strict=True):
        assert proc.returncode == 0, (
            f"{context} consumer process {proc.pid} exited with {proc.returncode}:\n"
            f"{log.read_text(errors='replace')[-4000:]}"
        )
    assert failure is None, f"{context} {failure}"

    problems = _check(records, plan, run_id)
    summary = _summary(records)
    assert not problems, f"{context} {len(problems)} problems ({summary}):\n" + "\n".join(
        problems[:40]
    )

    processed = [r for r in records if r["event"] == "processed"]
    # ORD-17: the groups spread; with separate processes, over more than one process.
    if case.processes > 1:
        busy = {r["pid"] for r in processed}
        assert len(busy) > 1, f"{context} only process(es) {busy} did any work ({summary})"
    busy_workers = {r["worker"] for r in processed}
    assert len(busy_workers) > 1, f"{context} only {busy_workers} did any work ({summary})"

    if case.pinned:
        # ORD-15: no consumer closed during the run, so each group stayed where it started.
        moved = {}
        for customer in range(CUSTOMERS):
            workers = sorted({r["worker"] for r in processed if r["customer"] == customer})
            if len(workers) > 1:
                moved[customer] = workers
        assert not moved, f"{context} groups moved between consumers (ORD-15): {moved}"

    left = _leftovers(url, queue)
    assert not left, f"{context} still on the queue after the run (not acknowledged): {left}"
    print(f"{context} {len(plan)} messages, {summary}")


if __name__ == "__main__":
    sys.exit(_consume(sys.argv[1:]))
