"""``ProviderSession.sends_at_once`` (jmslike.spi): which sends the asyncio API may make on
the event loop. The embedded broker says yes unless a persistent message goes to its
file store (disk). The SPI's default says no, and the partitioning layer keeps it (its
sends take a lock that the coordinator's hand-overs hold). The STOMP and AMQP
providers' answers need a broker: tests/integration/test_sends_at_once.py."""

from __future__ import annotations

import uuid
from pathlib import Path

from jmslike import ConnectionFactory, DeliveryMode, Queue
from jmslike.spi.provider import ProviderSession

QUEUE = Queue("q")


def test_embedded_in_memory_sends_at_once() -> None:
    with ConnectionFactory(f"embedded://at-once-{uuid.uuid4().hex[:8]}").create_connection() as c:
        provider = c.create_session()._provider
        assert provider.sends_at_once(QUEUE, DeliveryMode.PERSISTENT)
        assert provider.sends_at_once(QUEUE, DeliveryMode.NON_PERSISTENT)


def test_embedded_file_store_persistent_sends_wait_for_the_disk(tmp_path: Path) -> None:
    with ConnectionFactory(f"embedded://{tmp_path / 'store.db'}").create_connection() as c:
        provider = c.create_session()._provider
        assert not provider.sends_at_once(QUEUE, DeliveryMode.PERSISTENT)
        assert provider.sends_at_once(QUEUE, DeliveryMode.NON_PERSISTENT)


def test_the_spi_default_is_no() -> None:
    assert ProviderSession.sends_at_once.__qualname__ == "ProviderSession.sends_at_once"
    for name in ("jmslike.partitions.session",):
        module = __import__(name, fromlist=["x"])
        classes = [
            v
            for v in vars(module).values()
            if isinstance(v, type) and issubclass(v, ProviderSession)
        ]
        assert classes, name
        for cls in classes:
            assert cls.sends_at_once is ProviderSession.sends_at_once, cls
            assert cls.wake_when_at_once is ProviderSession.wake_when_at_once, cls
