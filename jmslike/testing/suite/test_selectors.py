"""Selectors as the broker applies them (the API's message_selector,
docs/getting-started.md; JMS 2.0 section 3.8.1).

A provider may hand the broker a selector in the broker's own dialect (Artemis' Core
filters name JMS headers differently); these tests check that only header identifiers and
the values compared with them change on the way, never string literals or property names.
"""

from __future__ import annotations

from jmslike import DeliveryMode, InvalidSelectorError
from jmslike.testing.helpers import left_on, receive_count

# (body, status property, delivery mode) sent in this order.
_SENT = [
    ("a", "PERSISTENT", DeliveryMode.NON_PERSISTENT),
    ("b", "DURABLE", DeliveryMode.PERSISTENT),
    ("c", "PERSISTENT", DeliveryMode.PERSISTENT),
    ("d", "NON_PERSISTENT", DeliveryMode.PERSISTENT),
]


def _send(session, queue: str) -> None:
    producer = session.create_producer(queue)
    for body, status, mode in _SENT:
        message = session.create_text_message(body)
        message.set_string_property("status", status)
        message.set_string_property("last_JMSDeliveryMode", status)
        producer.send(message, delivery_mode=mode)
    producer.close()


def test_selector_literals_that_look_like_header_values_are_kept(
    connection, unique, require
) -> None:
    """API message_selector: ``status = 'PERSISTENT'`` compares the property with that
    very string, however the broker spells JMSDeliveryMode's values, and a selector on
    JMSDeliveryMode still selects by delivery mode."""
    require(connection, "selectors")
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    _send(session, queue)
    connection.start()
    cases = [
        ("status = 'PERSISTENT' AND JMSDeliveryMode = 'PERSISTENT'", ["c"]),
        ("status = 'PERSISTENT'", ["a"]),
        ("'NON_PERSISTENT' = last_JMSDeliveryMode", ["d"]),
        ("JMSDeliveryMode = 'PERSISTENT'", ["b"]),
    ]
    for selector, expected in cases:
        consumer = session.create_consumer(queue, message_selector=selector)
        assert [m.text for m in receive_count(consumer, len(expected))] == expected, selector
        consumer.close()
    assert left_on(connection, queue) == []


def test_selector_compares_a_header_with_a_property(connection, unique, require) -> None:
    """API message_selector: ``JMSDeliveryMode = status`` compares the delivery mode as JMS
    spells it with the property, though the broker may hold its own spelling (Artemis'
    ``AMQDurable`` is 'DURABLE': written as it stood, the selector matched nothing)."""
    require(connection, "selectors")
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    _send(session, queue)
    connection.start()
    for selector, expected in [
        ("JMSDeliveryMode = status", ["c"]),
        ("last_JMSDeliveryMode <> JMSDeliveryMode", ["a", "b", "d"]),
    ]:
        consumer = session.create_consumer(queue, message_selector=selector)
        assert [m.text for m in receive_count(consumer, len(expected))] == expected, selector
        consumer.close()


# (body, n, flag) with their types; None: the property is not set.
_TYPED = [
    ("a", 2, True),
    ("b", 3.5, False),
    ("c", None, True),
    ("d", -1, None),
    ("e", 7, False),
]


def test_selector_on_typed_properties(connection, unique, require) -> None:
    """API message_selector on int, double and boolean properties: numbers compare as
    numbers, a decimal with an integer too, and a bare boolean property is a condition.
    Over STOMP every property reaches the broker as a string: written as it stood,
    ``n > 1`` missed 3.5 and ``flag`` selected nothing on Classic and Artemis."""
    require(connection, "selectors")
    session = connection.create_session()
    connection.start()
    cases = [
        ("n > 1", ["a", "b", "e"]),
        ("n BETWEEN 1 AND 4", ["a", "b"]),
        ("n = 2 OR n = 3.5", ["a", "b"]),
        ("n <= -1", ["d"]),
        ("flag", ["a", "c"]),
        ("NOT flag", ["b", "e"]),
        ("flag AND n > 1", ["a"]),
        ("flag OR n > 5", ["a", "c", "e"]),
    ]
    for selector, expected in cases:
        queue = f"queue://{unique('q')}"
        producer = session.create_producer(queue)
        for body, n, flag in _TYPED:
            message = session.create_text_message(body)
            if isinstance(n, int):
                message.set_int_property("n", n)
            elif n is not None:
                message.set_double_property("n", n)
            if flag is not None:
                message.set_boolean_property("flag", flag)
            producer.send(message)
        consumer = session.create_consumer(queue, message_selector=selector)
        assert [m.text for m in receive_count(consumer, len(expected))] == expected, selector
        consumer.close()


def test_selector_on_header_fields(connection, unique, require) -> None:
    """API message_selector on JMSPriority, JMSMessageID and JMSTimestamp, which some
    brokers hold values of their own for (jmslike keeps priority off the wire where the
    broker would let it reorder a group, and over STOMP the broker's message id and
    timestamp are its own): ``JMSPriority > 5`` selected nothing on Classic and Artemis,
    and ``JMSMessageID = '<id>'`` nothing over STOMP."""
    require(connection, "selectors")
    session = connection.create_session()
    queue = f"queue://{unique('q')}"
    producer = session.create_producer(queue)
    sent = []
    for n, priority in enumerate([0, 4, 8]):
        message = session.create_text_message(f"m{n}")
        producer.send(message, priority=priority)
        sent.append(message)
    first_id, last_stamp = sent[0].jms_message_id, sent[2].jms_timestamp
    cases = [
        ("JMSPriority > 5", ["m2"]),
        ("JMSPriority BETWEEN 1 AND 4", ["m1"]),
        (f"JMSMessageID = '{first_id}'", ["m0"]),
        (f"JMSTimestamp <= {last_stamp} AND JMSPriority < 8", ["m0", "m1"]),
    ]
    for selector, expected in cases:  # sorted: a broker may list by priority
        got = sorted(m.text for m in session.create_browser(queue, selector))
        assert got == expected, selector
    connection.start()
    consumer = session.create_consumer(queue, message_selector="JMSPriority >= 4")
    assert sorted(m.text for m in receive_count(consumer, 2)) == ["m1", "m2"]


def test_selector_on_group_fields(connection, unique, require) -> None:
    """API message_selector on JMSXGroupID and JMSXGroupSeq (JMS lets selectors read the
    JMSX properties). Where jmslike carries the sequence in a header of its own (ORD-4:
    every STOMP broker, Classic over AMQP), ``JMSXGroupSeq = 2`` selected nothing."""
    require(connection, "selectors")
    require(connection, "browsers")
    session = connection.create_session()
    queue = f"queue://{unique('q')}"
    producers = {}
    for group in ("ga", "gb"):
        producers[group] = session.create_producer(queue)
        producers[group].enable_ordering_group(group)
    for n in range(2):
        for group, producer in producers.items():
            producer.send(session.create_text_message(f"{group}{n}"))
    session.create_producer(queue).send(session.create_text_message("none"))
    cases = [
        ("JMSXGroupID = 'ga'", ["ga0", "ga1"]),
        ("JMSXGroupID IS NULL", ["none"]),
        ("JMSXGroupSeq = 2", ["ga1", "gb1"]),
        ("JMSXGroupID LIKE '%b' AND JMSXGroupSeq < 2", ["gb0"]),
    ]
    for selector, expected in cases:
        got = sorted(m.text for m in session.create_browser(queue, selector))
        assert got == expected, selector


def test_browser_selector_literals_that_look_like_header_values_are_kept(
    connection, unique, require
) -> None:
    """API create_browser(queue, message_selector=...): the same selectors list the same
    messages when browsing (Artemis browses through its management API)."""
    require(connection, "browsers")
    require(connection, "selectors")
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    _send(session, queue)

    def browse(selector: str) -> list[str]:
        return [m.text for m in session.create_browser(queue, selector)]

    assert browse("status = 'PERSISTENT'") == ["a", "c"]
    assert browse("status IN ('PERSISTENT', 'it''s') AND NOT JMSDeliveryMode = 'PERSISTENT'") == [
        "a"
    ]
    assert browse("JMSDeliveryMode = 'NON_PERSISTENT' OR status LIKE 'NON!_%' ESCAPE '!'") == [
        "a",
        "d",
    ]
    assert browse("JMSDeliveryMode IN ('PERSISTENT') AND status <> 'DURABLE'") == ["c", "d"]
    assert browse("status IN ('NON_PERSISTENT') OR JMSDeliveryMode LIKE 'NON%'") == ["a", "d"]
    assert browse("status LIKE 'PERSISTENT' AND 'PERSISTENT' = JMSDeliveryMode") == ["c"]
    assert browse("JMSDeliveryMode <> status") == ["a", "b", "d"]


def test_a_selector_the_broker_refuses_is_an_invalid_selector_error(
    connection, unique, require
) -> None:
    """API message_selector: JMS 2.0 (3.8.1.1) takes any Java identifier as a name, so
    ``größe`` is one, but ActiveMQ Classic's and Artemis' parsers take no letter outside
    ASCII. Where the broker refuses a selector jmslike's parser took, the consumer fails
    with ``InvalidSelectorError`` naming it (at its creation; over STOMP, which
    subscribes on first use, at its first receive), nothing is taken from the queue, and
    the session goes on working. Before: Classic over AMQP attached the refused link again
    and again (2,000 attaches in a few seconds) while the consumer waited for nothing, and
    over STOMP the error was an ``InvalidDestinationError`` or a plain ``JMSException``."""
    require(connection, "selectors")
    queue = f"queue://{unique('q')}"
    session = connection.create_session()
    producer = session.create_producer(queue)
    for size in ("XL", "S"):
        message = session.create_text_message(size)
        message.set_string_property("größe", size)
        producer.send(message)
    connection.start()
    try:
        consumer = session.create_consumer(queue, message_selector="größe = 'S'")
        selected = [m.text for m in receive_count(consumer, 1)]
    except InvalidSelectorError as exc:
        assert "größe = 'S'" in str(exc), exc
        left = ["XL", "S"]
    else:  # a broker whose grammar takes the name (the embedded one)
        assert selected == ["S"]
        consumer.close()
        left = ["XL"]
    assert [m.text for m in receive_count(session.create_consumer(queue), len(left))] == left
