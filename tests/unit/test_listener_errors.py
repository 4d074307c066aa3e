"""A message listener that raises is reported with its traceback, and each report says
which delivery of the message it was.

Before, with no exception listener set, the warning carried only ``ValueError: boom``, once
per redelivery (seven lines for one message in one run, none saying where it came from).
"""

from __future__ import annotations

import logging
import threading
import uuid

import pytest

from jmslike import ConnectionFactory, Message


def _boom(message: Message) -> None:
    raise ValueError("boom")


def test_listener_error_is_logged_with_traceback_and_delivery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="jmslike")
    factory = ConnectionFactory(f"embedded://listener-{uuid.uuid4().hex[:8]}?max_redeliveries=2")
    seen = threading.Event()
    calls: list[int] = []

    def listener(message: Message) -> None:
        calls.append(1)
        if len(calls) >= 3:
            seen.set()
        _boom(message)

    with factory.create_connection() as connection:
        session = connection.create_session()
        session.create_consumer("queue://q").set_message_listener(listener)
        session.create_producer("queue://q").send(session.create_text_message("x"))
        connection.start()
        assert seen.wait(10.0)
    reports = [r for r in caplog.records if "message listener on" in r.getMessage()]
    assert reports, [r.getMessage() for r in caplog.records]
    first = reports[0]
    assert first.exc_info is not None and first.exc_info[0] is ValueError
    assert "_boom" in caplog.text  # the traceback names the function that raised
    assert any("delivery 2" in r.getMessage() for r in reports), [r.getMessage() for r in reports]
