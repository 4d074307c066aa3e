"""A consumer whose link the broker closes on its own keeps consuming (issue 18).

Seen in the frozen-process scenario of ``test_partitions_processes.py`` on ActiveMQ
Classic over AMQP: a commit the broker refused ("Transaction ... has not been started")
came with a detach of the consumer's receiver link, with no error. Classic's AMQP
transaction coordinator acknowledges a transaction's deliveries at commit under the
discharged id; when that id is unknown the acknowledgements fail and Classic closes the
link. The consumer then got nothing more, for ever: its partition stalled.

Here the same refusal is caused on purpose, through the real protocol: the discharge
names a transaction id Classic never declared (the deliveries were accepted in the real
one). What the test asks is what the application must see whatever made the broker
close the link: every message arrives, the first delivery of each in send order, a
second copy flagged redelivered, and nothing stays behind on the queue.

Run: ``.venv/bin/python -m pytest tests/integration/test_amqp_link_closed.py -v``
(needs ``scripts/brokers.sh start activemq``; a missing broker fails, never skips).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import ConnectionFactory, TransactionRolledBackError

pytestmark = [pytest.mark.activemq, pytest.mark.amqp]

COUNT = 6


def _unknown_discharge(transport: Any) -> Any:
    """Make the next discharge name an id one thousand past the real one (never declared
    on this connection), and give back the real ``discharge`` to restore."""
    real = transport.discharge

    def discharge(coordinator: Any, txn: bytes, *, fail: bool, **rest: Any) -> None:
        transport.discharge = real
        bogus = (int.from_bytes(txn, "big") + 1000).to_bytes(len(txn), "big")
        real(coordinator, bogus, fail=fail, **rest)

    transport.discharge = discharge
    return real


def test_a_consumer_whose_link_classic_closed_gets_every_message_in_order(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = broker_url("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL")
    factory = ConnectionFactory(url)
    queue = f"queue://link-closed-{uuid.uuid4().hex[:8]}"
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        for n in range(COUNT):
            message = session.create_text_message(f"m{n}")
            message.set_string_property("JMSXGroupID", "g")
            producer.send(message)

    with factory.create_connection() as connection:
        session = connection.create_session(transacted=True)
        consumer = session.create_consumer(queue)
        connection.start()
        first = consumer.receive(10.0)
        assert first is not None and first.text == "m0"
        _unknown_discharge(session._provider.connection.transport)
        with (
            caplog.at_level("WARNING", logger="jmslike.amqp"),
            pytest.raises(TransactionRolledBackError, match="has not been started"),
        ):
            session.commit()
        got: list[tuple[str, bool]] = []
        while (message := consumer.receive(5.0)) is not None:
            assert isinstance(message, jmslike.TextMessage)
            got.append((message.text or "", message.jms_redelivered))
            session.commit()
    texts = [text for text, _ in got]
    firsts = list(dict.fromkeys(texts))
    assert firsts == [f"m{n}" for n in range(COUNT)], got
    seen: set[str] = {"m0"}  # delivered once before the refused commit
    for text, redelivered in got:
        assert redelivered or text not in seen, f"{text} came again unflagged: {got}"
        seen.add(text)
    assert any("closed receiver link" in r.getMessage() for r in caplog.records), (
        "Classic did not close the link: the scenario no longer applies"
    )

    with factory.create_connection() as connection:
        session = connection.create_session()
        consumer = session.create_consumer(queue)
        connection.start()
        assert consumer.receive(1.5) is None, "a message stayed on the queue"
