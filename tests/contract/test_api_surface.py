"""Every public name (docs/getting-started.md, "The API at a glance") exists and behaves as
written there.

Each test names the API line it checks. Behaviour in depth is in the other modules;
here the point is that the surface users port Java code onto is all present.
"""

from __future__ import annotations

import inspect
import threading

import pytest

import jmslike
from jmslike import (
    BytesMessage,
    ConnectionFactory,
    DeliveryMode,
    MapMessage,
    Message,
    Queue,
    Session,
    TextMessage,
    Topic,
)

EXPECTED_ALL = [
    "AcknowledgeInDoubtError",
    "BytesMessage",
    "Capabilities",
    "CompletionListener",
    "ConfigurationError",
    "Connection",
    "ConnectionFactory",
    "ConnectionFailedError",
    "DeliveryMode",
    "Destination",
    "FactorySettings",
    "IllegalStateError",
    "InvalidArgumentError",
    "InvalidClientIDError",
    "InvalidDestinationError",
    "InvalidOrderingGroupError",
    "InvalidSelectorError",
    "JMSConsumer",
    "JMSContext",
    "JMSException",
    "JMSProducer",
    "JMSSecurityError",
    "ListenerError",
    "MapMessage",
    "Message",
    "MessageConsumer",
    "MessageEOFError",
    "MessageFormatError",
    "MessageListenerContainer",
    "MessageNotReadableError",
    "MessageNotWriteableError",
    "MessageProducer",
    "OrderingError",
    "OrderingMode",
    "Queue",
    "QueueBrowser",
    "QueueDeclaration",
    "QueueRequestor",
    "SendInDoubtError",
    "Session",
    "TemporaryQueue",
    "TemporaryTopic",
    "TextMessage",
    "Topic",
    "TopicRequestor",
    "TransactionInDoubtError",
    "TransactionInProgressError",
    "TransactionRolledBackError",
    "__version__",
]

API_ERRORS = [
    "IllegalStateError",
    "InvalidDestinationError",
    "InvalidSelectorError",
    "MessageFormatError",
    "JMSSecurityError",
    "TransactionRolledBackError",
    "InvalidOrderingGroupError",
    "OrderingError",
    "ConnectionFailedError",
]


def test_all_is_pinned() -> None:
    """docs/architecture.md: ``jmslike/__init__.py`` re-exports only, with ``__all__`` (a test
    pins it)."""
    assert sorted(jmslike.__all__) == EXPECTED_ALL
    for name in jmslike.__all__:
        assert hasattr(jmslike, name), name


@pytest.mark.parametrize("name", API_ERRORS)
def test_api_errors_are_jms_exceptions(name: str) -> None:
    """API: Errors (all under ``jmslike.JMSException``): IllegalStateError, ..."""
    cls = getattr(jmslike, name)
    assert issubclass(cls, jmslike.JMSException)
    assert issubclass(jmslike.JMSException, Exception)


def test_every_exported_error_is_a_jms_exception() -> None:
    """API: every error is a ``jmslike.JMSException`` subclass."""
    errors = [
        getattr(jmslike, n)
        for n in jmslike.__all__
        if isinstance(getattr(jmslike, n), type) and issubclass(getattr(jmslike, n), Exception)
    ]
    assert len(errors) >= len(API_ERRORS) + 1
    for cls in errors:
        assert issubclass(cls, jmslike.JMSException), cls
    assert issubclass(jmslike.MessageNotWriteableError, jmslike.MessageFormatError)
    assert issubclass(jmslike.InvalidClientIDError, jmslike.JMSException)
    assert issubclass(jmslike.ListenerError, jmslike.JMSException)


def test_session_constants_have_jms_values() -> None:
    """API: Session.AUTO_ACKNOWLEDGE, CLIENT_ACKNOWLEDGE, DUPS_OK_ACKNOWLEDGE,
    SESSION_TRANSACTED (the JMS 2.0 values 1, 2, 3 and 0)."""
    assert Session.SESSION_TRANSACTED == 0
    assert Session.AUTO_ACKNOWLEDGE == 1
    assert Session.CLIENT_ACKNOWLEDGE == 2
    assert Session.DUPS_OK_ACKNOWLEDGE == 3
    assert DeliveryMode.NON_PERSISTENT == 1
    assert DeliveryMode.PERSISTENT == 2


def test_connection_factory_keywords(provider_url: str) -> None:
    """API: ``ConnectionFactory(url, user=, password=)`` and
    ``ConnectionFactory(url, enable_ordering_group=True, default_ordering_group_name=...)``;
    also ``ConnectionFactory.from_config`` exists."""
    ConnectionFactory(provider_url, user="u", password="p")
    ConnectionFactory(provider_url, enable_ordering_group=True, default_ordering_group_name="o")
    ConnectionFactory(provider_url, client_id="c", max_redeliveries=2, redelivery_delay=0.0)
    assert callable(ConnectionFactory.from_config)
    params = inspect.signature(ConnectionFactory.create_connection).parameters
    assert list(params)[1:3] == ["user", "password"]


def test_connection_surface(factory: ConnectionFactory, unique) -> None:
    """API: ``with cf.create_connection() as connection``; client_id, capabilities,
    set_exception_listener, create_session, start/stop/close."""
    with factory.create_connection() as connection:
        assert connection.client_id is None
        client_id = unique("app")
        connection.client_id = client_id
        assert connection.client_id == client_id
        caps = connection.capabilities
        assert isinstance(caps, jmslike.Capabilities)
        connection.set_exception_listener(lambda exc: None)
        connection.set_exception_listener(None)
        connection.start()
        connection.stop()
        connection.start()
    with pytest.raises(jmslike.IllegalStateError):
        connection.start()
    connection.close()  # closing twice is allowed


def test_connection_with_credentials(factory: ConnectionFactory) -> None:
    """API: ``create_connection(user, password)``: the given login is the one used,
    over the URL's. Where the broker checks logins (the URL carries one: RabbitMQ and
    Artemis here, which also know user/secret), a wrong password is refused with
    JMSSecurityError, and the password is not in the message."""
    with factory.create_connection("user", "secret") as connection:
        connection.create_session().close()
        assert "secret" not in repr(connection)
        assert connection.url == factory.url  # what a log line may name; str() hides secrets
    if factory.url.user is None:
        return  # a broker without logins (embedded, the test ActiveMQ): nothing to refuse
    with pytest.raises(jmslike.JMSSecurityError) as info:
        factory.create_connection("user", "not-the-password")
    assert "not-the-password" not in str(info.value)


def test_capabilities_as_expected(connection, provider_case) -> None:
    """API: ``connection.capabilities`` says what the broker does natively (ORD-16).
    Exactly the expected ones are on: a capability that turns off would silently turn
    its tests into skips (docs/providers.md is the matrix these lists follow)."""
    caps = connection.capabilities
    on = {name for name, value in caps.as_dict().items() if value is True} - {"persistent"}
    assert on == set(provider_case.capabilities_expected)
    assert caps.ordering_mode in {
        jmslike.OrderingMode.BROKER,
        jmslike.OrderingMode.CLIENT_GATE,
        jmslike.OrderingMode.PARTITIONED,
    }
    assert isinstance(caps.provider, str) and caps.provider


@pytest.mark.parametrize(
    ("args", "kwargs", "mode"),
    [
        ((), {}, Session.AUTO_ACKNOWLEDGE),
        ((False,), {}, Session.AUTO_ACKNOWLEDGE),
        ((), {"acknowledge_mode": Session.CLIENT_ACKNOWLEDGE}, Session.CLIENT_ACKNOWLEDGE),
        ((False, Session.DUPS_OK_ACKNOWLEDGE), {}, Session.DUPS_OK_ACKNOWLEDGE),
        ((False, Session.AUTO_ACKNOWLEDGE), {}, Session.AUTO_ACKNOWLEDGE),
        ((True,), {}, Session.SESSION_TRANSACTED),
        ((), {"transacted": True}, Session.SESSION_TRANSACTED),
        ((False, Session.SESSION_TRANSACTED), {}, Session.SESSION_TRANSACTED),
    ],
)
def test_create_session_variants(connection, args, kwargs, mode) -> None:
    """API: ``create_session(transacted=False, acknowledge_mode=...)``, defaults False and
    AUTO_ACKNOWLEDGE; SESSION_TRANSACTED makes a transacted session."""
    with connection.create_session(*args, **kwargs) as session:
        assert session.acknowledge_mode == mode
        assert session.transacted is (mode == Session.SESSION_TRANSACTED)


def test_destinations(connection, unique) -> None:
    """API: ``session.create_queue``, ``create_topic``; destinations as strings
    ``"queue://orders"``, ``"topic://prices"``."""
    session = connection.create_session()
    q = session.create_queue("orders")
    t = session.create_topic("prices")
    assert isinstance(q, Queue) and isinstance(t, Topic)
    assert q.name == "orders" and t.name == "prices"
    assert str(q) == "queue://orders" and str(t) == "topic://prices"
    assert q == session.create_queue("orders")
    assert q != session.create_topic("orders")
    # the string form works wherever a destination is taken
    name = unique("q")
    connection.start()
    producer = session.create_producer(f"queue://{name}")
    consumer = session.create_consumer(session.create_queue(name))
    producer.send(session.create_text_message("via string"))
    msg = consumer.receive(2.0)
    assert msg is not None and msg.text == "via string"
    assert msg.jms_destination == session.create_queue(name)
    session.create_consumer(f"topic://{unique('t')}").close()


def test_producer_attributes(connection, unique) -> None:
    """API: ``producer.delivery_mode / priority / time_to_live / delivery_delay``."""
    session = connection.create_session()
    producer = session.create_producer(f"queue://{unique('q')}")
    assert producer.delivery_mode == DeliveryMode.PERSISTENT
    assert producer.priority == 4
    assert producer.time_to_live == 0
    assert producer.delivery_delay == 0
    producer.delivery_mode = DeliveryMode.NON_PERSISTENT
    producer.priority = 9
    producer.time_to_live = 10.0
    producer.delivery_delay = 0.5
    assert producer.delivery_mode == DeliveryMode.NON_PERSISTENT
    assert producer.priority == 9
    assert producer.time_to_live == 10.0
    assert producer.delivery_delay == 0.5


def test_producer_ordering_group_calls(connection, unique) -> None:
    """API: ``enable_ordering_group("joe")`` (None -> generated name),
    ``disable_ordering_group()``, ``set_unit_of_order("joe")``, ``producer.ordering_group``."""
    session = connection.create_session()
    producer = session.create_producer(f"queue://{unique('q')}")
    assert producer.ordering_group is None
    producer.enable_ordering_group("joe")
    assert producer.ordering_group == "joe"
    producer.disable_ordering_group()
    assert producer.ordering_group is None
    producer.set_unit_of_order("ann")
    assert producer.ordering_group == "ann"
    producer.enable_ordering_group(None)
    generated = producer.ordering_group
    assert isinstance(generated, str) and generated and generated != "ann"
    producer.enable_ordering_group()
    assert producer.ordering_group not in (None, generated)


def test_send_with_keywords(connection, unique) -> None:
    """API: ``producer.send(msg, delivery_mode=DeliveryMode.PERSISTENT, priority=4,
    time_to_live=0.0)``."""
    session = connection.create_session()
    name = unique("q")
    producer = session.create_producer(f"queue://{name}")
    producer.send(
        session.create_text_message("k"),
        delivery_mode=DeliveryMode.NON_PERSISTENT,
        priority=7,
        time_to_live=0.0,
    )
    producer.send(session.create_text_message("p"), DeliveryMode.PERSISTENT, 3, 0.0)
    consumer = session.create_consumer(f"queue://{name}")
    connection.start()
    first, second = consumer.receive(2.0), consumer.receive(2.0)
    assert (first.text, first.jms_delivery_mode, first.jms_priority) == (
        "k",
        DeliveryMode.NON_PERSISTENT,
        7,
    )
    assert (second.text, second.jms_delivery_mode, second.jms_priority) == (
        "p",
        DeliveryMode.PERSISTENT,
        3,
    )


@pytest.mark.known_bug(
    ("rabbitmq-stomp", "rabbitmq-amqp"),
    reason="BROKER-LIMIT: RabbitMQ has no queue selectors (capability selectors)",
)
def test_consumer_surface(connection, unique) -> None:
    """API: ``consumer.receive(timeout=5.0)`` (None on timeout), ``receive_no_wait()``,
    ``set_message_listener(fn)`` / ``consumer.message_listener = fn``; ``message_selector=``."""
    session = connection.create_session()
    name = unique("q")
    consumer = session.create_consumer(f"queue://{name}", message_selector="region = 'EU'")
    connection.start()
    assert consumer.receive(timeout=0.05) is None
    assert consumer.receive_no_wait() is None
    other = connection.create_session().create_consumer(f"queue://{name}")

    def listener(msg: Message) -> None:
        pass

    other.set_message_listener(listener)
    assert other.message_listener is listener
    other.message_listener = None
    assert other.message_listener is None
    other.message_listener = listener
    assert other.message_listener is listener


def test_message_factories_and_bodies(connection) -> None:
    """API: ``create_text_message(text)``, ``create_bytes_message(data)``,
    ``create_map_message(mapping)``, ``create_message()``; ``msg.text`` / ``msg.body``."""
    session = connection.create_session()
    text = session.create_text_message("hi")
    assert isinstance(text, TextMessage) and text.text == "hi" and text.body == "hi"
    data = session.create_bytes_message(b"\x00\x01")
    assert isinstance(data, BytesMessage) and data.body == b"\x00\x01"
    mapping = session.create_map_message({"a": 1, "b": "x"})
    assert isinstance(mapping, MapMessage) and mapping.body == {"a": 1, "b": "x"}
    plain = session.create_message()
    assert isinstance(plain, Message) and plain.body is None
    assert session.create_text_message().text is None


TYPED = [
    ("string", "s"),
    ("boolean", True),
    ("byte", -128),
    ("short", 32000),
    ("int", 2**31 - 1),
    ("long", 2**63 - 1),
    ("float", 1.5),
    ("double", 2.25),
    ("object", "obj"),
]


@pytest.mark.parametrize(("kind", "value"), TYPED)
def test_typed_property_accessors(connection, kind, value) -> None:
    """API: properties through ``msg.set_string_property(name, value)`` (and int, long,
    float, double, boolean, object variants), ``msg.get_string_property(name)``."""
    msg = connection.create_session().create_message()
    getattr(msg, f"set_{kind}_property")("p", value)
    assert getattr(msg, f"get_{kind}_property")("p") == value
    assert msg.property_names() == ["p"]
    assert dict(msg.properties) == {"p": value}
    assert getattr(msg, f"get_{kind}_property")("missing") is None


def test_properties_mapping_is_read_only(connection) -> None:
    """API: ``msg.property_names()``, and the dict view ``msg.properties``."""
    msg = connection.create_session().create_message()
    msg.set_string_property("a", "1")
    msg.set_int_property("b", 2)
    view = msg.properties
    assert set(msg.property_names()) == {"a", "b"}
    assert view["a"] == "1" and view["b"] == 2 and len(view) == 2
    with pytest.raises(TypeError):
        view["c"] = 3  # type: ignore[index]
    msg.set_boolean_property("c", False)
    assert msg.properties["c"] is False


HEADERS = [
    "jms_message_id",
    "jms_timestamp",
    "jms_correlation_id",
    "jms_reply_to",
    "jms_destination",
    "jms_delivery_mode",
    "jms_redelivered",
    "jms_type",
    "jms_expiration",
    "jms_priority",
    "jms_delivery_time",
]


def test_header_attributes_and_group_accessors(connection, unique) -> None:
    """API: headers as attributes ``jms_message_id`` ... ``jms_delivery_time``; the
    delivery count as ``JMSXDeliveryCount``; ``msg.ordering_group``, ``JMSXGroupID``,
    ``JMSXGroupSeq``."""
    session = connection.create_session()
    name = unique("q")
    producer = session.create_producer(f"queue://{name}")
    producer.enable_ordering_group("joe")
    msg = session.create_text_message("x")
    for header in HEADERS:
        assert hasattr(msg, header), header
    assert msg.ordering_group is None
    producer.send(msg)
    consumer = session.create_consumer(f"queue://{name}")
    connection.start()
    got = consumer.receive(2.0)
    for header in HEADERS:
        assert hasattr(got, header), header
    assert got.ordering_group == "joe"
    assert got.get_string_property("JMSXGroupID") == "joe"
    assert got.get_int_property("JMSXGroupSeq") == 1
    assert got.get_int_property("JMSXDeliveryCount") == 1


@pytest.mark.known_bug(
    ("rabbitmq-stomp", "rabbitmq-amqp"),
    reason="BROKER-LIMIT: RabbitMQ has no browsers (capability browsers)",
)
def test_session_verbs_exist(connection, unique, require) -> None:
    """API: ``msg.acknowledge(); session.recover(); session.commit(); session.rollback()``,
    ``create_browser``, ``create_durable_subscriber``, ``create_shared_consumer``,
    ``unsubscribe``, ``create_temporary_queue``."""
    require(connection, "temporary_destinations")
    connection.client_id = unique("client")
    client = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    client.recover()
    client.create_message().acknowledge()  # a message never received: no-op
    tx = connection.create_session(True)
    tx.commit()
    tx.rollback()
    browser = client.create_browser(f"queue://{unique('q')}")
    assert list(browser) == []
    tmp = client.create_temporary_queue()
    assert isinstance(tmp, Queue)
    require(connection, "durable_subscriptions")
    require(connection, "shared_subscriptions")
    topic = client.create_topic(unique("t"))
    client.create_durable_subscriber(topic, "sub-name").close()
    client.unsubscribe("sub-name")
    client.create_shared_consumer(topic, "shared-name").close()


@pytest.mark.known_bug(
    ("rabbitmq-stomp", "rabbitmq-amqp"),
    reason="BROKER-LIMIT: RabbitMQ has no browsers (capability browsers)",
)
def test_context_managers(factory, unique) -> None:
    """API: objects that hold a network resource are context managers."""
    name = f"queue://{unique('q')}"
    with factory.create_connection() as connection:
        with connection.create_session() as session:
            with session.create_producer(name) as producer:
                producer.send(session.create_text_message("a"))
            with session.create_consumer(name) as consumer:
                connection.start()
                assert consumer.receive(2.0).text == "a"
            with session.create_browser(name) as browser:
                assert list(browser) == []
        with pytest.raises(jmslike.IllegalStateError):
            session.create_producer(name)
        with pytest.raises(jmslike.IllegalStateError):
            producer.send(session.create_text_message("b"))
        with pytest.raises(jmslike.IllegalStateError):
            consumer.receive(0.01)
    with pytest.raises(jmslike.IllegalStateError):
        connection.create_session()


def test_message_listener_container(factory, unique) -> None:
    """API: ``with jmslike.MessageListenerContainer(cf, "queue://orders", on_message,
    concurrency=8, acknowledge_mode=Session.AUTO_ACKNOWLEDGE) as container``;
    ``container.stop()``."""
    name = f"queue://{unique('q')}"
    got: list[str] = []
    done = threading.Event()

    def on_message(msg: Message) -> None:
        got.append(msg.text)
        if len(got) == 3:
            done.set()

    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(name)
        for i in range(3):
            producer.send(session.create_text_message(str(i)))
    with jmslike.MessageListenerContainer(
        factory, name, on_message, concurrency=8, acknowledge_mode=Session.AUTO_ACKNOWLEDGE
    ) as container:
        assert done.wait(5.0)
    container.stop()  # a second stop is harmless
    assert sorted(got) == ["0", "1", "2"]
