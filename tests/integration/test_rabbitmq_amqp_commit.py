"""A commit over AMQP 1.0 on RabbitMQ, which has no transaction coordinator: jmslike keeps
the transaction's sends and makes them at the commit, all at once, then waits for every
outcome (providers/jmslike_amqp/kept.py).

Made one at a time, each waiting for its outcome, a commit of 100 sends ran at 1,623 and
2,023 msg/s here; made together, 7,039 and 7,398 (2026-12-06, docs/performance.md).
These tests check what that must not change: the sends arrive, in order, in their groups,
over several queues; and a commit whose sends the broker does not all take raises (a
transaction kept by jmslike is not atomic at the broker, and the error says how many
sends the broker confirmed, which stay).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.request
import uuid
from urllib.parse import quote, urlsplit

import pytest
from brokercases import case_url, delete_rabbitmq_queues
from brokerenv import broker_url

from jmslike import (
    ConnectionFactory,
    JMSException,
    Session,
    TransactionInDoubtError,
    TransactionRolledBackError,
)

pytestmark = [pytest.mark.rabbitmq, pytest.mark.amqp]

CASE = "rabbitmq-amqp"
VHOST = "jmslike-amqp"


def _declare_capped(queue: str, length: int) -> None:
    """A durable queue that refuses a message beyond ``length`` (``reject-publish``)."""
    management = urlsplit(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"))
    credentials = f"{management.username or 'guest'}:{management.password or 'guest'}"
    request = urllib.request.Request(
        f"http://{management.hostname}:{management.port}/api/queues/"
        f"{quote(VHOST, safe='')}/{quote(queue, safe='')}",
        method="PUT",
        data=json.dumps(
            {
                "durable": True,
                "arguments": {"x-max-length": length, "x-overflow": "reject-publish"},
            }
        ).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
        },
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def _texts(factory: ConnectionFactory, queue: str, expected: int) -> list[str]:
    with factory.create_connection() as connection:
        session = connection.create_session(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.create_consumer(f"queue://{queue}")
        connection.start()
        texts = []
        while (message := consumer.receive(5.0 if len(texts) < expected else 0.3)) is not None:
            texts.append(message.text or "")
        return texts


def test_a_commit_makes_every_kept_send_in_order_over_several_queues() -> None:
    name = f"keptcommit-{uuid.uuid4().hex[:8]}"
    queues = [f"{name}-a", f"{name}-b"]
    factory = ConnectionFactory(case_url(CASE))
    try:
        with factory.create_connection() as connection:
            session = connection.create_session(True, Session.SESSION_TRANSACTED)
            for round_ in range(3):
                for queue in queues:
                    producer = session.create_producer(f"queue://{queue}")
                    for group in range(3):
                        producer.enable_ordering_group(f"g{group}")
                        for index in range(50):
                            producer.send(session.create_text_message(f"{round_}:g{group}:{index}"))
                session.commit()
        for queue in queues:
            texts = _texts(factory, queue, 450)
            assert len(texts) == 450, f"{queue}: {len(texts)} of 450"
            assert texts == [f"{r}:g{g}:{i}" for r in range(3) for g in range(3) for i in range(50)]
    finally:
        delete_rabbitmq_queues(CASE, name)


def test_a_commit_whose_sends_the_broker_does_not_all_take_raises() -> None:
    """RabbitMQ's AMQP 1.0 plugin here (3.10) answers a send beyond a ``reject-publish``
    queue's length by dropping the connection (its session process crashes), so the
    outcomes are lost: in doubt. Either way the commit must not return, and the error
    must not claim more sends stored than the queue holds."""
    name = f"keptrefused-{uuid.uuid4().hex[:8]}"
    _declare_capped(name, 3)
    factory = ConnectionFactory(case_url(CASE))
    try:
        with factory.create_connection() as connection:
            connection.exception_listener = lambda exc: None  # the broker drops it
            session = connection.create_session(True, Session.SESSION_TRANSACTED)
            producer = session.create_producer(f"queue://{name}")
            for index in range(6):
                producer.send(session.create_text_message(str(index)))
            with pytest.raises((TransactionInDoubtError, TransactionRolledBackError)) as raised:
                session.commit()
        stored = _texts(factory, name, 3)
        assert stored == ["0", "1", "2"]
        text = str(raised.value)
        confirmed = re.search(r"(\d+) were confirmed stored", text)
        assert confirmed is not None and int(confirmed.group(1)) <= len(stored), text
        assert "of the transaction's 6 sends" in text, text
        assert isinstance(raised.value, JMSException)
    finally:
        delete_rabbitmq_queues(CASE, name)
