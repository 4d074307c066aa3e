"""What a STOMP ACK costs the broker: one ACK per message against one for many.

jmslike acknowledges every message over STOMP with its own ACK frame
(``ack:client-individual``), as raw stomp.py's documented receive loop does, since
`client-individual` is the only STOMP mode in which a consumer may finish its messages
out of order (RabbitMQ's client gate parks a grouped message while later ones go on,
ORD-16). ``ack:client`` acknowledges cumulatively: one ACK covers every earlier message
of the subscription. This script measures what that would save, on each broker, so that
the lever is known by its size before anyone builds it:

* ``individual``: raw stomp.py, ``ack:client-individual``, ``conn.ack`` per message in
  stomp.py's listener (the baseline of ``jmslike bench``);
* ``cumulative``: raw stomp.py, ``ack:client``, ``conn.ack`` on every ``--every``-th
  message and the last (what a consumer that finishes in order could write);
* ``jmslike``: a ``receive()`` loop in AUTO_ACKNOWLEDGE with the same prefetch.

Each run sends ``--count`` x 1 KiB messages (raw stomp.py, pipelined) to a fresh queue,
then times the receive from subscribing until the broker confirms the UNSUBSCRIBE (raw)
or the consumer is closed (jmslike). Reported per line, medians of ``--runs``: msg/s,
this process's CPU time per message, and the broker's (the process that listens on the
URL's port, read from ``/proc``; "-" where it cannot be read). The three kinds alternate
within each run, so drift on a shared machine hits them alike.

    python benchmarks/stomp_acks.py [--brokers rabbitmq,activemq,artemis] [--count N]
                                    [--runs R] [--prefetch P] [--every K]

Broker URLs come from the environment (``JMSLIKE_TEST_<BROKER>_STOMP_URL``), else from
``.brokers/brokers.env`` (written by ``scripts/brokers.sh start``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder comes first on sys.path; benchmarks/stomp.py would then
# shadow the stomp.py library.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from jmslike import Session
from jmslike_bench.cpu import cpu_of, listening_pid, own_cpu
from jmslike_bench.env import delete_rabbitmq_queue, stomp_urls
from jmslike_bench.runners.raw_stomp import (
    Broker,
    _unsubscribe,
    declare,
    raw_connection,
    raw_receive,
    raw_send,
)

BROKERS = ("rabbitmq", "activemq", "artemis")
KINDS = ("individual", "cumulative", "jmslike")
IDLE = 30.0
"""Seconds a receive may take before a run fails."""


def cumulative_receive(broker: Broker, queue: str, count: int, every: int) -> float:
    """msg/s: ``ack:client``, an ACK on every ``every``-th message and on the last."""
    done = threading.Event()
    seen = 0
    with raw_connection(broker) as (conn, listener):

        def on_message(frame: object) -> None:
            nonlocal seen
            seen += 1
            if seen % every == 0 or seen == count:
                conn.ack(frame.headers["ack"])  # type: ignore[attr-defined]
            if seen == count:
                done.set()

        listener.handler = on_message
        started = time.perf_counter()
        conn.subscribe(
            broker.destination(queue), id="bench", ack="client", headers=broker.subscribe_headers()
        )
        if not done.wait(IDLE):
            raise RuntimeError(f"cumulative: received {seen} of {count}")
        _unsubscribe(conn, listener, "bench")
        return count / (time.perf_counter() - started)


def jmslike_receive(broker: Broker, queue: str, count: int) -> float:
    """msg/s: a receive() loop, AUTO_ACKNOWLEDGE, the broker's prefetch set as raw's."""
    with broker.factory().create_connection() as connection:
        session = connection.create_session(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.create_consumer(session.create_queue(queue))
        connection.start()
        started = time.perf_counter()
        for index in range(count):
            if consumer.receive(IDLE) is None:
                raise RuntimeError(f"jmslike: received {index} of {count}")
        consumer.close()
        return count / (time.perf_counter() - started)


@dataclass
class Line:
    rates: list[float]
    client_us: list[float]
    broker_us: list[float]


def measure(
    broker: Broker, pid: int | None, count: int, receive: Callable[[str, int], float], line: Line
) -> None:
    """One run of one kind on a fresh, filled queue."""
    queue = f"bench-acks-{uuid.uuid4().hex[:10]}"
    declare(broker, queue)
    raw_send(broker, queue, count, persistent=False, sync=False)
    try:
        time.sleep(0.5)  # let the broker settle what the sends left it to do
        own, theirs = own_cpu(), cpu_of(pid)
        line.rates.append(receive(queue, count))
        line.client_us.append((own_cpu() - own) / count * 1e6)
        after = cpu_of(pid)
        if theirs is not None and after is not None:
            line.broker_us.append((after - theirs) / count * 1e6)
    finally:
        if broker.name == "rabbitmq":
            delete_rabbitmq_queue(queue)


def run_broker(broker: Broker, count: int, runs: int, every: int) -> dict[str, Line]:
    """Every kind ``runs`` times on ``broker``, alternating, after a warm-up."""
    pid = listening_pid(broker.parsed.port or 61613)
    kinds: dict[str, Callable[[str, int], float]] = {
        "individual": lambda queue, n: raw_receive(broker, queue, n),
        "cumulative": lambda queue, n: cumulative_receive(broker, queue, n, every),
        "jmslike": lambda queue, n: jmslike_receive(broker, queue, n),
    }
    lines = {kind: Line([], [], []) for kind in KINDS}
    measure(broker, pid, min(count, 5_000), kinds["jmslike"], Line([], [], []))  # warm-up
    for run in range(runs):
        for kind in KINDS if run % 2 == 0 else KINDS[::-1]:
            measure(broker, pid, count, kinds[kind], lines[kind])
    return lines


def _median(values: list[float], form: str) -> str:
    return form.format(statistics.median(values)) if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", default=",".join(BROKERS))
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--prefetch", type=int, default=100)
    parser.add_argument("--every", type=int, default=16, help="messages per cumulative ACK")
    args = parser.parse_args(argv)
    urls = stomp_urls(args.brokers, BROKERS)
    print(
        f"{args.count:,} x 1 KiB non-persistent, prefetch {args.prefetch}, cumulative ACK "
        f"every {args.every}, medians of {args.runs}"
    )
    print(f"{'broker':10} {'kind':11} {'msg/s':>9} {'client µs/msg':>14} {'broker µs/msg':>14}")
    for name, url in urls.items():
        lines = run_broker(Broker(name, url, args.prefetch), args.count, args.runs, args.every)
        for kind, line in lines.items():
            print(
                f"{name:10} {kind:11} {_median(line.rates, '{:,.0f}'):>9} "
                f"{_median(line.client_us, '{:.1f}'):>14} {_median(line.broker_us, '{:.1f}'):>14}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
