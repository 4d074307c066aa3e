"""Transacted persistent sends: jmslike's ``commit()`` beside the raw library giving the
same guarantee, in one run, as a ratio.

Each run sends 1 KiB persistent TextMessages (300, or 30 commits' worth if more) to a
fresh durable queue, committing every ``--every`` messages, timed from the first send
to the last commit's return (the connection's set-up untimed); jmslike and raw
alternate, medians of ``--runs``. What "the same guarantee" means, per route (a commit
that returned has stored every send of its transaction):

* jmslike: factory defaults, a ``SESSION_TRANSACTED`` session, ``commit()``.
* raw stomp.py: BEGIN, the SENDs with the transaction header, COMMIT with a RECEIPT
  waited for, with ``TCP_NODELAY`` set as jmslike sets it. On RabbitMQ every SEND also
  asks for a RECEIPT, all waited for: RabbitMQ answers a COMMIT before its queue has
  stored the sends (a ``kill -9`` then lost them all,
  ``tests/integration/test_commit_survives_broker_kill.py``), and only a SEND's RECEIPT
  says it was stored.
* raw Proton on ActiveMQ Classic and Artemis: a declared transaction (the coordinator),
  its transfers, a discharge waited for.
* raw Proton on RabbitMQ, which has no transaction coordinator: the batch's transfers
  unsettled, all made at once, every outcome waited for before the next batch (what
  jmslike's kept sends do at a commit).

    python benchmarks/transacted.py [--targets embedded,rabbitmq/stomp,...] \\
        [--every 1,100] [--runs 3] [--count N]

The embedded broker (``--targets embedded``, not in the default list) has a jmslike
column only.

Broker URLs come from the environment (``JMSLIKE_TEST_<BROKER>_<PROTOCOL>_URL``), else
from ``.brokers/brokers.env`` (written by ``scripts/brokers.sh start``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder comes first on sys.path; benchmarks/stomp.py would then
# shadow the stomp.py library.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import socket
import statistics
import subprocess
import threading
import time
import urllib.parse
import uuid
from typing import Any

from jmslike import ConnectionFactory, Session
from jmslike_bench.env import TARGETS, delete_queue, target_url
from jmslike_bench.runners.raw_stomp import BODY, TIMEOUT, Broker, declare, raw_connection

BROKER_TARGETS = tuple(target for target in TARGETS if target != "embedded")


def count_for(every: int) -> int:
    """Enough commits to time (300 of one message), at least 30 of a bigger batch."""
    return max(300, every * 30)


def jmslike_run(url: str, queue: str, count: int, every: int) -> float:
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(True, Session.SESSION_TRANSACTED)
        producer = session.create_producer(f"queue://{queue}")
        started = time.perf_counter()
        for index in range(count):
            producer.send(session.create_text_message(BODY))
            if (index + 1) % every == 0 or index == count - 1:
                session.commit()
        return count / (time.perf_counter() - started)


def raw_stomp_run(broker: Broker, queue: str, count: int, every: int) -> float:
    destination = broker.destination(queue)
    each_stored = broker.name == "rabbitmq"
    with raw_connection(broker) as (conn, listener):
        # stomp.py leaves Nagle's algorithm on: BEGIN, SEND and COMMIT as three writes
        # then wait for the broker's delayed TCP acknowledgement (23 commits a second
        # on RabbitMQ here). jmslike sets TCP_NODELAY; so does the raw side.
        conn.transport.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        started = time.perf_counter()
        index = 0
        while index < count:
            tx = conn.begin()
            pending: list[threading.Event] = []
            for _ in range(min(every, count - index)):
                headers = {**broker.jms_headers(True, index), "transaction": tx}
                if each_stored:
                    pending.append(listener.expect(f"s{index}"))
                    conn.send(destination, BODY, headers=headers, receipt=f"s{index}")
                else:
                    conn.send(destination, BODY, headers=headers)
                index += 1
            pending.append(listener.expect(f"c{index}"))
            conn.commit(tx, receipt=f"c{index}")
            for event in pending:
                if not event.wait(TIMEOUT) or listener.errors:
                    raise RuntimeError(f"raw stomp.py: {listener.errors or 'no receipt'}")
        return count / (time.perf_counter() - started)


def raw_proton_run(url: str, broker: str, queue: str, count: int, every: int) -> float:
    """In a child process: two Proton containers in one process (jmslike's and this one)
    have crashed the interpreter here (docs/performance.md)."""
    command = [sys.executable, __file__, "--raw-proton", url, broker, queue, str(count), str(every)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"raw proton: {done.stderr.strip()[-500:]}")
    return float(done.stdout.split()[-1])


def _proton_child(url: str, broker: str, queue: str, count: int, every: int) -> None:
    import proton
    from proton.handlers import MessagingHandler, TransactionHandler
    from proton.reactor import Container

    from jmslike_bench.runners.raw_proton import address_of, node_options

    parsed = urllib.parse.urlsplit(url)
    user = urllib.parse.unquote(parsed.username) if parsed.username else None
    password = urllib.parse.unquote(parsed.password) if parsed.password else None
    address, options = address_of(broker, queue), node_options(broker)
    kept = broker == "rabbitmq"

    class Job(MessagingHandler, TransactionHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(auto_settle=True)
            self.done = self.answered = self.batch = 0
            self.started = self.finished = 0.0
            self.sender: Any = None

        def on_start(self, event: Any) -> None:
            self.container = event.container
            self.connection = self.container.connect(
                url=f"amqp://{parsed.hostname}:{parsed.port}",
                user=user,
                password=password,
                allowed_mechs="PLAIN" if user else "ANONYMOUS",
                reconnect=False,
            )
            self.sender = self.container.create_sender(self.connection, address, options=options)
            self.started = time.perf_counter()
            self._next()

        def _next(self) -> None:
            if self.done >= count:
                self.finished = time.perf_counter()
                self.connection.close()
            elif kept:
                self.batch, self.answered = min(every, count - self.done), 0
                for _ in range(self.batch):
                    self.sender.send(proton.Message(body=BODY, durable=True))
            else:
                self.container.declare_transaction(self.connection, handler=self)

        def on_accepted(self, event: Any) -> None:
            if kept:
                self.answered += 1
                if self.answered == self.batch:
                    self.done += self.batch
                    self._next()

        def on_rejected(self, event: Any) -> None:
            raise RuntimeError(f"rejected: {event.delivery.remote.condition}")

        def on_transaction_declared(self, event: Any) -> None:
            self.batch = min(every, count - self.done)
            for _ in range(self.batch):
                event.transaction.send(self.sender, proton.Message(body=BODY, durable=True))
            event.transaction.commit()

        def on_transaction_committed(self, event: Any) -> None:
            self.done += self.batch
            self._next()

        def on_transaction_declare_failed(self, event: Any) -> None:
            raise RuntimeError("transaction declare failed")

        def on_transaction_commit_failed(self, event: Any) -> None:
            raise RuntimeError("commit failed")

    job = Job()
    Container(job).run()
    if not job.finished:
        raise SystemExit("raw proton: ended before the work was done")
    print(f"{count / (job.finished - job.started):.1f}")


def measure(target: str, every: int, count: int, runs: int) -> tuple[float, float | None]:
    """Medians of jmslike's and the raw library's msg/s (None on the embedded broker,
    which has no library of its own)."""
    url = target_url(target)
    broker, _, protocol = target.partition("/")
    ours: list[float] = []
    raws: list[float] = []
    for _ in range(runs):
        for side in ("jmslike", "raw") if protocol else ("jmslike",):
            queue = f"bench-tx-{uuid.uuid4().hex[:8]}"
            if protocol == "stomp":
                stomp_broker = Broker(broker, url, 1)
                declare(stomp_broker, queue)
            if side == "jmslike":
                ours.append(jmslike_run(url, queue, count, every))
            elif protocol == "stomp":
                raws.append(raw_stomp_run(stomp_broker, queue, count, every))
            else:
                raws.append(raw_proton_run(url, broker, queue, count, every))
            delete_queue(broker, queue)
    return statistics.median(ours), statistics.median(raws) if raws else None


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--raw-proton":
        url, broker, queue, count, every = sys.argv[2:7]
        _proton_child(url, broker, queue, int(count), int(every))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default=",".join(BROKER_TARGETS))
    parser.add_argument("--every", default="1,100", help="commit every N messages (list)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, help="messages a run (default: count_for)")
    args = parser.parse_args()
    print(f"{'target':16}{'every':>6}{'msgs':>7}{'jmslike msg/s':>15}{'raw msg/s':>11}{'ratio':>7}")
    for target in args.targets.split(","):
        for every in (int(n) for n in args.every.split(",")):
            count = args.count or count_for(every)
            ours, raw = measure(target, every, count, args.runs)
            raw_text, ratio = ("-", "-") if raw is None else (f"{raw:,.0f}", f"{ours / raw:.2f}")
            print(f"{target:16}{every:6}{count:7}{ours:15,.0f}{raw_text:>11}{ratio:>7}", flush=True)


if __name__ == "__main__":
    main()
