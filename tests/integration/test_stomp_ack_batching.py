"""ACKs written several at a time over STOMP: what holding them back must never change.

An AUTO_ACKNOWLEDGE or DUPS_OK consumer whose buffer still holds messages lets the ACK
of the message it finished wait in the connection's outbox (``Wire.hold`` in
``jmslike_stomp/wire.py``): it goes with the next frame written, once a quarter of the
window is held, or ``ACK_DELAY`` (2 ms) later, written by a flusher thread. A write per
message was a sixth of a receive loop's time on ActiveMQ Classic (docs/performance.md).

Each case runs on a real broker with a window of 32 (so 8 ACKs go together), through
tests/faultproxy.py's relay, which the test cuts to see what the broker has:

* **The application stops** (a ``receive()`` loop that no longer calls ``receive``, a
  listener that blocks): the finished messages' ACKs reach the broker anyway. Cut half
  a second later, a fresh consumer gets exactly the messages not finished. Without the
  flusher the last few ACKs stayed in the outbox and those messages came again.
* **The consumer closes at once**: the held ACKs go before the UNSUBSCRIBE (one outbox,
  in order), so nothing finished comes again.
* **Cumulative ACKs** (``ack:client``) on ActiveMQ Classic and Artemis, where such a
  consumer finishes in order: the held ACK is replaced by the next one, so one goes per
  batch; every case above runs that way there. Not on RabbitMQ (its client gate may
  park a message while later ones are finished), not for CLIENT_ACKNOWLEDGE, and not at
  a window too small to hold ACKs.
* **Grouped messages** are held too. Where jmslike keeps the groups (RabbitMQ's client
  gate), the gate frees a group only once its ACK is written, so two sessions on two
  connections still never have one group's messages in progress at once, in order
  (ORD-9), and nothing finished comes again after a cut.

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_ack_batching.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from brokercases import CASES, case_url
from faultproxy import Relay

from jmslike import ConnectionFactory, DeliveryMode, Message, MessageListenerContainer, Session
from jmslike.testing.helpers import GroupRecorder

STOMP_CASES = [case for case in CASES if str(case.values[0]).endswith("stomp")]

WINDOW = 32
"""The consumer's prefetch: ACKs go 8 at a time (a quarter of it)."""
SENT, FINISHED = 40, 11
"""Messages queued; messages the application finishes before it stops (with the next
one handed out and not finished): 8 ACKs go as a batch, 3 wait for the flusher."""

MODES = [
    pytest.param(Session.AUTO_ACKNOWLEDGE, id="auto"),
    pytest.param(Session.DUPS_OK_ACKNOWLEDGE, id="dups_ok"),
]


def _fill(url: str, queue: str, group: str | None = None) -> list[str]:
    texts = [f"m{index:02d}" for index in range(SENT)]
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(session.create_queue(queue))
        producer.delivery_mode = DeliveryMode.PERSISTENT
        if group is not None:
            producer.enable_ordering_group(group)
        for text in texts:
            producer.send(session.create_text_message(text))
    return texts


def _left(url: str, queue: str, expected: int) -> list[str]:
    """What a fresh consumer finds on ``queue`` (through the relay's new connection, so
    that delivery counts are kept per broker address as before)."""
    got: list[str] = []
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(session.create_queue(queue))
        connection.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.receive(1.0 if len(got) < expected else 0.5)
            if message is None:
                if len(got) >= expected:
                    break
                continue
            got.append(str(message.text))
            message.acknowledge()
    return got


@pytest.mark.parametrize("case", STOMP_CASES)
def test_a_consumer_acknowledges_cumulatively_only_where_it_finishes_in_order(
    case: str,
) -> None:
    """``ack:client`` for an AUTO or DUPS_OK consumer whose ACKs are held, on the brokers
    that keep groups themselves; ``client-individual`` everywhere else."""
    cumulative_broker = case.startswith(("activemq-", "artemis-"))
    queue = f"ack-mode-{uuid.uuid4().hex[:8]}"
    url = case_url(case)
    for prefetch, mode, expected in [
        (WINDOW, Session.AUTO_ACKNOWLEDGE, cumulative_broker),
        (WINDOW, Session.DUPS_OK_ACKNOWLEDGE, cumulative_broker),
        (WINDOW, Session.CLIENT_ACKNOWLEDGE, False),
        (1, Session.AUTO_ACKNOWLEDGE, False),  # the default: one ACK per message anyway
    ]:
        with ConnectionFactory(url, prefetch=prefetch).create_connection() as connection:
            session = connection.create_session(False, mode)
            consumer = session.create_consumer(session.create_queue(queue))
            cumulative = consumer._provider.cumulative_sub  # type: ignore[attr-defined]
            assert (cumulative is not None) == expected, (prefetch, mode)
    if case.startswith("artemis-"):
        # Artemis ignores a shared subscription's selector, so the consumer drops what
        # it does not match, acknowledging it from its reading thread: in any order.
        with ConnectionFactory(url, prefetch=WINDOW).create_connection() as connection:
            session = connection.create_session(False, Session.AUTO_ACKNOWLEDGE)
            topic = session.create_topic(f"ack-mode-{uuid.uuid4().hex[:8]}")
            consumer = session.create_shared_consumer(topic, "filtered", "k = 2")
            assert consumer._provider.cumulative_sub is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("group", [None, "g1"], ids=["ungrouped", "grouped"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("relay_for", STOMP_CASES, indirect=True)
def test_acks_held_by_a_receive_loop_reach_the_broker_when_it_stops(
    relay_for: tuple[str, str, Relay], mode: int, group: str | None
) -> None:
    url, direct, relay = relay_for
    queue = f"ack-batch-{uuid.uuid4().hex[:8]}"
    sent = _fill(direct, queue, group)
    connection = ConnectionFactory(url, prefetch=WINDOW).create_connection()
    try:
        session = connection.create_session(False, mode)
        consumer = session.create_consumer(session.create_queue(queue))
        connection.start()
        handed: list[str] = []
        for _ in range(FINISHED + 1):
            message = consumer.receive(10.0)
            assert message is not None, f"only {len(handed)} came"
            handed.append(str(message.text))
        assert handed == sent[: FINISHED + 1]
        time.sleep(0.5)  # the application does something else; its ACKs go meanwhile
    finally:
        relay.cut()
        time.sleep(0.2)
        connection.close()
    left = _left(url, queue, SENT - FINISHED)
    assert sorted(left) == sent[FINISHED:], (
        f"finished and then back: {sorted(set(left) & set(sent[:FINISHED]))}"
    )


@pytest.mark.parametrize("how", ["listener", "container"])
@pytest.mark.parametrize("relay_for", STOMP_CASES, indirect=True)
def test_acks_held_by_a_listener_reach_the_broker_while_it_blocks(
    relay_for: tuple[str, str, Relay], how: str
) -> None:
    """``container``: a listener container's sessions hold their ACKs too, with factory
    defaults (its feed subscribes with a window of 16 messages a session, so 4 ACKs go
    together)."""
    url, direct, relay = relay_for
    queue = f"ack-batch-{uuid.uuid4().hex[:8]}"
    sent = _fill(direct, queue)
    handed: list[str] = []
    blocked, release = threading.Event(), threading.Event()

    def on_message(message: Message) -> None:
        handed.append(str(message.text))
        if len(handed) == FINISHED + 1:
            blocked.set()
            release.wait(10)

    if how == "container":
        container = MessageListenerContainer(
            ConnectionFactory(url), f"queue://{queue}", on_message, exception_listener=print
        )
        stop = container.stop
    else:
        connection = ConnectionFactory(url, prefetch=WINDOW).create_connection()
        stop = connection.close
    try:
        if how == "listener":
            session = connection.create_session()
            consumer = session.create_consumer(session.create_queue(queue))
            consumer.set_message_listener(on_message)
            connection.start()
        assert blocked.wait(10), f"only {len(handed)} came"
        time.sleep(0.5)
        relay.cut()
        time.sleep(0.2)
    finally:
        release.set()
        stop()
    assert handed[: FINISHED + 1] == sent[: FINISHED + 1]
    left = _left(url, queue, SENT - FINISHED)
    assert sorted(left) == sent[FINISHED:], (
        f"finished and then back: {sorted(set(left) & set(sent[:FINISHED]))}"
    )


@pytest.mark.parametrize("relay_for", STOMP_CASES, indirect=True)
def test_acks_held_go_before_the_unsubscribe_of_a_close(relay_for: tuple[str, str, Relay]) -> None:
    url, direct, _relay = relay_for
    queue = f"ack-batch-{uuid.uuid4().hex[:8]}"
    sent = _fill(direct, queue)
    with ConnectionFactory(url, prefetch=WINDOW).create_connection() as connection:
        session = connection.create_session()
        consumer = session.create_consumer(session.create_queue(queue))
        connection.start()
        handed: list[str] = []
        for _ in range(FINISHED + 1):
            message = consumer.receive(10.0)
            assert message is not None
            handed.append(str(message.text))
        consumer.close()  # finishes the last one too (ORD-10)
    assert handed == sent[: FINISHED + 1]
    left = _left(url, queue, SENT - FINISHED - 1)
    assert sorted(left) == sent[FINISHED + 1 :]


@pytest.mark.parametrize("how", ["listeners", "containers"])
@pytest.mark.parametrize("case", STOMP_CASES)
def test_held_acks_keep_groups_whole_across_connections(case: str, how: str) -> None:
    """ORD-9 with held ACKs: two listeners on two connections (two outboxes), a window of
    32, 8 groups x 30 messages and a little work per message: each group is processed in
    order and never by both at once. Where the client gate keeps the groups (RabbitMQ),
    a group is freed only once its ACK is written; freed before, the other connection's
    ACK of the group's next message could reach the broker first. ``containers``: two
    listener containers of concurrency 2 with factory defaults (their feeds hold ACKs)."""
    url = case_url(case)
    queue = f"ack-groups-{uuid.uuid4().hex[:8]}"
    groups, per_group = 8, 30
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        producers = [session.create_producer(session.create_queue(queue)) for _ in range(groups)]
        for index, producer in enumerate(producers):
            producer.enable_ordering_group(f"g{index}")
        for number in range(per_group):
            for index, producer in enumerate(producers):
                producer.send(session.create_text_message(f"g{index}:{number:02d}"))
    recorder = GroupRecorder(groups * per_group)
    total = groups * per_group
    if how == "containers":
        containers = [
            MessageListenerContainer(
                ConnectionFactory(url), f"queue://{queue}", recorder, concurrency=2
            )
            for _ in range(2)
        ]
        try:
            assert recorder.all_seen.wait(60), f"{recorder.count} of {total} came"
        finally:
            for container in containers:
                container.stop()
    else:
        factory = ConnectionFactory(url, prefetch=WINDOW)
        connections = [factory.create_connection() for _ in range(2)]
        try:
            for connection in connections:
                session = connection.create_session()
                consumer = session.create_consumer(session.create_queue(queue))
                consumer.set_message_listener(recorder)
            for connection in connections:
                connection.start()
            assert recorder.all_seen.wait(60), f"{recorder.count} of {total} came"
        finally:
            for connection in connections:
                connection.close()
    assert not recorder.overlaps, f"a group in two sessions at once: {recorder.overlaps[:5]}"
    for group, numbers in recorder.seen.items():
        assert numbers == list(range(per_group)), f"{group} out of order: {numbers}"
