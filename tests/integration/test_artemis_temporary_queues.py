"""Temporary queues on Artemis over STOMP, where the broker has none of its own.

jmslike makes each one an ordinary anycast queue (``/temp-queue/jmslike-...``, created by
the broker at its first SEND or SUBSCRIBE) and deletes it through Artemis' management
API when the application deletes it or closes its connection
(``Dialect.temp_queue_named``). The contract suite checks the JMS side on every broker
(``test_temporary_queue_*``); this checks the broker's side: nothing is left behind.

Run: ``.venv/bin/python -m pytest tests/integration/test_artemis_temporary_queues.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory, TemporaryQueue, TextMessage
from jmslike.spi.exclusive import Exclusivity
from jmslike.spi.management import ArtemisManagement
from jmslike_stomp.capabilities import _capabilities
from jmslike_stomp.dialect import ARTEMIS

pytestmark = [pytest.mark.stomp, pytest.mark.artemis]


def _management() -> ArtemisManagement:
    return ArtemisManagement(
        broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), "admin", "admin", 10.0
    )


def _on_broker(name: str) -> bool:
    """Whether Artemis has an address ``name`` (and so, maybe, its queue)."""
    api = _management()
    pattern = (
        f"org.apache.activemq.artemis:broker={api.broker_name()},component=addresses,address=*"
    )
    found = api._call({"type": "search", "mbean": pattern}) or []
    return any(f'address="{name}"' in str(mbean) for mbean in found)


def _factory() -> ConnectionFactory:
    return ConnectionFactory(
        broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL"),
        managementUrl=broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"),
    )


def test_a_temporary_queue_leaves_the_broker_with_its_connection() -> None:
    """A temporary queue with an unread message in it is gone from Artemis once its
    connection closes; the one deleted before is gone at once."""
    connection = _factory().create_connection()
    session = connection.create_session()
    kept, deleted = session.create_temporary_queue(), session.create_temporary_queue()
    assert isinstance(kept, TemporaryQueue) and kept.name.startswith("/temp-queue/")
    for queue in (kept, deleted):
        session.create_producer(queue).send(session.create_text_message("unread"))
        assert _on_broker(queue.name), f"{queue} was not created by its first send"
    connection.delete_temporary(deleted)
    assert not _on_broker(deleted.name)
    assert _on_broker(kept.name)
    connection.close()
    assert not _on_broker(kept.name)


def test_a_reply_reaches_a_temporary_queue_named_in_reply_to() -> None:
    """Another connection answers to ``jms_reply_to`` as a Java service would: the reply
    lands in the same broker queue, read back as the same temporary queue."""
    factory = _factory()
    with factory.create_connection() as requester, factory.create_connection() as service:
        session = requester.create_session()
        replies = session.create_temporary_queue()
        consumer = session.create_consumer(replies)
        requester.start()
        request = session.create_text_message("ping")
        request.jms_reply_to = replies
        other = service.create_session()
        other.create_producer(request.jms_reply_to).send(other.create_text_message("pong"))
        answer = consumer.receive(5.0)
        assert isinstance(answer, TextMessage) and answer.text == "pong"
        assert answer.jms_destination == replies


def test_no_temporary_queues_without_the_management_api() -> None:
    """Without the management API nothing could delete them: the capability says no."""

    class Transport:
        server = "ActiveMQ-Artemis/2.x"
        address = "127.0.0.1:61617"

    without = _capabilities(ARTEMIS, Transport(), None, Exclusivity("process", None))  # type: ignore[arg-type]
    assert without.temporary_destinations is False
    with_api = _capabilities(ARTEMIS, Transport(), _management(), Exclusivity("process", None))  # type: ignore[arg-type]
    assert with_api.temporary_destinations is True
