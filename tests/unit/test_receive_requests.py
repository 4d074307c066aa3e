"""Credit that follows consumption (docs/threading.md#flow-control): when a receive()
consumer's request grows, and when it must not (ORD-9), on the embedded broker."""

from __future__ import annotations

import threading
import time

import pytest

import jmslike
from jmslike import ConnectionFactory


def _queue_with(factory: ConnectionFactory, name: str, count: int) -> jmslike.Connection:
    conn = factory.create_connection()
    session = conn.create_session()
    producer = session.create_producer(f"queue://{name}")
    for n in range(count):
        producer.send(session.create_text_message(f"u{n}"))
    return conn


def _count_calls(target: object, names: tuple[str, ...]) -> dict[str, int]:
    """Wrap ``target``'s methods ``names`` so that each call is counted."""
    calls = dict.fromkeys(names, 0)
    for name in names:

        def counted(*args: object, _name: str = name, _real: object = getattr(target, name)):
            calls[_name] += 1
            return _real(*args)  # type: ignore[operator]

        setattr(target, name, counted)
    return calls


@pytest.mark.parametrize("groups", [0, 10])
def test_fast_loop_takes_each_message_in_the_call_that_finishes_the_last(groups: int) -> None:
    """On the embedded broker a receive() loop asks for nothing: each receive finishes
    the last message and takes the next in one call (``takes_directly``), so nothing waits
    in its buffer (ORD-9) and the request never needs to grow."""
    factory = ConnectionFactory(f"embedded://requests-take-{groups}")
    with factory.create_connection() as conn:
        session = conn.create_session()
        producers = [session.create_producer("queue://take") for _ in range(max(groups, 1))]
        for index, producer in enumerate(producers if groups else ()):
            producer.enable_ordering_group(f"g{index}")
        for n in range(500):
            producers[n % len(producers)].send(session.create_text_message(str(n)))
        receiving = conn.create_session()
        consumer = receiving.create_consumer("queue://take")
        calls = _count_calls(receiving._provider, ("acknowledge_and_take", "acknowledge_and_flow"))
        flows = _count_calls(consumer._provider, ("flow",))
        conn.start()
        got = []
        for _ in range(500):
            message = consumer.receive(2.0)
            assert message is not None
            got.append(int(message.text or ""))
            assert not consumer._buffer and consumer.request_size == 1
        assert got == list(range(500))
        assert calls == {"acknowledge_and_take": 500, "acknowledge_and_flow": 0}
        assert flows == {"flow": 0}
        assert consumer.receive(0.1) is None  # dry: now it asks, and waits for a push
        assert flows["flow"] >= 1
        producers[0].send(session.create_text_message("late"))
        late = consumer.receive(2.0)
        assert late is not None and late.text == "late"


def test_taking_consumer_lets_other_groups_flow_past() -> None:
    """ORD-9 with receive() taking directly: the session that holds g's unfinished message
    holds nothing else, so another session gets h and the message in no group at once,
    and g's next only once the first session finished g:1."""
    factory = ConnectionFactory("embedded://requests-take-ord9")
    with factory.create_connection() as conn:
        sender = conn.create_session()
        for text, group in [("g:1", "g"), ("g:2", "g"), ("h:1", "h"), ("u1", None)]:
            message = sender.create_text_message(text)
            if group is not None:
                message.set_string_property("JMSXGroupID", group)
            sender.create_producer("queue://take-ord9").send(message)
        a = conn.create_session().create_consumer("queue://take-ord9")
        b = conn.create_session().create_consumer("queue://take-ord9")
        conn.start()
        first = a.receive(2.0)
        assert first is not None and first.text == "g:1"
        assert [m.text for m in (b.receive(2.0), b.receive(2.0)) if m is not None] == [
            "h:1",
            "u1",
        ]
        assert b.receive(0.2) is None  # g:2 waits for a's g:1 (ORD-9)
        second = a.receive(2.0)  # finishes g:1 (ORD-10), takes g:2
        assert second is not None and second.text == "g:2"


def test_fast_loop_grows_to_the_limit_then_idle_takes_it_back() -> None:
    """Credit that follows consumption, on a receive() loop that does not take directly
    (here: the embedded broker with its groups kept by the client gate)."""
    factory = ConnectionFactory("embedded://requests-fast?nativeGroups=false")
    with _queue_with(factory, "fast", 2000) as conn:
        consumer = conn.create_session().create_consumer("queue://fast")
        conn.start()
        assert consumer.request_limit == 64
        largest = 0
        for _ in range(2000):
            assert consumer.receive(2.0) is not None
            largest = max(largest, consumer.request_size)
        assert largest == 64
        assert consumer.receive(0.1) is None
        assert consumer.request_size == 1


def test_slow_handler_never_grows_the_request() -> None:
    """A handler slower than a few broker answers gains nothing from a bigger request,
    and would only keep messages from other consumers."""
    factory = ConnectionFactory("embedded://requests-slow")
    with _queue_with(factory, "slow", 15) as conn:
        consumer = conn.create_session().create_consumer("queue://slow")
        conn.start()
        for _ in range(15):
            assert consumer.receive(2.0) is not None
            assert consumer.request_size == 1
            time.sleep(0.02)


@pytest.mark.parametrize(
    ("settings", "limit"),
    [({"max_prefetch": 1}, 1), ({"prefetch": 10}, 64), ({"prefetch": 100}, 100)],
)
def test_limit_follows_the_settings(settings: dict[str, int], limit: int) -> None:
    factory = ConnectionFactory("embedded://requests-limit", **settings)
    with factory.create_connection() as conn:
        consumer = conn.create_session().create_consumer("queue://limit")
        assert consumer.request_limit == limit
        assert consumer.request_size == settings.get("prefetch", 1)


def test_strictly_ordered_consumer_never_grows() -> None:
    factory = ConnectionFactory("embedded://requests-strict", strictly_ordered="queue://strict")
    with factory.create_connection() as conn:
        consumer = conn.create_session().create_consumer("queue://strict")
        assert consumer.request_limit == 1


def test_bad_max_prefetch_names_the_setting() -> None:
    with pytest.raises(jmslike.ConfigurationError, match=r"max_prefetch=0 .*must be >= 1"):
        ConnectionFactory("embedded://?maxPrefetch=0")


def test_listener_grows_then_idle_takes_it_back() -> None:
    """As for receive(): on a provider that does not take directly."""
    factory = ConnectionFactory("embedded://requests-listener?nativeGroups=false")
    with _queue_with(factory, "listener", 2000) as conn:
        consumer = conn.create_session().create_consumer("queue://listener")
        done = threading.Event()
        sizes: list[int] = []

        def listener(message: jmslike.Message) -> None:
            sizes.append(consumer.request_size)
            if len(sizes) == 2000:
                done.set()

        consumer.set_message_listener(listener)
        conn.start()
        assert done.wait(10.0)
        assert max(sizes) == 64
        deadline = time.monotonic() + 2.0
        while consumer.request_size != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert consumer.request_size == 1, "the idle listener kept its grown request"


@pytest.mark.parametrize("takes", [True, False])
def test_grouped_listener_acknowledges_and_asks_again_in_one_call(takes: bool) -> None:
    """At the default prefetch a grouped listener's buffer is empty after each message
    (ORD-9: it may hold only the group it is processing), so finishing one and asking for
    the next go to the provider together: one broker round a message, as for receive().
    The embedded broker hands the next message back in that call (``takes_directly``);
    the other path is what a pushing provider gets."""
    factory = ConnectionFactory("embedded://requests-grouped-listener")
    with factory.create_connection() as conn:
        session = conn.create_session()
        producers = [session.create_producer("queue://grouped") for _ in range(10)]
        for index, producer in enumerate(producers):
            producer.enable_ordering_group(f"g{index}")
        for n in range(200):
            producers[n % 10].send(session.create_text_message(f"{n % 10}:{n // 10}"))
        listening = conn.create_session()
        consumer = listening.create_consumer("queue://grouped")
        if not takes:
            consumer._takes = False
        calls = _count_calls(
            listening._provider, ("acknowledge", "acknowledge_and_flow", "acknowledge_and_take")
        )
        seen: dict[str, list[int]] = {}
        done = threading.Event()

        def listener(message: jmslike.Message) -> None:
            group, number = str(message.text).split(":")
            seen.setdefault(group, []).append(int(number))
            if sum(map(len, seen.values())) == 200:
                done.set()

        consumer.set_message_listener(listener)
        conn.start()
        assert done.wait(10.0)
        assert all(numbers == list(range(20)) for numbers in seen.values()), seen
        assert consumer.request_limit > 1 and consumer.request_size == 1
        one_call = "acknowledge_and_take" if takes else "acknowledge_and_flow"
        assert calls[one_call] >= 190, calls
        assert calls["acknowledge"] <= 10, calls
