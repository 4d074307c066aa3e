"""A broker stopped, restarted and killed under load: what jmslike promises still holds.

Each test owns one broker of a second set (tests/restartable.py: moved ports, a state dir
of its own; the shared brokers are never touched). On it, one scenario per route (STOMP
through a ``failover:(...)`` URL, AMQP 1.0 through an application reconnect loop) runs at
the same time, each on a queue of its own: a producer sends persistent messages in
ordering groups, ``"<group>:<n>"``, while a CLIENT_ACKNOWLEDGE consumer and a transacted
consumer take them. At a third of the sends the broker is stopped and started on its
store (``scripts/brokers.sh restart``), at two thirds it is killed with ``kill -9`` and
started again.

Checked with jmslike.testing.ordercheck, per route:

* lost: every send that returned was processed (its acknowledgement or commit went
  through, or was in doubt and the message never came again);
* unflagged duplicates: a message processed twice came the second time flagged
  redelivered;
* misordered: the first processing of each group's messages follows send order, and no
  two messages of a group were in progress at once.

A send that raised (in flight when the broker went) may or may not have been stored; the
test never sends it again, and the checks above cover it if it arrives. The producer
waits at each mark until the outage begins and sends 10 messages a second while it
lasts, so that every outage falls mid-stream.

One exception, counted apart (``unflagged_after_crash``) and not failed: an unflagged
copy of a message whose first processing was acknowledged or committed while the broker
was being killed. The broker confirmed, or never received, that acknowledgement and
lost the delivery with the crash; neither it nor jmslike, which forgets acknowledged
messages, can flag the copy (docs/reliability.md has the evidence). The second set runs
with ``JMSLIKE_BROKERS_DURABLE_REDELIVERY=1`` (scripts/brokers.sh): without it Classic and
Artemis forget every delivery on a restart, and a copy after a graceful restart comes
unflagged too.

The figures (sent, confirmed, received, lost, ..., the time until the route sent and
consumed again) are printed (``-s``) and written as JSON to ``broker-restart.json`` in
pytest's base temp dir, or to ``$JMSLIKE_RESTART_REPORT``, every logged delivery beside
it; docs/reliability.md holds a run's.

Scale: ``JMSLIKE_RESTART_MESSAGES`` (2,000) in ``JMSLIKE_RESTART_GROUPS`` (20) groups,
sent at ``JMSLIKE_RESTART_RATE`` messages a second (250); benchmarks/broker_restart.py runs
10,000 in 100 groups.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from restartable import RestartableBrokers, url_in

import jmslike
from jmslike import ConnectionFactory, Session
from jmslike.testing.ordercheck import problems

log = logging.getLogger("jmslike.tests.broker_restart")

MESSAGES = int(os.environ.get("JMSLIKE_RESTART_MESSAGES", "2000"))
GROUPS = int(os.environ.get("JMSLIKE_RESTART_GROUPS", "20"))
RATE = float(os.environ.get("JMSLIKE_RESTART_RATE", "250"))
DRAIN_IDLE = 20.0
"""Seconds without a new delivery, after the producer finished, that end a scenario."""
SENDING_S = MESSAGES / RATE
"""How long the sends take without outages; the waits below grow with it."""
OUTAGE_RATE = 10.0
"""Messages a second while the broker is being stopped, killed or started."""
RECONNECT_FOR = 180.0
"""How long an application reconnect loop keeps trying before it gives up."""


@dataclass(frozen=True)
class Route:
    """How a scenario reaches the broker: the URL it builds from the set's brokers.env,
    and whether the application reconnects itself (no failover URL for the protocol)."""

    name: str
    url: Callable[[dict[str, str], str], str]
    app_reconnect: bool


def _stomp_failover(env: dict[str, str], broker: str) -> str:
    return f"failover:({url_in(env, broker, 'stomp')})?reconnectDelay=0.1&maxReconnectDelay=1"


def _amqp(env: dict[str, str], broker: str) -> str:
    return url_in(env, broker, "amqp")


def _amqp_failover(env: dict[str, str], broker: str) -> str:
    return f"failover:({_amqp(env, broker)})?reconnectDelay=0.1&maxReconnectDelay=1"


ROUTES = [
    Route("stomp-failover", _stomp_failover, app_reconnect=False),
    Route("amqp-reconnect", _amqp, app_reconnect=True),
    Route("amqp-failover", _amqp_failover, app_reconnect=False),
]

BROKERS = [
    pytest.param(
        name,
        id=name,
        marks=[getattr(pytest.mark, name), pytest.mark.stomp, pytest.mark.amqp, pytest.mark.slow],
    )
    for name in ("activemq", "rabbitmq", "artemis")
]


@dataclass
class Event:
    """One outage: what was done, when (monotonic), and how long until it answered."""

    kind: str
    start: float
    down_s: float = 0.0


@dataclass
class Scenario:
    """One route's producer and consumers on one queue, and what they logged."""

    route: Route
    url: str
    queue: str = field(default_factory=lambda: f"queue://restart-{uuid.uuid4().hex[:10]}")
    confirmed: list[str] = field(default_factory=list)
    raised: list[str] = field(default_factory=list)
    send_errors: list[str] = field(default_factory=list)
    """The type of each send's exception: which error tells the application."""
    records: list[dict[str, Any]] = field(default_factory=list)
    send_ok_at: list[float] = field(default_factory=list)
    reconnects: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    producer_done: threading.Event = field(default_factory=threading.Event)
    at_mark: threading.Event = field(default_factory=threading.Event)
    """Set while the producer waits at a third or two thirds of its sends for the event."""
    go_on: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    outage: threading.Event = field(default_factory=threading.Event)
    """Set from the start of a stop or kill until the broker answers again: the producer
    slows down to OUTAGE_RATE, so that it is still sending when the broker goes (a
    graceful RabbitMQ stop takes 10 s) and when it is back."""
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def factory(self) -> ConnectionFactory:
        return ConnectionFactory(self.url, request_timeout=60.0)

    def connect(self, who: str, setup: Callable[[jmslike.Connection], Any]) -> Any:
        """A connection and what ``setup`` makes on it. The first attempt must work;
        later ones (the application reconnect loop) retry until the broker is back."""
        deadline = time.monotonic() + RECONNECT_FOR
        attempt = 0
        while True:
            attempt += 1
            connection = None
            try:
                connection = self.factory().create_connection()
                made = setup(connection)
                connection.start()
                return connection, made
            except jmslike.JMSException as exc:
                if connection is not None:
                    connection.close()
                if who not in self.reconnects or time.monotonic() > deadline:
                    raise
                log.info("%s %s: connect attempt %d: %s", self.route.name, who, attempt, exc)
                time.sleep(0.2)

    def reconnected(self, who: str) -> None:
        with self.lock:
            self.reconnects[who] = self.reconnects.get(who, 0) + 1

    # -- producer --------------------------------------------------------------------

    def produce(self) -> None:
        try:
            self._produce()
        except Exception as exc:
            self.errors.append(f"producer: {exc!r}")
        finally:
            self.producer_done.set()

    def _produce(self) -> None:
        self.reconnects.setdefault("producer", 0)

        def setup(connection: jmslike.Connection) -> tuple[jmslike.Session, dict[str, Any]]:
            return connection.create_session(), {}

        connection, (session, producers) = self.connect("producer", setup)
        next_at = time.monotonic()
        marks = {MESSAGES // 3, 2 * MESSAGES // 3}
        for i in range(MESSAGES):
            if i in marks:
                # Wait for the outage to begin, so that it always falls mid-stream (a
                # slow broker stop would otherwise let the producer finish first).
                self.at_mark.set()
                if not self.go_on.acquire(timeout=300):
                    raise AssertionError(f"{self.route.name}: no outage came at send {i}")
                next_at = time.monotonic()
            group, n = f"g{i % GROUPS:03d}", i // GROUPS
            text = f"{group}:{n:06d}"
            rate = OUTAGE_RATE if self.outage.is_set() else RATE
            next_at = max(next_at + 1.0 / rate, time.monotonic() - 0.5)
            time.sleep(max(0.0, next_at - time.monotonic()))
            try:
                producer = producers.get(group)
                if producer is None:
                    producer = producers[group] = session.create_producer(self.queue)
                    producer.enable_ordering_group(group)
                producer.send(session.create_text_message(text))
            except jmslike.JMSException as exc:
                # In flight when the broker went: stored or not, the application cannot
                # know; it does not send it again (a second copy would be unflagged).
                self.raised.append(text)
                self.send_errors.append(type(exc).__name__)
                log.info("%s: send of %s raised %r", self.route.name, text, exc)
                if self.route.app_reconnect:
                    connection.close()
                    self.reconnected("producer")
                    connection, (session, producers) = self.connect("producer", setup)
                continue
            self.confirmed.append(text)
            self.send_ok_at.append(time.monotonic())
        connection.close()

    # -- consumers -------------------------------------------------------------------

    def consume(self, name: str, transacted: bool) -> None:
        try:
            self._consume(name, transacted)
        except Exception as exc:
            self.errors.append(f"consumer {name}: {exc!r}")

    def _consume(self, name: str, transacted: bool) -> None:
        self.reconnects.setdefault(name, 0)
        mode = Session.SESSION_TRANSACTED if transacted else Session.CLIENT_ACKNOWLEDGE

        def setup(connection: jmslike.Connection) -> tuple[jmslike.Session, Any]:
            session = connection.create_session(transacted, mode)
            return session, session.create_consumer(self.queue)

        connection, (session, consumer) = self.connect(name, setup)
        while not self.stop.is_set():
            record: dict[str, Any] | None = None
            try:
                message = consumer.receive(0.5)
                if message is None:
                    continue
                text = message.text
                record = {
                    "pid": name,
                    "text": text,
                    "redelivered": message.jms_redelivered,
                    "count": message.get_object_property("JMSXDeliveryCount"),
                    "start": time.monotonic(),
                }
                record["end"] = time.monotonic()  # the work: none, the checks are the point
                if transacted:
                    session.commit()
                else:
                    message.acknowledge()
                record["ok"] = True
                record["done_at"] = time.monotonic()
            except jmslike.JMSException as exc:
                if record is not None:
                    # A COMMIT or ACK written whose answer was lost: it may have taken
                    # effect. Any other error says it did not (the message comes again).
                    doubt = isinstance(
                        exc, (jmslike.TransactionInDoubtError, jmslike.AcknowledgeInDoubtError)
                    )
                    record.update(ok=False, in_doubt=doubt, error=repr(exc))
                log.info("%s %s: %r", self.route.name, name, exc)
                if self.route.app_reconnect:
                    connection.close()
                    self.reconnected(name)
                    connection, (session, consumer) = self.connect(name, setup)
                else:
                    time.sleep(0.1)  # failover reconnects by itself; calls wait for it
            finally:
                if record is not None:
                    with self.lock:
                        self.records.append(record)
        connection.close()

    def deliveries_of(self, texts: list[str], most: int = 5) -> dict[str, Any]:
        """For each of the first ``most`` texts: whether its send returned, and each of
        its deliveries (consumer, outcome, flags, error)."""
        shown: dict[str, Any] = {}
        with self.lock:
            for text in dict.fromkeys(texts):
                if len(shown) == most:
                    break
                shown[text] = {
                    "send": "returned" if text in self.confirmed else "raised",
                    "deliveries": [
                        {k: r.get(k) for k in ("pid", "ok", "in_doubt", "redelivered", "count")}
                        | ({"error": r["error"][:160]} if "error" in r else {})
                        for r in self.records
                        if r["text"] == text
                    ],
                }
        return shown

    def processed(self) -> set[str]:
        with self.lock:
            return {r["text"] for r in self.records if r.get("ok") or r.get("in_doubt")}

    def last_record_at(self) -> float:
        with self.lock:
            return max((r["start"] for r in self.records), default=0.0)

    # -- figures ---------------------------------------------------------------------

    def figures(self, events: list[Event], ups: list[float]) -> dict[str, Any]:
        found = problems(self.records, self.confirmed)
        lost = sum(int(p.split()[1].rstrip(":")) for p in found if p.startswith("lost "))
        # An unflagged copy of a message whose first processing was acknowledged while
        # the broker was being killed: the broker confirmed (or never saw) the
        # acknowledgement and forgot the delivery in the crash, so neither it nor
        # jmslike (which forgets acknowledged messages) can flag the copy. Counted
        # apart, with the evidence in the records file; docs/reliability.md.
        crash = [(e.start, up) for e, up in zip(events, ups, strict=True) if e.kind == "kill -9"]
        duplicates = crash_duplicates = 0
        for line in found:
            if "not redelivered" not in line:
                continue
            text = line.split()[0]
            first = min(
                (
                    r
                    for r in self.records
                    if r["text"] == text and (r.get("ok") or r.get("in_doubt"))
                ),
                key=lambda r: r["start"],
            )
            finished = first.get("done_at", first["end"])
            if any(start <= finished <= up for start, up in crash):
                crash_duplicates += 1
            else:
                duplicates += 1
        misordered = sum(1 for p in found if "out of order" in p or "at once" in p)
        oks = {r["text"] for r in self.records if r.get("ok")}
        recover = []
        for event, up in zip(events, ups, strict=True):
            sent = next((t for t in self.send_ok_at if t >= up), None)
            done = min(
                (r["done_at"] for r in self.records if r.get("ok") and r["done_at"] >= up),
                default=None,
            )
            recover.append(
                {
                    "event": event.kind,
                    "at": event.start,
                    "broker_down_s": round(event.down_s, 1),
                    "send_again_s": None if sent is None else round(sent - event.start, 1),
                    "consume_again_s": None if done is None else round(done - event.start, 1),
                }
            )
        raised_arrived = sum(1 for t in self.raised if t in oks)
        return {
            "route": self.route.name,
            "messages": MESSAGES,
            "groups": GROUPS,
            "sent": len(self.confirmed) + len(self.raised),
            "confirmed": len(self.confirmed),
            "send_raised": len(self.raised),
            "send_raised_received": raised_arrived,
            "send_errors": sorted(set(self.send_errors)),
            "received": len(self.processed()),
            "deliveries": len(self.records),
            "redelivered": sum(1 for r in self.records if r["redelivered"]),
            "lost": lost,
            "unflagged_duplicates": duplicates,
            "unflagged_after_crash": crash_duplicates,
            "misordered": misordered,
            "reconnects": dict(self.reconnects),
            "recover": recover,
            "problems": found[:20],
            "errors": self.errors,
            "records": sorted(self.records, key=lambda r: r["start"]),
        }


BACKLOG = 20
"""Persistent messages left per protocol on a queue of its own, with no consumer, before
the outages (RabbitMQ only, where a queue is declared by the client that first uses it):
all must be there afterwards. Over AMQP 1.0 jmslike declared such a queue non-durable
until 2026-12-01 (as Qpid JMS does), and a graceful restart lost all 20 (STOMP: none);
the scenarios above lost a confirmed message that way now and then, one that sat in the
queue when the broker stopped (jmslike_amqp.durability)."""


def _leave_backlog(env: dict[str, str], broker: str) -> dict[str, str]:
    """Queue -> URL of the backlog left over each protocol."""
    left = {}
    for url in (_stomp_failover(env, broker), _amqp(env, broker)):
        queue = f"queue://kept-{uuid.uuid4().hex[:10]}"
        with ConnectionFactory(url).create_connection() as connection:
            session = connection.create_session()
            producer = session.create_producer(queue)
            for n in range(BACKLOG):
                producer.send(session.create_text_message(f"m{n:03d}"))  # persistent
        left[queue] = url
    return left


def _backlog_problems(left: dict[str, str]) -> list[str]:
    """What is missing or out of order in the backlog after the outages."""
    found = []
    for queue, url in left.items():
        with ConnectionFactory(url, request_timeout=60.0).create_connection() as connection:
            session = connection.create_session()
            consumer = session.create_consumer(queue)
            connection.start()
            got = []
            while (message := consumer.receive(5.0)) is not None:
                got.append(message.text)
        if got != [f"m{n:03d}" for n in range(BACKLOG)]:
            found.append(
                f"backlog on {queue} over {'STOMP' if 'stomp' in url else 'AMQP'}: {len(got)} of "
                f"{BACKLOG}: {got}"
            )
    return found


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _report(broker: str, figures: list[dict[str, Any]], base: Path) -> None:
    path = Path(os.environ.get("JMSLIKE_RESTART_REPORT", base / "broker-restart.json"))
    report = json.loads(path.read_text()) if path.exists() else {}
    report[broker] = figures
    path.write_text(json.dumps(report, indent=2))
    for f in figures:  # every delivery, for reading a failure
        log_path = path.with_name(f"{path.stem}-{broker}-{f['route']}-records.json")
        log_path.write_text(json.dumps(f.pop("records"), indent=0))
    for f in figures:
        times = ", ".join(
            f"{r['event']}: down {r['broker_down_s']} s, send {r['send_again_s']} s, "
            f"consume {r['consume_again_s']} s"
            for r in f["recover"]
        )
        print(
            f"\n{broker} {f['route']}: sent {f['sent']} confirmed {f['confirmed']} "
            f"(raised {f['send_raised']}, of those received {f['send_raised_received']}) "
            f"received {f['received']} lost {f['lost']} unflagged-dup "
            f"{f['unflagged_duplicates']} (at the kill {f['unflagged_after_crash']}) "
            f"misordered {f['misordered']} "
            f"redelivered {f['redelivered']} reconnects {f['reconnects']}; {times}; "
            f"report {path}"
        )


@pytest.mark.timeout(400 + 3 * SENDING_S)
@pytest.mark.parametrize("broker", BROKERS)
def test_restart_and_kill_under_load(
    broker: str, restartable: RestartableBrokers, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Stop/start on the store, then kill -9/start, mid-stream: nothing confirmed is
    lost, no duplicate is unflagged, no group's first deliveries are out of order."""
    restartable.start(broker)
    env = restartable.env()
    backlog = _leave_backlog(env, broker) if broker == "rabbitmq" else {}
    scenarios = [Scenario(route, route.url(env, broker)) for route in ROUTES]
    threads = []
    for scenario in scenarios:
        threads += [
            threading.Thread(target=scenario.produce, name=f"{scenario.route.name}-producer"),
            threading.Thread(target=scenario.consume, args=("ack", False)),
            threading.Thread(target=scenario.consume, args=("tx", True)),
        ]
    for thread in threads:
        thread.start()
    events: list[Event] = []
    ups: list[float] = []
    try:
        for kind, share in (("restart", 1 / 3), ("kill -9", 2 / 3)):
            if events:
                # Consumers catch up between the two outages (a slow broker stop, a
                # stalled consumer would otherwise make the second one meaningless).
                time.sleep(1.0)
            _wait(
                lambda: all(s.at_mark.is_set() or s.producer_done.is_set() for s in scenarios),
                120,
                f"{share:.0%} of the sends",
            )
            event = Event(kind, time.monotonic())
            for scenario in scenarios:
                scenario.outage.set()
                scenario.at_mark.clear()
                scenario.go_on.release()
            if kind == "restart":
                restartable.restart(broker)
            else:
                restartable.kill(broker)
                restartable.restart(broker)
            event.down_s = time.monotonic() - event.start
            for scenario in scenarios:
                scenario.outage.clear()
            events.append(event)
            ups.append(time.monotonic())
        for scenario in scenarios:
            _wait(
                scenario.producer_done.is_set,
                240 + 2 * SENDING_S,
                f"{scenario.route.name}'s producer",
            )

        def drained(s: Scenario) -> bool:
            return set(s.confirmed) <= s.processed() or (
                time.monotonic() - max(s.last_record_at(), ups[-1]) > DRAIN_IDLE
            )

        _wait(
            lambda: all(drained(s) for s in scenarios),
            240 + SENDING_S,
            "the consumers to drain",
        )
    finally:
        for scenario in scenarios:
            scenario.stop.set()
            scenario.producer_done.wait(60)
        for thread in threads:
            thread.join(60)
    figures = [s.figures(events, ups) for s in scenarios]
    # What a failure must show when the records file is out of reach (a CI machine's
    # temp dir): every delivery of the first messages the problems name.
    named = {
        s.route.name: s.deliveries_of(re.findall(r"g\d{3}:\d{6}", " ".join(f["problems"])))
        for s, f in zip(scenarios, figures, strict=True)
    }
    _report(broker, figures, tmp_path_factory.getbasetemp())
    failed = {
        f["route"]: (
            f"{f['route']}: lost {f['lost']}, unflagged duplicates {f['unflagged_duplicates']}, "
            f"misordered {f['misordered']}, errors {f['errors']}, confirmed {f['confirmed']}; "
            f"{f['problems'][:5]}; their deliveries: {named[f['route']]}"
        )
        for f in figures
        if f["errors"]
        or f["confirmed"] <= MESSAGES // 2
        or (f["lost"], f["unflagged_duplicates"], f["misordered"]) != (0, 0, 0)
    }
    # Strict on every route. Classic over AMQP failed about once in 10 runs until
    # 2026-11-26 (a group moved between the live consumers after the outage and its
    # last messages from before came after the first from after); probably because a
    # transacted session sometimes used another transaction's id, read from Proton's
    # reused buffer, and Classic closed a consumer's link or the connection (fixed; not
    # proven to be this failure's cause: 22 clean runs since). docs/reliability.md.
    backlog_lost = _backlog_problems(backlog)
    assert not failed and not backlog_lost, f"{broker}: " + "\n".join(
        [*failed.values(), *backlog_lost]
    )
