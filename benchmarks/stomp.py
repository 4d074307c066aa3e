"""jmslike over STOMP against raw stomp.py: the same work on the same broker, one run.

For each broker (ActiveMQ Classic, Artemis, RabbitMQ) and each delivery mode
(non-persistent, persistent), ``--count`` x 1 KiB text messages (default 20,000):

* send all: jmslike ``MessageProducer.send`` (a persistent send waits for the broker's
  receipt, by design) against raw stomp.py both "pipelined" (sends without waiting,
  confirms the last message with a receipt, docs/performance.md) and "sync" (a
  receipt on every message: the same guarantee as a persistent jmslike send). The jmslike
  figure includes closing the connection, whose DISCONNECT receipt confirms that the
  broker has read every frame (jmslike has no other way to confirm a non-persistent send);
* receive all, acknowledging each message: jmslike ``receive()`` with CLIENT_ACKNOWLEDGE
  and ``message.acknowledge()``, and with AUTO_ACKNOWLEDGE, against raw stomp.py with
  ``ack:client-individual`` and ``conn.ack`` per message, done two ways: in stomp.py's
  listener (its fastest), and handed off to the calling thread through a deque and a
  condition (what any synchronous ``receive()`` must do, jmslike's included). Both sides
  subscribe with the same prefetch (``--prefetch``; jmslike's factory ``prefetch`` and
  ``clientWindow``, which become ``activemq.prefetchSize``, RabbitMQ's ``prefetch-count``
  and Artemis' ``consumer-window-size`` exactly as the provider writes them). Timed from
  subscribing until the broker confirms the UNSUBSCRIBE (so every ACK was read).

Every workload uses a fresh queue; what a failed run leaves is drained, and RabbitMQ's
queues are deleted afterwards through its management API when it is reachable. On
RabbitMQ each queue is first declared the way a consumer's SUBSCRIBE declares it (durable,
shared), for both sides, as a queue that exists before its producers. Note that RabbitMQ
3.10 reads ``persistent`` on SEND as the queue's ``durable`` (rabbitmq-stomp issue 47):
``persistent:false`` on a queue that exists fails with RESOURCE_LOCKED and the broker
closes the connection, and on a new queue it declares the queue exclusive to the sender's
connection and auto-delete, so the messages vanish with the sender (``--no-declare``
lets the first SEND declare the queue, to check that jmslike still copes). Both sides
therefore send non-persistent messages to RabbitMQ without the header (every broker's
default; the raw side does so everywhere). Each
broker is warmed up first (JVM warm-up matters, docs/performance.md). Each side sends twice and
receives twice per run (jmslike: CLIENT and AUTO; raw: the pipelined queue in the
listener, the sync queue with the hand-off), so jmslike's send figure is a median over
2 x ``--runs`` samples; the order of
jmslike and raw alternates from run to run, so drift on a shared machine hits both alike.

    python benchmarks/stomp.py [--brokers activemq,artemis,rabbitmq] [--count N]
                               [--runs R] [--prefetch P] [--json FILE] [--no-declare]

jmslike-sent frames carry more headers than the raw ones (jmslike's type, message id,
timestamp, ``persistent``), and that alone costs throughput on both the broker and
stomp.py's parser: it is part of what the jmslike figures measure. The line "send / raw,
jmslike's headers" sets raw stomp.py (pipelined, non-persistent) sending those same
headers, made per message as jmslike makes them, beside jmslike: the same frames on the
wire, so the ratio is jmslike's own cost alone.

Broker URLs come from the environment (``JMSLIKE_TEST_<BROKER>_STOMP_URL``), else from
``.brokers/brokers.env`` (written by ``scripts/brokers.sh start``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named stomp.py: run as a script, its folder comes first on sys.path and
# would shadow the stomp.py library (for this file and for jmslike_stomp alike).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import contextlib
import json
import statistics
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any

from jmslike import DeliveryMode, Session
from jmslike_bench.env import broker_settings, delete_rabbitmq_queue
from jmslike_bench.runners.raw_stomp import (
    BODY,
    Broker,
    declare,
    drain,
    raw_receive,
    raw_receive_handoff,
    raw_send,
)

BROKERS = ("activemq", "artemis", "rabbitmq")
IDLE = 10.0
"""Seconds without a message before a receive run fails."""


# --------------------------------------------------------------------------- brokers
def broker_urls(names: list[str]) -> dict[str, str]:
    """``JMSLIKE_TEST_<BROKER>_STOMP_URL`` from the environment, else from brokers.env."""
    settings = broker_settings()
    urls = {}
    for name in names:
        key = f"JMSLIKE_TEST_{name.upper()}_STOMP_URL"
        url = settings.get(key)
        if not url:
            raise SystemExit(f"no URL for {name}: set {key} or run scripts/brokers.sh start")
        urls[name] = url
    return urls


def fresh_queue(tag: str) -> str:
    return f"bench-{tag}-{uuid.uuid4().hex[:10]}"


def delete_queue(broker: Broker, queue: str) -> None:
    """RabbitMQ keeps /queue/x queues (durable) for ever: delete them, best effort."""
    if broker.name == "rabbitmq":
        delete_rabbitmq_queue(queue)


# ---------------------------------------------------------------------------- jmslike
def jms_send(broker: Broker, queue: str, count: int, persistent: bool) -> float:
    """msg/s through MessageProducer.send, until the connection is closed."""
    mode = DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT
    connection = broker.factory().create_connection()
    try:
        session = connection.create_session()
        producer = session.create_producer(session.create_queue(queue))
        started = time.perf_counter()
        for _ in range(count):
            producer.send(session.create_text_message(BODY), delivery_mode=mode)
        connection.close()  # the DISCONNECT receipt: the broker has read every SEND
        return count / (time.perf_counter() - started)
    finally:
        connection.close()


def jms_receive(broker: Broker, queue: str, count: int, acknowledge_mode: int) -> float:
    """msg/s through receive(); CLIENT_ACKNOWLEDGE acknowledges each message."""
    client = acknowledge_mode == Session.CLIENT_ACKNOWLEDGE
    with broker.factory().create_connection() as connection:
        session = connection.create_session(acknowledge_mode=acknowledge_mode)
        queue_ = session.create_queue(queue)
        started = time.perf_counter()
        consumer = session.create_consumer(queue_)
        connection.start()
        for index in range(count):
            message = consumer.receive(IDLE)
            if message is None:
                raise RuntimeError(f"jmslike: received {index} of {count}")
            if client:
                message.acknowledge()
        consumer.close()  # AUTO: acknowledges the last one; UNSUBSCRIBE waits for a receipt
        return count / (time.perf_counter() - started)


# ------------------------------------------------------------------------------ runs
@dataclass
class Samples:
    jms_send: list[float]
    jms_client: list[float]
    jms_auto: list[float]
    raw_pipelined: list[float]
    raw_sync: list[float]
    raw_receive: list[float]
    raw_handoff: list[float]
    failures: list[str]
    raw_jms_headers: list[float] = field(default_factory=list)
    """Non-persistent pipelined sends carrying the headers jmslike's frames carry."""


_REPORTED: set[str] = set()


def _guarded(
    samples: Samples, into: list[float], what: str, broker: Broker, queue: str, call: Any
) -> bool:
    """Run one timed call; on failure keep the traceback, drain the queue, go on."""
    try:
        into.append(call())
        return True
    except Exception:
        text = traceback.format_exc()
        samples.failures.append(f"{broker.name} {what}:\n{text}")
        last = text.strip().splitlines()[-1]
        if last in _REPORTED:  # the whole traceback once, then one line
            print(f"FAILED {broker.name} {what}: {last}", file=sys.stderr, flush=True)
        else:
            _REPORTED.add(last)
            print(f"FAILED {broker.name} {what}:\n{text}", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            drain(broker, queue)
        return False


def jms_block(broker: Broker, count: int, persistent: bool, samples: Samples) -> None:
    for mode, into, label in (
        (Session.CLIENT_ACKNOWLEDGE, samples.jms_client, "CLIENT_ACKNOWLEDGE"),
        (Session.AUTO_ACKNOWLEDGE, samples.jms_auto, "AUTO_ACKNOWLEDGE"),
    ):
        queue = fresh_queue("jms")
        declare(broker, queue)
        what = f"jmslike persistent={persistent}"
        sent = _guarded(
            samples,
            samples.jms_send,
            f"{what} send",
            broker,
            queue,
            lambda q=queue: jms_send(broker, q, count, persistent),
        )
        if sent:
            _guarded(
                samples,
                into,
                f"{what} receive {label}",
                broker,
                queue,
                lambda q=queue, m=mode: jms_receive(broker, q, count, m),
            )
        delete_queue(broker, queue)


def raw_block(
    broker: Broker, count: int, sync_count: int, persistent: bool, samples: Samples
) -> None:
    for sync, into, n in (
        (False, samples.raw_pipelined, count),
        (True, samples.raw_sync, sync_count),
    ):
        queue = fresh_queue("raw")
        declare(broker, queue)
        what = f"raw persistent={persistent} {'sync' if sync else 'pipelined'}"
        sent = _guarded(
            samples,
            into,
            f"{what} send",
            broker,
            queue,
            lambda q=queue, s=sync, k=n: raw_send(broker, q, k, persistent, s),
        )
        if sent:  # the pipelined queue through a listener, the sync one with a hand-off
            _guarded(
                samples,
                samples.raw_handoff if sync else samples.raw_receive,
                f"{what} receive{' hand-off' if sync else ''}",
                broker,
                queue,
                lambda q=queue, k=n, s=sync: (raw_receive_handoff if s else raw_receive)(
                    broker, q, k
                ),
            )
        delete_queue(broker, queue)
    if not persistent:  # the same frames as jmslike's: what its extra headers cost
        queue = fresh_queue("raw")
        declare(broker, queue)
        if _guarded(
            samples,
            samples.raw_jms_headers,
            "raw pipelined, jmslike's headers, send",
            broker,
            queue,
            lambda q=queue: raw_send(broker, q, count, False, False, jms_headers=True),
        ):
            drain(broker, queue)
        delete_queue(broker, queue)


def one_round(
    broker: Broker,
    count: int,
    sync_count: int,
    table: dict[bool, Samples],
    jmslike_first: bool,
) -> None:
    for persistent in (False, True):
        samples = table[persistent]
        for jmslike in (True, False) if jmslike_first else (False, True):
            if jmslike:
                # Persistent sends are confirmed one by one on both sides: they take
                # ``sync_count`` messages, like raw stomp.py's sync sends.
                jms_block(broker, sync_count if persistent else count, persistent, samples)
            else:
                raw_block(broker, count, sync_count, persistent, samples)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "FAILED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", default=",".join(BROKERS))
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument(
        "--sync-count",
        type=int,
        default=None,
        help="messages for every persistent send confirmed one by one: jmslike's and raw "
        "stomp.py's sync sends (default: --count; Artemis confirms about 170 a second here)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--prefetch", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5_000, help="messages per warm-up load")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument(
        "--no-declare",
        action="store_true",
        help="RabbitMQ: let the first SEND declare each queue (see the docstring)",
    )
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.brokers.split(",") if name.strip()]
    unknown = set(names) - set(BROKERS)
    if unknown:
        parser.error(f"unknown brokers {sorted(unknown)}; choose from {', '.join(BROKERS)}")
    sync_count = args.sync_count or args.count
    urls = broker_urls(names)
    brokers = [Broker(name, urls[name], args.prefetch, not args.no_declare) for name in names]

    results: dict[str, dict[bool, Samples]] = {}
    for broker in brokers:
        started = time.perf_counter()
        scratch = {p: Samples([], [], [], [], [], [], [], []) for p in (False, True)}
        one_round(broker, args.warmup, min(args.warmup, 1_000), scratch, jmslike_first=True)
        print(
            f"warm-up {broker.name}: {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        for samples in scratch.values():
            if samples.failures:
                print(f"  {len(samples.failures)} warm-up failure(s)", file=sys.stderr)
        results[broker.name] = {p: Samples([], [], [], [], [], [], [], []) for p in (False, True)}
    for run in range(args.runs):
        for broker in brokers:
            started = time.perf_counter()
            one_round(broker, args.count, sync_count, results[broker.name], run % 2 == 0)
            print(
                f"run {run + 1}/{args.runs} {broker.name}: {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )

    header = (
        f"{'broker':<9} {'delivery':<14} {'workload':<40} "
        f"{'jmslike':>9} {'raw':>9} {'ratio':>6}  note"
    )
    print(
        f"\n{args.count:,} x 1 KiB per workload, prefetch {args.prefetch}, "
        f"median msg/s of {args.runs} run(s)\n"
    )
    print(header)
    print("-" * len(header))
    report: dict[str, Any] = {
        "count": args.count,
        "sync_count": sync_count,
        "prefetch": args.prefetch,
        "runs": args.runs,
        "lines": [],
        "failures": [],
    }
    below = 0
    for broker in brokers:
        for persistent in (False, True):
            s = results[broker.name][persistent]
            lines = [
                ("send / raw pipelined", s.jms_send, s.raw_pipelined, not persistent),
                ("send / raw sync (receipt each)", s.jms_send, s.raw_sync, persistent),
                *(
                    [("send / raw, jmslike's headers", s.jms_send, s.raw_jms_headers, True)]
                    if not persistent
                    else []
                ),
                ("recv CLIENT_ACK / raw ack in listener", s.jms_client, s.raw_receive, True),
                ("recv CLIENT_ACK / raw hand-off + ack", s.jms_client, s.raw_handoff, True),
                ("recv AUTO_ACK / raw ack in listener", s.jms_auto, s.raw_receive, True),
                ("recv AUTO_ACK / raw hand-off + ack", s.jms_auto, s.raw_handoff, True),
            ]
            for label, jms_runs, raw_runs, compared in lines:
                jms, raw = _median(jms_runs), _median(raw_runs)
                ratio = jms / raw if jms and raw else None
                if not compared:
                    note = (
                        "by design: jmslike waits for a receipt on each persistent send"
                        if persistent
                        else "jmslike does less: no receipt per message"
                    )
                elif ratio is None:
                    note = "FAILED"
                    below += 1
                elif ratio < 0.9:
                    note = "BELOW 0.9"
                    below += 1
                else:
                    note = "ok"
                delivery = "persistent" if persistent else "non-persistent"
                print(
                    f"{broker.name:<9} {delivery:<14} {label:<40} {_fmt(jms):>9} "
                    f"{_fmt(raw):>9} {(f'{ratio:.2f}' if ratio else '-'):>6}  {note}"
                )
                report["lines"].append(
                    {
                        "broker": broker.name,
                        "persistent": persistent,
                        "workload": label,
                        "jmslike_msg_per_s": round(jms) if jms else None,
                        "raw_msg_per_s": round(raw) if raw else None,
                        "ratio": round(ratio, 3) if ratio else None,
                        "target_applies": compared,
                        "jmslike_samples": [round(x) for x in jms_runs],
                        "raw_samples": [round(x) for x in raw_runs],
                    }
                )
            report["failures"].extend(s.failures)
    print(
        "\nratio = jmslike / raw; target >= 0.9 on like-for-like lines "
        f"({below} below or failed). Samples per run: jmslike send 2, CLIENT 1, AUTO 1;"
        " raw pipelined 1, sync 1, listener 1, hand-off 1."
    )
    if report["failures"]:
        print(f"{len(report['failures'])} workload(s) failed; tracebacks on stderr")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
