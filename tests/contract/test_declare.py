"""Queues declared at deploy time (``Connection.declare_queue``, ``jmslike declare``), on
every provider.

Where the broker makes queues through its management API (RabbitMQ, Artemis) the queue
must be there, empty, before anything else used its name, and on RabbitMQ durable (a
partition or a strictly ordered queue: single-active-consumer, which RabbitMQ cannot add
later). Where the broker makes queues at their first use and keeps them (ActiveMQ
Classic, the embedded broker) nothing is asked of it, and the answer says so. Either way
the queue then works as any other, and declaring it again changes nothing. The partitioned
case, and a smaller count refused while dropped partitions hold messages, are in
test_partitions.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from brokercases import delete_rabbitmq_queues
from brokerenv import broker_url

from jmslike import DeliveryMode, InvalidDestinationError, QueueDeclaration
from jmslike.declare import FIRST_USE

MANAGED = ("rabbitmq", "artemis")
"""Cases whose broker jmslike declares queues on (the rest make them at first use)."""


@pytest.fixture(autouse=True)
def _forget_rabbitmq_queues(provider_case) -> Iterator[None]:
    yield
    delete_rabbitmq_queues(provider_case.id, "declared-")


def _rabbit_queue(case: str, name: str) -> dict[str, Any] | None:
    """RabbitMQ's own record of the queue (the management API), for the rabbitmq cases."""
    from jmslike.spi.management import RabbitManagement

    api = RabbitManagement(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10)
    return api.queue("jmslike-amqp" if case.endswith("amqp") else "/", name)


def _there_before_use(connection, provider_case, declared: QueueDeclaration) -> None:
    """Every broker queue of ``declared`` exists, holding nothing, where the broker was
    asked to make it."""
    managed = provider_case.id.startswith(MANAGED)
    assert (declared.how != FIRST_USE) == managed, declared
    if not managed:
        return
    for name in declared.broker_queues:
        depths = connection._provider.queue_depths(name)
        assert depths is not None and depths.get(name) == 0, (name, depths)


def _round_trip(connection, queue: str) -> None:
    session = connection.create_session()
    consumer = session.create_consumer(queue)
    session.create_producer(queue).send(
        session.create_text_message("after the declaration"), delivery_mode=DeliveryMode.PERSISTENT
    )
    connection.start()
    message = consumer.receive(10.0)
    assert message is not None and message.text == "after the declaration"


def test_a_declared_queue_is_there_before_its_first_use(connection, unique, provider_case) -> None:
    name = unique("declared")
    queue = f"queue://{name}"
    declared = connection.declare_queue(queue)
    assert (declared.queue, declared.kind, declared.broker_queues) == (queue, "plain", (name,))
    _there_before_use(connection, provider_case, declared)
    if provider_case.id.startswith("rabbitmq"):
        record = _rabbit_queue(provider_case.id, name)
        assert record is not None and record["durable"] is True, record
    again = connection.declare_queue(queue)  # a deploy step runs again: nothing changes
    assert again.kind == "plain" and again.broker_queues == (name,)
    if provider_case.id.startswith(MANAGED):
        assert again.how == "exists already: left as it is", again
    _round_trip(connection, queue)


def test_a_strictly_ordered_queue_is_declared_held_to_one_consumer(
    make_factory, unique, provider_case, require
) -> None:
    """ORD-18 by configuration: the queue is made single-active-consumer (RabbitMQ) or
    exclusive (Artemis) at once, before a Java client or a first send makes it ordinary."""
    name = unique("declared")
    queue = f"queue://{name}"
    with make_factory(strictly_ordered=queue).create_connection() as connection:
        require(connection, "exclusive_scope", "broker")
        declared = connection.declare_queue(queue)
        assert (declared.kind, declared.broker_queues) == ("strictly ordered", (name,))
        if provider_case.id.startswith("rabbitmq"):
            record = _rabbit_queue(provider_case.id, name)
            assert record is not None, name
            assert record["arguments"].get("x-single-active-consumer") is True, record
        _round_trip(connection, queue)


@pytest.mark.parametrize("bad", ["topic://declared-prices", "orders", ""])
def test_only_named_queues_are_declared(connection, bad: str) -> None:
    """Bad input: refused, naming the value."""
    with pytest.raises(InvalidDestinationError) as info:
        connection.declare_queue(bad)
    assert (bad if "://" in bad else repr(bad)) in str(info.value)


def test_a_temporary_queue_is_not_declared(connection, require) -> None:
    require(connection, "temporary_destinations")
    temporary = connection.create_session().create_temporary_queue()
    with pytest.raises(InvalidDestinationError, match="create_temporary_queue"):
        connection.declare_queue(temporary)


def test_the_asyncio_connection_declares_too(make_factory, unique) -> None:
    from jmslike import aio

    name = unique("declared")

    async def declare() -> QueueDeclaration:
        async with await aio.ConnectionFactory(make_factory()).create_connection() as connection:
            return await connection.declare_queue(f"queue://{name}")

    declared = asyncio.run(declare())
    assert (declared.kind, declared.broker_queues) == ("plain", (name,))
