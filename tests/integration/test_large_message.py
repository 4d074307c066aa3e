"""A large message travels whole, and the connection goes on working after it, on every
broker x protocol.

96 MiB is just under ActiveMQ Classic's frame limit here (``wireFormat.maxFrameSize`` =
104857600 bytes, scripts/brokers/activemq.sh; tests/integration/test_oversize_message.py
covers the message over it). Over STOMP a body that size comes in about 1,500 socket
reads; the reader used to copy and search the whole frame so far at every read, so the
message took longer to read the larger it was, squared: 60 MiB took 8 s on RabbitMQ
and 100 MiB did not arrive within a 30 s ``receive``. Now it takes well under a second
there. The receive below waits 20 s: a user's timeout, not a speed measurement.

Artemis over STOMP needs longer on its side for a frame this size (the SEND's receipt
came after 10 to 15 s here, from raw stomp.py as from jmslike: the broker converts it to
a large message), which the send, not the receive, waits for.

Run: ``.venv/bin/python -m pytest tests/integration/test_large_message.py -v``.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from brokercases import CASES, case_url

from jmslike import BytesMessage, ConnectionFactory, TextMessage

MiB = 1 << 20


@pytest.mark.parametrize("case", CASES)
def test_a_96_mib_message_arrives_whole_and_the_connection_goes_on(case: str) -> None:
    body = uuid.uuid4().bytes * (96 * MiB // 16)  # NUL bytes likely: content-length ends it
    factory = ConnectionFactory(case_url(case), request_timeout=120.0)
    with factory.create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue(f"jmslike-large-{uuid.uuid4().hex[:8]}")
        consumer = session.create_consumer(queue)
        connection.start()
        producer = session.create_producer(queue)
        producer.send(session.create_bytes_message(body))
        producer.send(session.create_text_message("after"))
        received = consumer.receive(20.0)
        assert isinstance(received, BytesMessage), received
        assert len(received.body) == len(body)
        assert hashlib.sha256(received.body).digest() == hashlib.sha256(body).digest()
        after = consumer.receive(10.0)
        assert isinstance(after, TextMessage) and after.text == "after", after
