"""A message jmslike sent over AMQP 1.0 is received and acknowledged over STOMP on the same
broker, and the STOMP connection stays usable.

ActiveMQ Classic keeps an AMQP sender's message id and parses it as an OpenWire message id
when a STOMP client acknowledges the message; jmslike's ids once had another shape, and
Classic dropped the STOMP connection on the ACK ("NumberFormatException: For input string:
'7993cf8185ec-3462d-1-2'" in its log; the next test's connection failed). Artemis, which
maps ids its own way, is checked too.
"""

from __future__ import annotations

import uuid

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory, JMSException, Session

CASES = [
    pytest.param(
        "JMSLIKE_TEST_ACTIVEMQ_AMQP_URL",
        "JMSLIKE_TEST_ACTIVEMQ_STOMP_URL",
        marks=(pytest.mark.activemq, pytest.mark.amqp, pytest.mark.stomp),
        id="activemq",
    ),
    pytest.param(
        "JMSLIKE_TEST_ARTEMIS_AMQP_URL",
        "JMSLIKE_TEST_ARTEMIS_STOMP_URL",
        marks=(pytest.mark.artemis, pytest.mark.amqp, pytest.mark.stomp),
        id="artemis",
    ),
]


@pytest.mark.parametrize(("amqp_variable", "stomp_variable"), CASES)
def test_amqp_sent_message_acknowledged_over_stomp(amqp_variable: str, stomp_variable: str) -> None:
    queue = f"queue://ack-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(broker_url(amqp_variable)).create_connection() as sender:
        session = sender.create_session()
        producer = session.create_producer(queue)
        for text in ("one", "two"):
            producer.send(session.create_text_message(text))
    with ConnectionFactory(broker_url(stomp_variable)).create_connection() as receiver:
        session = receiver.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        receiver.start()
        first = consumer.receive(5.0)
        assert first is not None and first.text == "one"
        if "ACTIVEMQ" in amqp_variable:
            # Classic 5.17 cannot take a STOMP ACK for a message that came in over AMQP
            # ("Unexpected ACK received for message-id", raw stomp.py alike; the message
            # comes again on the next connection). acknowledge() waits for the broker's
            # answer, so the application is told instead of the message staying
            # unacknowledged unnoticed.
            with pytest.raises(JMSException, match="Unexpected ACK"):
                first.acknowledge()
            return
        first.acknowledge()
        second = consumer.receive(5.0)
        assert second is not None and second.text == "two"
        second.acknowledge()
        assert consumer.receive(0.2) is None  # the connection still answers
