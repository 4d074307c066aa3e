"""jmslike's JMS <-> AMQP 1.0 mapping on a real Artemis, across protocols (issue 5, first
step): messages encoded by ``jmslike_amqp.codec`` and sent over AMQP with raw Proton are
read by a jmslike STOMP consumer on the same queue, and messages a jmslike STOMP producer
sends are read over AMQP with raw Proton and decoded by the codec.

Artemis converts between protocols through its core message, so this checks that the
mapping is the one Artemis reads (type, body, properties, group and sequence, ORD-4 and
ORD-20), not just that the codec agrees with itself.

Run: ``.venv/bin/python -m pytest tests/integration/test_amqp_codec_artemis.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest
from brokerenv import broker_url
from proton.utils import BlockingConnection

from jmslike import BytesMessage, ConnectionFactory, Message, TextMessage
from jmslike.destination import Queue
from jmslike_amqp.codec import decode, encode

pytestmark = [pytest.mark.amqp, pytest.mark.stomp, pytest.mark.artemis]


def _amqp() -> BlockingConnection:
    url = urlsplit(broker_url("JMSLIKE_TEST_ARTEMIS_AMQP_URL"))
    return BlockingConnection(
        f"amqp://{url.hostname}:{url.port}",
        timeout=10,
        user=url.username,
        password=url.password,
        allowed_mechs="PLAIN",
    )


def _stamped(message: Message, group_seq: int) -> Message:
    message.jms_message_id = f"ID:codec-test:{group_seq}"
    message.jms_timestamp = 1_700_000_000_000 + group_seq
    message.jms_destination = Queue("ignored")
    message.set_string_property("JMSXGroupID", "joe")
    message.set_int_property("JMSXGroupSeq", group_seq)
    message.set_int_property("count", 3)
    message.set_string_property("region", "EU")
    return message


def test_amqp_encoded_messages_read_over_stomp() -> None:
    """Text and Bytes messages mapped by the codec and sent over AMQP arrive at a jmslike
    STOMP consumer with their type, body, properties, group and sequence, in order."""
    queue = f"codec-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL"))
    with factory.create_connection() as connection:
        consumer = connection.create_session().create_consumer(f"queue://{queue}")
        connection.start()
        assert consumer.receive(0.2) is None  # subscribed: the anycast queue exists
        amqp = _amqp()
        try:
            sender = amqp.create_sender(queue)
            sender.send(encode(_stamped(TextMessage("place"), 1), queue))
            sender.send(encode(_stamped(BytesMessage(b"\x00\x01raw"), 2), queue))
        finally:
            amqp.close()
        text, raw = consumer.receive(5.0), consumer.receive(5.0)
    assert isinstance(text, TextMessage) and text.text == "place"
    assert isinstance(raw, BytesMessage) and raw.body == b"\x00\x01raw"
    for message, sequence in ((text, 1), (raw, 2)):
        assert message.ordering_group == "joe"
        assert message.group_sequence == sequence
        assert message.get_int_property("count") == 3
        assert message.get_string_property("region") == "EU"


def test_stomp_sent_messages_decode_from_amqp() -> None:
    """What a jmslike STOMP producer sends, read over AMQP with raw Proton and decoded by
    the codec: type, body, group and sequence survive Artemis' conversion."""
    queue = f"codec-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL"))
    with factory.create_connection() as connection:  # first: it creates the anycast queue
        session = connection.create_session()
        producer = session.create_producer(f"queue://{queue}")
        producer.enable_ordering_group("ann")
        producer.send(session.create_text_message("order"))
        producer.send(session.create_bytes_message(b"\x02bin"))
    amqp = _amqp()
    try:
        receiver = amqp.create_receiver(queue, credit=10)
        got = []
        for _ in range(2):
            incoming = receiver.receive(timeout=10)
            receiver.accept()
            got.append(decode(incoming, Queue(queue), None))
    finally:
        amqp.close()
    assert isinstance(got[0], TextMessage) and got[0].text == "order"
    assert isinstance(got[1], BytesMessage) and got[1].body == b"\x02bin"
    assert [(m.ordering_group, m.group_sequence) for m in got] == [("ann", 1), ("ann", 2)]
