"""Connect errors that say what is wrong, and only once.

A RabbitMQ vhost that does not exist is named in the error, over both protocols.

Over STOMP RabbitMQ refuses the CONNECT ("Virtual host 'x' access denied"). Its AMQP 1.0
plugin (3.10) opens the connection and closes it at the first link with
"amqp:unauthorized-access: Access for user 'guest' was refused: insufficient
permissions", which read like a wrong password or a missing permission: the error now
names the vhost of the URL as well. Nothing else is logged at WARNING or above.

Run: ``.venv/bin/python -m pytest tests/integration/test_connect_errors.py -v``.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from brokercases import url_variables
from brokerenv import broker_url

from jmslike import ConnectionFactory, ConnectionFailedError


@pytest.mark.parametrize("variable", url_variables("rabbitmq"))
def test_a_vhost_that_does_not_exist_is_named(
    variable: str, caplog: pytest.LogCaptureFixture
) -> None:
    vhost = f"jmslike-missing-{uuid.uuid4().hex[:8]}"
    caplog.set_level(logging.WARNING)
    factory = ConnectionFactory(f"{broker_url(variable)}/{vhost}")
    with pytest.raises(ConnectionFailedError) as raised, factory.create_connection() as c:
        session = c.create_session()
        session.create_producer("queue://jmslike-vhost").send(session.create_text_message("x"))
    text = str(raised.value)
    assert vhost in text, text
    assert "\n" not in text and len(text) < 400, text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
