"""Faults between client and broker, on every broker x protocol: nothing lost, nothing
handed out twice unflagged, no group reordered (ORD-11), and the application told.

The consumer's connection goes through tests/faultproxy.py's relay, which the test cuts
(both ways), stalls (no bytes, sockets open) or slows (a slow reader: see the last test,
where nothing is lost and the connection must stay up). A plain URL (no failover): the loss must
reach the exception listener, every later call must raise ConnectionFailedError (the
same error on every provider), nothing the lost connection had buffered may be handed
out (the broker gives those messages to other consumers again), and ``close()`` must
not raise. A fresh connection then finds every message not acknowledged, each group in
send order, the ones handed out before the fault flagged redelivered. (It connects
through the relay too: a process counts deliveries per broker address, which is what
flags them where the broker does not, Artemis over AMQP.)

A stall is only noticed by keep-alives: STOMP heart-beats (``heartbeat=1000``) and
AMQP's idle timeout (``idleTimeout=2000``, Qpid JMS's name, in ms). A half-close (the
client reads EOF, its writes still go through) is a loss like a cut.

Sends: a persistent send returns only once the broker has the message. While the relay
is stalled none returns, and after the cut every send either returned (then its message
arrives, once) or raised ConnectionFailedError (then it arrives once or not at all), so
the application can tell. Over STOMP, CLIENT_ACKNOWLEDGE's ``acknowledge()`` waits for
the broker's RECEIPT too: stalled, it does not return; cut, it raises, and the messages
come again, flagged redelivered.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest
from brokercases import CASES
from faultproxy import Relay
from faultreport import record

import jmslike
from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.testing.helpers import drain_consumer

GROUPS, PER_GROUP, TAKEN, ACKED = 3, 10, 6, 4


def keepalive(url: str) -> str:
    extra = "heartbeat=1000" if url.startswith("stomp") else "idleTimeout=2000"
    return url + ("&" if "?" in url else "?") + extra


def send_groups(url: str, queue: str) -> list[str]:
    with ConnectionFactory(url).create_connection() as connection:
        return send_groups_on(connection.create_session(), queue)


def send_groups_on(session: jmslike.Session, queue: str, padding: str = "") -> list[str]:
    """GROUPS x PER_GROUP persistent messages, "g<g>:<n>", round-robin over the groups;
    ``padding`` goes in a string property (to make each message bigger)."""
    sent = []
    producers = []
    for g in range(GROUPS):
        producer = session.create_producer(queue)
        producer.delivery_mode = DeliveryMode.PERSISTENT
        producer.enable_ordering_group(f"g{g}")
        producers.append(producer)
    for n in range(PER_GROUP):
        for g, producer in enumerate(producers):
            text = f"g{g}:{n:02d}"
            message = session.create_text_message(text)
            if padding:
                message.set_string_property("padding", padding)
            producer.send(message)
            sent.append(text)
    return sent


def check_after_loss(
    url: str,
    queue: str,
    sent: list[str],
    handed: list[str],
    acked_count: int = ACKED,
    *,
    report: tuple[str, str, float] | None = None,
) -> None:
    """A fresh connection gets every message not acknowledged (all but the first
    ``acked_count`` handed out), once: each group in send order, the ones handed out
    before the fault flagged redelivered, nothing lost. ``report``: (scenario, case,
    seconds until the loss was told) for the fault report (tests/faultreport.py)."""
    acked = set(handed[:acked_count])
    expected = [t for t in sent if t not in acked]
    got: list[tuple[str, bool]] = []
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.receive(1.0 if len(got) < len(expected) else 0.5)
            if message is None:
                if len(got) >= len(expected):
                    break
                continue
            got.append((message.text, message.jms_redelivered))
            message.acknowledge()
    # An acknowledged message may come once more, flagged, where the protocol cannot
    # confirm an acknowledgement (AMQP settles without an answer); STOMP's
    # acknowledge() returns once the broker has it, so there it never comes again.
    again = [(t, redelivered) for t, redelivered in got if t in acked]
    if report is not None:
        texts_got = [t for t, _ in got if t not in acked]
        record(
            report[0],
            report[1],
            sent=len(sent),
            processed=len(acked | set(texts_got)),
            lost=len(set(expected) - set(texts_got)),
            unflagged_duplicates=sum(
                1 for t, r in got if not r and (t in handed or texts_got.count(t) > 1)
            ),
            misordered=sum(
                1
                for g in range(GROUPS)
                if (mine := [t for t in texts_got if t.startswith(f"g{g}:")]) != sorted(mine)
            ),
            recover_s=report[2],
        )
    if url.startswith("stomp"):
        assert not again, f"acknowledged before the fault, delivered again: {again}"
    assert all(redelivered for _t, redelivered in again), again
    texts = [t for t, _ in got if t not in acked]
    assert sorted(texts) == sorted(expected), f"expected {expected}, got {got}"
    for g in range(GROUPS):
        mine = [t for t in texts if t.startswith(f"g{g}:")]
        assert mine == sorted(mine), f"group g{g} out of order: {mine}"
    unflagged = [t for t, redelivered in got if t in handed[acked_count:] and not redelivered]
    assert not unflagged, f"handed out before the fault, not flagged redelivered: {unflagged}"


def take(consumer: jmslike.MessageConsumer) -> list[jmslike.TextMessage]:
    """Receive TAKEN messages, acknowledging (CLIENT_ACKNOWLEDGE) once ACKED came."""
    taken: list[jmslike.TextMessage] = []
    while len(taken) < TAKEN:
        message = consumer.receive(5.0)
        assert isinstance(message, jmslike.TextMessage), f"{taken} before the fault, then {message}"
        taken.append(message)
        if len(taken) == ACKED:
            message.acknowledge()
    return taken


def consume_then_fault(
    url: str, queue: str, fault: Callable[[], object], timeout: float
) -> tuple[list[str], float]:
    """Take TAKEN messages (acknowledging the first ACKED), inject ``fault``, and check
    what the application sees; returns the texts handed out and the seconds until the
    loss was told."""
    errors: list[Exception] = []
    lost = threading.Event()
    connection = ConnectionFactory(url).create_connection()
    connection.set_exception_listener(lambda exc: (errors.append(exc), lost.set()))
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.create_consumer(queue)
    producer = session.create_producer(queue)
    connection.start()
    handed = [str(message.text) for message in take(consumer)]
    fault_at = time.monotonic()
    fault()
    assert lost.wait(timeout), f"the loss was not reported within {timeout} s"
    told = time.monotonic() - fault_at
    assert isinstance(errors[0], jmslike.ConnectionFailedError), errors
    # Nothing of what the lost connection had buffered is handed out: every call raises.
    for _ in range(3):
        with pytest.raises(jmslike.ConnectionFailedError):
            consumer.receive(0.2)
    with pytest.raises(jmslike.ConnectionFailedError):
        producer.send(session.create_text_message("after the loss"))
    connection.close()  # does not raise on a lost connection
    return handed, told


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_connection_cut_while_receiving(relay_for) -> None:
    """ORD-11: the connection is cut under a CLIENT_ACKNOWLEDGE consumer holding two
    unacknowledged messages and a buffer of more."""
    url, direct, relay = relay_for
    queue = f"queue://faults-cut-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    handed, told = consume_then_fault(url, queue, relay.cut, timeout=10.0)
    check_after_loss(
        url, queue, sent, handed, report=("connection cut while receiving", relay.name, told)
    )


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_connection_stalled_while_receiving(relay_for) -> None:
    """ORD-11: no bytes move (sockets open) under a consumer holding unacknowledged
    messages; keep-alives notice within a few seconds, then the same as a cut."""
    url, direct, relay = relay_for
    queue = f"queue://faults-stall-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    handed, told = consume_then_fault(keepalive(url), queue, relay.stall, timeout=20.0)
    relay.cut()  # the broker side of the stalled connection goes too (as it would in time)
    check_after_loss(
        url,
        queue,
        sent,
        handed,
        report=("stalled while receiving (keep-alives 1-2 s)", relay.name, told),
    )


SLOW_RATE = 32 * 1024
"""Bytes a second each way through the slowed relay: 30 messages of 2 KiB take ~2 s."""


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_slow_link_loses_and_reorders_nothing(relay_for) -> None:
    """A slow link (or a slow reader) is not a dead one: through a relay moving 32 KiB/s
    each way, with keep-alives on, persistent sends return once stored, a CLIENT_ACKNOWLEDGE
    consumer gets every message once, each group in send order (ORD-9), none flagged
    redelivered, and the exception listener hears nothing."""
    url, _direct, relay = relay_for
    url = keepalive(url)
    queue = f"queue://faults-slow-{uuid.uuid4().hex[:8]}"
    errors: list[Exception] = []
    padding = "x" * 2048
    relay.slow(SLOW_RATE)
    with ConnectionFactory(url).create_connection() as connection:
        connection.set_exception_listener(errors.append)
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        sent = send_groups_on(session, queue, padding)
        consumer = session.create_consumer(queue)
        connection.start()
        got: list[tuple[str, bool]] = []
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            message = consumer.receive(1.0)
            if message is not None:
                got.append((message.text, message.jms_redelivered))
                message.acknowledge()
        assert consumer.receive(0.5) is None, "a message came twice"
    assert not errors, f"a slow link was taken for a lost one: {errors}"
    texts = [t for t, _ in got]
    assert sorted(texts) == sorted(sent), f"lost: {sorted(set(sent) - set(texts))}"
    for g in range(GROUPS):
        mine = [t for t in texts if t.startswith(f"g{g}:")]
        assert mine == sorted(mine), f"group g{g} out of order: {mine}"
    assert not [t for t, redelivered in got if redelivered], got


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_half_closed_while_receiving(relay_for: tuple[str, str, Relay]) -> None:
    """ORD-11: the broker-to-client direction is shut under a CLIENT_ACKNOWLEDGE consumer
    holding unacknowledged messages (the client reads EOF, its writes still go through):
    a loss like a cut, told the same way, with nothing acknowledged coming back."""
    url, direct, relay = relay_for
    queue = f"queue://faults-half-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    handed, told = consume_then_fault(url, queue, relay.half_close, timeout=10.0)
    check_after_loss(
        url, queue, sent, handed, report=("half-closed while receiving", relay.name, told)
    )


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_nothing_is_sent_once_the_loss_is_told(relay_for: tuple[str, str, Relay]) -> None:
    """ORD-11, API/producer.send: once the exception listener has heard that the
    connection is lost, a send raises ConnectionFailedError and sends nothing, also where
    part of the connection still works. (Before, over STOMP on RabbitMQ, where a consumer
    has a socket of its own: its loss lost the JMS connection, and a send through the
    producer's socket, still up, went out; seen in CI as the message sent `after the
    loss` delivered in test_half_closed_while_receiving[rabbitmq-stomp].)"""
    url, direct, relay = relay_for
    queue = f"queue://faults-told-{uuid.uuid4().hex[:8]}"
    lost = threading.Event()
    connection = ConnectionFactory(url).create_connection()
    connection.set_exception_listener(lambda _exc: lost.set())
    session = connection.create_session()
    producer = session.create_producer(queue)
    producer.send(session.create_text_message("before"))
    consumer = session.create_consumer(queue)
    connection.start()
    first = consumer.receive(5.0)
    assert first is not None and first.text == "before"
    relay.cut_one(-1)  # the newest: the consumer's own where it has one, else the only one
    assert lost.wait(10.0), "the loss was not reported within 10 s"
    with pytest.raises(jmslike.ConnectionFailedError):
        producer.send(session.create_text_message("after the loss"))
    connection.close()
    with ConnectionFactory(direct).create_connection() as other:
        consumer = other.create_session().create_consumer(queue)
        other.start()
        texts = [m.text for m in iter(lambda: consumer.receive(2.0), None)]
    assert "after the loss" not in texts, texts


SEND_TIMEOUT = 2.0
"""The sending tests' ``request_timeout``: a send unanswered for this long raises."""


def send_through_fault(
    url: str,
    queue: str,
    fault: Callable[[], object],
    *,
    stalled: float = 0.0,
    then: Callable[[], object] | None = None,
) -> tuple[list[str], list[str]]:
    """Persistent sends, one after another on a thread, through ``url``; once a few
    returned, ``fault()``. With ``stalled``: for that long no send may return (but the one
    whose answer had already passed the relay), then ``then()``. The loss must reach the
    exception listener, every send that raised raised ConnectionFailedError, and later
    sends raise it too. Returns (texts whose send returned, texts whose send raised)."""
    errors: list[Exception] = []
    lost = threading.Event()
    outcomes: list[tuple[str, BaseException | None]] = []
    stop = threading.Event()
    factory = ConnectionFactory(url, request_timeout=SEND_TIMEOUT)
    connection = factory.create_connection()

    def on_exception(exc: Exception) -> None:
        errors.append(exc)
        lost.set()

    connection.set_exception_listener(on_exception)
    session = connection.create_session()
    producer = session.create_producer(queue)
    producer.delivery_mode = DeliveryMode.PERSISTENT

    def confirmed() -> int:
        return sum(1 for _text, exc in outcomes if exc is None)

    def sender() -> None:
        for n in range(1000):
            if stop.is_set():
                return
            text = f"m{n:03d}"
            try:
                producer.send(session.create_text_message(text))
            except BaseException as exc:  # recorded, and checked by the test thread
                outcomes.append((text, exc))
                time.sleep(0.05)
            else:
                outcomes.append((text, None))

    thread = threading.Thread(target=sender, name="faults-sender", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10.0
    while confirmed() < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert confirmed() >= 5, f"sends before the fault: {outcomes}"
    fault()
    if stalled:
        before, tried = confirmed(), len(outcomes)
        time.sleep(stalled)
        during = [text for text, exc in outcomes if exc is None][before:]
        assert len(during) <= 1, f"sends returned as confirmed while nothing moved: {during}"
        if stalled > SEND_TIMEOUT:
            timed_out = [text for text, exc in outcomes[tried:] if exc is not None]
            assert timed_out, f"no send raised after {stalled} s unanswered: {outcomes}"
    if then is not None:
        then()
    assert lost.wait(10.0), "the loss was not reported within 10 s"
    assert isinstance(errors[0], jmslike.ConnectionFailedError), errors
    stop.set()
    thread.join(SEND_TIMEOUT + 5.0)
    assert not thread.is_alive(), "a send hung"
    failed = [(text, exc) for text, exc in outcomes if exc is not None]
    wrong = [(t, exc) for t, exc in failed if not isinstance(exc, jmslike.ConnectionFailedError)]
    assert not wrong, wrong
    with pytest.raises(jmslike.ConnectionFailedError):
        producer.send(session.create_text_message("after the loss"))
    connection.close()  # does not raise on a lost connection
    return [t for t, exc in outcomes if exc is None], [t for t, _exc in failed]


def check_sends(
    url: str, queue: str, returned: list[str], raised: list[str], report: tuple[str, str]
) -> None:
    """Every send that returned is stored, once; one that raised at most once; no other.
    ``report``: (scenario, case) for the fault report."""
    got: list[str] = []
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        while (message := consumer.receive(2.0)) is not None:
            assert isinstance(message, jmslike.TextMessage), message
            got.append(str(message.text))
            message.acknowledge()
    lost = [t for t in returned if t not in got]
    record(
        *report,
        sent=len(returned) + len(raised),
        confirmed=len(returned),
        raised=len(raised),
        raised_but_stored=len(set(raised) & set(got)),
        processed=len(set(got)),
        lost=len(lost),
        unflagged_duplicates=len(got) - len(set(got)),
        misordered=0,
    )
    assert not lost, f"sends that returned, never stored: {lost}; got {got}"
    twice = sorted({t for t in got if got.count(t) > 1})
    assert not twice, f"stored twice: {twice}"
    assert set(got) <= set(returned) | set(raised), sorted(set(got) - set(returned))


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_stalled_while_sending(relay_for: tuple[str, str, Relay]) -> None:
    """Persistent sends on a plain URL, then no bytes move (sockets open) for longer than
    ``request_timeout``: no send returns as if stored meanwhile (those unanswered raise),
    and after the cut each send either returned and its message arrives once, or raised
    (ConnectionFailedError) and it arrives once or not at all."""
    url, direct, relay = relay_for
    queue = f"queue://faults-stall-send-{uuid.uuid4().hex[:8]}"
    returned, raised = send_through_fault(
        url, queue, relay.stall, stalled=SEND_TIMEOUT + 1.0, then=relay.cut
    )
    check_sends(direct, queue, returned, raised, ("stalled while sending", relay.name))


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_half_closed_while_sending(relay_for: tuple[str, str, Relay]) -> None:
    """Persistent sends, then the client reads EOF while what it writes still reaches the
    broker: the send on its way may be stored and still raise (its answer never comes);
    the application is told, and every send that returned arrives once."""
    url, direct, relay = relay_for
    queue = f"queue://faults-half-send-{uuid.uuid4().hex[:8]}"
    returned, raised = send_through_fault(url, queue, relay.half_close)
    check_sends(direct, queue, returned, raised, ("half-closed while sending", relay.name))


STOMP_CASES = [case for case in CASES if str(case.id).endswith("-stomp")]


@pytest.mark.parametrize("then", ["resume", "cut"])
@pytest.mark.parametrize("relay_for", STOMP_CASES, indirect=True)
def test_stomp_acknowledge_waits_for_the_receipt(
    relay_for: tuple[str, str, Relay], then: str
) -> None:
    """Over STOMP, CLIENT_ACKNOWLEDGE's ``acknowledge()`` returns once the broker sent the
    RECEIPT of the last ACK: with the relay stalled it has not returned after a second.
    Resumed, it returns and the messages never come again; cut, it raises
    AcknowledgeInDoubtError (the ACKs were written: the client cannot tell whether they
    arrived; here they did not) and the messages come again, flagged redelivered, each
    group in order."""
    url, direct, relay = relay_for
    queue = f"queue://faults-ack-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    errors: list[Exception] = []
    outcome: list[BaseException | None] = []
    factory = ConnectionFactory(url, request_timeout=15.0)
    connection = factory.create_connection()
    connection.set_exception_listener(errors.append)
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.create_consumer(queue)
    connection.start()
    taken = take(consumer)  # the first ACKED acknowledged, the last two held

    def acknowledge() -> None:
        try:
            taken[-1].acknowledge()
            outcome.append(None)
        except BaseException as exc:  # checked by the test thread
            outcome.append(exc)

    relay.stall()
    acknowledging = threading.Thread(target=acknowledge, name="faults-ack", daemon=True)
    acknowledging.start()
    acknowledging.join(1.0)
    stalled = acknowledging.is_alive()
    getattr(relay, then)()
    acknowledging.join(10.0)
    assert stalled, f"acknowledge() returned with nothing moving: {outcome}"
    assert not acknowledging.is_alive(), f"acknowledge() still waits after {then}"
    handed = [str(message.text) for message in taken]
    if then == "resume":
        assert outcome == [None], outcome
        connection.close()
        assert not errors, errors
        check_after_loss(url, queue, sent, handed, acked_count=TAKEN)
    else:
        # Written, unconfirmed: in doubt for the client (here the relay dropped it).
        assert isinstance(outcome[0], jmslike.AcknowledgeInDoubtError), outcome
        connection.close()  # does not raise on a lost connection
        check_after_loss(url, queue, sent, handed)


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_a_consumer_closed_in_a_transaction_lets_go_when_its_connection_is_lost(
    relay_for: tuple[str, str, Relay],
) -> None:
    """A consumer closed with a message in its session's transaction keeps it for the
    commit (ORD-10). If the connection is then lost for good, that commit can never
    come: the message goes back to the broker, for another consumer, at once, without
    the application closing anything. On RabbitMQ over STOMP each consumer has a
    connection of its own, which outlived the lost one and kept the message until the
    application closed the connection; the relay cuts the application's connection only
    (the first one it accepted), so that one stays up here too."""
    url, direct, relay = relay_for
    queue = f"queue://faults-zombie-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    connection = ConnectionFactory(url).create_connection()
    try:
        session = connection.create_session(True, Session.SESSION_TRANSACTED)
        consumer = session.create_consumer(queue)
        connection.start()
        held = consumer.receive(5.0)
        assert held is not None
        consumer.close()
        relay.cut_one(0)
        with ConnectionFactory(direct).create_connection() as other:
            receiver = other.create_session().create_consumer(queue)
            other.start()
            got = _texts(drain_consumer(receiver, timeout=1.0, first=15.0))
        assert sorted(got) == sorted(sent), (
            f"{len(got)} of {len(sent)} came back within 15 s; {held.text} was held"
        )
    finally:
        connection.close()


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_a_strict_standby_takes_over_when_the_holders_connection_is_lost(
    relay_for: tuple[str, str, Relay],
) -> None:
    """ORD-18: the active consumer of a strictly ordered queue (transacted, a message
    taken and not committed) loses its application's connection; the standby of another
    connection must take over at once, from the first message, in order. On RabbitMQ the
    active consumer has a connection of its own, which the relay leaves up (it cuts the
    first connection it accepted only): left open, it kept the queue's single active
    consumer, and the standby got nothing in 15 s, over STOMP and AMQP alike.

    The holder's window may take all ten first messages before the standby subscribes
    (a STOMP consumer subscribes on its first receive), so four more are sent once the
    standby has asked: on a queue that is not exclusive the broker gives it some of them."""
    url, direct, relay = relay_for
    queue = f"queue://faults-strict-{uuid.uuid4().hex[:8]}"
    settings = {"strictly_ordered": queue}
    sent = [str(n) for n in range(14)]
    producing = ConnectionFactory(direct, **settings).create_connection()
    holder = ConnectionFactory(url, **settings).create_connection()
    standby = ConnectionFactory(direct, **settings).create_connection()
    try:
        sending = producing.create_session()
        producer = sending.create_producer(queue)
        for text in sent[:10]:
            producer.send(sending.create_text_message(text))
        session = holder.create_session(True, Session.SESSION_TRANSACTED)
        consumer = session.create_consumer(queue)
        holder.start()
        first = consumer.receive(5.0)
        assert first is not None and first.text == "0"
        waiting = standby.create_session().create_consumer(queue)
        standby.start()
        assert waiting.receive(1.0) is None, "the standby took a message from the holder"
        for text in sent[10:]:
            producer.send(sending.create_text_message(text))
        late = waiting.receive(1.0)
        assert late is None, f"the standby took {late.text} while the holder was active"
        relay.cut_one(0)
        got = _texts(drain_consumer(waiting, timeout=1.0, first=15.0))
        assert got == sent, f"the standby got {got} in 15 s"
    finally:
        producing.close()
        holder.close()
        standby.close()


def _texts(messages: list[jmslike.Message]) -> list[str]:
    return [getattr(message, "text", None) or "" for message in messages]
