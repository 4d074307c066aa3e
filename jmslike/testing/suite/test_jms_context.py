"""The JMS 2.0 simplified API (JMSContext, JMSProducer, JMSConsumer) on every provider case.

A context is a connection and a session in one object, so each test here checks that the
context reaches the same broker behaviour as the classic API: bodies, headers and
properties on the wire, ordering groups (docs/ordering.md), transactions and
acknowledgement, and the connection shared by sibling contexts.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest

import jmslike
from jmslike import ConnectionFactory, DeliveryMode, JMSContext, Message

MakeContext = Callable[..., JMSContext]


@pytest.fixture
def make_context(factory: ConnectionFactory) -> Iterator[MakeContext]:
    """``make_context(session_mode)``: a context on this test's broker, closed at teardown;
    ``make_context(session_mode, parent=context)``: one that shares ``context``'s connection
    (``create_context``), closed too, since the connection closes with its last context."""
    opened: list[JMSContext] = []

    def make(
        session_mode: int = JMSContext.AUTO_ACKNOWLEDGE, parent: JMSContext | None = None
    ) -> JMSContext:
        if parent is None:
            context = factory.create_context(session_mode)
        else:
            context = parent.create_context(session_mode)
        opened.append(context)
        return context

    yield make
    for context in reversed(opened):
        with contextlib.suppress(Exception):
            context.close()


def test_jms_context_one_line_send_and_receive_body(make_context: MakeContext, unique) -> None:
    """JMS 2.0: ``send(destination, body)`` makes a TextMessage of a str, a BytesMessage of
    bytes and a MapMessage of a dict; ``receive_body(type)`` gives the body back."""
    context = make_context()
    queue = context.create_queue(unique("q"))
    producer = context.create_producer()
    assert producer.send(queue, "héllo").send(queue, b"\x00\xff") is producer
    producer.send(queue, {"sku": "B-12", "quantity": 3, "gift": True})
    producer.send(queue, context.create_text_message("a message as it is"))
    consumer = context.create_consumer(queue)  # autostart: no start() needed
    assert consumer.receive_body(str, 5.0) == "héllo"
    assert consumer.receive_body(bytes, 5.0) == b"\x00\xff"
    assert consumer.receive_body(dict, 5.0) == {"sku": "B-12", "quantity": 3, "gift": True}
    got = consumer.receive(5.0)
    assert isinstance(got, jmslike.TextMessage) and got.text == "a message as it is"
    assert consumer.receive_body(str, 0.2) is None  # nothing left: None, as receive()
    assert consumer.receive_body_no_wait(str) is None
    with pytest.raises(jmslike.InvalidArgumentError, match="send body"):
        producer.send(queue, 42)  # type: ignore[arg-type]


def test_jms_context_fluent_producer_settings_arrive(make_context: MakeContext, unique) -> None:
    """JMS 2.0 JMSProducer: every setter returns the producer, and what it sets (delivery
    mode, priority, time to live, properties, correlation id, type, reply-to) is on every
    message it sends."""
    context = make_context()
    queue = context.create_queue(unique("q"))
    reply_to = context.create_queue(unique("replies"))
    producer = context.create_producer()
    same = (
        producer.set_delivery_mode(DeliveryMode.NON_PERSISTENT)
        .set_priority(7)
        .set_time_to_live(60.0)
        .set_property("region", "EU")
        .set_property("quantity", 3)
        .set_jms_correlation_id("order-17")
        .set_jms_type("OrderPlaced")
        .set_jms_reply_to(reply_to)
    )
    assert same is producer
    assert (producer.get_priority(), producer.get_time_to_live()) == (7, 60.0)
    assert producer.get_property("region") == "EU" and producer.property_exists("quantity")
    assert sorted(producer.get_property_names()) == ["quantity", "region"]
    producer.send(queue, "first").send(queue, {"n": 2})
    consumer = context.create_consumer(queue)
    for body in ("first", {"n": 2}):
        got = consumer.receive(5.0)
        assert got is not None and got.body == body
        assert got.jms_priority == 7
        assert got.jms_delivery_mode == DeliveryMode.NON_PERSISTENT
        assert got.jms_expiration == got.jms_timestamp + 60_000
        assert got.get_string_property("region") == "EU"
        assert got.get_int_property("quantity") == 3
        assert got.jms_correlation_id == "order-17"
        assert got.jms_type == "OrderPlaced"
        assert got.jms_reply_to == reply_to
    producer.clear_properties().set_priority(2).set_time_to_live(0)
    producer.send(queue, "plain")
    got = consumer.receive(5.0)
    assert got is not None and got.body == "plain"
    assert (got.jms_priority, got.jms_expiration) == (2, 0)
    assert got.get_string_property("region") is None
    with pytest.raises(jmslike.InvalidArgumentError, match="priority 10"):
        producer.set_priority(10)
    with pytest.raises(jmslike.MessageFormatError):
        producer.set_property("has space", 1)


def test_jms_context_ordering_group_keeps_order(
    make_context: MakeContext, unique, receive_any, drain_any
):
    """ORD-5 through ``set_ordering_group``: each producer's messages carry JMSXGroupID and
    a JMSXGroupSeq counting from 1 (ORD-4), also when fluent code names the same group
    before every send; with two contexts competing for the queue, each group arrives in
    send order (ORD-8, ORD-9), and the two groups go on in parallel (ORD-17)."""
    sender = make_context()
    queue = sender.create_queue(unique("q"))
    joe = sender.create_producer().set_ordering_group("joe")
    ann = sender.create_producer().set_ordering_group("ann")
    assert (joe.get_ordering_group(), ann.get_ordering_group()) == ("joe", "ann")
    for i in range(1, 6):
        joe.set_ordering_group("joe").send(queue, f"joe-{i}")
        ann.set_ordering_group("ann").send(queue, f"ann-{i}")
    first = make_context(parent=sender)
    second = make_context(parent=sender)
    consumers = [first.create_consumer(queue), second.create_consumer(queue)]
    # The ten sent, then anything more (none): no quiet second to wait out.
    got = [receive_any(consumers, 5.0) for _ in range(10)] + drain_any(consumers, 0.2)
    seen: dict[str, list[tuple[str, int | None]]] = defaultdict(list)
    for _index, message in got:
        assert message is not None, f"not all ten came within 5 s: {got}"
        assert message.ordering_group is not None
        seen[message.ordering_group].append((message.body, message.group_sequence))
    assert seen == {group: [(f"{group}-{i}", i) for i in range(1, 6)] for group in ("joe", "ann")}
    with pytest.raises(jmslike.InvalidOrderingGroupError, match="ORD-1"):
        joe.set_property("JMSXGroupID", "")  # refused when set, not at the next send
    assert not joe.property_exists("JMSXGroupID")
    joe.set_ordering_group(None).send(queue, "free")
    assert joe.get_ordering_group() is None
    rest = [receive_any(consumers, 5.0), *drain_any(consumers, 0.2)]
    assert [(m.body, m.ordering_group) for _index, m in rest if m] == [("free", None)]


def test_jms_context_transacted_commit_and_rollback(make_context: MakeContext, unique) -> None:
    """ORD-8, ORD-10, ORD-11 through a SESSION_TRANSACTED context: sends appear at commit
    and vanish at rollback; a rolled-back receive comes again, flagged redelivered."""
    sender = make_context(JMSContext.SESSION_TRANSACTED)
    assert sender.get_transacted() and sender.get_session_mode() == JMSContext.SESSION_TRANSACTED
    queue = sender.create_queue(unique("q"))
    producer = sender.create_producer()
    producer.send(queue, "rolled back")
    sender.rollback()
    producer.send(queue, "kept-1").send(queue, "kept-2")
    receiver = make_context(JMSContext.SESSION_TRANSACTED, parent=sender)
    consumer = receiver.create_consumer(queue)
    assert consumer.receive(0.3) is None  # not committed yet
    sender.commit()
    first = consumer.receive(5.0)
    assert first is not None and (first.body, first.jms_redelivered) == ("kept-1", False)
    receiver.rollback()
    again = [consumer.receive(5.0) for _ in range(2)]
    assert [(m.body, m.jms_redelivered) for m in again if m is not None] == [
        ("kept-1", True),
        ("kept-2", False),
    ]
    receiver.commit()
    assert make_context().create_consumer(queue).receive(0.5) is None
    with pytest.raises(jmslike.TransactionInProgressError):
        receiver.recover()


def test_jms_context_client_acknowledge(make_context: MakeContext, unique) -> None:
    """CLIENT_ACKNOWLEDGE: ``context.acknowledge()`` finishes everything the context
    consumed (ORD-10); ``recover()`` delivers the rest again in order (ORD-11)."""
    context = make_context(JMSContext.CLIENT_ACKNOWLEDGE)
    queue = context.create_queue(unique("q"))
    context.create_producer().send(queue, "a").send(queue, "b").send(queue, "c")
    consumer = context.create_consumer(queue)
    assert consumer.receive_body(str, 5.0) == "a"
    assert consumer.receive_body(str, 5.0) == "b"
    context.acknowledge()  # a and b
    assert consumer.receive_body(str, 5.0) == "c"
    context.recover()
    again = consumer.receive(5.0)
    assert again is not None and (again.body, again.jms_redelivered) == ("c", True)
    assert consumer.receive(0.3) is None
    context.close()  # c was not acknowledged: it goes back
    later = make_context()
    got = later.create_consumer(queue).receive(5.0)
    assert got is not None and got.body == "c"
    later.acknowledge()  # AUTO_ACKNOWLEDGE: nothing to do, as JMS 2.0 says


def test_jms_context_receive_body_of_the_wrong_type(make_context: MakeContext, unique) -> None:
    """JMS 2.0 receiveBody: a body that is not of the asked type raises MessageFormatError
    (JMS MessageFormatRuntimeException); in AUTO_ACKNOWLEDGE the message is not lost but
    comes again, before the next one."""
    context = make_context()
    queue = context.create_queue(unique("q"))
    producer = context.create_producer()
    producer.send(queue, "text").send(queue, context.create_message()).send(queue, "after")
    consumer = context.create_consumer(queue)
    with pytest.raises(jmslike.MessageFormatError, match=r"receive_body\(bytes\).*TextMessage"):
        consumer.receive_body(bytes, 5.0)
    assert consumer.receive_body(str, 5.0) == "text"
    with pytest.raises(jmslike.MessageFormatError, match="body is absent"):
        consumer.receive_body(str, 5.0)  # a plain Message has no body to give
    plain = consumer.receive(5.0)
    assert type(plain) is Message and plain.jms_redelivered
    assert consumer.receive_body(str, 5.0) == "after"


def test_jms_context_create_context_shares_the_connection(
    make_context: MakeContext, unique
) -> None:
    """JMS 2.0 createContext: a sibling context uses the same connection (one client id,
    one start/stop), with a session of its own; the connection lives until the last
    context on it closes."""
    parent = make_context()
    client_id = unique("client")
    parent.set_client_id(client_id)  # allowed: nothing used the connection yet
    child = parent.create_context(JMSContext.CLIENT_ACKNOWLEDGE)
    assert child.get_session_mode() == JMSContext.CLIENT_ACKNOWLEDGE
    assert child.get_client_id() == client_id
    queue = parent.create_queue(unique("q"))
    consumer = parent.create_consumer(queue)  # starts the shared connection
    child.stop()  # stops the parent's delivery too: one connection
    child.create_producer().send(queue, "while stopped")
    assert consumer.receive(0.3) is None
    child.start()
    assert consumer.receive_body(str, 5.0) == "while stopped"
    parent.close()
    with pytest.raises(jmslike.IllegalStateError, match="JMSContext is closed"):
        parent.create_producer()
    child.create_producer().send(queue, "child alone")  # the connection is still open
    assert child.create_consumer(queue).receive_body(str, 5.0) == "child alone"
    child.acknowledge()
    child.close()
    with pytest.raises(jmslike.IllegalStateError):
        child.create_context()


def test_jms_context_autostart_off(make_context: MakeContext, unique) -> None:
    """JMS 2.0 setAutoStart(false): creating a consumer leaves the connection stopped
    until ``start()``."""
    context = make_context()
    assert context.get_autostart() is True
    context.set_autostart(False)
    queue = context.create_queue(unique("q"))
    context.create_producer().send(queue, "waits")
    consumer = context.create_consumer(queue)
    assert consumer.receive(0.3) is None
    context.start()
    assert consumer.receive_body(str, 5.0) == "waits"


def test_jms_context_listener(make_context: MakeContext, unique) -> None:
    """JMSConsumer.set_message_listener: messages go to the listener on the context's
    dispatcher thread (docs/threading.md), in order."""
    context = make_context()
    queue = context.create_queue(unique("q"))
    got: list[str] = []
    consumer = context.create_consumer(queue)
    consumer.set_message_listener(lambda message: got.append(message.body))
    assert consumer.get_message_listener() is not None
    make_context(parent=context).create_producer().send(queue, "one").send(queue, "two")
    deadline = time.monotonic() + 5.0
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got == ["one", "two"]
    consumer.close()
    assert consumer.closed


def test_jms_context_attribute_spellings_take_effect(make_context: MakeContext, unique) -> None:
    """The attribute spellings of the classic API work on the JMS 2.0 objects too:
    ``producer.priority = 7`` set nothing a send read, and ``consumer.message_listener =
    f`` left messages unconsumed, each without an error. Now they are the setters (same
    checks), and a misspelt attribute raises instead of being kept."""
    context = make_context()
    assert (context.session_mode, context.transacted) == (JMSContext.AUTO_ACKNOWLEDGE, False)
    context.autostart = False
    assert context.get_autostart() is False
    queue = context.create_queue(unique("q"))
    producer = context.create_producer()
    producer.priority = 7
    producer.time_to_live = 60.0
    producer.jms_type = "OrderPlaced"
    assert (producer.get_priority(), producer.get_jms_type()) == (7, "OrderPlaced")
    with pytest.raises(jmslike.InvalidArgumentError, match="priority 10"):
        producer.priority = 10
    with pytest.raises(AttributeError):
        producer.prioirty = 1  # type: ignore[attr-defined]
    producer.send(queue, "one").send(queue, "two")
    got: list[tuple[str, int, str | None]] = []
    consumer = context.create_consumer(queue)
    consumer.message_listener = lambda m: got.append((m.body, m.jms_priority, m.jms_type))
    assert consumer.get_message_listener() is not None and consumer.message_selector is None
    context.start()  # autostart is off
    deadline = time.monotonic() + 5.0
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got == [("one", 7, "OrderPlaced"), ("two", 7, "OrderPlaced")]


def test_jms_context_subscriptions_and_browser(
    make_context: MakeContext, connection: jmslike.Connection, unique
) -> None:
    """createDurableConsumer/createSharedConsumer/createSharedDurableConsumer,
    unsubscribe and createBrowser: each works where the broker has the capability, and
    raises the session's IllegalStateError naming the capability where it has not
    (docs/providers.md)."""
    capabilities = connection.capabilities
    context = make_context()
    context.set_client_id(unique("client"))
    topic = context.create_topic(unique("t"))
    producer = context.create_producer()
    if capabilities.durable_subscriptions:
        durable = context.create_durable_consumer(topic, "orders")
        producer.send(topic, "seen live")
        assert durable.receive_body(str, 5.0) == "seen live"
        durable.close()
        producer.send(topic, "kept while away")
        durable = context.create_durable_consumer(topic, "orders")
        assert durable.receive_body(str, 5.0) == "kept while away"
        durable.close()
        context.unsubscribe("orders")
    else:
        with pytest.raises(jmslike.IllegalStateError, match="capability durable_subscriptions"):
            context.create_durable_consumer(topic, "orders")
    if capabilities.shared_subscriptions:
        shared = context.create_shared_consumer(topic, "audit")
        producer.send(topic, "to the shared one")
        assert shared.receive_body(str, 5.0) == "to the shared one"
        shared.close()
    else:
        with pytest.raises(jmslike.IllegalStateError, match="capability shared_subscriptions"):
            context.create_shared_consumer(topic, "audit")
    if capabilities.shared_subscriptions and capabilities.durable_subscriptions:
        ledger = context.create_shared_durable_consumer(topic, "ledger")
        producer.send(topic, "to the shared durable one")
        assert ledger.receive_body(str, 5.0) == "to the shared durable one"
        ledger.close()
        context.unsubscribe("ledger")
    else:
        with pytest.raises(jmslike.IllegalStateError, match="capability"):
            context.create_shared_durable_consumer(topic, "ledger")
    queue = context.create_queue(unique("q"))
    producer.send(queue, "waiting")
    if capabilities.browsers:
        # Artemis may miss a message sent a moment before (docs/providers.md, Artemis'
        # management API), so an empty listing is looked at again, up to 3 times.
        for _ in range(3):
            with context.create_browser(queue) as browser:
                listed = [m.body for m in browser]
            if listed:
                break
            time.sleep(0.1)
        assert listed == ["waiting"]
    else:
        with pytest.raises(jmslike.IllegalStateError, match="capability browsers"):
            list(context.create_browser(queue))
