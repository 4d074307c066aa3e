"""A message over ActiveMQ Classic's limit fails with one line that names its size and the
limit to look at, over both protocols.

Before: over STOMP the error carried fragments of the broker's Java stack trace and
stomp.py logged its own traceback; over AMQP it said only "decode-error: Could not process
AMQP commands". The broker here takes frames up to ``wireFormat.maxFrameSize`` =
104857600 bytes (scripts/brokers/activemq.sh), so 101 MiB is over it.

Run: ``.venv/bin/python -m pytest tests/integration/test_oversize_message.py -v``.
"""

from __future__ import annotations

import logging

import pytest
from brokercases import url_variables
from brokerenv import broker_url

from jmslike import ConnectionFactory, JMSException

MiB = 1 << 20


@pytest.mark.parametrize("variable", url_variables("activemq"))
def test_oversize_message_error_names_size_and_limit(
    variable: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    connection = ConnectionFactory(broker_url(variable)).create_connection()
    connection.set_exception_listener(lambda exc: None)
    try:
        session = connection.create_session()
        producer = session.create_producer("queue://jmslike-oversize")
        with pytest.raises(JMSException) as raised:
            producer.send(session.create_bytes_message(b"\0" * (101 * MiB)))
    finally:
        connection.close()
    text = str(raised.value)
    assert "101.0 MiB" in text and "maxFrameSize" in text, text
    assert "\n" not in text and "at org." not in text and len(text) < 500, text
    assert not [r for r in caplog.records if r.name.startswith("stomp")], [
        r.getMessage() for r in caplog.records
    ]
