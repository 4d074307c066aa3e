"""Four grouped listeners over STOMP: where the time goes against raw stomp.py.

``jmslike bench``'s ``groups-4`` line on ActiveMQ Classic over STOMP (tuned, prefetch
100) has read 13,000-19,000 msg/s against raw stomp.py's 32,000-37,000, while the same
sessions on an ungrouped queue reach 36,000-42,000. The bench's raw line and jmslike's
differ in two ways besides the library: raw stomp.py opens a connection per consumer, and
it ACKs each message in stomp.py's receiving thread, as the frame arrives; a JMS session
runs its listener on a thread of its own, so a message waits in the session's buffer
first (and the broker counts it against the consumer's prefetch meanwhile). This script
takes the two apart, on one fresh queue per run filled with ``--count`` x 1 KiB
messages (raw stomp.py, pipelined), in ``--groups`` groups round-robin or none:

* ``raw``: raw stomp.py as ``jmslike bench`` runs it: four connections, ACK in the
  listener;
* ``raw-threads``: raw stomp.py on one connection, four subscriptions, each handing its
  frames to a thread of its own that ACKs them (what a JMS session's listener thread
  does);
* ``jmslike``: four listener sessions on one connection (``jmslike bench``'s line);
* ``jmslike-4conn``: the same sessions, one connection each;
* ``container``: ``MessageListenerContainer(concurrency=4)`` (its sessions share one
  subscription, jmslike/_feed.py).

Per line, medians of ``--runs``: msg/s from subscribing to the last message, and the
busiest consumer's share of the messages against an even share (1.00: the broker spread
the groups evenly; 1.40: one consumer had 40% more than a quarter, and the others idled
while it finished). The kinds alternate within each run.

    python benchmarks/stomp_groups.py [--brokers activemq,artemis,rabbitmq] [--count N]
                                      [--groups G] [--runs R] [--prefetch P]

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
import contextlib
import queue as queues
import statistics
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from jmslike import Message, MessageListenerContainer
from jmslike_bench.env import delete_rabbitmq_queue, quiet_partition_advice, stomp_urls
from jmslike_bench.runners.base import Countdown
from jmslike_bench.runners.raw_stomp import (
    Broker,
    _subscribe_client_individual,
    _unsubscribe,
    declare,
    raw_connection,
    raw_send,
)

BROKERS = ("activemq", "artemis", "rabbitmq")
KINDS = ("raw", "raw-threads", "jmslike", "jmslike-4conn", "container")
CONSUMERS = 4

Result = tuple[float, Counter[str]]
"""(msg/s, messages per consumer)."""


class Tally(Countdown):
    """A countdown (fails when nothing arrives for a while) that also counts the messages
    of each consumer."""

    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.per: Counter[str] = Counter()
        self._per_lock = threading.Lock()

    def tick_for(self, consumer: str) -> None:
        with self._per_lock:
            self.per[consumer] += 1
        self.tick()


def raw_four_connections(broker: Broker, queue: str, count: int) -> Result:
    tally = Tally(count)
    with contextlib.ExitStack() as stack:
        opened = [stack.enter_context(raw_connection(broker)) for _ in range(CONSUMERS)]
        started = time.perf_counter()
        for index, (conn, listener) in enumerate(opened):

            def on_message(frame: Any, conn: Any = conn, name: str = f"c{index}") -> None:
                conn.ack(frame.headers["ack"])
                tally.tick_for(name)

            listener.handler = on_message
            _subscribe_client_individual(conn, broker, queue, "bench")
        tally.wait("raw")
        elapsed = time.perf_counter() - started
        for conn, listener in opened:
            _unsubscribe(conn, listener, "bench")
        return count / elapsed, tally.per


def raw_threads(broker: Broker, queue: str, count: int) -> Result:
    tally = Tally(count)
    subs = [f"s{index}" for index in range(CONSUMERS)]
    inboxes: dict[str, queues.SimpleQueue[Any]] = {sub: queues.SimpleQueue() for sub in subs}
    with raw_connection(broker) as (conn, listener):

        def work(sub: str) -> None:
            while (frame := inboxes[sub].get()) is not None:
                conn.ack(frame.headers["ack"])
                tally.tick_for(sub)

        listener.handler = lambda frame: inboxes[frame.headers["subscription"]].put(frame)
        workers = [threading.Thread(target=work, args=(sub,), daemon=True) for sub in subs]
        for worker in workers:
            worker.start()
        started = time.perf_counter()
        for sub in subs:
            _subscribe_client_individual(conn, broker, queue, sub)
        try:
            tally.wait("raw-threads")
        finally:
            for sub in subs:
                inboxes[sub].put(None)
        elapsed = time.perf_counter() - started
        for sub in subs:
            _unsubscribe(conn, listener, sub)
        return count / elapsed, tally.per


def jmslike_sessions(broker: Broker, queue: str, count: int, connections: int) -> Result:
    tally = Tally(count)
    factory = broker.factory()
    opened = [factory.create_connection() for _ in range(connections)]
    try:
        started = time.perf_counter()
        for index in range(CONSUMERS):
            session = opened[index % connections].create_session()
            consumer = session.create_consumer(session.create_queue(queue))
            consumer.set_message_listener(
                lambda message, name=f"c{index}": tally.tick_for(name)  # type: ignore[misc]
            )
        for connection in opened:
            connection.start()
        tally.wait("jmslike")
        return count / (time.perf_counter() - started), tally.per
    finally:
        for connection in opened:
            connection.close()


def container(broker: Broker, queue: str, count: int) -> Result:
    tally = Tally(count)

    def handle(message: Message) -> None:
        tally.tick_for(threading.current_thread().name)

    started = time.perf_counter()
    with MessageListenerContainer(
        broker.factory(), f"queue://{queue}", handle, concurrency=CONSUMERS
    ):
        tally.wait("container")
        elapsed = time.perf_counter() - started
    return count / elapsed, tally.per


def busiest_share(per: Counter[str], count: int) -> float:
    """The busiest consumer's messages over an even share of ``count``."""
    return max(per.values(), default=0) / (count / CONSUMERS)


def measure(broker: Broker, kind: Callable[[str, int], Result], count: int, groups: int) -> Result:
    queue = f"bench-groups-{uuid.uuid4().hex[:10]}"
    declare(broker, queue)
    raw_send(broker, queue, count, persistent=False, sync=False, groups=groups)
    try:
        time.sleep(0.5)  # let the broker settle what the sends left it to do
        return kind(queue, count)
    finally:
        if broker.name == "rabbitmq":
            delete_rabbitmq_queue(queue)


def run_broker(
    broker: Broker, count: int, groups: int, runs: int
) -> dict[str, list[tuple[float, float]]]:
    """Every kind ``runs`` times, alternating, after a warm-up: (msg/s, busiest share)."""
    kinds: dict[str, Callable[[str, int], Result]] = {
        "raw": lambda queue, n: raw_four_connections(broker, queue, n),
        "raw-threads": lambda queue, n: raw_threads(broker, queue, n),
        "jmslike": lambda queue, n: jmslike_sessions(broker, queue, n, 1),
        "jmslike-4conn": lambda queue, n: jmslike_sessions(broker, queue, n, CONSUMERS),
        "container": lambda queue, n: container(broker, queue, n),
    }
    measure(broker, kinds["jmslike"], min(count, 5_000), groups)  # warm-up
    lines: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    for run in range(runs):
        for kind in KINDS if run % 2 == 0 else KINDS[::-1]:
            rate, per = measure(broker, kinds[kind], count, groups)
            lines[kind].append((rate, busiest_share(per, count)))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", default="activemq")
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=1_000, help="0: no groups")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--prefetch", type=int, default=100)
    args = parser.parse_args(argv)
    for name, value in (("count", args.count), ("runs", args.runs), ("prefetch", args.prefetch)):
        if value < 1:
            parser.error(f"--{name} {value}: need at least 1")
    if args.groups < 0:
        parser.error(f"--groups {args.groups}: need 0 (no groups) or more")
    urls = stomp_urls(args.brokers, BROKERS)
    quiet_partition_advice()  # this process is the queue's only consumer
    print(
        f"{args.count:,} x 1 KiB non-persistent, {args.groups:,} groups, {CONSUMERS} consumers, "
        f"prefetch {args.prefetch}, medians of {args.runs} (runs: msg/s / busiest share)"
    )
    print(f"{'broker':10} {'kind':14} {'msg/s':>9} {'busiest':>8}  runs")
    for name, url in urls.items():
        lines = run_broker(Broker(name, url, args.prefetch), args.count, args.groups, args.runs)
        for kind, samples in lines.items():
            rate = statistics.median(s[0] for s in samples)
            share = statistics.median(s[1] for s in samples)
            each = ", ".join(f"{r:,.0f} / {s:.2f}" for r, s in samples)
            print(f"{name:10} {kind:14} {rate:>9,.0f} {share:>8.2f}  {each}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
