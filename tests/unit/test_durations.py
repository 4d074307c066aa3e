"""Java's milliseconds given where jmslike takes seconds are warned about, once per kind of
duration, and never for floats or small values (``jmslike.durations``)."""

from __future__ import annotations

import logging

import pytest

import jmslike
from jmslike import durations


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durations, "_warned", set())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "jmslike.durations"]


def test_java_milliseconds_are_warned_about_once_each(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "jmslike.durations")
    with jmslike.ConnectionFactory("embedded://").create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://durations")
        producer.time_to_live = 60000
        producer.time_to_live = 60000
        producer.send(session.create_text_message("a"), delivery_delay=30_000)
        producer.delivery_delay = 0
        producer.send(session.create_text_message("b"))
        consumer = session.create_consumer("queue://durations")
        connection.start()
        got = consumer.receive(5000)  # a message waits: returns at once
        assert got is not None and got.text == "b"
    said = _warnings(caplog)
    assert said == [
        "time_to_live 60000 is 16 h 40 min: jmslike takes seconds where Java JMS takes "
        "milliseconds (60000 ms is 60 s); write 60000.0 if seconds are meant. Said once "
        "per process.",
        "delivery_delay 30000 is 8 h 20 min: jmslike takes seconds where Java JMS takes "
        "milliseconds (30000 ms is 30 s); write 30000.0 if seconds are meant. Said once "
        "per process.",
        "receive timeout 5000 is 1 h 23 min 20 s: jmslike takes seconds where Java JMS "
        "takes milliseconds (5000 ms is 5 s); write 5000.0 if seconds are meant. Said once "
        "per process.",
    ]


@pytest.mark.parametrize("value", [5000.0, 999, 0, 60.5, 3600, 86400, 1001])
def test_floats_and_small_values_are_seconds(
    caplog: pytest.LogCaptureFixture, value: float
) -> None:
    caplog.set_level(logging.WARNING, "jmslike.durations")
    with jmslike.ConnectionFactory("embedded://").create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://durations-seconds")
        producer.time_to_live = value
        producer.send(session.create_text_message("a"), delivery_delay=0)
        consumer = session.create_consumer("queue://durations-seconds")
        connection.start()
        assert consumer.receive(value) is not None
    assert _warnings(caplog) == []
