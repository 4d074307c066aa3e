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
AMQP's idle timeout (``idleTimeout=2000``, Qpid JMS's name, in ms).
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from brokercases import CASES, case_url
from faultproxy import Relay

import jmslike
from jmslike import ConnectionFactory, DeliveryMode, Session

GROUPS, PER_GROUP, TAKEN, ACKED = 3, 10, 6, 4


@pytest.fixture
def relay_for(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, Relay]]:
    """(URL through a relay, direct URL, relay) for the case."""
    case = request.param
    direct = case_url(case)
    host, port = re.search(r"@?(127\.0\.0\.1):(\d+)", direct).groups()  # type: ignore[union-attr]
    relay = Relay((host, int(port)))
    yield direct.replace(f"{host}:{port}", f"127.0.0.1:{relay.port}", 1), direct, relay
    relay.close()


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


def check_after_loss(url: str, queue: str, sent: list[str], handed: list[str]) -> None:
    """A fresh connection gets every message not acknowledged, once: each group in send
    order, the ones handed out before the fault flagged redelivered, nothing lost."""
    acked = set(handed[:ACKED])
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
    if url.startswith("stomp"):
        assert not again, f"acknowledged before the fault, delivered again: {again}"
    assert all(redelivered for _t, redelivered in again), again
    texts = [t for t, _ in got if t not in acked]
    assert sorted(texts) == sorted(expected), f"expected {expected}, got {got}"
    for g in range(GROUPS):
        mine = [t for t in texts if t.startswith(f"g{g}:")]
        assert mine == sorted(mine), f"group g{g} out of order: {mine}"
    unflagged = [t for t, redelivered in got if t in handed[ACKED:] and not redelivered]
    assert not unflagged, f"handed out before the fault, not flagged redelivered: {unflagged}"


def consume_then_fault(url: str, queue: str, fault, timeout: float) -> list[str]:  # type: ignore[no-untyped-def]
    """Take TAKEN messages (acknowledging the first ACKED), inject ``fault``, and check
    what the application sees; returns the texts handed out."""
    errors: list[Exception] = []
    lost = threading.Event()
    connection = ConnectionFactory(url).create_connection()
    connection.set_exception_listener(lambda exc: (errors.append(exc), lost.set()))
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.create_consumer(queue)
    producer = session.create_producer(queue)
    connection.start()
    handed: list[str] = []
    while len(handed) < TAKEN:
        message = consumer.receive(5.0)
        assert message is not None, f"only {handed} before the fault"
        handed.append(message.text)
        if len(handed) == ACKED:
            message.acknowledge()
    fault()
    assert lost.wait(timeout), f"the loss was not reported within {timeout} s"
    assert isinstance(errors[0], jmslike.ConnectionFailedError), errors
    # Nothing of what the lost connection had buffered is handed out: every call raises.
    for _ in range(3):
        with pytest.raises(jmslike.ConnectionFailedError):
            consumer.receive(0.2)
    with pytest.raises(jmslike.ConnectionFailedError):
        producer.send(session.create_text_message("after the loss"))
    connection.close()  # does not raise on a lost connection
    return handed


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_connection_cut_while_receiving(relay_for) -> None:
    """ORD-11: the connection is cut under a CLIENT_ACKNOWLEDGE consumer holding two
    unacknowledged messages and a buffer of more."""
    url, direct, relay = relay_for
    queue = f"queue://faults-cut-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    handed = consume_then_fault(url, queue, relay.cut, timeout=10.0)
    check_after_loss(url, queue, sent, handed)


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_connection_stalled_while_receiving(relay_for) -> None:
    """ORD-11: no bytes move (sockets open) under a consumer holding unacknowledged
    messages; keep-alives notice within a few seconds, then the same as a cut."""
    url, direct, relay = relay_for
    queue = f"queue://faults-stall-{uuid.uuid4().hex[:8]}"
    sent = send_groups(direct, queue)
    handed = consume_then_fault(keepalive(url), queue, relay.stall, timeout=20.0)
    relay.cut()  # the broker side of the stalled connection goes too (as it would in time)
    check_after_loss(url, queue, sent, handed)


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
