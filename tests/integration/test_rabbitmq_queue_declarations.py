"""The refusal when a RabbitMQ queue was declared otherwise, in one line that says what to do.

RabbitMQ declares the queue that a ``/queue/x`` name stands for when a client first uses
it, and refuses a later client that declares it with other arguments ("PRECONDITION_FAILED
- inequivalent arg 'durable'"). Its STOMP plugin declares such queues durable; over AMQP
1.0 the queue is durable only if the link's terminus is (seen on 3.10.8: durability
``none`` gave ``durable: false``, ``configuration`` gave ``true``), and Qpid JMS, like
jmslike, asks for ``none``. So a queue used over one protocol is refused over the other,
and before, the refusal was the broker's words, logged at ERROR and raised. Now it is one
line saying what to do, raised once.

Run: ``.venv/bin/python -m pytest tests/integration/test_rabbitmq_queue_declarations.py -v``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory, JMSException
from jmslike.spi.management import RabbitManagement

pytestmark = pytest.mark.rabbitmq

STOMP = pytest.param("JMSLIKE_TEST_RABBITMQ_STOMP_URL", False, marks=pytest.mark.stomp, id="stomp")
"""The STOMP plugin declares the queue durable: one that exists non-durable refuses it."""
AMQP = pytest.param("JMSLIKE_TEST_RABBITMQ_AMQP_URL", True, marks=pytest.mark.amqp, id="amqp")
"""AMQP 1.0 declares it non-durable (as Qpid JMS does): one that exists durable refuses it."""


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"jmslike-decl-{uuid.uuid4().hex[:8]}"
    yield name
    _management().delete_queue("/", name)


def _management() -> RabbitManagement:
    return RabbitManagement(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10)


def _round_trip(variable: str, queue: str, text: str) -> str | None:
    with ConnectionFactory(broker_url(variable)).create_connection() as connection:
        session = connection.create_session()
        session.create_producer(f"queue://{queue}").send(session.create_text_message(text))
        connection.start()
        message = session.create_consumer(f"queue://{queue}").receive(5.0)
        return None if message is None else message.text


@pytest.mark.parametrize(("variable", "existing_durable"), [STOMP, AMQP])
def test_queue_declared_otherwise_is_one_clear_error(
    variable: str, existing_durable: bool, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    _management()._request("PUT", f"api/queues/%2F/{queue}", {"durable": existing_durable})
    caplog.set_level(logging.WARNING)
    with pytest.raises(JMSException) as raised:
        _round_trip(variable, queue, "x")
    text = str(raised.value)
    assert f"queue {queue!r} exists with durable={str(existing_durable).lower()}" in text, text
    assert "rabbitmqctl delete_queue" in text and "\n" not in text, text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
