"""Ctrl-C inside ``producer.send()`` leaves the connection working, on every provider.

A notebook or REPL user interrupts a sending loop and goes on with the same connection.
CPython raises KeyboardInterrupt in the main thread where a function starts (or a loop
goes round), so a trace function raises it at the k-th function call inside one send,
for k = 1, 2, ... until a send runs through; after each, a send of a marker must be
confirmed within a few seconds, and at the end every marker must come once, in order,
with each interrupted message at most once and before its marker (a send is in doubt
once interrupted; it must not come late or twice).

Found: over AMQP 1.0 a Ctrl-C as a call was handed to the connection's thread (the
wake-up of that thread) left a flag set that kept every later call from waking it; each
later send waited out ``request_timeout`` and failed, and the close took twice that.

Run: ``.venv/bin/python -m pytest tests/integration/test_interrupted_send.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import time
import types
import uuid
from pathlib import Path

import pytest
from brokercases import CASES, case_url

import jmslike
from jmslike import MessageProducer, Session
from jmslike.testing.helpers import Interrupt, interrupted_at

MARKER_WITHIN = 3.0
"""Seconds a marker's send may take after an interrupt (request_timeout is 10)."""


def _send_interrupted_at(
    producer: MessageProducer, session: Session, text: str, point: int
) -> bool:
    """Send ``text``, with KeyboardInterrupt raised at the ``point``-th call of a function
    of jmslike or its providers in this thread inside the send (not inside the standard
    library: an interrupt between a lock's acquire and its ``with`` block is CPython's
    own trap). True if the send ran through."""
    message = session.create_text_message(text)
    try:
        with interrupted_at(point, _jmslike_or_provider):
            producer.send(message)
    except Interrupt:
        return False
    return True


def _jmslike_or_provider(frame: types.FrameType) -> bool:
    return str(frame.f_globals.get("__name__", "")).startswith("jmslike")


EMBEDDED = ["embedded", "embedded-client-gate", "embedded-file"]


@pytest.mark.parametrize("case", [*EMBEDDED, *CASES])
def test_an_interrupted_send_leaves_the_connection_working(case: str, tmp_path: Path) -> None:
    if case in EMBEDDED:
        url = {
            "embedded": "embedded://interrupted-send",
            "embedded-client-gate": "embedded://interrupted-send-gate?nativeGroups=false",
            "embedded-file": f"embedded:///{tmp_path / 'store.db'}",
        }[case]
    else:
        url = case_url(case)
        url += ("&" if "?" in url else "?") + "request_timeout=10"
    queue = f"queue://interrupted-send-{uuid.uuid4().hex[:8]}"
    factory = jmslike.ConnectionFactory(url)
    connection = factory.create_connection()
    try:
        session = connection.create_session()
        producer = session.create_producer(queue)
        point = 1
        while True:
            ran_through = _send_interrupted_at(producer, session, f"m{point}", point)
            started = time.monotonic()
            producer.send(session.create_text_message(f"after{point}"))
            took = time.monotonic() - started
            assert took < MARKER_WITHIN, (
                f"a send after an interrupt at call {point} took {took:.1f} s"
            )
            if ran_through:
                break
            point += 1
        assert point > 3, "the send made fewer calls than expected: the test tests nothing"
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        got = []
        while (message := consumer.receive(2)) is not None:
            got.append(message.text)
    finally:
        started = time.monotonic()
        connection.close()
        took = time.monotonic() - started
    assert took < 5, f"close took {took:.1f} s"
    markers = [text for text in got if text.startswith("after")]
    assert markers == [f"after{k}" for k in range(1, point + 1)], got
    for k in range(1, point + 1):
        assert got.count(f"m{k}") <= 1, got
        if f"m{k}" in got:
            assert got.index(f"m{k}") < got.index(f"after{k}"), got
    assert f"m{point}" in got, got
