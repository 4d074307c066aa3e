"""The exception notifier's thread ends with the connection, whatever reports arrive late.

A provider's reader thread can report an error while ``Connection.close()`` runs. Before,
a report that came after the notifier was closed started a new notifier thread that
nothing ever stopped (the fuzz test against a lying STOMP broker saw one
``jmslike-exceptions-...`` thread left behind in a CI run)."""

from __future__ import annotations

import logging
import threading

import pytest

from jmslike import JMSException
from jmslike._dispatch import ExceptionNotifier


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_a_report_after_close_starts_no_thread(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="jmslike.dispatch")
    name = "jmslike-exceptions-late-report"
    notifier = ExceptionNotifier(name)
    seen: list[JMSException] = []
    delivered = threading.Event()
    notifier.listener = lambda exc: (seen.append(exc), delivered.set())
    notifier.report(JMSException("before close"))
    assert delivered.wait(2.0)
    notifier.close()
    assert not _threads(name)

    notifier.report(JMSException("after close"))
    notifier.close()  # a second close (Connection.close is idempotent) is harmless

    assert not _threads(name), "a report after close started a thread nothing stops"
    assert [str(e) for e in seen] == ["before close"]
    assert "after close (reported after close)" in caplog.text
