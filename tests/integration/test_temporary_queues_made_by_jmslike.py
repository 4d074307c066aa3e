"""Temporary queues where the broker has none of its own for the protocol, on the broker's
side: Artemis over STOMP and RabbitMQ over AMQP 1.0.

There jmslike makes each one an ordinary queue and deletes it through the broker's
management API when the application deletes it or closes its connection: on Artemis an
anycast queue ``/temp-queue/jmslike-...`` that the broker creates at its first SEND or
SUBSCRIBE (``Dialect.temp_queue_named``), on RabbitMQ a non-durable queue
``jmslike-temp-...`` declared at ``create_temporary_queue()`` and addressed as
``/amq/queue/<name>``. The contract suite checks the JMS side on every broker
(``test_temporary_queue_*``), the Java interop suite a Java service's replies
(``tests/interop/test_java_request_reply.py``); this checks that nothing is left on the
broker.

Run: ``.venv/bin/python -m pytest tests/integration/test_temporary_queues_made_by_jmslike.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pytest
from brokerenv import broker_url

from jmslike import (
    ConnectionFactory,
    TemporaryQueue,
    TemporaryTopic,
    TextMessage,
)
from jmslike.spi.exclusive import Exclusivity
from jmslike.spi.management import ArtemisManagement, RabbitManagement
from jmslike.spi.temporary import is_made_up_topic
from jmslike_stomp.capabilities import _capabilities
from jmslike_stomp.dialect import ARTEMIS

RABBITMQ_VHOST = "jmslike-amqp"


def _artemis() -> ArtemisManagement:
    return ArtemisManagement(
        broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), "admin", "admin", 10.0
    )


def _on_artemis(name: str) -> bool:
    """Whether Artemis has the address ``name`` (made with its queue)."""
    api = _artemis()
    pattern = (
        f"org.apache.activemq.artemis:broker={api.broker_name()},component=addresses,address=*"
    )
    found = api._call({"type": "search", "mbean": pattern}) or []
    return any(f'address="{name}"' in str(mbean) for mbean in found)


def _on_rabbitmq(name: str) -> bool:
    api = RabbitManagement(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10.0)
    return api.queue(RABBITMQ_VHOST, name.removeprefix("/amq/queue/")) is not None


class Case(NamedTuple):
    factory: Callable[[], ConnectionFactory]
    on_broker: Callable[[str], bool]
    prefix: str
    declared_at_creation: bool
    """RabbitMQ: the queue exists from ``create_temporary_queue()``; Artemis makes it at
    its first use (either way a reply sent before a consumer exists waits in it)."""


CASES = [
    pytest.param(
        Case(
            lambda: ConnectionFactory(
                broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL"),
                managementUrl=broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"),
            ),
            _on_artemis,
            "/temp-queue/jmslike-",
            False,
        ),
        id="artemis-stomp",
        marks=(pytest.mark.artemis, pytest.mark.stomp),
    ),
    pytest.param(
        Case(
            lambda: ConnectionFactory(
                broker_url("JMSLIKE_TEST_RABBITMQ_AMQP_URL") + "/" + RABBITMQ_VHOST,
                managementUrl=broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"),
            ),
            _on_rabbitmq,
            "/amq/queue/jmslike-temp-",
            True,
        ),
        id="rabbitmq-amqp",
        marks=(pytest.mark.rabbitmq, pytest.mark.amqp),
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_a_temporary_queue_leaves_the_broker_with_its_connection(case: Case) -> None:
    """A temporary queue with an unread message in it is gone from the broker once its
    connection closes; one deleted before (``delete_temporary``) is gone at once."""
    connection = case.factory().create_connection()
    session = connection.create_session()
    kept, deleted = session.create_temporary_queue(), session.create_temporary_queue()
    assert isinstance(kept, TemporaryQueue) and kept.name.startswith(case.prefix)
    assert case.on_broker(kept.name) is case.declared_at_creation
    for queue in (kept, deleted):
        session.create_producer(queue).send(session.create_text_message("unread"))
        assert case.on_broker(queue.name), f"{queue} is not on the broker after a send"
    connection.delete_temporary(deleted)
    assert not case.on_broker(deleted.name)
    assert case.on_broker(kept.name)
    connection.close()
    assert not case.on_broker(kept.name)


@pytest.mark.parametrize("case", CASES)
def test_a_reply_comes_back_over_the_temporary_queue_named_in_reply_to(case: Case) -> None:
    """Another connection reads the request's ``jms_reply_to`` as the same temporary queue
    and its reply reaches the requester's consumer. A temporary topic there is a topic of
    a made-up name, nothing the broker declares."""
    factory = case.factory()
    with factory.create_connection() as requester, factory.create_connection() as service:
        session = requester.create_session()
        replies = session.create_temporary_queue()
        consumer = session.create_consumer(replies)
        requester.start()
        other = service.create_session()
        queue = f"queue://svc-{id(replies):x}"
        requests = other.create_consumer(queue)
        service.start()
        request = session.create_text_message("ping")
        request.jms_reply_to = replies
        session.create_producer(queue).send(request)
        got = requests.receive(5.0)
        assert got is not None and got.jms_reply_to == replies
        other.create_producer(got.jms_reply_to).send(other.create_text_message("pong"))
        answer = consumer.receive(5.0)
        assert isinstance(answer, TextMessage) and answer.text == "pong"
        assert answer.jms_destination == replies
        # Refused there before; now a topic of a made-up name (jmslike.spi.temporary).
        topic = session.create_temporary_topic()
        assert isinstance(topic, TemporaryTopic) and is_made_up_topic(topic.name)


@pytest.mark.artemis
@pytest.mark.stomp
def test_no_temporary_queues_on_artemis_stomp_without_the_management_api() -> None:
    """Without the management API nothing could delete them: the capability says no."""

    class Transport:
        server = "ActiveMQ-Artemis/2.x"
        address = "127.0.0.1:61617"

    without = _capabilities(ARTEMIS, Transport(), None, Exclusivity("process", None))  # type: ignore[arg-type]
    assert without.temporary_destinations is False
    with_api = _capabilities(ARTEMIS, Transport(), _artemis(), Exclusivity("process", None))  # type: ignore[arg-type]
    assert with_api.temporary_destinations is True
