"""Strictly ordered destinations (ORD-18 of docs/ordering.md).

A destination declared strictly ordered (by the factory's ``strictly_ordered`` setting,
its URL query, or ``create_consumer(..., strictly_ordered=True)``) has at most one active
consumer at a time: per queue, and for a topic per subscription. Another consumer is
refused with IllegalStateError, or waits as a standby and takes over, in creation order,
starting with what the active one left unfinished. A listener container on one runs with
concurrency 1 and warns once. Each test's docstring cites ORD-18. Message bodies are
``"m<n>"``, or ``"<group>:<n>"`` for a message in a group.
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import quote

import pytest

import jmslike
from jmslike import ConnectionFactory, Message, MessageListenerContainer, Session


@pytest.fixture(autouse=True)
def strict_order_capable(make_connection, require) -> None:
    """ORD-18 needs a provider that holds a destination to one active consumer; a broker
    case without it skips here, naming the capability (docs/providers.md lists it)."""
    require(make_connection(), "exclusive_consumers")


def _send(session, destination, items) -> None:
    """Send ``items``; "g:1" goes to group g, "m1" to no group."""
    producers: dict[str | None, object] = {}
    for item in items:
        group = item.split(":")[0] if ":" in item else None
        producer = producers.get(group)
        if producer is None:
            producer = producers[group] = session.create_producer(destination)
            if group is not None:
                producer.enable_ordering_group(group)
        producer.send(session.create_text_message(item))


def _flags(messages) -> list[tuple[str, bool, int]]:
    return [(m.text, m.jms_redelivered, m.get_int_property("JMSXDeliveryCount")) for m in messages]


def _with_query(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _assert_refused(create, destination: str) -> None:
    with pytest.raises(jmslike.IllegalStateError) as info:
        create()
    text = str(info.value)
    assert destination in text
    assert "standby=True" in text
    assert "ORD-18" in text


# --------------------------------------------------------------------- refusal


def test_ord18_second_consumer_refused_and_gets_nothing(make_connection, unique, drain) -> None:
    """ORD-18: while a consumer is active on a strictly ordered queue, a second one (from
    the same or another connection, declaring or not) is refused at create_consumer with
    IllegalStateError naming the queue and how to wait instead; the refusal changes
    nothing, so every message goes to the active consumer in order."""
    queue = f"queue://{unique('q')}"
    conn, other = make_connection(), make_connection()
    items = [f"m{n}" for n in range(1, 7)]
    _send(conn.create_session(), queue, items)
    active = conn.create_session().create_consumer(queue, strictly_ordered=True)
    assert active.strictly_ordered
    for session in (conn.create_session(), other.create_session()):
        _assert_refused(lambda s=session: s.create_consumer(queue), queue)
        _assert_refused(lambda s=session: s.create_consumer(queue, strictly_ordered=True), queue)
    conn.start()
    other.start()
    assert [m.text for m in drain(active, 0.1)] == items
    active.close()
    # The queue is free again: one new consumer may attach.
    _send(conn.create_session(), queue, ["m7"])
    later = other.create_session().create_consumer(queue)
    assert [m.text for m in drain(later, 0.1)] == ["m7"]


def test_ord18_standby_on_undeclared_destination_refused(make_connection, unique, drain) -> None:
    """ORD-18: ``standby=True`` asks to wait for the one active consumer of a strictly
    ordered destination; on a destination nobody declared there is none, so it is refused
    with IllegalStateError naming the destination, and nothing is declared by it."""
    queue = f"queue://{unique('q')}"
    conn = make_connection()
    session = conn.create_session()
    with pytest.raises(jmslike.IllegalStateError) as info:
        session.create_consumer(queue, standby=True)
    assert queue in str(info.value)
    a, b = session.create_consumer(queue), conn.create_session().create_consumer(queue)
    assert not a.strictly_ordered
    assert not b.strictly_ordered
    for bad in ("yes", 1, None):
        with pytest.raises(jmslike.InvalidArgumentError):
            session.create_consumer(queue, strictly_ordered=bad)
        with pytest.raises(jmslike.InvalidArgumentError):
            session.create_consumer(queue, standby=bad)


# ---------------------------------------------------------------- declaration


@pytest.mark.parametrize("how", ["setting", "url-query", "code"])
def test_ord18_declared_by_setting_url_or_code(provider_url, make_factory, unique, how) -> None:
    """ORD-18: a destination is declared strictly ordered by the factory setting
    ``strictly_ordered``, by ``?strictlyOrdered=`` in the URL query, or in code with
    ``create_consumer(..., strictly_ordered=True)``; each way a second consumer is refused
    and the first is held to prefetch 1."""
    queue = f"queue://{unique('q')}"
    other = f"queue://{unique('other')}"
    if how == "setting":
        factory = make_factory(strictly_ordered=f"topic://{unique('t')}, {queue},", prefetch=5)
    elif how == "url-query":
        url = _with_query(provider_url, f"strictlyOrdered={quote(queue, safe='')}&prefetch=5")
        factory = ConnectionFactory(url)
    else:
        factory = make_factory(prefetch=5)
    assert factory.settings.is_strictly_ordered(queue) is (how != "code")
    assert not factory.settings.is_strictly_ordered(other)
    with factory.create_connection() as conn:
        session = conn.create_session()
        _send(session, queue, [f"m{n}" for n in range(1, 5)])
        first = session.create_consumer(queue, strictly_ordered=how == "code")
        assert first.strictly_ordered
        _assert_refused(lambda: conn.create_session().create_consumer(queue), queue)
        conn.start()
        assert first.receive(2.0).text == "m1"
        # prefetch=5 is overridden: the other three are still waiting on the queue.
        assert [m.text for m in session.create_browser(queue)] == ["m2", "m3", "m4"]
        # An undeclared queue of the same factory keeps competing consumers.
        a, b = session.create_consumer(other), conn.create_session().create_consumer(other)
        assert not (a.strictly_ordered or b.strictly_ordered)


def test_ord18_topic_is_strict_per_subscription(make_factory, unique, drain, require) -> None:
    """ORD-18: on a strictly ordered topic each subscription has at most one active
    consumer: a second consumer of the same shared subscription is refused (or waits with
    standby=True), while other subscriptions of the topic get their own copies."""
    topic, name = f"topic://{unique('t')}", unique("s")
    factory = make_factory(strictly_ordered=topic)
    with factory.create_connection() as conn:
        require(conn, "shared_subscriptions")
        shared = conn.create_session().create_shared_consumer(topic, name)
        assert shared.strictly_ordered
        with pytest.raises(jmslike.IllegalStateError) as info:
            conn.create_session().create_shared_consumer(topic, name)
        assert topic in str(info.value)
        assert f"'{name}'" in str(info.value)
        standby = conn.create_session().create_shared_consumer(topic, name, standby=True)
        plain = conn.create_session().create_consumer(topic)
        _send(conn.create_session(), topic, ["m1", "m2", "m3"])
        conn.start()
        assert standby.receive(0.05) is None
        assert [m.text for m in drain(shared, 0.1)] == ["m1", "m2", "m3"]
        assert [m.text for m in drain(plain, 0.1)] == ["m1", "m2", "m3"]
        assert drain(standby, 0.05) == []


def test_ord18_standby_of_a_shared_subscription_takes_what_the_active_left(
    make_factory, unique, drain, require
) -> None:
    """ORD-18 on a non-durable shared subscription: the standby starts with what the
    active consumer left unfinished, in order and flagged redelivered, then the rest.
    The subscription lives on through the hand-over: RabbitMQ (STOMP) and Artemis (AMQP)
    ended it with the active consumer's subscription, with everything it held (the
    standby got nothing of m2..m6)."""
    topic, name = f"topic://{unique('t')}", unique("s")
    factory = make_factory(strictly_ordered=topic)
    with factory.create_connection() as conn:
        require(conn, "shared_subscriptions")
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        active = session.create_shared_consumer(topic, name)
        standby = conn.create_session().create_shared_consumer(topic, name, standby=True)
        conn.start()
        assert standby.receive(0.05) is None
        _send(conn.create_session(), topic, [f"m{n}" for n in range(1, 7)])
        first = active.receive(2.0)
        assert first is not None and first.text == "m1"
        first.acknowledge()
        held = [active.receive(2.0) for _ in range(2)]
        assert [m.text for m in held if m is not None] == ["m2", "m3"]
        active.close()  # m2 and m3 unfinished: back to the subscription
        rest = drain(standby, 0.5)
        assert [m.text for m in rest] == ["m2", "m3", "m4", "m5", "m6"]
        assert [m.jms_redelivered for m in rest[:2]] == [True, True]


def test_ord18_declaration_is_sticky(make_connection, unique, drain) -> None:
    """ORD-18: once declared, a destination stays strictly ordered on the broker: after
    the declaring consumer closed, a plain consumer (from a connection whose factory knows
    nothing of it) is held to it, and a second plain consumer is refused."""
    queue = f"queue://{unique('q')}"
    conn, other = make_connection(), make_connection()
    conn.create_session().create_consumer(queue, strictly_ordered=True).close()
    first = other.create_session().create_consumer(queue)
    assert first.strictly_ordered
    _assert_refused(lambda: other.create_session().create_consumer(queue), queue)
    waiting = other.create_session().create_consumer(queue, standby=True)
    assert waiting.strictly_ordered
    _send(conn.create_session(), queue, ["m1", "m2"])
    other.start()
    assert waiting.receive(0.05) is None
    assert [m.text for m in drain(first, 0.1)] == ["m1", "m2"]


@pytest.mark.parametrize("attached", [1, 2])
def test_ord18_declaration_refused_over_undeclared_consumers(
    make_connection, unique, drain, attached
) -> None:
    """ORD-18: a queue with consumers attached without the declaration cannot be
    declared strictly ordered (they were not created to be the only one): IllegalStateError
    naming the queue, even with standby=True; the queue stays undeclared and its
    consumers keep working."""
    queue = f"queue://{unique('q')}"
    conn = make_connection()
    consumers = [conn.create_session().create_consumer(queue) for _ in range(attached)]
    for standby in (False, True):
        with pytest.raises(jmslike.IllegalStateError) as info:
            conn.create_session().create_consumer(queue, strictly_ordered=True, standby=standby)
        assert queue in str(info.value)
    assert not conn.create_session().create_consumer(queue).strictly_ordered
    _send(conn.create_session(), queue, ["m1"])
    conn.start()
    assert [m.text for m in drain(consumers[0], 0.1)] == ["m1"]


def test_ord18_durable_subscription_standby(make_factory, unique, drain, require) -> None:
    """ORD-18: a strictly ordered durable subscription takes a standby consumer (where
    JMS alone would refuse a second consumer of a durable subscription); it takes over
    when the active one closes, with what that one left unacknowledged first."""
    topic = f"topic://{unique('t')}"
    factory = make_factory(client_id=unique("client"))
    with factory.create_connection() as conn:
        require(conn, "durable_subscriptions")
        active_session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        active = active_session.create_durable_subscriber(topic, "d", strictly_ordered=True)
        with pytest.raises(jmslike.IllegalStateError) as info:
            conn.create_session().create_durable_subscriber(topic, "d")
        assert topic in str(info.value)
        standby = conn.create_session().create_durable_subscriber(topic, "d", standby=True)
        _send(conn.create_session(), topic, ["m1", "m2", "m3"])
        conn.start()
        assert active.receive(2.0).text == "m1"
        assert standby.receive(0.05) is None
        active.close()
        assert _flags(drain(standby, 0.1)) == [("m1", True, 2), ("m2", False, 1), ("m3", False, 1)]
        standby.close()
        conn.create_session().unsubscribe("d")


# -------------------------------------------------------------------- standby


def test_ord18_standby_takes_over_with_unfinished_in_order(make_connection, unique) -> None:
    """ORD-18 (+ ORD-10, ORD-11): a standby consumer gets nothing while the active one is
    open; when it closes, the standby takes over, starting with the messages the active
    one left unacknowledged, in their original order and marked redelivered, then the
    rest in order."""
    queue = f"queue://{unique('q')}"
    items = ["m1", "g:1", "m2", "g:2", "m3", "g:3"]
    conn, other = make_connection(), make_connection()
    _send(conn.create_session(), queue, items)
    active_session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    active = active_session.create_consumer(queue, strictly_ordered=True)
    standby = other.create_session().create_consumer(queue, standby=True)
    conn.start()
    other.start()
    first = active.receive(2.0)
    first.acknowledge()
    assert first.text == "m1"
    assert [active.receive(2.0).text for _ in range(2)] == ["g:1", "m2"]  # not acknowledged
    assert standby.receive(0.1) is None
    active.close()
    got = []
    while len(got) < 5:
        msg = standby.receive(2.0)
        assert msg is not None, f"standby got only {got}"
        got.append(msg)
    assert _flags(got) == [
        ("g:1", True, 2),
        ("m2", True, 2),
        ("g:2", False, 1),
        ("m3", False, 1),
        ("g:3", False, 1),
    ]
    assert standby.receive(0.05) is None


def test_ord18_standbys_take_over_in_creation_order(make_connection, unique) -> None:
    """ORD-18: several standbys take over one after another, in the order they were
    created, whatever order they asked for messages in."""
    queue = f"queue://{unique('q')}"
    conn = make_connection()
    _send(conn.create_session(), queue, ["m1", "m2", "m3"])
    active = conn.create_session().create_consumer(queue, strictly_ordered=True)
    second = conn.create_session().create_consumer(queue, standby=True)
    third = conn.create_session().create_consumer(queue, standby=True)
    conn.start()
    assert third.receive(0.05) is None
    assert second.receive(0.05) is None
    assert active.receive(2.0).text == "m1"
    active.close()
    assert third.receive(0.1) is None
    assert second.receive(2.0).text == "m2"
    second.close()
    assert third.receive(2.0).text == "m3"


def test_ord18_standby_listener_takes_over(make_connection, unique) -> None:
    """ORD-18: a standby with a message listener is called only after the active
    consumer closes, and then gets the rest in order."""
    queue = f"queue://{unique('q')}"
    conn = make_connection()
    _send(conn.create_session(), queue, ["m1", "m2", "m3", "m4"])
    active = conn.create_session().create_consumer(queue, strictly_ordered=True)
    got: list[str] = []
    done = threading.Event()

    def on_message(msg: Message) -> None:
        got.append(msg.text)
        if len(got) == 3:
            done.set()

    conn.create_session().create_consumer(queue, standby=True).set_message_listener(on_message)
    conn.start()
    assert active.receive(2.0).text == "m1"
    time.sleep(0.1)
    assert got == []
    active.close()
    assert done.wait(2.0), got
    assert got == ["m2", "m3", "m4"]


@pytest.mark.parametrize("end", ["rollback", "commit"])
def test_ord18_takeover_waits_for_unfinished_transaction(make_connection, unique, end) -> None:
    """ORD-18 (+ ORD-10): a transacted active consumer that closes leaves its messages to
    its transaction; the standby that takes over gets nothing until that transaction ends
    (it must not overtake them), then after a rollback the returned messages first, in
    order and redelivered, or after a commit the messages that came after them."""
    queue = f"queue://{unique('q')}"
    conn = make_connection()
    _send(conn.create_session(), queue, ["m1", "m2", "m3", "m4"])
    tx = conn.create_session(transacted=True)
    active = tx.create_consumer(queue, strictly_ordered=True)
    standby = conn.create_session().create_consumer(queue, standby=True)
    conn.start()
    assert [active.receive(2.0).text for _ in range(2)] == ["m1", "m2"]
    active.close()
    assert standby.receive(0.2) is None  # m1, m2 are still in the open transaction
    getattr(tx, end)()
    expected = (
        [("m1", True, 2), ("m2", True, 2), ("m3", False, 1), ("m4", False, 1)]
        if end == "rollback"
        else [("m3", False, 1), ("m4", False, 1)]
    )
    got = []
    for _ in expected:
        msg = standby.receive(2.0)
        assert msg is not None, f"standby got only {_flags(got)}"
        got.append(msg)
    assert _flags(got) == expected
    assert standby.receive(0.05) is None


# ------------------------------------------------------------------ container


@pytest.mark.parametrize("how", ["setting", "container-kwarg", "sticky"])
def test_ord18_container_runs_with_concurrency_one(
    make_factory, make_connection, unique, caplog, how
) -> None:
    """ORD-18: a listener container on a strictly ordered destination (declared by the
    factory, by the container's ``strictly_ordered=True``, or earlier on the broker) runs
    one session whatever concurrency it was given, logs exactly one warning on
    "jmslike.container" saying so, and processes the messages in order."""
    queue = f"queue://{unique('q')}"
    factory = make_factory(strictly_ordered=queue) if how == "setting" else make_factory()
    if how == "sticky":
        make_connection().create_session().create_consumer(queue, strictly_ordered=True).close()
    items = [f"m{n}" if n % 3 else f"g{n % 2}:{n}" for n in range(1, 31)]
    _send(make_connection().create_session(), queue, items)
    got: list[str] = []
    threads: set[str] = set()
    done = threading.Event()

    def on_message(msg: Message) -> None:
        threads.add(threading.current_thread().name)
        time.sleep(0.001)  # long enough for other sessions to overtake, were there any
        got.append(msg.text)
        if len(got) == len(items):
            done.set()

    with caplog.at_level(logging.WARNING, logger="jmslike.container"):
        container = MessageListenerContainer(
            factory, queue, on_message, concurrency=4, strictly_ordered=how == "container-kwarg"
        )
        with container:
            assert done.wait(10.0), f"processed {len(got)} of {len(items)}"
            assert container.concurrency == 1
            assert container.strictly_ordered
    warnings = [r for r in caplog.records if r.name == "jmslike.container"]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert "ORD-18" in warnings[0].getMessage()
    assert queue in warnings[0].getMessage()
    assert got == items
    assert len(threads) == 1


def test_ord18_container_with_concurrency_one_does_not_warn(make_factory, unique, caplog) -> None:
    """ORD-18: the warning is for a concurrency that was overridden; a container asked
    for concurrency 1 on a strictly ordered destination logs nothing."""
    queue = f"queue://{unique('q')}"
    factory = make_factory(strictly_ordered=queue)
    with (
        caplog.at_level(logging.WARNING, logger="jmslike.container"),
        MessageListenerContainer(factory, queue, lambda m: None, concurrency=1) as container,
    ):
        assert container.concurrency == 1
    assert [r for r in caplog.records if r.name == "jmslike.container"] == []


# ------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("value", "entry"),
    [
        pytest.param("orders", "orders", id="no-scheme"),
        pytest.param("queue://a, orders", "orders", id="second-entry"),
        pytest.param("queue:/a", "queue:/a", id="bad-scheme"),
        pytest.param("queue://", "queue://", id="empty-name"),
        pytest.param("queues://a", "queues://a", id="unknown-kind"),
    ],
)
def test_ord18_bad_setting_rejected_naming_the_entry(provider_url, value, entry) -> None:
    """ORD-18: a ``strictly_ordered`` entry that is not a destination string (a bare name
    is not guessed to be a queue) raises ConfigurationError at factory creation, from a
    keyword argument or a URL query, naming the entry."""
    for make in (
        lambda: ConnectionFactory(provider_url, strictly_ordered=value),
        lambda: ConnectionFactory(_with_query(provider_url, f"strictlyOrdered={quote(value)}")),
    ):
        with pytest.raises(jmslike.ConfigurationError) as info:
            make()
        assert repr(entry) in str(info.value)
        assert "strictly_ordered" in str(info.value)


def test_ord18_setting_of_wrong_type_rejected(provider_url) -> None:
    """ORD-18: ``strictly_ordered`` is one comma-separated string (it reads the same in a
    URL, a file and code); a list is refused with ConfigurationError naming the key."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory(provider_url, strictly_ordered=["queue://a"])
    assert "strictly_ordered" in str(info.value)
