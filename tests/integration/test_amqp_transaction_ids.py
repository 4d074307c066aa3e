"""A declared AMQP transaction id stays what the broker sent (issue 18).

Proton decodes a binary value as a view of its input buffer, and the frames it reads
next overwrite that buffer. The transport used to hand the broker's ``declared`` outcome
to the caller's thread as it came, and the caller copied the id there: when the
connection's thread had read another frame first (another session's ``declared``, under
load), the session took that other transaction's id. Two sessions then discharged one
id; on ActiveMQ Classic the second was refused ("Transaction ... has not been started")
and Classic closed the link of the consumer whose messages were in it. That was the
frozen-process failure of ``test_partitions_processes.py`` on Classic over AMQP: three
transacted sessions per process on one connection, all declaring.

The test keeps every outcome the transport hands out for a transaction request, runs
twenty more transactions on the same connection, and checks that none of the ids it
was handed changed meanwhile (before the fix 18 of 20 had, on Classic).

Run: ``.venv/bin/python -m pytest tests/integration/test_amqp_transaction_ids.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory

pytestmark = pytest.mark.amqp

BROKERS = [
    pytest.param("ACTIVEMQ", marks=pytest.mark.activemq, id="activemq"),
    pytest.param("ARTEMIS", marks=pytest.mark.artemis, id="artemis"),
]
"""The brokers whose AMQP 1.0 has transactions (RabbitMQ 3.10's has none)."""


@pytest.mark.parametrize("broker", BROKERS)
def test_declared_ids_do_not_change_as_later_frames_arrive(broker: str) -> None:
    factory = ConnectionFactory(broker_url(f"JMSLIKE_TEST_{broker}_AMQP_URL"))
    with factory.create_connection() as connection:
        session = connection.create_session(transacted=True)
        transport = session._provider.connection.transport
        answered: list[tuple[Any, bytes]] = []
        control = transport._control

        def keep(*args: Any, **kwargs: Any) -> Any:
            state, data, reason = control(*args, **kwargs)
            if data:
                answered.append((data[0], bytes(data[0])))
            return state, data, reason

        transport._control = keep
        producer = session.create_producer(f"queue://txn-ids-{uuid.uuid4().hex[:8]}")
        for n in range(20):
            producer.send(session.create_text_message(f"m{n}"))
            session.commit()
        assert len(answered) == 20
        changed = [(bytes(kept), first) for kept, first in answered if bytes(kept) != first]
        assert not changed, f"transaction ids changed after they were declared: {changed[:3]}"
        ids = [first for _kept, first in answered]
        assert len(set(ids)) == len(ids), ids
