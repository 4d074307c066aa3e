"""Bad input: each mistake raises the right ``jmslike.JMSException`` subclass, at the call
that got it, with a message naming the bad value, and nothing is sent.

The API (docs/getting-started.md): "every error is a ``jmslike.JMSException`` subclass";
config.py: "An unknown key or a value of the wrong type is an error naming the key";
producer.py: "Everything that can be wrong with a send is checked before the provider sees
it ... so a bad call raises and sends nothing".
"""

from __future__ import annotations

import math
import threading
import time

import pytest

import jmslike
from jmslike import ConnectionFactory, Session


def _with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _assert_empty(connection, queue: str) -> None:
    """Nothing reached ``queue``: a browser lists nothing (where the broker can browse) and
    a receive gets nothing."""
    session = connection.create_session()
    if connection.capabilities.browsers:
        assert list(session.create_browser(queue)) == []
    consumer = session.create_consumer(queue)
    connection.start()
    assert consumer.receive(0.05) is None
    session.close()


# ------------------------------------------------------------------------ URLs


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("", "''"),
        ("   ", "'   '"),
        ("embedded", "embedded"),
        ("embedded:/x", "embedded:/x"),
        ("stomp://host:notaport", "notaport"),
        ("://x", "://x"),
        ("1abc://x", "1abc://x"),
        ("failover:()", "failover:()"),
        ("failover:(embedded://a,stomp://b)", "failover:(embedded://a,stomp://b)"),
        (5, "5"),
        (None, "None"),
    ],
)
def test_malformed_url(url, shown) -> None:
    """API ConnectionFactory(url): a malformed URL raises a JMSException (a
    ConfigurationError) naming it, before any connection is made."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory(url)
    assert isinstance(info.value, jmslike.JMSException)
    assert shown in str(info.value)


def test_unknown_scheme_lists_known_schemes() -> None:
    """API / spi registry: an unknown scheme is named, with the known schemes."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory("nosuchbroker://host:1234")
    message = str(info.value)
    assert "nosuchbroker" in message
    assert "embedded://" in message


def test_url_password_not_in_errors() -> None:
    """config.py redact_url: a password in a bad URL never appears in an error message."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory("nosuchbroker://user:s3cret@host:1")
    assert "s3cret" not in str(info.value)


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("enableOrderingGroups=true", ["enableOrderingGroups"]),
        ("bogus=1", ["bogus"]),
        ("enableOrderingGroup=maybe", ["enable", "maybe"]),
        ("prefetch=abc", ["prefetch", "abc"]),
        ("prefetch=0", ["prefetch"]),
        ("maxRedeliveries=-5", ["max_redeliveries", "-5"]),
        ("redeliveryDelay=soon", ["redelivery_delay", "soon"]),
        ("a=1&&b", ["a=1&&b"]),
    ],
)
def test_bad_url_query(provider_url, query, names) -> None:
    """config.py: an unknown query key or a value of the wrong type is an error naming the
    key (and the value), raised before any connection is made."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory(_with_query(provider_url, query))
    for name in names:
        assert name in str(info.value)


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({"enable_ordering_groups": True}, ["enable_ordering_groups"]),
        ({"enable_ordering_group": "maybe"}, ["enable_ordering_group", "maybe"]),
        ({"enable_ordering_group": 1}, ["enable_ordering_group"]),
        ({"prefetch": "many"}, ["prefetch", "many"]),
        ({"prefetch": 0}, ["prefetch"]),
        ({"max_redeliveries": True}, ["max_redeliveries"]),
        ({"redelivery_delay": -1.0}, ["redelivery_delay"]),
        ({"client_id": 5}, ["client_id"]),
        ({"dead_letter_queue": ""}, ["dead_letter_queue"]),
    ],
)
def test_bad_factory_keyword(provider_url, settings, names) -> None:
    """API ConnectionFactory(url, **settings): an unknown or wrongly typed setting is an
    error naming it."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory(provider_url, **settings)
    for name in names:
        assert name in str(info.value)


@pytest.mark.parametrize("settings", [{"prefetch": 2.5}, {"max_redeliveries": 1.9}])
def test_fractional_int_setting_rejected(provider_url, settings) -> None:
    """config.py: "a value of the wrong type is an error naming the key" -- an integer
    setting given a fractional number must not be silently truncated."""
    [(key, _value)] = settings.items()
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory(provider_url, **settings)
    assert key in str(info.value)


@pytest.mark.parametrize("attr", ["enable_ordering_group", "enableOrderingGroup", "prefetch"])
def test_factory_settings_are_not_assigned_afterwards(
    factory, make_connection, unique, attr
) -> None:
    """API ConnectionFactory settings: given when the factory is made (keyword, URL,
    jmslike.toml). Assigned afterwards, as a Java factory's setter would be,
    ``factory.enable_ordering_group = True`` was kept where no connection read it:
    ordering stayed off with no error. It raises AttributeError saying where a setting
    goes, and the factory's settings are unchanged."""
    before = factory.settings
    with pytest.raises(AttributeError, match=rf"'{attr}' is a setting.*ConnectionFactory\(url"):
        setattr(factory, attr, True)
    with pytest.raises(AttributeError, match="did you mean 'prefetch'"):
        factory.prefetsh = 5
    assert factory.settings is before
    queue = f"queue://{unique('q')}"
    conn = make_connection(factory)
    session = conn.create_session()
    session.create_producer(queue).send(session.create_text_message("plain"))
    conn.start()
    got = session.create_consumer(queue).receive(5.0)
    assert got is not None and got.ordering_group is None  # ordering was not switched on


# ------------------------------------------------------------- sessions and modes


@pytest.mark.parametrize("mode", [7, -1, True, "1", None])
def test_unknown_acknowledge_mode(connection, mode) -> None:
    """API create_session(acknowledge_mode=...): only the four Session constants."""
    with pytest.raises(jmslike.InvalidArgumentError) as info:
        connection.create_session(False, mode)
    assert repr(mode) in str(info.value)


def test_transacted_must_be_bool(connection) -> None:
    """API create_session(transacted=False, ...): transacted is a bool."""
    with pytest.raises(jmslike.InvalidArgumentError) as info:
        connection.create_session("yes")
    assert "'yes'" in str(info.value)
    # JMS 2.0's createSession(Session.CLIENT_ACKNOWLEDGE), ported as it reads: the error
    # says how to write it here.
    with pytest.raises(jmslike.InvalidArgumentError) as info:
        connection.create_session(jmslike.Session.CLIENT_ACKNOWLEDGE)
    assert "create_session(acknowledge_mode=Session.CLIENT_ACKNOWLEDGE)" in str(info.value)


# ------------------------------------------------------------------- properties

BAD_PROPERTY_NAMES = [
    "",
    "1abc",
    "a-b",
    "a b",
    "a.b",
    "NULL",
    "null",
    "TRUE",
    "FALSE",
    "NOT",
    "AND",
    "or",
    "Between",
    "LIKE",
    "IN",
    "IS",
    "ESCAPE",
    "JMSFoo",
    "JMSCorrelationID",
    "JMS",
]


@pytest.mark.parametrize("name", BAD_PROPERTY_NAMES)
def test_bad_property_name(connection, name) -> None:
    """API properties / JMS 3.5.1: a property name is a Java identifier, not a selector
    reserved word (NULL, TRUE, FALSE, NOT, AND, OR, BETWEEN, LIKE, IN, IS, ESCAPE), and not
    starting with JMS unless JMSX or JMS_; else MessageFormatError naming it."""
    msg = connection.create_session().create_message()
    for setter in (msg.set_string_property, msg.set_object_property):
        with pytest.raises(jmslike.MessageFormatError) as info:
            setter(name, "v")
        assert repr(name) in str(info.value)
    assert msg.property_names() == []


@pytest.mark.parametrize("name", ["JMSXCustom", "JMS_vendor", "_x", "$y", "a1", "ascii_OK"])
def test_good_property_names(connection, name) -> None:
    """JMS 3.5.1: JMSX and JMS_ names, '_' and '$' starts are allowed."""
    msg = connection.create_session().create_message()
    msg.set_string_property(name, "v")
    assert msg.get_string_property(name) == "v"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "None"),
        ([1], "[1]"),
        (b"x", "b'x'"),
        (2**64, str(2**64)),
        (-(2**63) - 1, str(-(2**63) - 1)),
        ({"a": 1}, "{'a': 1}"),
        (1 + 2j, "(1+2j)"),
    ],
)
def test_bad_property_value(connection, value, shown) -> None:
    """API set_object_property: only bool, int (64-bit), float and str are JMS property
    values; anything else is MessageFormatError naming the value."""
    msg = connection.create_session().create_message()
    with pytest.raises(jmslike.MessageFormatError) as info:
        msg.set_object_property("p", value)
    assert shown in str(info.value)
    assert msg.property_names() == []


@pytest.mark.parametrize(
    ("setter", "value"),
    [
        ("set_byte_property", 128),
        ("set_short_property", 2**15),
        ("set_int_property", 2**31),
        ("set_long_property", 2**63),
        ("set_int_property", True),
        ("set_int_property", 1.5),
        ("set_string_property", 5),
        ("set_boolean_property", 1),
        ("set_float_property", "x"),
        ("set_double_property", None),
    ],
)
def test_typed_setter_refuses_wrong_value(connection, setter, value) -> None:
    """API typed setters: a value outside the JMS type (range or kind) is
    MessageFormatError naming the value."""
    msg = connection.create_session().create_message()
    with pytest.raises(jmslike.MessageFormatError) as info:
        getattr(msg, setter)("p", value)
    assert repr(value) in str(info.value) or str(value) in str(info.value)


@pytest.mark.parametrize(
    ("factory_name", "value"),
    [
        ("create_text_message", b"bytes"),
        ("create_bytes_message", "text"),
        ("create_map_message", {"k": None}),
        ("create_map_message", {"k": [1]}),
        ("create_map_message", {5: "x"}),
        ("create_map_message", ["not", "a", "mapping"]),
    ],
)
def test_bad_message_body(connection, factory_name, value) -> None:
    """API message factories: a body of the wrong type is MessageFormatError."""
    session = connection.create_session()
    with pytest.raises(jmslike.MessageFormatError):
        getattr(session, factory_name)(value)


def test_send_not_a_message(connection, unique) -> None:
    """API producer.send(msg): only jmslike messages can be sent; nothing is sent."""
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    producer = session.create_producer(queue)
    for bad in ("hello", None, b"raw", {"a": 1}):
        with pytest.raises(jmslike.MessageFormatError) as info:
            producer.send(bad)
        assert repr(bad)[:10] in str(info.value)
    # Java's send(destination, message), ported as it reads: the error gives the order.
    anonymous = session.create_producer(None)
    for where in (queue, session.create_queue(unique("other"))):
        with pytest.raises(jmslike.InvalidArgumentError, match="Java's order") as info:
            anonymous.send(where, session.create_text_message("x"))  # type: ignore[arg-type]
        assert f"send(message, destination={where!r}" in str(info.value)
    _assert_empty(connection, queue)


# -------------------------------------------------------------- producer values

BAD_PRODUCER_VALUES = [
    ("priority", 10),
    ("priority", -1),
    ("priority", "5"),
    ("priority", True),
    ("priority", 4.0),
    ("delivery_mode", 0),
    ("delivery_mode", 3),
    ("delivery_mode", "2"),
    ("delivery_mode", True),
    ("time_to_live", -1),
    ("time_to_live", "1"),
    ("time_to_live", True),
    ("time_to_live", math.nan),
    ("delivery_delay", -0.5),
    ("delivery_delay", "x"),
    ("delivery_delay", math.nan),
]


@pytest.mark.parametrize(("attr", "value"), BAD_PRODUCER_VALUES)
def test_bad_producer_setting(connection, unique, attr, value) -> None:
    """API producer.delivery_mode / priority / time_to_live / delivery_delay and the send
    keywords: a bad value is InvalidArgumentError naming it; the default is kept and
    nothing is sent."""
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    producer = session.create_producer(queue)
    before = getattr(producer, attr)
    with pytest.raises(jmslike.InvalidArgumentError) as info:
        setattr(producer, attr, value)
    assert repr(value) in str(info.value)
    assert getattr(producer, attr) == before
    with pytest.raises(jmslike.InvalidArgumentError) as info:
        producer.send(session.create_text_message("x"), **{attr: value})
    assert repr(value) in str(info.value)
    _assert_empty(connection, queue)


@pytest.mark.parametrize("attr", ["time_to_life", "timeToLive", "deliveryMode", "prioirty"])
def test_misspelt_producer_setting_raises(connection, unique, attr) -> None:
    """API producer settings: a misspelt one, or Java's name, raises AttributeError
    instead of being kept where no send reads it (a message then went out with the
    default it was meant to change)."""
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    producer = session.create_producer(queue)
    with pytest.raises(AttributeError, match=attr):
        setattr(producer, attr, 7)
    _assert_empty(connection, queue)


@pytest.mark.parametrize("attr", ["time_to_live", "delivery_delay"])
def test_infinite_duration_is_refused_or_works(connection, unique, attr) -> None:
    """API: every error is a JMSException. An infinite time_to_live/delivery_delay must
    either be refused with InvalidArgumentError or be usable; it may not blow up in send
    with a foreign exception."""
    session = connection.create_session()
    producer = session.create_producer(f"queue://{unique('q')}")
    try:
        producer.send(session.create_text_message("x"), **{attr: math.inf})
    except jmslike.InvalidArgumentError as exc:
        assert "inf" in str(exc)


# ---------------------------------------------------------------------- receive


@pytest.mark.parametrize("timeout", [-1, -0.5, "1", pytest.param(math.nan, id="nan")])
def test_bad_receive_timeout(connection, unique, timeout) -> None:
    """API consumer.receive(timeout=...): seconds >= 0 or None; else
    InvalidArgumentError naming the value (NaN must not wait forever)."""
    consumer = connection.create_session().create_consumer(f"queue://{unique('q')}")
    connection.start()
    result: list[BaseException | object] = []

    def call() -> None:
        try:
            result.append(consumer.receive(timeout))
        except BaseException as exc:
            result.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(2.0)
    if worker.is_alive():
        consumer.close()  # let the stuck receive return
        worker.join(2.0)
        pytest.fail(f"receive({timeout!r}) blocked instead of raising")
    [outcome] = result
    assert isinstance(outcome, jmslike.InvalidArgumentError), outcome
    assert repr(timeout) in str(outcome)


def test_infinite_receive_timeout_waits(connection, unique) -> None:
    """API receive(timeout=...): float seconds; an infinite timeout is "wait until a
    message comes" (like None) or an InvalidArgumentError -- never a foreign exception."""
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    consumer = session.create_consumer(queue)
    connection.start()
    result: list[object] = []

    def call() -> None:
        try:
            result.append(consumer.receive(math.inf))
        except BaseException as exc:
            result.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(0.1)
    if worker.is_alive():
        session.create_producer(queue).send(session.create_text_message("x"))
        worker.join(2.0)
    [outcome] = result
    assert not isinstance(outcome, BaseException) or isinstance(
        outcome, jmslike.InvalidArgumentError
    ), repr(outcome)


# ------------------------------------------------------------------ destinations

BAD_DESTINATIONS = [
    "orders",
    "queue:/x",
    "queue://",
    "topic://",
    "http://x",
    "QUEUE://x",
    "queue://" + "x" * 256,
    "queue://a\nb",
    5,
    None,
]


@pytest.mark.parametrize("dest", BAD_DESTINATIONS)
def test_bad_destination(connection, unique, dest) -> None:
    """API: destinations as ``"queue://orders"`` / ``"topic://prices"``; anything else is
    InvalidDestinationError naming it, for consumers, producers, browsers and sends."""
    session = connection.create_session()
    shown = repr(dest)[:20] if not isinstance(dest, str) else dest.partition("://")[2][:20]
    for call in (
        session.create_consumer,
        session.create_producer if dest is not None else session.create_consumer,
        session.create_browser,
    ):
        with pytest.raises(jmslike.InvalidDestinationError) as info:
            call(dest)
        assert shown.replace("\n", "\\n") in str(info.value)
    anonymous = session.create_producer(None)
    with pytest.raises(jmslike.InvalidDestinationError):
        anonymous.send(session.create_text_message("x"), destination=dest)


@pytest.mark.parametrize("name", ["", "x" * 256, 5, None])
def test_bad_queue_or_topic_name(connection, name) -> None:
    """API session.create_queue(name) / create_topic(name): a non-empty str of at most
    255 characters, else InvalidDestinationError."""
    session = connection.create_session()
    for create in (session.create_queue, session.create_topic):
        with pytest.raises(jmslike.InvalidDestinationError) as info:
            create(name)
        assert repr(name)[:20] in str(info.value)


def test_send_without_destination(connection, unique) -> None:
    """API create_producer(None): send with no destination is InvalidDestinationError;
    a producer with a destination refuses another one (InvalidArgumentError)."""
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    with pytest.raises(jmslike.InvalidDestinationError):
        session.create_producer(None).send(session.create_text_message("x"))
    with pytest.raises(jmslike.InvalidArgumentError) as info:
        session.create_producer(queue).send(
            session.create_text_message("x"), destination=f"queue://{unique('other')}"
        )
    assert "other-" in str(info.value)
    _assert_empty(connection, queue)


def test_wrong_kind_of_destination(connection, unique, require) -> None:
    """API create_browser(queue), create_durable_subscriber(topic, name),
    create_shared_consumer(topic, name): the wrong kind is InvalidDestinationError."""
    session = connection.create_session()
    topic, queue = f"topic://{unique('t')}", f"queue://{unique('q')}"
    with pytest.raises(jmslike.InvalidDestinationError) as info:
        session.create_browser(topic)
    assert topic in str(info.value)
    with pytest.raises(jmslike.InvalidDestinationError):
        session.create_durable_subscriber(queue, "n")
    with pytest.raises(jmslike.InvalidDestinationError):
        session.create_shared_consumer(queue, "n")


@pytest.mark.parametrize("name", ["", 5, None])
def test_bad_subscription_name(connection, unique, name) -> None:
    """API create_durable_subscriber(topic, "sub-name"), create_shared_consumer,
    unsubscribe: the name is a non-empty str."""
    connection.client_id = unique("c")
    session = connection.create_session()
    topic = f"topic://{unique('t')}"
    for call in (
        lambda: session.create_durable_subscriber(topic, name),
        lambda: session.create_shared_consumer(topic, name),
        lambda: session.unsubscribe(name),
    ):
        with pytest.raises(jmslike.InvalidArgumentError) as info:
            call()
        assert repr(name) in str(info.value)


@pytest.mark.parametrize("selector", ["color = ", "a == 1", "region IN ()", "'unterminated"])
def test_bad_selector(connection, unique, require, selector) -> None:
    """API create_consumer(queue, message_selector=...): a selector that does not parse is
    InvalidSelectorError naming it."""
    require(connection, "selectors")
    session = connection.create_session()
    with pytest.raises(jmslike.InvalidSelectorError) as info:
        session.create_consumer(f"queue://{unique('q')}", message_selector=selector)
    assert selector in str(info.value)


# ------------------------------------------------------------------- listeners


def test_listeners_must_be_callable(connection, unique) -> None:
    """API set_exception_listener(fn), set_message_listener(fn): fn must be callable."""
    with pytest.raises(jmslike.InvalidArgumentError):
        connection.set_exception_listener("not callable")
    consumer = connection.create_session().create_consumer(f"queue://{unique('q')}")
    with pytest.raises(jmslike.InvalidArgumentError):
        consumer.set_message_listener(42)
    with pytest.raises(jmslike.InvalidArgumentError):
        consumer.message_listener = 42

    # A listener class ported from Java (MessageListener.onMessage, ExceptionListener
    # .onException, snake_cased): the error says to pass its method.
    class OrderListener:
        def on_message(self, message: jmslike.Message) -> None: ...

        def on_exception(self, error: jmslike.JMSException) -> None: ...

    with pytest.raises(jmslike.InvalidArgumentError, match=r"listener\.on_message"):
        consumer.message_listener = OrderListener()
    with pytest.raises(jmslike.InvalidArgumentError, match=r"listener\.on_exception"):
        connection.exception_listener = OrderListener()
    consumer.message_listener = OrderListener().on_message  # as the error says


def test_listener_cannot_stop_or_close_its_own_connection(connection, unique) -> None:
    """JMS 2.0 (Connection.stop/close, Session.close): a message listener may not stop or
    close its own connection or session (IllegalStateError); it may close its consumer."""
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    consumer = session.create_consumer(queue)
    outcomes: list[str] = []
    done = threading.Event()

    def listener(_msg) -> None:
        for call in (connection.stop, connection.close, session.close, consumer.close):
            try:
                call()
                outcomes.append("ok")
            except jmslike.IllegalStateError:
                outcomes.append("IllegalStateError")
        done.set()

    consumer.set_message_listener(listener)
    connection.start()
    session2 = connection.create_session()
    session2.create_producer(queue).send(session2.create_text_message("x"))
    assert done.wait(2.0)
    assert outcomes == ["IllegalStateError", "IllegalStateError", "IllegalStateError", "ok"]


def test_bad_container_arguments(factory) -> None:
    """API MessageListenerContainer(cf, destination, on_message, concurrency=N,
    acknowledge_mode=...): bad arguments raise and leave nothing running."""
    with pytest.raises(jmslike.InvalidArgumentError):
        jmslike.MessageListenerContainer(factory, "queue://x", print, concurrency=0)
    with pytest.raises(jmslike.InvalidArgumentError):
        jmslike.MessageListenerContainer(factory, "queue://x", "not callable")
    with pytest.raises(jmslike.InvalidDestinationError):
        jmslike.MessageListenerContainer(factory, "x", print)
    with pytest.raises(jmslike.InvalidArgumentError):
        jmslike.MessageListenerContainer(factory, "queue://x", print, acknowledge_mode=9)


# --------------------------------------------------------------- closed objects


def _closed_objects(connection, unique):
    queue = f"queue://{unique('q')}"
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    producer = session.create_producer(queue)
    consumer = session.create_consumer(queue)
    browser = session.create_browser(queue)
    producer.send(session.create_text_message("x"))
    connection.start()
    received = consumer.receive(2.0)
    return queue, session, producer, consumer, browser, received


@pytest.mark.parametrize("close", ["connection", "session", "each"])
def test_calls_on_closed_objects(make_connection, unique, close) -> None:
    """JMS / API: any call on a closed connection, session, producer or consumer raises
    IllegalStateError (closing again is allowed); a receive blocked at close returns None."""
    connection = make_connection()
    queue, session, producer, consumer, browser, received = _closed_objects(connection, unique)
    if close == "connection":
        connection.close()
    elif close == "session":
        session.close()
    else:
        consumer.close()
        producer.close()
        session.close()
    calls = {
        "producer.send": lambda: producer.send(jmslike.TextMessage("x")),
        "producer.enable_ordering_group": lambda: producer.enable_ordering_group("g"),
        "producer.set_unit_of_order": lambda: producer.set_unit_of_order("g"),
        "producer.disable_ordering_group": producer.disable_ordering_group,
        "consumer.receive": lambda: consumer.receive(0.01),
        "consumer.receive_no_wait": consumer.receive_no_wait,
        "consumer.set_message_listener": lambda: consumer.set_message_listener(print),
        "session.create_producer": lambda: session.create_producer(queue),
        "session.create_consumer": lambda: session.create_consumer(queue),
        "session.create_browser": lambda: session.create_browser(queue),
        "session.create_queue": lambda: session.create_queue("q"),
        "session.create_topic": lambda: session.create_topic("t"),
        "session.create_temporary_queue": session.create_temporary_queue,
        "session.create_durable_subscriber": lambda: session.create_durable_subscriber(
            "topic://t", "n"
        ),
        "session.create_shared_consumer": lambda: session.create_shared_consumer("topic://t", "n"),
        "session.unsubscribe": lambda: session.unsubscribe("n"),
        "session.recover": session.recover,
        "session.commit": session.commit,
        "session.rollback": session.rollback,
        "browser iteration": lambda: list(browser),
        "message.acknowledge": received.acknowledge,
    }
    if close == "connection":
        calls.update(
            {
                "connection.start": connection.start,
                "connection.stop": connection.stop,
                "connection.create_session": connection.create_session,
                "connection.client_id": lambda: setattr(connection, "client_id", "x"),
                "connection.set_exception_listener": lambda: connection.set_exception_listener(
                    None
                ),
            }
        )
    not_refused = []
    for name, call in calls.items():
        try:
            call()
        except jmslike.IllegalStateError as exc:
            assert "closed" in str(exc), name
        else:
            not_refused.append(name)
    assert not_refused == []
    consumer.close()
    producer.close()
    session.close()
    connection.close()


def test_closed_session_message_factories(connection) -> None:
    """JMS 1.1 4.4.1 / brief: once a session is closed, any call on it raises
    IllegalStateError -- the message factories too."""
    session = connection.create_session()
    session.close()
    for factory in (
        session.create_message,
        session.create_text_message,
        session.create_bytes_message,
        session.create_map_message,
    ):
        with pytest.raises(jmslike.IllegalStateError):
            factory()


@pytest.mark.parametrize(
    ("attr", "value"),
    [("priority", 5), ("delivery_mode", 1), ("time_to_live", 1.0), ("delivery_delay", 1.0)],
)
def test_closed_producer_setters(connection, unique, attr, value) -> None:
    """JMS MessageProducer (setPriority, setDeliveryMode, setTimeToLive, setDeliveryDelay on
    a closed producer throw IllegalStateException) / brief: any call on a closed producer
    raises IllegalStateError."""
    producer = connection.create_session().create_producer(f"queue://{unique('q')}")
    producer.close()
    with pytest.raises(jmslike.IllegalStateError):
        setattr(producer, attr, value)


@pytest.mark.parametrize("closer", ["connection", "session", "consumer"])
def test_blocked_receive_returns_none_on_close(make_connection, unique, closer) -> None:
    """API/consumer.receive: a receive waiting when its consumer, session or connection is
    closed (from another thread) returns None promptly."""
    connection = make_connection()
    session = connection.create_session()
    consumer = session.create_consumer(f"queue://{unique('q')}")
    connection.start()
    result: list[object] = []
    waiting = threading.Thread(target=lambda: result.append(consumer.receive(10.0)))
    waiting.start()
    # Close only once the receive waits: a receive called after the close raises instead
    # (JMS), and on a busy machine the thread can take longer than any fixed pause.
    deadline = time.monotonic() + 5.0
    while not consumer._sleeping and time.monotonic() < deadline:
        time.sleep(0.005)
    assert consumer._sleeping, "the receive never started waiting"
    {"connection": connection, "session": session, "consumer": consumer}[closer].close()
    waiting.join(2.0)
    assert not waiting.is_alive()
    assert result == [None]
