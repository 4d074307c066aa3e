"""jmslike.compat: the camelCase table is complete, and a sample of its names behaves as in Java.

Completeness is checked in both directions on live objects (instance attributes set in
``__init__`` only show on instances): every table entry resolves to a real attribute, and
every public name of every API class (docs/getting-started.md) has a Java name in
``JAVA_NAMES`` or a reason in ``NOT_PORTED``. Behaviour runs on a fresh embedded broker per test.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import jmslike
from jmslike import compat
from jmslike.compat import JAVA_NAMES, NOT_PORTED, Enumeration, Kind, as_java
from jmslike.errors import InvalidSelectorError

API_ERRORS = [
    getattr(jmslike.errors, name)
    for name in jmslike.errors.__all__
    if isinstance(getattr(jmslike.errors, name), type)
]
API_CLASSES: list[type] = [
    jmslike.ConnectionFactory,
    jmslike.Connection,
    jmslike.Session,
    jmslike.MessageProducer,
    jmslike.MessageConsumer,
    jmslike.QueueBrowser,
    jmslike.QueueRequestor,
    jmslike.TopicRequestor,
    jmslike.Message,
    jmslike.TextMessage,
    jmslike.BytesMessage,
    jmslike.MapMessage,
    jmslike.Destination,
    jmslike.Queue,
    jmslike.Topic,
    jmslike.TemporaryQueue,
    jmslike.TemporaryTopic,
    jmslike.MessageListenerContainer,
    jmslike.DeliveryMode,
    jmslike.JMSContext,
    jmslike.JMSProducer,
    jmslike.JMSConsumer,
    *API_ERRORS,
]
"""The API's classes (docs/getting-started.md): its tour, message types, destinations and errors."""


@pytest.fixture
def factory() -> jmslike.ConnectionFactory:
    return jmslike.ConnectionFactory(f"embedded://compat-{uuid.uuid4().hex}")


@pytest.fixture
def connection(factory: jmslike.ConnectionFactory) -> Iterator[jmslike.Connection]:
    with factory.create_connection() as connection:
        yield connection


@pytest.fixture
def live(
    factory: jmslike.ConnectionFactory, connection: jmslike.Connection
) -> Iterator[dict[type, Any]]:
    """One live object of every API class, as the application would hold it."""
    session = connection.create_session()
    queue = session.create_queue("live")
    container = jmslike.MessageListenerContainer(
        factory, "queue://live-container", lambda m: None, start=False
    )
    context = factory.create_context()
    objects: dict[type, Any] = {
        jmslike.ConnectionFactory: factory,
        jmslike.Connection: connection,
        jmslike.Session: session,
        jmslike.MessageProducer: session.create_producer(queue),
        jmslike.MessageConsumer: session.create_consumer(queue),
        jmslike.QueueBrowser: session.create_browser(queue),
        jmslike.QueueRequestor: jmslike.QueueRequestor(connection.create_session(), queue),
        jmslike.TopicRequestor: jmslike.TopicRequestor(
            connection.create_session(), session.create_topic("live")
        ),
        jmslike.Message: jmslike.Message(),
        jmslike.TextMessage: jmslike.TextMessage("t"),
        jmslike.BytesMessage: jmslike.BytesMessage(b"b"),
        jmslike.MapMessage: jmslike.MapMessage({"k": 1}),
        jmslike.Destination: jmslike.Destination("d"),
        jmslike.Queue: queue,
        jmslike.Topic: session.create_topic("live"),
        jmslike.TemporaryQueue: session.create_temporary_queue(),
        jmslike.TemporaryTopic: session.create_temporary_topic(),
        jmslike.MessageListenerContainer: container,
        jmslike.DeliveryMode: jmslike.DeliveryMode(),
        jmslike.JMSContext: context,
        jmslike.JMSProducer: context.create_producer(),
        jmslike.JMSConsumer: context.create_consumer("queue://live-context"),
    }
    objects.update({cls: cls("live") for cls in API_ERRORS})
    yield objects
    context.close()
    container.stop()


def _along_mro(table: dict[type, dict[str, Any]], cls: type) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        merged.update(table.get(base, {}))
    return merged


def _public_names(obj: object) -> set[str]:
    """Public, non-constant names, without the Java names and without Python's own."""
    python = set(dir(BaseException() if isinstance(obj, BaseException) else object()))
    java = _along_mro(JAVA_NAMES, type(obj))
    return {
        name
        for name in dir(obj)
        if not name.startswith("_") and not name.isupper() and name not in python | set(java)
    }


# ---------------------------------------------------------------- completeness
def test_every_entry_resolves(live: dict[type, Any]) -> None:
    for cls, entries in JAVA_NAMES.items():
        obj = live[cls]
        view = as_java(obj)
        for java, (attr, kind) in entries.items():
            where = f"{cls.__name__}.{java} -> {attr}"
            assert hasattr(obj, attr), f"{where}: no such attribute"
            assert callable(getattr(view, java)), f"{where}: not installed"
            if java != attr:
                assert java in cls.__dict__, f"{where}: not on the real class"
            elif kind is not Kind.METHOD:
                assert java in type(view).__dict__, f"{where}: not on the Java view"


def test_every_public_name_is_ported_or_excluded(live: dict[type, Any]) -> None:
    missing = {}
    for cls in API_CLASSES:
        covered = {attr for attr, _kind in _along_mro(JAVA_NAMES, cls).values()}
        excluded = set(_along_mro(NOT_PORTED, cls))
        left = _public_names(live[cls]) - covered - excluded
        if left:
            missing[cls.__name__] = sorted(left)
    assert not missing, f"add a Java name to JAVA_NAMES or a reason to NOT_PORTED: {missing}"


def test_exclusions_are_current(live: dict[type, Any]) -> None:
    for cls, names in NOT_PORTED.items():
        covered = {attr for attr, _kind in _along_mro(JAVA_NAMES, cls).values()}
        for name, reason in names.items():
            assert hasattr(live[cls], name), f"{cls.__name__}.{name} is gone: drop it"
            assert name not in covered, f"{cls.__name__}.{name} is both ported and excluded"
            assert reason.strip()


def test_every_kind_is_used() -> None:
    used = {kind for entries in JAVA_NAMES.values() for _attr, kind in entries.values()}
    assert used == set(Kind)


def test_install_is_idempotent_and_refuses_clashes() -> None:
    compat.install()  # importing did it once already

    class Thing:
        def getName(self) -> str:  # noqa: N802 - a clash on purpose
            return "mine"

        name = "x"

    with pytest.raises(TypeError, match="exists already"):
        compat.install({Thing: {"getName": ("name", Kind.GET)}})
    with pytest.raises(TypeError, match="no such method"):
        compat.install({Thing: {"doIt": ("do_it", Kind.METHOD)}})
    assert Thing().getName() == "mine"


def test_snake_case_api_is_unchanged(connection: jmslike.Connection) -> None:
    session = connection.create_session()
    consumer = session.create_consumer("queue://plain")
    producer = session.create_producer("queue://plain")
    assert type(consumer) is jmslike.MessageConsumer
    assert type(producer) is jmslike.MessageProducer
    connection.start()
    started = time.monotonic()
    assert consumer.receive(0) is None  # jmslike: 0 s, not Java's "for ever"
    assert time.monotonic() - started < 1.0
    message = session.create_text_message("x")
    producer.send(message, jmslike.DeliveryMode.PERSISTENT, 4, 2.0)  # seconds
    assert message.jms_expiration - message.jms_timestamp == 2000


# ------------------------------------------------------------------- behaviour
def test_producer_durations_in_milliseconds(connection: jmslike.Connection) -> None:
    session = connection.createSession()
    producer = session.createProducer(session.createQueue("ms"))
    producer.setTimeToLive(60000)
    assert producer.time_to_live == 60.0
    assert producer.getTimeToLive() == 60000
    producer.setDeliveryDelay(1500)
    assert producer.delivery_delay == 1.5
    assert producer.getDeliveryDelay() == 1500
    producer.setDeliveryDelay(0)
    for bad in (-1, True, "10", float("nan")):
        with pytest.raises(jmslike.InvalidArgumentError, match="setTimeToLive"):
            producer.setTimeToLive(bad)
    producer.setPriority(7)
    producer.setDeliveryMode(jmslike.DeliveryMode.NON_PERSISTENT)
    producer.setDisableMessageTimestamp(True)
    assert (producer.getPriority(), producer.getDeliveryMode()) == (7, 1)
    assert producer.getDisableMessageTimestamp() is True
    assert producer.getDestination() == jmslike.Queue("ms")
    message = session.createTextMessage("hi")
    producer.send(message)
    assert (message.getJMSPriority(), message.getJMSDeliveryMode()) == (7, 1)
    assert message.getJMSTimestamp() == 0


def test_send_overloads(connection: jmslike.Connection) -> None:
    session = connection.createSession()
    queue = session.createQueue("send")
    producer = session.createProducer(queue)
    message = session.createTextMessage("one")
    producer.send(message, jmslike.DeliveryMode.NON_PERSISTENT, 6, 30000)  # Java: ms
    assert message.getJMSExpiration() - message.getJMSTimestamp() == 30000
    assert (message.getJMSDeliveryMode(), message.getJMSPriority()) == (1, 6)
    anonymous = session.createProducer(None)
    anonymous.send(queue, session.createTextMessage("two"))
    anonymous.send("queue://send", session.createTextMessage("three"), 2, 4, 0)
    with pytest.raises(jmslike.InvalidArgumentError, match="send"):
        producer.send(message, 2, 4)
    consumer = session.createConsumer(queue)
    connection.start()
    got = [consumer.receive(5000) for _ in range(3)]
    assert [m.getText() for m in got] == ["one", "two", "three"]
    assert got[1].getJMSDestination() == queue
    assert got[2].getJMSExpiration() == 0


def test_receive_in_milliseconds_and_zero_waits_for_ever(connection: jmslike.Connection) -> None:
    session = connection.createSession()
    queue = session.createQueue("receive")
    consumer = session.createConsumer(queue)
    connection.start()
    started = time.monotonic()
    assert consumer.receive(50) is None
    assert 0.04 <= time.monotonic() - started < 5.0  # 50 ms, not 50 s
    assert consumer.receiveNoWait() is None  # the real receive_no_wait: at once
    assert consumer.receive(timeout=0.01) is None  # jmslike's keyword keeps seconds
    with pytest.raises(jmslike.InvalidArgumentError, match="receive"):
        consumer.receive(-1)

    def send_later() -> None:
        time.sleep(0.3)
        with connection.create_session() as other:
            other.create_producer(queue).send(other.create_text_message("late"))

    for call in (lambda: consumer.receive(0), consumer.receive):
        sender = threading.Thread(target=send_later)
        started = time.monotonic()
        sender.start()
        got = call()
        sender.join()
        assert got is not None and got.getText() == "late"
        assert time.monotonic() - started >= 0.25


def test_ordering_group_and_unit_of_order(connection: jmslike.Connection) -> None:
    session = connection.createSession(False, jmslike.Session.CLIENT_ACKNOWLEDGE)
    queue = session.createQueue("groups")
    producer = session.createProducer(queue)
    producer.enableOrderingGroup("joe")
    assert (producer.getOrderingGroup(), producer.getUnitOfOrder()) == ("joe", "joe")
    for step in ("place", "update"):
        producer.send(session.createTextMessage(step))
    producer.setUnitOfOrder("ann")
    assert producer.getOrderingGroup() == "ann"
    producer.send(session.createTextMessage("ann-1"))
    producer.disableOrderingGroup()
    assert producer.getOrderingGroup() is None
    producer.send(session.createTextMessage("free"))
    assert producer.enableOrderingGroup(None)  # a generated name, returned
    consumer = session.createConsumer(queue)
    connection.start()
    got = [consumer.receive(5000) for _ in range(4)]
    assert [
        (m.getText(), m.getStringProperty("JMSXGroupID"), m.getIntProperty("JMSXGroupSeq"))
        for m in got
    ] == [("place", "joe", 1), ("update", "joe", 2), ("ann-1", "ann", 1), ("free", None, None)]
    got[-1].acknowledge()


def test_client_acknowledge_recover(connection: jmslike.Connection) -> None:
    session = connection.createSession(jmslike.Session.CLIENT_ACKNOWLEDGE)  # JMS 2.0 form
    assert (session.getTransacted(), session.getAcknowledgeMode()) == (False, 2)
    queue = session.createQueue("ack")
    session.createProducer(queue).send(session.createTextMessage("once"))
    consumer = session.createConsumer(queue)
    connection.start()
    first = consumer.receive(5000)
    assert first.getJMSRedelivered() is False
    session.recover()
    again = consumer.receive(5000)
    assert again.getJMSRedelivered() is True
    assert again.getIntProperty("JMSXDeliveryCount") == 2
    again.acknowledge()
    consumer.close()
    assert session.createConsumer(queue).receive(100) is None


def test_connection_and_session_names(connection: jmslike.Connection) -> None:
    connection.setClientID("compat-client")
    assert connection.getClientID() == "compat-client"

    class Listener:
        def onException(self, exc: jmslike.JMSException) -> None:  # noqa: N802 - Java's name
            pass

    listener = Listener()
    connection.setExceptionListener(listener)
    assert connection.getExceptionListener() == listener.onException
    assert connection.createSession().getAcknowledgeMode() == jmslike.Session.AUTO_ACKNOWLEDGE
    transacted = connection.createSession(jmslike.Session.SESSION_TRANSACTED)
    assert transacted.getTransacted() is True
    queue = transacted.createQueue("tx")
    transacted.createProducer(queue).send(transacted.createTextMessage("rolled back"))
    transacted.rollback()
    transacted.createProducer(queue).send(transacted.createTextMessage("kept"))
    transacted.commit()
    consumer = transacted.createDurableSubscriber(transacted.createTopic("t"), "sub")
    assert isinstance(consumer, jmslike.MessageConsumer) and consumer.getNoLocal() is False
    consumer.close()
    transacted.unsubscribe("sub")
    connection.start()
    assert transacted.createConsumer(queue).receive(5000).getText() == "kept"


def test_listener_object_and_browser(connection: jmslike.Connection) -> None:
    session = connection.createSession()
    queue = session.createQueue("listen")
    producer = session.createProducer(queue)
    for text in ("a", "b"):
        producer.send(session.createTextMessage(text))
    browser = session.createBrowser(queue, "JMSPriority = 4")
    assert (browser.getQueue(), browser.getMessageSelector()) == (queue, "JMSPriority = 4")
    waiting = browser.getEnumeration()
    texts = []
    while waiting.hasMoreElements():
        texts.append(waiting.nextElement().getText())
    assert texts == ["a", "b"]
    with pytest.raises(jmslike.IllegalStateError):
        waiting.nextElement()
    browser.close()

    got: list[str] = []
    done = threading.Event()

    class Listener:
        def onMessage(self, message: jmslike.Message) -> None:  # noqa: N802 - Java's name
            got.append(message.getBody(str))
            if len(got) == 2:
                done.set()

    consumer = session.createConsumer(queue)
    consumer.setMessageListener(Listener())
    assert consumer.getMessageListener() is not None
    connection.start()
    assert done.wait(5.0) and got == ["a", "b"]


def test_message_headers_and_properties() -> None:
    message = jmslike.TextMessage()
    message.setText("body")
    message.setIntProperty("quantity", 2)
    message.setStringProperty("customer", "joe")
    message.setJMSCorrelationID("abc")
    message.setJMSReplyTo(jmslike.Queue("replies"))
    message.setJMSType("order")
    assert message.getText() == "body" and message.getBody(str) == "body"
    with pytest.raises(jmslike.MessageFormatError, match="getBody"):
        message.getBody(bytes)
    assert message.getIntProperty("quantity") == 2
    assert message.getObjectProperty("customer") == "joe"
    assert message.propertyExists("customer") and not message.propertyExists("nope")
    names = message.getPropertyNames()
    assert isinstance(names, Enumeration) and sorted(names) == ["customer", "quantity"]
    assert message.getJMSCorrelationID() == "abc" and message.getJMSType() == "order"
    assert message.getJMSReplyTo().getQueueName() == "replies"
    message.clearProperties()
    message.clearBody()  # TextMessage's own clear_body, not Message's
    assert list(message.getPropertyNames()) == [] and message.getText() is None


def test_map_message_typed_accessors() -> None:
    message = jmslike.MapMessage()
    message.setInt("int", 5)
    message.setLong("long", 2**40)
    message.setString("text", "12")
    message.setBoolean("flag", True)
    message.setDouble("ratio", 0.5)
    message.setBytes("raw", bytearray(b"\x01"))
    message.setObject("any", "x")
    assert (message.getInt("int"), message.getLong("long")) == (5, 2**40)
    assert (message.getString("int"), message.getInt("text")) == ("5", 12)
    assert (message.getBoolean("flag"), message.getString("flag")) == (True, "true")
    assert (message.getDouble("ratio"), message.getBytes("raw")) == (0.5, b"\x01")
    assert message.getObject("any") == "x" and message.getInt("missing") is None
    assert message.itemExists("ratio") and sorted(message.getMapNames())[0] == "any"
    for call in (
        lambda: message.getInt("long"),  # a long does not fit an int
        lambda: message.getDouble("int"),  # an int is not read as double (JMS table)
        lambda: message.getShort("ratio"),
        lambda: message.getBytes("text"),
        lambda: message.setInt("big", 2**31),
        lambda: message.setString("n", 5),
        lambda: message.setByte("b", True),
    ):
        with pytest.raises(jmslike.MessageFormatError):
            call()


def test_bytes_message_stream(connection: jmslike.Connection) -> None:
    """Java's BytesMessage reads and writes, with a read position: readBytes(buffer)
    returns the count read, -1 at the end; typed values in Java's layout."""
    session = connection.createSession()
    message = session.createBytesMessage()
    assert message.readBytes(bytearray(4)) == -1
    message.writeBytes(b"abc")
    message.writeBytes(b"xdefx", 1, 3)
    message.writeInt(-2)
    message.writeUTF("caf\u00e9")
    message.writeObject(True)
    assert message.getBodyLength() == 6 + 4 + 2 + 5 + 1
    queue = session.createQueue("bytes")
    session.createProducer(queue).send(message)
    connection.start()
    got = session.createConsumer(queue).receive(5000)
    buffer = bytearray(4)
    assert got.readBytes(buffer) == 4 and bytes(buffer) == b"abcd"
    assert got.readBytes(buffer, 2) == 2 and bytes(buffer[:2]) == b"ef"
    assert (got.readInt(), got.readUTF(), got.readBoolean()) == (-2, "caf\u00e9", True)
    assert got.readBytes(buffer) == -1
    with pytest.raises(jmslike.MessageEOFError):
        got.readByte()
    got.reset()
    assert got.readBytes() == got.body  # no buffer: the rest of the body (jmslike only)
    with pytest.raises(jmslike.MessageNotWriteableError):
        got.writeBytes(b"more")


def test_destinations_container_and_errors(factory: jmslike.ConnectionFactory) -> None:
    with factory.createConnection() as connection:
        session = connection.createSession()
        assert session.createQueue("q").getQueueName() == "q"
        assert session.createTopic("t").getTopicName() == "t"
        assert session.createTemporaryQueue().getQueueName()
        assert session.createTemporaryTopic().getTopicName()
    container = jmslike.MessageListenerContainer(
        factory, "queue://c", lambda m: None, concurrency=2, start=False
    )
    assert container.getConcurrentConsumers() == 2
    assert container.getDestination() == jmslike.Queue("c")
    assert container.getSessionAcknowledgeMode() == jmslike.Session.AUTO_ACKNOWLEDGE
    container.start()
    assert container.isRunning()
    container.shutdown()
    assert not container.isRunning()
    cause = OSError("socket")
    try:
        raise jmslike.ConnectionFailedError("lost", "E42") from cause
    except jmslike.JMSException as exc:
        assert (exc.getErrorCode(), exc.getLinkedException()) == ("E42", cause)
    assert InvalidSelectorError("bad").getErrorCode() is None


def test_java_views(connection: jmslike.Connection) -> None:
    session = connection.createSession()
    consumer = session.createConsumer("queue://views")
    assert isinstance(consumer, jmslike.MessageConsumer)
    assert "Java view" in repr(consumer)
    assert as_java(consumer) is consumer
    message = session.createTextMessage("m")
    assert as_java(message) is message and as_java(session) is session
    plain = session.create_consumer("queue://views-plain")
    with as_java(plain) as view:
        connection.start()
        started = time.monotonic()
        assert view.receive(20) is None  # the view: milliseconds
        assert time.monotonic() - started < 5.0
    assert plain.closed
    producer = session.createProducer("queue://views")
    with producer as same:
        assert same is producer


# ------------------------------------------------------------------- JMS 2.0
def test_jms_context_in_java_names(factory: jmslike.ConnectionFactory) -> None:
    """JMS 2.0 code as written in Java: createContext, fluent setters in milliseconds,
    receiveBody with Java's "0 waits for ever", the unchecked exception names."""
    with factory.createContext(jmslike.JMSContext.CLIENT_ACKNOWLEDGE) as context:
        assert (context.getSessionMode(), context.getTransacted()) == (2, False)
        assert context.getAutoStart() is True
        context.setClientID("compat-context")
        assert context.getClientID() == "compat-context"
        queue = context.createQueue("jms2")
        producer = context.createProducer()
        same = (
            producer.setPriority(6)
            .setTimeToLive(60000)
            .setDeliveryDelay(0)
            .setProperty("region", "EU")
            .setJMSCorrelationID("c-1")
            .setJMSType("T")
            .setOrderingGroup("joe")
        )
        assert same is producer
        assert (producer.getTimeToLive(), producer.get_time_to_live()) == (60000, 60.0)
        assert producer.getDeliveryDelay() == 0 and producer.getObjectProperty("region") == "EU"
        assert producer.getOrderingGroup() == "joe" and producer.getJMSType() == "T"
        producer.send(queue, "one").send(queue, context.createTextMessage("two"))
        producer.send(queue, {"k": 1})
        consumer = context.createConsumer(queue)
        assert "Java view" in repr(consumer) and isinstance(consumer, jmslike.JMSConsumer)
        assert consumer.receiveBody(str, 5000) == "one"
        got = consumer.receive(5000)  # milliseconds on the view
        assert got.getText() == "two" and got.getJMSExpiration() - got.getJMSTimestamp() == 60000
        assert (got.getStringProperty("JMSXGroupID"), got.getIntProperty("JMSXGroupSeq")) == (
            "joe",
            2,
        )
        with pytest.raises(compat.MessageFormatRuntimeException, match=r"receive_body\(bytes\)"):
            consumer.receiveBody(bytes, 5000)
        context.recover()  # CLIENT_ACKNOWLEDGE: everything unacknowledged comes again
        assert [consumer.receiveBody(str) for _ in range(2)] == ["one", "two"]  # 0: for ever
        assert consumer.receiveBody(dict, 0) == {"k": 1}
        context.acknowledge()
        assert consumer.receiveBodyNoWait(str) is None
        with pytest.raises(jmslike.InvalidArgumentError, match="setTimeToLive"):
            producer.setTimeToLive(-1)
        with pytest.raises(jmslike.InvalidArgumentError, match="receiveBody"):
            consumer.receiveBody(str, -5)
    assert compat.JMSRuntimeException is jmslike.JMSException
    assert compat.IllegalStateRuntimeException is jmslike.IllegalStateError


def test_create_context_overloads(factory: jmslike.ConnectionFactory) -> None:
    """createContext(), (sessionMode), (user, password) and (user, password, sessionMode)."""
    for args, mode in [
        ((), 1),
        ((jmslike.JMSContext.SESSION_TRANSACTED,), 0),
        (("user", "secret"), 1),
        (("user", "secret", jmslike.JMSContext.DUPS_OK_ACKNOWLEDGE), 3),
    ]:
        with factory.createContext(*args) as context:
            assert context.getSessionMode() == mode
            child = context.createContext(jmslike.JMSContext.CLIENT_ACKNOWLEDGE)
            assert child.getSessionMode() == 2
            child.close()
    with pytest.raises(jmslike.InvalidArgumentError, match="session mode 7"):
        factory.createContext(7)


def test_jms_context_listener_object(factory: jmslike.ConnectionFactory) -> None:
    """setMessageListener with a Java-style listener object on a JMSConsumer."""
    got: list[str] = []
    done = threading.Event()

    class Listener:
        def onMessage(self, message: jmslike.Message) -> None:  # noqa: N802 - Java's name
            got.append(message.getBody(str))
            done.set()

    with factory.createContext() as context:
        consumer = context.createConsumer(context.createQueue("listened"))
        consumer.setMessageListener(Listener())
        assert consumer.getMessageListener() is not None
        assert consumer.getMessageSelector() is None
        context.createProducer().send(context.createQueue("listened"), "hi")
        assert done.wait(5.0) and got == ["hi"]
