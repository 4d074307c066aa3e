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
