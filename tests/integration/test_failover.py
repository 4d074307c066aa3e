"""Reconnecting (``failover:`` URLs), on every broker x protocol, through a relay the test
breaks on purpose (tests/faultproxy.py).

Each failover URL lists a member where nothing listens first, then the relay: jmslike
must skip the dead member when it connects and when it connects again. After a cut it
must come back by itself, attach its consumers (a durable subscription under its name)
and producers again, and carry on: what the lost connection had buffered is never
handed out, the broker delivers again what was not acknowledged (flagged redelivered,
each group in send order: ORD-11), a transaction that was open is rolled back (its
commit says so), and a persistent send that was on its way either raises or is stored,
never lost unannounced. A plain URL reports the loss instead (docs/providers.md, "When
the connection is lost").

Every check counts: 0 lost, 0 unflagged duplicates, 0 out of order within a group.
"""

from __future__ import annotations

import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from brokercases import CASES, case_url
from faultproxy import Relay
from faultreport import record
from test_faults import GROUPS, STOMP_CASES, send_groups

import jmslike
from jmslike import ConnectionFactory, DeliveryMode, Session

HANDED = 3


class Setup:
    """One case: the direct URL, the relay, and URLs through it."""

    def __init__(self, case: str) -> None:
        self.case = case
        self.direct = case_url(case)
        base, _, query = self.direct.partition("?")
        match = re.fullmatch(r"(\w+)://([^@/]*@)?127\.0\.0\.1:(\d+)(/.*)?", base)
        assert match is not None, base
        scheme, credentials, port, path = match.groups()
        self.relay = Relay(("127.0.0.1", int(port)))
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]
        dead.close()  # nothing listens there: the first member always fails
        prefix, suffix = f"{scheme}://{credentials or ''}127.0.0.1:", path or ""
        self.plain = f"{prefix}{self.relay.port}{suffix}" + (f"?{query}" if query else "")
        self.failover = (
            f"failover:({prefix}{dead_port}{suffix},{prefix}{self.relay.port}{suffix})"
            f"?{query + '&' if query else ''}reconnectDelay=0.05"
        )

    def cut_and_wait(self) -> float:
        """Cut every connection through the relay and wait until jmslike made each one
        again (a RabbitMQ consumer over STOMP has a connection of its own); returns the
        seconds from the cut until the first one was back."""
        accepted = self.relay.accepted
        cut_at = time.monotonic()
        self.relay.cut()
        deadline = cut_at + 15.0
        while self.relay.accepted == accepted and time.monotonic() < deadline:
            time.sleep(0.005)
        back = time.monotonic() - cut_at
        assert self.relay.accepted > accepted, "jmslike did not connect again"
        while True:  # until no other connection comes back for half a second
            settled = self.relay.accepted
            time.sleep(0.5)
            if self.relay.accepted == settled:
                return back


@pytest.fixture(params=CASES)
def setup(request: pytest.FixtureRequest) -> Iterator[Setup]:
    made = Setup(request.param)
    yield made
    made.relay.close()


def _check(
    sent: list[str],
    handed: list[str],
    after: list[tuple[str, bool]],
    scenario: str,
    setup: Setup,
    recover_s: float,
) -> None:
    """0 lost, 0 unflagged duplicates (of what was handed out before the fault, or
    twice after it), 0 out of order within a group (by first appearance); the figures
    go to the fault report first (tests/faultreport.py), ``recover_s`` being the seconds
    until jmslike had connected again."""
    texts = [text for text, _ in after]
    lost = [t for t in sent if t not in texts]
    seen: set[str] = set(handed)
    unflagged = []
    for text, redelivered in after:
        if text in seen and not redelivered:
            unflagged.append(text)
        seen.add(text)
    misordered = []
    for g in range(GROUPS):
        first_seen = list(dict.fromkeys(t for t in texts if t.startswith(f"g{g}:")))
        if first_seen != sorted(first_seen):
            misordered.append(f"g{g}")
    record(
        scenario,
        setup.case,
        sent=len(sent),
        processed=len(set(texts) | set(handed)),
        lost=len(lost),
        unflagged_duplicates=len(unflagged),
        misordered=len(misordered),
        recover_s=recover_s,
    )
    assert not lost, f"lost: {lost}; got {after}"
    assert not unflagged, f"unflagged duplicates: {unflagged}; got {after}"
    assert not misordered, f"groups {misordered} out of order: {after}"


def _drain(
    consumer: jmslike.MessageConsumer, quiet: float = 3.0, first: float = 0.0
) -> list[tuple[str, bool]]:
    """Receive and acknowledge until ``quiet`` seconds pass with nothing (the first
    message may take ``first`` seconds)."""
    got = []
    while (message := consumer.receive(max(quiet, first) if not got else quiet)) is not None:
        got.append((message.text, message.jms_redelivered))
        message.acknowledge()
    return got


def test_reconnects_resubscribes_and_redelivers_in_group_order(setup: Setup) -> None:
    """The consumer comes back by itself: what the application held unacknowledged comes
    again flagged (acknowledging it raises), what was buffered from the lost connection
    comes from the broker (never the old copies), each group in order, and sends work
    again."""
    queue = f"queue://failover-{uuid.uuid4().hex[:8]}"
    sent = send_groups(setup.direct, queue)
    errors: list[Exception] = []
    factory = ConnectionFactory(setup.failover, request_timeout=10.0, prefetch=4)
    with factory.create_connection() as connection:
        connection.set_exception_listener(errors.append)
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        before = []
        for _ in range(HANDED):
            message = consumer.receive(10.0)
            assert message is not None
            before.append(message)
        recover_s = setup.cut_and_wait()
        # Deliveries of the lost connection cannot be acknowledged: the call says so
        # (else the application would take them as done while the broker hands them out
        # again, maybe to another process: issue 18's frozen consumer under failover).
        with pytest.raises(jmslike.ConnectionFailedError, match="lost since"):
            before[-1].acknowledge()
        after = _drain(consumer)
        producer = connection.create_session().create_producer(queue)
        producer.send(session.create_text_message("after"))
        last = consumer.receive(10.0)
        assert last is not None and last.text == "after"
        last.acknowledge()
    assert not errors, errors

    handed = [m.text for m in before]
    _check(
        sent, handed, after, "connection cut, failover URL, CLIENT_ACKNOWLEDGE", setup, recover_s
    )
    assert all(dict(after)[t] for t in handed), f"{handed} not all flagged: {after}"


@pytest.mark.parametrize("url", ["failover", "plain"])
@pytest.mark.parametrize("setup", STOMP_CASES, indirect=True)
def test_an_acknowledge_taken_whose_receipt_is_lost_is_in_doubt(setup: Setup, url: str) -> None:
    """Over STOMP, a CLIENT_ACKNOWLEDGE ``acknowledge()`` whose ACKs reached the broker
    and whose RECEIPT was lost with the connection raises AcknowledgeInDoubtError, under
    a failover URL and a plain one: not the ConnectionFailedError that says the messages
    come again, for they never do (the broker took them). Seen in CI (2026-12-01): an
    ACK Artemis took as it was being stopped was reported as "they come again", and
    test_broker_restart.py counted the message lost. The relay holds the broker's bytes
    (the RECEIPT) while the ACKs go through, then cuts."""
    queue = f"queue://failover-ack-doubt-{uuid.uuid4().hex[:8]}"
    sent = send_groups(setup.direct, queue)
    timeout = 5.0
    factory = ConnectionFactory(
        setup.failover if url == "failover" else setup.plain, request_timeout=timeout, prefetch=4
    )
    outcome: list[BaseException | None] = []
    after: list[tuple[str, bool]] = []
    recover_s = 0.0
    with factory.create_connection() as connection:
        connection.set_exception_listener(lambda exc: None)  # the plain URL's loss
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        before = [consumer.receive(10.0) for _ in range(HANDED)]
        assert all(m is not None for m in before), before

        def acknowledge() -> None:
            try:
                before[-1].acknowledge()  # type: ignore[union-attr]
                outcome.append(None)
            except BaseException as exc:  # checked by the test thread
                outcome.append(exc)

        setup.relay.mute()
        acknowledging = threading.Thread(target=acknowledge, name="failover-ack", daemon=True)
        acknowledging.start()
        acknowledging.join(1.0)  # the ACKs reach the broker; its RECEIPT waits in the relay
        assert acknowledging.is_alive(), f"acknowledge() returned without a RECEIPT: {outcome}"
        if url == "failover":
            recover_s = setup.cut_and_wait()
        else:
            setup.relay.cut()
        acknowledging.join(15.0)
        assert outcome and isinstance(outcome[0], jmslike.AcknowledgeInDoubtError), outcome
        if url == "failover":
            # Where jmslike gates the groups (RabbitMQ), each group waits for its message
            # in doubt to come again, up to request_timeout: it keeps the group's order
            # if the broker did not take the ACK.
            after = _drain(consumer, first=timeout + 5.0)
    if url == "plain":
        with ConnectionFactory(setup.direct).create_connection() as other:
            receiver = other.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            other.start()
            after = _drain(receiver.create_consumer(queue))
    handed = [str(m.text) for m in before if m is not None]
    again = [text for text, _ in after if text in handed]
    assert not again, f"the broker took the ACKs of {handed}, yet {again} came again"
    rest = [t for t in sent if t not in handed]
    _check(rest, [], after, f"ACK taken, RECEIPT lost, {url} URL", setup, recover_s)


AMQP_CASES = [case for case in CASES if str(case.id).endswith("-amqp")]


@pytest.mark.parametrize("setup", AMQP_CASES, indirect=True)
def test_an_acknowledge_lost_with_the_connection_is_flagged_when_it_comes_again(
    setup: Setup,
) -> None:
    """AMQP never confirms an acknowledgement (a settled disposition): one written just
    before the connection is lost for good may never reach the broker, which delivers the
    message again, to the application's next connection. That copy must come flagged
    redelivered, as it does under a failover URL. Seen in CI (2026-12-01,
    test_broker_restart.py, Artemis, application reconnect loop): an acknowledge 0.14 s
    into a graceful stop never applied and its copy came with JMSXDeliveryCount 1. The
    relay holds jmslike's bytes (the acknowledgement) and then cuts. Artemis sends the
    copy with a delivery count of 0 even without a restart (seen here: it failed on
    Artemis before the fix, ActiveMQ Classic and RabbitMQ flag it themselves)."""
    queue = f"queue://failover-ack-lost-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(setup.direct).create_connection() as sender:
        session = sender.create_session()
        session.create_producer(queue).send(session.create_text_message("only"))
    with ConnectionFactory(setup.plain).create_connection() as connection:
        connection.set_exception_listener(lambda exc: None)  # the loss, expected
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        message = consumer.receive(10.0)
        assert message is not None and message.text == "only", message
        assert not message.jms_redelivered, message
        setup.relay.stall()  # the acknowledgement waits in the relay, then goes with it
        message.acknowledge()
        time.sleep(0.2)
        setup.relay.cut()
        time.sleep(0.5)
    # the same broker address (the relay's): jmslike keeps its counts per broker
    with ConnectionFactory(setup.plain).create_connection() as other:
        receiver = other.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        other.start()
        after = _drain(receiver.create_consumer(queue), first=10.0)
    assert after == [("only", True)], f"the copy must come once, flagged: {after}"


def test_rolls_back_an_open_transaction(setup: Setup) -> None:
    """A transaction open when the connection was lost is gone with it: commit raises
    TransactionRolledBackError, its send never arrives, what it had consumed comes again
    flagged (given again locally by the rollback, then by the broker: both flagged), each
    group in order, and the session goes on with a new transaction."""
    queue = f"queue://failover-tx-{uuid.uuid4().hex[:8]}"
    sent = send_groups(setup.direct, queue)
    with ConnectionFactory(setup.failover, request_timeout=10.0).create_connection() as conn:
        tx = conn.create_session(True)
        consumer = tx.create_consumer(queue)
        producer = tx.create_producer(f"{queue}-out")
        conn.start()
        consumed = [consumer.receive(10.0) for _ in range(2)]
        assert all(message is not None for message in consumed)
        producer.send(tx.create_text_message("lost"))
        recover_s = setup.cut_and_wait()
        with pytest.raises(jmslike.TransactionRolledBackError):
            tx.commit()
        after = []
        while (message := consumer.receive(3.0)) is not None:
            after.append((message.text, message.jms_redelivered))
        producer.send(tx.create_text_message("kept"))
        tx.commit()
        out = conn.create_session().create_consumer(f"{queue}-out")
        got = out.receive(10.0)
        assert got is not None and got.text == "kept"
        assert out.receive(1.0) is None
    handed = [m.text for m in consumed if m is not None]
    _check(sent, handed, after, "connection cut, failover URL, transacted", setup, recover_s)


def test_plain_url_reports_the_loss(setup: Setup) -> None:
    """Without failover a lost connection goes to the exception listener as
    ConnectionFailedError, and calls fail with it: nothing is retried silently."""
    errors: list[Exception] = []
    got = threading.Event()
    with ConnectionFactory(setup.plain, request_timeout=5.0).create_connection() as conn:
        conn.set_exception_listener(lambda exc: (errors.append(exc), got.set()))
        session = conn.create_session()
        accepted = setup.relay.accepted
        setup.relay.cut()
        assert got.wait(10.0)
        assert isinstance(errors[0], jmslike.ConnectionFailedError)
        with pytest.raises(jmslike.ConnectionFailedError):
            session.create_producer("queue://x").send(session.create_text_message("x"))
        time.sleep(0.3)
        assert setup.relay.accepted == accepted, "a plain URL connected again"


def test_in_flight_persistent_send_raises_or_is_stored(setup: Setup) -> None:
    """A persistent send waiting for the broker's answer when the connection dies raises
    SendInDoubtError (a ConnectionFailedError: it was written, so it may be stored, and
    the application can tell it from a send that failed before it was written, which is
    not stored); every send that returned is stored, once; after the reconnect sends work
    again."""
    queue = f"queue://failover-send-{uuid.uuid4().hex[:8]}"
    outcome: dict[str, BaseException | None] = {}
    factory = ConnectionFactory(setup.failover, request_timeout=10.0)
    with factory.create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(queue)
        producer.delivery_mode = DeliveryMode.PERSISTENT
        producer.send(session.create_text_message("before"))

        def send(text: str) -> None:
            try:
                producer.send(session.create_text_message(text))
                outcome[text] = None
            except BaseException as exc:
                outcome[text] = exc

        setup.relay.stall()  # the send's bytes wait in the relay: it cannot be answered
        sender = threading.Thread(target=send, args=("in-flight",))
        sender.start()
        time.sleep(0.5)
        setup.cut_and_wait()
        sender.join(15.0)
        assert not sender.is_alive(), "the in-flight send hung"
        assert isinstance(outcome["in-flight"], jmslike.SendInDoubtError), outcome
        send("after")
        assert outcome["after"] is None, outcome
    texts = _stored_before_and_after(setup, queue)
    assert texts.count("in-flight") <= 1, texts


class _Told:
    """A completion listener: each message's outcome, and when the last one came."""

    def __init__(self) -> None:
        self.outcomes: dict[str, BaseException | None] = {}
        self.order: list[str] = []
        self.all_told = threading.Event()
        self.expected = 0

    def on_completion(self, message: jmslike.Message) -> None:
        self._tell(message, None)

    def on_exception(self, message: jmslike.Message, exception: BaseException) -> None:
        self._tell(message, exception)

    def _tell(self, message: jmslike.Message, outcome: BaseException | None) -> None:
        self.outcomes[message.text or ""] = outcome
        self.order.append(message.text or "")
        if len(self.order) == self.expected:
            self.all_told.set()


def test_in_flight_async_sends_are_told_in_doubt_or_stored(setup: Setup) -> None:
    """Asynchronous persistent sends (JMS 2.0) on their way when the connection dies: each
    is told, in send order, either completed (then it is stored, once) or
    SendInDoubtError (it may be stored, at most once); none is left untold, so the
    session's close returns; after the reconnect asynchronous sends work again."""
    queue = f"queue://failover-async-{uuid.uuid4().hex[:8]}"
    told = _Told()
    in_flight = [f"in-flight-{n}" for n in range(5)]
    told.expected = 1 + len(in_flight) + 1
    factory = ConnectionFactory(setup.failover, request_timeout=10.0)
    with factory.create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(queue)
        producer.delivery_mode = DeliveryMode.PERSISTENT
        producer.send(session.create_text_message("before"), completion_listener=told)
        _wait_until(lambda: "before" in told.outcomes)
        setup.relay.stall()  # the sends' bytes wait in the relay: none can be answered
        for text in in_flight:
            producer.send(session.create_text_message(text), completion_listener=told)
        time.sleep(0.5)
        assert not any(text in told.outcomes for text in in_flight), told.outcomes
        setup.cut_and_wait()
        _wait_until(lambda: all(text in told.outcomes for text in in_flight))
        producer.send(session.create_text_message("after"), completion_listener=told)
        assert told.all_told.wait(15.0), told.outcomes
    assert told.order == ["before", *in_flight, "after"]
    assert told.outcomes["before"] is None and told.outcomes["after"] is None, told.outcomes
    for text in in_flight:
        outcome = told.outcomes[text]
        assert outcome is None or isinstance(outcome, jmslike.SendInDoubtError), told.outcomes
    texts = _stored_before_and_after(setup, queue)
    for text in in_flight:
        stored = texts.count(text)
        assert stored <= 1, texts
        assert stored == 1 or told.outcomes[text] is not None, f"{text} completed, not stored"


def _stored_before_and_after(setup: Setup, queue: str) -> list[str]:
    """What the queue holds, read directly; "before" and "after" once each."""
    with ConnectionFactory(setup.direct).create_connection() as conn:
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        conn.start()
        texts = [text for text, _ in _drain(consumer)]
    assert texts.count("before") == 1 and texts.count("after") == 1, texts
    return texts


def _wait_until(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.01)


def test_durable_subscription_survives(setup: Setup) -> None:
    """A durable subscriber comes back under its name: what is published after the
    reconnect reaches it (on a broker without durable subscriptions over the protocol,
    creating one is refused naming the capability)."""
    topic = f"topic://failover-{uuid.uuid4().hex[:8]}"
    name = f"sub-{uuid.uuid4().hex[:8]}"
    client_id = f"failover-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(setup.failover, request_timeout=10.0, client_id=client_id)
    with factory.create_connection() as conn:
        session = conn.create_session()
        if not conn.capabilities.durable_subscriptions:
            with pytest.raises(jmslike.IllegalStateError, match="durable"):
                session.create_durable_subscriber(topic, name)
            return
        subscriber = session.create_durable_subscriber(topic, name)
        conn.start()
        publisher = conn.create_session().create_producer(topic)
        publisher.send(session.create_text_message("one"))
        first = subscriber.receive(10.0)
        assert first is not None and first.text == "one"
        setup.cut_and_wait()
        time.sleep(0.5)  # the subscription is attached again
        with ConnectionFactory(setup.direct).create_connection() as other:
            out = other.create_session()
            out.create_producer(topic).send(out.create_text_message("two"))
        second = subscriber.receive(10.0)
        if second is not None and second.text == "one":
            # AUTO_ACKNOWLEDGE acknowledges "one" at the next receive, after the cut: it
            # comes again, flagged.
            assert second.jms_redelivered, second
            second = subscriber.receive(10.0)
        assert second is not None and second.text == "two"
        assert subscriber.receive(1.0) is None
        subscriber.close()
        session.unsubscribe(name)


def test_gives_up_after_the_reconnect_attempts(setup: Setup) -> None:
    """With ``reconnectAttempts`` set and no member answering, the loss is final after that
    many tries: the exception listener gets ConnectionFailedError saying so, and calls
    fail with it."""
    errors: list[Exception] = []
    got = threading.Event()
    url = setup.failover + "&reconnectAttempts=2&maxReconnectDelay=0.1"
    with ConnectionFactory(url, request_timeout=5.0).create_connection() as conn:
        conn.set_exception_listener(lambda exc: (errors.append(exc), got.set()))
        session = conn.create_session()
        setup.relay.close()  # nothing listens there any more
        assert got.wait(15.0), "the loss was never reported"
        assert isinstance(errors[0], jmslike.ConnectionFailedError), errors
        assert "gave up after 2" in str(errors[0]), errors
        with pytest.raises(jmslike.ConnectionFailedError):
            session.create_producer("queue://x").send(session.create_text_message("x"))


def test_listener_container_carries_on(setup: Setup) -> None:
    """A listener container's sessions share one feed (AMQP) or subscription: after a cut
    in the middle of the work every message is processed, the ones in flight again and
    flagged, each group in order."""
    queue = f"queue://failover-container-{uuid.uuid4().hex[:8]}"
    sent = send_groups(setup.direct, queue)
    seen: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def on_message(message: jmslike.Message) -> None:
        time.sleep(0.01)  # work, so that the cut finds messages in flight
        with lock:
            seen.append((message.text, message.jms_redelivered))

    factory = ConnectionFactory(setup.failover, request_timeout=10.0)
    with jmslike.MessageListenerContainer(factory, queue, on_message, concurrency=3):
        deadline = time.monotonic() + 30.0
        while len(seen) < len(sent) // 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        recover_s = setup.cut_and_wait()
        while time.monotonic() < deadline:
            with lock:
                if {text for text, _ in seen} >= set(sent):
                    break
            time.sleep(0.1)
        time.sleep(0.5)  # a duplicate still on its way shows up too
    with lock:
        _check(
            sent,
            [],
            list(seen),
            "connection cut, failover URL, listener container",
            setup,
            recover_s,
        )
