"""A URL that names another protocol's port fails at once with one line naming the cause.

Before: ``stomp://`` to ActiveMQ's OpenWire port logged 23 lines of stomp.py's "unknown
response frame type" and ended in "no CONNECTED"; ``amqp://`` to a STOMP port waited the
whole 30 s connect timeout (a STOMP broker stays silent for an AMQP header); ``amqp://``
to the OpenWire port quoted ActiveMQ's whole greeting. Now the error says which protocol
the port speaks and which port to use (jmslike/spi/diagnose.py), and nothing else is logged.

Run: ``.venv/bin/python -m pytest tests/integration/test_wrong_port.py -v`` (brokers from
``scripts/brokers.sh start``).
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory, ConnectionFailedError


def _port(variable: str) -> int:
    port = urlsplit(broker_url(variable)).port
    assert port is not None
    return port


CASES = [
    pytest.param(
        "stomp",
        "JMSLIKE_TEST_ACTIVEMQ_OPENWIRE_URL",
        "OpenWire",
        marks=(pytest.mark.stomp, pytest.mark.activemq),
        id="stomp-to-activemq-openwire",
    ),
    pytest.param(
        "stomp",
        "JMSLIKE_TEST_RABBITMQ_AMQP_URL",
        "AMQP",
        marks=(pytest.mark.stomp, pytest.mark.rabbitmq),
        id="stomp-to-rabbitmq-amqp",
    ),
    pytest.param(
        "amqp",
        "JMSLIKE_TEST_ACTIVEMQ_STOMP_URL",
        "STOMP",
        marks=(pytest.mark.amqp, pytest.mark.activemq),
        id="amqp-to-activemq-stomp",
    ),
    pytest.param(
        "amqp",
        "JMSLIKE_TEST_RABBITMQ_STOMP_URL",
        "STOMP",
        marks=(pytest.mark.amqp, pytest.mark.rabbitmq),
        id="amqp-to-rabbitmq-stomp",
    ),
    pytest.param(
        "amqp",
        "JMSLIKE_TEST_ACTIVEMQ_OPENWIRE_URL",
        "OpenWire",
        marks=(pytest.mark.amqp, pytest.mark.activemq),
        id="amqp-to-activemq-openwire",
    ),
]


@pytest.mark.parametrize(("scheme", "variable", "spoken"), CASES)
def test_wrong_port_names_the_protocol_it_speaks(
    scheme: str, variable: str, spoken: str, caplog: pytest.LogCaptureFixture
) -> None:
    port = _port(variable)
    url = f"{scheme}://127.0.0.1:{port}?requestTimeout=30"
    caplog.set_level(logging.WARNING)
    started = time.monotonic()
    with pytest.raises(ConnectionFailedError) as raised:
        ConnectionFactory(url).create_connection()
    took = time.monotonic() - started
    text = str(raised.value)
    assert f"port {port} speaks {spoken}" in text, text
    wanted = "STOMP" if scheme == "stomp" else "AMQP 1.0"
    assert f"use the broker's {wanted} port" in text, text
    assert "\n" not in text and len(text) < 300, text
    assert took < 10.0, f"took {took:.1f} s to fail"  # not the 30 s connect timeout
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
