"""``AmqpSession.sends_at_once``: which sends the asyncio API makes on the event loop over
AMQP 1.0, on every AMQP broker.

A non-persistent send outside a transaction to the destination the session last sent
to, while its sender link has credit, only encodes the message and queues the transfer
for the connection's thread; ``jmslike.aio`` then makes it on the loop instead of
handing it to the session's thread and back. Checked here: which sends qualify (a first
send to a destination attaches a link; a persistent one waits for the broker's outcome;
one in a transaction waits for its declaration), that the aio producer really skips the
hand-over for them, and that messages sent partly on the loop and partly through the
session's thread arrive all, once, in send order (ORD-1), grouped or not.

Run: ``.venv/bin/python -m pytest tests/integration/test_amqp_sends_at_once.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import DeliveryMode, Queue, aio

pytestmark = pytest.mark.amqp

BROKERS = [
    pytest.param("JMSLIKE_TEST_ARTEMIS_AMQP_URL", marks=pytest.mark.artemis, id="artemis"),
    pytest.param("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL", marks=pytest.mark.activemq, id="activemq"),
    pytest.param("JMSLIKE_TEST_RABBITMQ_AMQP_URL", marks=pytest.mark.rabbitmq, id="rabbitmq"),
]

NON_PERSISTENT = DeliveryMode.NON_PERSISTENT
PERSISTENT = DeliveryMode.PERSISTENT


def _queue(tag: str) -> Queue:
    return Queue(f"at-once-{tag}-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("variable", BROKERS)
def test_which_sends_are_made_at_once(variable: str) -> None:
    factory = jmslike.ConnectionFactory(broker_url(variable))
    first, other = _queue("first"), _queue("other")
    with factory.create_connection() as connection:
        session = connection.create_session()
        provider = session._provider
        assert not provider.sends_at_once(first, NON_PERSISTENT)  # no link yet
        producer = session.create_producer(first)
        producer.delivery_mode = NON_PERSISTENT
        producer.send(session.create_text_message("attaches the link"))
        assert provider.sends_at_once(first, NON_PERSISTENT)
        assert provider.sends_at_once(Queue(first.name), NON_PERSISTENT)  # equal, not same
        assert not provider.sends_at_once(first, PERSISTENT)
        assert not provider.sends_at_once(other, NON_PERSISTENT)

        transacted = connection.create_session(True)
        in_tx = transacted.create_producer(first)
        in_tx.send(session.create_text_message("in a transaction"), NON_PERSISTENT)
        assert not transacted._provider.sends_at_once(first, NON_PERSISTENT)
        transacted.commit()

        consumer = session.create_consumer(first)
        connection.start()
        texts = [consumer.receive(10.0), consumer.receive(10.0)]
        assert [m.text if m is not None else None for m in texts] == [  # type: ignore[attr-defined]
            "attaches the link",
            "in a transaction",
        ]


async def _send_mixed(url: str, queue: Queue, count: int) -> tuple[int, int]:
    """Sends ``count`` messages in three groups, every fifth persistent; returns how many
    sends went through the session's thread and how many were made on the loop."""
    handed = 0
    async with await aio.connect(url) as connection:
        session = await connection.create_session()
        producer = await session.create_producer(queue)
        producer.delivery_mode = NON_PERSISTENT
        call = producer._bridge.call

        async def counted(fn: Any) -> Any:
            nonlocal handed
            handed += 1
            return await call(fn)

        producer._bridge.call = counted  # type: ignore[method-assign]
        for number in range(count):
            message = session.create_text_message(str(number))
            message.set_string_property("JMSXGroupID", f"g{number % 3}")
            await producer.send(message, PERSISTENT if number % 5 == 4 else None)
    return handed, count - handed


@pytest.mark.parametrize("variable", BROKERS)
def test_aio_sends_on_the_loop_arrive_in_order(variable: str) -> None:
    url = broker_url(variable)
    queue = _queue("aio")
    count = 300
    handed, at_once = asyncio.run(asyncio.wait_for(_send_mixed(url, queue, count), 60.0))
    persistent = count // 5
    # The first send attaches the link and every persistent one waits for the broker;
    # right after a persistent one the link is the same, so the next send is at once
    # again. A send that found no credit (the broker grants in steps) is handed over too.
    assert handed >= 1 + persistent
    assert at_once >= (count - persistent) * 3 // 4, (handed, at_once)

    factory = jmslike.ConnectionFactory(url)
    received: list[int] = []
    with factory.create_connection() as connection:
        connection.start()
        consumer = connection.create_session().create_consumer(queue)
        while len(received) < count:
            message = consumer.receive(10.0)
            assert message is not None, f"lost after {len(received)}: {received[-5:]}"
            received.append(int(message.text))  # type: ignore[attr-defined]
        assert consumer.receive_no_wait() is None  # nothing twice
    assert received == list(range(count))
