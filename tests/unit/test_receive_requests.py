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


def test_fast_loop_grows_to_the_limit_then_idle_takes_it_back() -> None:
    factory = ConnectionFactory("embedded://requests-fast")
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
    factory = ConnectionFactory("embedded://requests-listener")
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


def test_grouped_listener_acknowledges_and_asks_again_in_one_call() -> None:
    """At the default prefetch a grouped listener's buffer is empty after each message
    (ORD-9: it may hold only the group it is processing), so finishing one and asking for
    the next go to the provider together: one broker round a message, as for receive()."""
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
        provider = listening._provider
        calls = {"acknowledge": 0, "acknowledge_and_flow": 0}
        for name in calls:

            def counted(*args: object, _name: str = name, _real: object = getattr(provider, name)):
                calls[_name] += 1
                return _real(*args)  # type: ignore[operator]

            setattr(provider, name, counted)
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
        assert calls["acknowledge_and_flow"] >= 190, calls
        assert calls["acknowledge"] <= 10, calls
