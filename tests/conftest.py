"""Test-suite wide settings: the hypothesis profile every property test runs with, and a
report of the connections tests left open.

A connection a test opens and never closes stays connected (its I/O thread holds it)
until the broker or the process ends it; a broker that drops it later logs its loss in
whatever test runs then (CI once failed a test that asserted a quiet log that way:
"STOMP connection to 127.0.0.1:61613 was lost", during an AMQP case). So every
connection is noted with the test that opened it, and the session's summary names the
tests whose connections were still open when the suite ended. Module- and session-scoped
fixtures close theirs before the end and are not named.

A connection the broker drops while no exception listener is set is not open at the end
(nothing holds it any more), so its loss is noted when it is reported: the summary also
names each connection error that was only logged (no exception listener) during a later
test than the one that opened the connection, with both tests."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import settings

from jmslike._dispatch import ExceptionNotifier
from jmslike.connection import Connection

settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile("ci")

_opened_by: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()
_notified_for: weakref.WeakKeyDictionary[ExceptionNotifier, str] = weakref.WeakKeyDictionary()
_unheard: list[str] = []
"""One line per error reported with no exception listener set: what, opened by, during."""
_running = ["(collection)"]
_init = Connection.__init__
_report = ExceptionNotifier.report


def _noting_init(self: Connection, *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    _opened_by[self] = _running[0]  # only once open: a failed open left nothing
    _notified_for[self._notifier] = _running[0]


def _noting_report(self: ExceptionNotifier, exc: Any) -> None:
    opened = _notified_for.get(self)
    if self.listener is None and opened is not None and opened != _running[0]:
        _unheard.append(f"{exc} (opened by {opened}; reported during {_running[0]})")
    _report(self, exc)


Connection.__init__ = _noting_init  # type: ignore[method-assign]
ExceptionNotifier.report = _noting_report  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    _running[0] = item.nodeid
    yield
    _running[0] = "(between tests)"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    left = Counter(test for connection, test in list(_opened_by.items()) if not connection.closed)
    if left:
        terminalreporter.section("connections left open")
        for test, count in sorted(left.items()):
            terminalreporter.write_line(f"{count} by {test}")
    if _unheard:
        terminalreporter.section("connection errors reported after their test, with no listener")
        for line in _unheard:
            terminalreporter.write_line(line)
