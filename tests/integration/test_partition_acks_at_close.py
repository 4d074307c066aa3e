"""Acknowledged, then closed at once: what a partition's consumer acknowledged never
comes again, on every broker and protocol (ORD-10, ORD-11; a Spark batch drain reads a
partitioned queue this way, a consumer of each partition).

Seen on RabbitMQ before the fix (2026-12-06): a CLIENT_ACKNOWLEDGE consumer of one
partition of a 4-partition queue received its 40 messages, `acknowledge()` returned
(over STOMP its last ACK's RECEIPT had come) and the connection closed at once; the next
consumer got the last 6-7 of them again, flagged redelivered, in 5 runs of 6 over STOMP
and 4 of 4 over AMQP 1.0. RabbitMQ answers before its quorum queue has taken the
acknowledgements, and the close hands back what they acknowledged. jmslike now makes a
second subscription to the queue and ends it, waiting for the answer (STOMP: SUBSCRIBE and
UNSUBSCRIBE with RECEIPTs; AMQP: a receiver with no credit attached and detached), before
it closes such a consumer's connection. A pause of 5 ms before the close showed no loss
either; the test closes at once.

A partition's consumer is strictly ordered, one active consumer across processes, so
on RabbitMQ it no longer warns that other processes could break its groups.
"""

from __future__ import annotations

import time
import uuid

import pytest
from brokercases import CASES, case_url, delete_rabbitmq_queues
from groupsends import send_grouped_texts

from jmslike import ConnectionFactory, ConnectionFailedError, Session
from jmslike.partitions.layout import partition_of

GROUPS, PER_GROUP, PARTITIONS, ROUNDS = 12, 20, 4, 1


def _drain(factory: ConnectionFactory, partition: str, expected: int) -> list[tuple[str, bool]]:
    """Everything one consumer of ``partition`` gets, acknowledged, then closed at once.

    Waits long for the ``expected`` messages, then briefly for any more: a message that
    came again would be in the queue before this consumer was made, so a short wait is
    enough to see it, and the test stays a few seconds a case."""
    with factory.create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(partition, strictly_ordered=True, standby=True)
        connection.start()
        got = []
        while (message := consumer.receive(5.0 if len(got) < expected else 0.3)) is not None:
            got.append((message.text or "", message.jms_redelivered))
        session.acknowledge()
        return got


def _send(factory: ConnectionFactory, queue: str, round_: int) -> None:
    with factory.create_connection() as connection:
        send_grouped_texts(connection.create_session(), queue, GROUPS, PER_GROUP, f"r{round_}g")


@pytest.mark.parametrize("case", CASES)
def test_what_a_partition_consumer_acknowledged_stays_gone_after_an_immediate_close(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"ackclose-{uuid.uuid4().hex[:8]}"
    queue = f"queue://{name}"
    factory = ConnectionFactory(case_url(case), partitioned_destinations=f"{queue}={PARTITIONS}")
    partitions = [f"{queue}.p{index}" for index in range(PARTITIONS)]

    def expected(round_: int) -> list[int]:
        """How many of the round's messages each partition holds (group ``r<round>g<n>``)."""
        owners = [partition_of(f"r{round_}g{g}", PARTITIONS) for g in range(GROUPS)]
        return [PER_GROUP * owners.count(index) for index in range(PARTITIONS)]

    caplog.set_level("WARNING", logger="jmslike")
    try:
        for round_ in range(ROUNDS):
            _send(factory, queue, round_)
            drained = [
                _drain(factory, p, n) for p, n in zip(partitions, expected(round_), strict=True)
            ]
            for index, got in enumerate(drained):
                assert not any(redelivered for _text, redelivered in got), (round_, got)
                groups = {text.split(":")[0] for text, _redelivered in got}
                assert all(partition_of(group, PARTITIONS) == index for group in groups)
            assert sum(len(got) for got in drained) == GROUPS * PER_GROUP
            again = [_drain(factory, partition, 0) for partition in partitions]
            assert again == [[]] * PARTITIONS, f"round {round_}: acknowledged, came again"
    finally:
        delete_rabbitmq_queues(case, name)
    assert not [r for r in caplog.records if "keeps no ordering groups" in r.getMessage()]


RABBITMQ = [case for case in CASES if case.id.startswith("rabbitmq")]


@pytest.mark.parametrize("case", RABBITMQ)
def test_closing_a_consumer_of_a_deleted_strict_queue_reports_no_lost_connection(
    case: str,
) -> None:
    """The probe before the close (above) meets a queue deleted under the consumer:
    RabbitMQ refuses it and drops the consumer's own connection, which is closing anyway,
    so the application hears nothing of it (before the probe existed it heard nothing
    either; with it, and before this was seen to, a ConnectionFailedError naming the
    missing queue, over both protocols)."""
    name = f"ackclose-del-{uuid.uuid4().hex[:8]}"
    queue = f"queue://{name}"
    errors: list[BaseException] = []
    factory = ConnectionFactory(case_url(case), strictly_ordered=queue)
    with factory.create_connection() as connection:
        connection.exception_listener = errors.append
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        session.create_producer(queue).send(session.create_text_message("x"))
        message = consumer.receive(5.0)
        assert message is not None
        message.acknowledge()
        delete_rabbitmq_queues(case, name)
        time.sleep(0.5)  # the broker tells the consumer's connection
        consumer.close()
        time.sleep(0.5)  # a loss would be reported by now
    assert not [e for e in errors if isinstance(e, ConnectionFailedError)], errors
