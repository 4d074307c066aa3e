"""RabbitMQ queues declared by one protocol and used by the other, and what jmslike does
with a queue that exists otherwise than it would declare it.

RabbitMQ declares the queue that a ``/queue/x`` name stands for when a client first uses
it, and refuses a later client that declares it with other arguments ("PRECONDITION_FAILED
- inequivalent arg 'durable'"). Its STOMP plugin declares such queues durable; over AMQP
1.0 the queue is durable only if the link's terminus is (seen on 3.10.8: durability
``none`` gave ``durable: false``, ``configuration`` gave ``true``). A non-durable queue
loses what it holds, persistent messages too, when the broker stops: the broker restart
test lost a confirmed persistent message that way over AMQP 1.0 (2026-12-01).

So jmslike declares queues durable over AMQP 1.0 too (jmslike_amqp.durability): one queue
serves both protocols. Over AMQP a queue that exists otherwise (non-durable, as Qpid JMS
declares it, or with arguments of an operator's) is used as it is, through
``/amq/queue/x``; a non-durable one with one warning saying what it costs. Over STOMP
the refusal stays, as one line that says what to do.

Run: ``.venv/bin/python -m pytest tests/integration/test_rabbitmq_queue_declarations.py -v``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory, JMSException
from jmslike.spi.management import RabbitManagement
from jmslike.testing.helpers import CompletionRecorder

pytestmark = pytest.mark.rabbitmq

STOMP_URL = "JMSLIKE_TEST_RABBITMQ_STOMP_URL"
AMQP_URL = "JMSLIKE_TEST_RABBITMQ_AMQP_URL"


@pytest.fixture
def queue() -> Iterator[str]:
    name = f"jmslike-decl-{uuid.uuid4().hex[:8]}"
    yield name
    _management().delete_queue("/", name)


def _management() -> RabbitManagement:
    return RabbitManagement(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10)


def _round_trip(variable: str, queue: str, text: str) -> str | bytes | None:
    with ConnectionFactory(broker_url(variable)).create_connection() as connection:
        session = connection.create_session()
        session.create_producer(f"queue://{queue}").send(session.create_text_message(text))
        connection.start()
        message = session.create_consumer(f"queue://{queue}").receive(5.0)
        return None if message is None else message.body  # (bytes: STOMP's text over AMQP)


def _durable(queue: str) -> bool:
    return bool(_queue(queue)["durable"])


def _queue(queue: str) -> dict[str, Any]:
    """The queue as the management API shows it."""
    answer = _management().queue("/", queue)
    assert answer is not None, f"queue {queue!r} does not exist"
    return answer


@pytest.mark.stomp
def test_a_queue_declared_otherwise_over_stomp_is_one_clear_error(
    queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    _management()._request("PUT", f"api/queues/%2F/{queue}", {"durable": False})
    caplog.set_level(logging.WARNING)
    with pytest.raises(JMSException) as raised:
        _round_trip(STOMP_URL, queue, "x")
    text = str(raised.value)
    assert f"queue {queue!r} exists with durable=false" in text, text
    assert "rabbitmqctl delete_queue" in text and "\n" not in text, text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.stomp
@pytest.mark.amqp
@pytest.mark.parametrize(("first", "then"), [(AMQP_URL, STOMP_URL), (STOMP_URL, AMQP_URL)])
def test_one_durable_queue_serves_both_protocols(first: str, then: str, queue: str) -> None:
    """Whichever protocol declares the queue, it is durable, and the other one uses it."""
    assert _round_trip(first, queue, "first") == "first"
    assert _durable(queue)
    assert _round_trip(then, queue, "then") in ("then", b"then")


@pytest.mark.amqp
@pytest.mark.parametrize(
    ("declared", "warned"),
    [
        pytest.param({"durable": False}, True, id="non-durable"),
        pytest.param(
            {"durable": True, "arguments": {"x-max-length": 1000}}, False, id="own-arguments"
        ),
    ],
)
def test_amqp_uses_a_queue_that_exists_otherwise_as_it_is(
    declared: dict[str, object], warned: bool, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A queue made by Qpid JMS (non-durable) or by an operator: messages flow, nothing
    is declared again; a non-durable one gets one warning (per process) saying what it
    costs."""
    _management()._request("PUT", f"api/queues/%2F/{queue}", declared)
    caplog.set_level(logging.WARNING, logger="jmslike")
    for _ in range(2):  # the second connection asks again: one warning in all
        assert _round_trip(AMQP_URL, queue, "x") == "x"
    answer = _queue(queue)
    assert (answer["durable"], answer["arguments"]) == (
        declared["durable"],
        declared.get("arguments", {}),
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    if warned:
        assert len(warnings) == 1, warnings
        assert f"/amq/queue/{queue}" in warnings[0] and "lost when the broker stops" in warnings[0]
    else:
        assert warnings == []


@pytest.mark.amqp
def test_an_asynchronous_send_the_broker_refuses_is_told_once_in_order(queue: str) -> None:
    """A queue full under ``x-overflow: reject-publish`` (an operator's limit). RabbitMQ
    3.10's AMQP 1.0 plugin does not refuse the transfer: its session process has no
    clause for the queue's ``basic.nack`` and the broker closes the connection
    (``amqp:internal-error``, ``function_clause`` in
    ``rabbit_amqp1_0_session_process:handle_info`` in its log; seen 2026-12-03). Either
    way each asynchronous send is told once, in send order: completed ones are stored,
    a refused one is told a JMSException, one whose answer the broker took with it
    SendInDoubtError; the sends past the limit are never stored, and ``close`` returns."""
    _management()._request(
        "PUT",
        f"api/queues/%2F/{queue}",
        {"durable": True, "arguments": {"x-max-length": 2, "x-overflow": "reject-publish"}},
    )
    told = CompletionRecorder()
    connection = ConnectionFactory(broker_url(AMQP_URL)).create_connection()
    try:
        session = connection.create_session()
        producer = session.create_producer(f"queue://{queue}")
        for text in "abcd":
            producer.send(session.create_text_message(text), completion_listener=told)
        session.close()
    finally:
        connection.close()
    assert [text for text, _ in told.told] == ["a", "b", "c", "d"], told.told
    for text, outcome in told.told[2:]:
        assert isinstance(outcome, JMSException), (text, outcome)
    completed = [text for text, outcome in told.told if outcome is None]
    with ConnectionFactory(broker_url(AMQP_URL)).create_connection() as reader:
        consumer = reader.create_session().create_consumer(f"queue://{queue}")
        reader.start()
        stored = []
        while (message := consumer.receive(2.0)) is not None:
            stored.append(message.body)
    assert stored in (["a", "b"], ["a"], []), stored
    assert stored[: len(completed)] == completed, (stored, told.told)
