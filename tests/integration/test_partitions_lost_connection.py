"""A consumer of a partitioned queue whose connection is lost lets its partitions go at
once, even while other connections of its process stay up (ORD-16, docs/partitions.md).

Where a process consumes a partitioned queue, its heart-beats and, on RabbitMQ (both
protocols), each partition's consumer have connections of their own beside the
application's. When only the application's connection is lost (a reset, an idle
timeout after a freeze), the partitions must still go to the other processes. They did
not on RabbitMQ (docs/partitions.md, Faults): the partitions' own connections stayed
open, and with them each partition's single active consumer, so the other process
waited as long as this one lived; the freeze test in test_partitions_processes.py
caught it over AMQP in about one run in four.

Here it is made to happen every time. Consumer A (transacted, one message taken and not
committed) connects through tests/faultproxy.py's relay; consumer B of the same consumer
group connects directly. The relay cuts A's first connection only, the application's
(the first a factory opens); whatever else A opened stays up. Before the cut B gets
the partition A holds nothing of, and nothing of the held message's group; after it, B
must get the rest within a few heart-beat timeouts: every message, each group in send
order. With either half of the fix taken out, B got 20 of 40 (the partitions'
connections left open) or none (the consumer waiting for a commit that can never come)
in 30 s on RabbitMQ over AMQP; over STOMP, before its fix, 20 of 40.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import defaultdict

import pytest
from brokercases import CASES, case_url, delete_rabbitmq_queues
from faultproxy import Relay

from jmslike import ConnectionFactory, MessageConsumer, Session
from jmslike.testing.helpers import drain_consumer

pytestmark = [pytest.mark.timeout(120)]

GROUPS, PER_GROUP = 8, 5
HEARTBEAT, TIMEOUT = 0.5, 2.0
WITHIN = 15.0
"""Seconds B may take for the rest after the cut: several partition timeouts (the
partitions move at once when A lets go; after TIMEOUT when only its silence tells)."""


@pytest.mark.parametrize("case", CASES)
def test_a_lost_connection_lets_its_partitions_go(case: str) -> None:
    direct = case_url(case)
    host, port = re.search(r"@?(127\.0\.0\.1):(\d+)", direct).groups()  # type: ignore[union-attr]
    relay = Relay((host, int(port)), name=case)
    queue = f"lost-{uuid.uuid4().hex[:8]}"
    settings = {
        "partitioned_destinations": {f"queue://{queue}": 2},
        "partition_heartbeat": HEARTBEAT,
        "partition_timeout": TIMEOUT,
    }
    relayed = direct.replace(f"{host}:{port}", f"127.0.0.1:{relay.port}", 1)
    a = ConnectionFactory(relayed, **settings).create_connection()
    b = None
    try:
        assert relay.accepted == 1  # A's own connection is the relay's first
        session_a = a.create_session(True, Session.SESSION_TRANSACTED)
        consumer_a = session_a.create_consumer(session_a.create_queue(queue))
        a.start()
        sent: dict[str, list[str]] = defaultdict(list)
        with ConnectionFactory(direct, **settings).create_connection() as producer_connection:
            session = producer_connection.create_session()
            producer = session.create_producer(session.create_queue(queue))
            for index in range(GROUPS * PER_GROUP):
                group = f"g{index % GROUPS}"
                message = session.create_text_message(f"{group}:{index // GROUPS}")
                message.set_string_property("JMSXGroupID", group)
                producer.send(message)
                sent[group].append(message.text or "")
        held = consumer_a.receive(10.0)
        assert held is not None, "A took nothing"
        deadline = time.monotonic() + 10.0  # the worker may still be attaching the other
        while consumer_a.partitions != [0, 1]:
            assert time.monotonic() < deadline, consumer_a.partitions
            time.sleep(0.05)

        b = ConnectionFactory(direct, **settings).create_connection()
        session_b = b.create_session()
        consumer_b = session_b.create_consumer(session_b.create_queue(queue))
        b.start()
        # B gets the partition A holds nothing of, and all of it; not the other one,
        # where A's transaction holds a message (a hand-over waits for that, ORD-9).
        got: dict[str, list[str]] = defaultdict(list)
        total = _take(consumer_b, got, 3 * TIMEOUT)
        held_group = (held.text or "").split(":")[0]
        assert held_group not in got, f"B took {got[held_group]} while A holds {held.text}"

        relay.cut_one(0)
        total += _take(consumer_b, got, WITHIN)
        assert total == GROUPS * PER_GROUP, (
            f"{case}: B got {total} of {GROUPS * PER_GROUP} in {WITHIN} s after A's "
            f"connection was cut (A held {held.text}); B's partitions: {consumer_b.partitions}"
        )
        assert dict(got) == dict(sent), "a group out of send order, or a message twice"
    finally:
        for connection in (a, b):
            if connection is not None:
                connection.close()
        # The lost consumer leaves its consumer group on a thread of its own (closing
        # its heart-beat connection, which goes through the relay too): let it finish,
        # so that closing the relay does not cut that connection under it.
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and any(
            thread.name.startswith("jmslike-partitions-lost-") for thread in threading.enumerate()
        ):
            time.sleep(0.1)
        relay.close()
        delete_rabbitmq_queues(case, queue)


def _take(consumer: MessageConsumer, got: dict[str, list[str]], first: float) -> int:
    """Receive into ``got`` (texts by group) until a second passes without a message,
    waiting up to ``first`` seconds for the first; how many came."""
    messages = drain_consumer(consumer, timeout=1.0, first=first)
    for message in messages:
        text = getattr(message, "text", None) or ""
        got[text.split(":")[0]].append(text)
    return len(messages)
