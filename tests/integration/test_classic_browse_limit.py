"""ActiveMQ Classic lists at most ``maxBrowsePageSize`` messages to a browser.

Its destination policy's default is 400, over STOMP, AMQP and OpenWire alike: a browse of
a 450-message queue lists the first 400 (found by browsing 3,000 messages on every
broker: Classic listed 400 over both protocols). Only the broker's configuration can
change that, so jmslike says so: a browse that lists exactly 400 messages on Classic
logs one warning per queue naming the setting, and a second browse logs nothing more.
The shipped scenario ``test_browser_lists_a_long_queue`` is a BROKER-LIMIT known bug on
the two Classic cases for the same reason.

Run: ``.venv/bin/python -m pytest tests/integration/test_classic_browse_limit.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import logging
import uuid

import pytest
from brokercases import url_variables
from brokerenv import broker_url

from jmslike import ConnectionFactory
from jmslike.spi.diagnose import CLASSIC_BROWSE_PAGE

pytestmark = pytest.mark.activemq


@pytest.mark.parametrize("variable", url_variables("activemq"))
def test_a_browse_cut_at_the_page_size_is_named(
    variable: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with ConnectionFactory(broker_url(variable)).create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue(f"browse-limit-{uuid.uuid4().hex[:8]}")
        producer = session.create_producer(queue)
        for number in range(CLASSIC_BROWSE_PAGE + 50):
            producer.send(session.create_text_message(str(number)))
        listed = [m.text for m in session.create_browser(queue)]
        assert listed == [str(number) for number in range(CLASSIC_BROWSE_PAGE)]
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1, warnings
        assert "maxBrowsePageSize" in warnings[0] and queue.name in warnings[0], warnings[0]
        assert len(list(session.create_browser(queue))) == CLASSIC_BROWSE_PAGE
        assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
