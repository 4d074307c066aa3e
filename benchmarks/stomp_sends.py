"""A STOMP send loop: jmslike holding SENDs for company, each written alone, and raw stomp.py.

A SEND nobody waits for (non-persistent) that follows the previous one within 0.1 ms is
held in jmslike's outbox and written with others (``sendBatch``, 16 by default,
docs/providers.md). Artemis and RabbitMQ set ``TCP_NODELAY``, and so does jmslike
there, so a loop that writes each frame alone makes a packet a message, which the broker
reads alone. Three kinds, alternating within each run:

* ``jmslike``: ``MessageProducer.send`` with factory defaults;
* ``unbatched``: the same with ``sendBatch=0`` (each SEND written before ``send``
  returns, as before 2026-11-30);
* ``raw``: raw stomp.py sending the same frames (jmslike's JMS headers, made per
  message as jmslike makes them; text without ``content-length`` where jmslike sends it
  so), pipelined, with stomp.py's Nagle left on.

Each run sends ``--count`` x 1 KiB non-persistent messages to a fresh queue, timed until
the connection's close (jmslike: its DISCONNECT receipt) or the last message's receipt
(raw), then empties the queue (a receive, untimed; RabbitMQ: deleted) so that a broker's
heap never holds more than one run. Reported per kind, medians of ``--runs``: msg/s,
this process's CPU time per message, and the broker's (the process that listens on the
URL's port, read from ``/proc``; "-" where it cannot be read).

    python benchmarks/stomp_sends.py [--brokers artemis,rabbitmq,activemq] [--count N]
                                     [--runs R]

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
import time
import uuid
from collections.abc import Callable

from jmslike import ConnectionFactory, DeliveryMode
from jmslike_bench.cpu import cpu_of, listening_pid, own_cpu
from jmslike_bench.env import delete_rabbitmq_queue, stomp_urls
from jmslike_bench.runners.raw_stomp import BODY, Broker, declare, raw_receive, raw_send

BROKERS = ("artemis", "rabbitmq", "activemq")
KINDS = ("jmslike", "unbatched", "raw")


def jmslike_send(url: str, queue: str, count: int) -> float:
    """msg/s of a send loop, until the connection's close confirms the last."""
    connection = ConnectionFactory(url).create_connection()
    try:
        session = connection.create_session()
        producer = session.create_producer(session.create_queue(queue))
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        started = time.perf_counter()
        for _ in range(count):
            producer.send(session.create_text_message(BODY))
        connection.close()
        return count / (time.perf_counter() - started)
    finally:
        connection.close()


def run_broker(broker: Broker, count: int, runs: int) -> dict[str, list[tuple[float, ...]]]:
    """Every kind ``runs`` times, alternating, after a warm-up: (msg/s, client µs, broker
    µs or -1) per run."""
    pid = listening_pid(broker.parsed.port or 61613)
    unbatched = broker.url + ("&" if "?" in broker.url else "?") + "sendBatch=0"
    kinds: dict[str, Callable[[str, int], float]] = {
        "jmslike": lambda queue, n: jmslike_send(broker.url, queue, n),
        "unbatched": lambda queue, n: jmslike_send(unbatched, queue, n),
        "raw": lambda queue, n: raw_send(broker, queue, n, False, False, jms_headers=True),
    }
    lines: dict[str, list[tuple[float, ...]]] = {kind: [] for kind in KINDS}
    for run in range(runs + 1):  # run 0 warms the broker and both clients up
        for kind in KINDS if run % 2 else KINDS[::-1]:
            queue = f"bench-sends-{uuid.uuid4().hex[:10]}"
            declare(broker, queue)
            own, theirs = own_cpu(), cpu_of(pid)
            rate = kinds[kind](queue, count)
            client = (own_cpu() - own) / count * 1e6
            after = cpu_of(pid)
            used = (after - theirs) / count * 1e6 if after is not None and theirs else -1.0
            if broker.name == "rabbitmq":
                delete_rabbitmq_queue(queue)
            else:
                raw_receive(broker, queue, count)
            if run:
                lines[kind].append((rate, client, used))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", default=",".join(BROKERS))
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    urls = stomp_urls(args.brokers, BROKERS)
    print(f"{args.count:,} x 1 KiB non-persistent sends, medians of {args.runs}")
    print(f"{'broker':10} {'kind':10} {'msg/s':>9} {'client µs/msg':>14} {'broker µs/msg':>14}")
    for name, url in urls.items():
        for kind, rows in run_broker(Broker(name, url, 100), args.count, args.runs).items():
            rate, client, used = (statistics.median(column) for column in zip(*rows, strict=True))
            shown = f"{used:.1f}" if used >= 0 else "-"
            print(f"{name:10} {kind:10} {rate:>9,.0f} {client:>14.1f} {shown:>14}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
