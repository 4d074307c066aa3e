"""RabbitMQ queues that both protocols share, and the refusal when a queue was declared
otherwise.

RabbitMQ declares the queue that a ``/queue/x`` name stands for when a client first uses
it, and refuses a later client that declares it with other arguments ("PRECONDITION_FAILED
- inequivalent arg 'durable'"). Its STOMP plugin declares such queues durable; over AMQP
1.0 the queue is durable only if the link's terminus is (seen on 3.10.8: durability
``none`` gave ``durable: false``, ``configuration`` gave ``true``). jmslike asked for
``none`` before, so one queue could not be used over both protocols, and a queue declared
over AMQP lost its persistent messages when the broker restarted. Now both declare durable
queues; a queue that exists otherwise gives one line that says what to do, logged no more
than raised.

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

STOMP = pytest.param("JMSLIKE_TEST_RABBITMQ_STOMP_URL", marks=pytest.mark.stomp, id="stomp")
AMQP = pytest.param("JMSLIKE_TEST_RABBITMQ_AMQP_URL", marks=pytest.mark.amqp, id="amqp")


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


STOMP_URL, AMQP_URL = "JMSLIKE_TEST_RABBITMQ_STOMP_URL", "JMSLIKE_TEST_RABBITMQ_AMQP_URL"


@pytest.mark.stomp
@pytest.mark.amqp
@pytest.mark.parametrize(
    ("first", "second"),
    [(STOMP_URL, AMQP_URL), (AMQP_URL, STOMP_URL)],
    ids=["stomp-then-amqp", "amqp-then-stomp"],
)
def test_one_queue_serves_both_protocols_and_is_durable(
    first: str, second: str, queue: str
) -> None:
    assert _round_trip(first, queue, "one") == "one"
    assert _round_trip(second, queue, "two") == "two"
    described = _management().queue("/", queue)
    assert described is not None and described["durable"] is True, described


@pytest.mark.parametrize("variable", [STOMP, AMQP])
def test_queue_declared_otherwise_is_one_clear_error(
    variable: str, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    _management()._request("PUT", f"api/queues/%2F/{queue}", {"durable": False})
    caplog.set_level(logging.WARNING)
    with pytest.raises(JMSException) as raised:
        _round_trip(variable, queue, "x")
    text = str(raised.value)
    assert f"queue {queue!r} exists with durable=false" in text, text
    assert "rabbitmqctl delete_queue" in text and "\n" not in text, text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
