"""Test-suite wide settings: the hypothesis profile every property test runs with, and a
report of the connections tests left open.

A connection a test opens and never closes stays connected (its I/O thread holds it)
until the broker or the process ends it; a broker that drops it later logs its loss in
whatever test runs then (CI once failed a test that asserted a quiet log that way:
"STOMP connection to 127.0.0.1:61613 was lost", during an AMQP case). So every
connection is noted with the test that opened it, and the session's summary names the
tests whose connections were still open when the suite ended. Module- and session-scoped
fixtures close theirs before the end and are not named."""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import settings

from jmslike.connection import Connection

settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile("ci")

_opened_by: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()
_running = ["(collection)"]
_init = Connection.__init__


def _noting_init(self: Connection, *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    _opened_by[self] = _running[0]  # only once open: a failed open left nothing


Connection.__init__ = _noting_init  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    _running[0] = item.nodeid
    yield
    _running[0] = "(between tests)"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    left = Counter(test for connection, test in list(_opened_by.items()) if not connection.closed)
    if not left:
        return
    terminalreporter.section("connections left open")
    for test, count in sorted(left.items()):
        terminalreporter.write_line(f"{count} by {test}")
