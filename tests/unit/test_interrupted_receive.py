"""Ctrl-C inside ``receive()`` on the embedded broker (in memory, with the client gate
as on RabbitMQ, and with a file store): KeyboardInterrupt raised at each call of
jmslike's code inside a receive in turn, where CPython can raise a real one
(docs/reliability.md, "Ctrl-C in a receive loop").

Only the embedded broker: over STOMP and AMQP 1.0 an interrupt can leave the next
receive waiting, which is not fixed yet (the same page says so)."""

from __future__ import annotations

import sys
import types
import uuid
from pathlib import Path

import pytest

import jmslike
from jmslike import Message, Session
from jmslike.testing.helpers import left_on

URLS = [
    "embedded://interrupted",
    "embedded://interrupted-gate?nativeGroups=false",
    "embedded:///{tmp}/store.db",
]


class _Interrupt(KeyboardInterrupt):
    """The Ctrl-C a test raises inside jmslike, told apart from a real one."""


def _receive_interrupted_at(consumer: jmslike.MessageConsumer, point: int) -> Message | None:
    """``consumer.receive(5)`` with KeyboardInterrupt raised at the ``point``-th call of a
    function of jmslike's API layer or embedded broker in this thread: where a real Ctrl-C
    can land, since CPython raises it when a function starts (or a loop goes round).
    Returns what the receive returned, or raises ``_Interrupt``. Not inside the STOMP and
    AMQP providers (``jmslike_stomp``, ``jmslike_amqp``): an interrupt there can leave a
    request half made (docs/reliability.md, "Ctrl-C in a receive loop")."""
    calls = 0

    def in_provider(frame: types.FrameType | None) -> bool:
        while frame is not None:
            if frame.f_globals.get("__name__", "").startswith(("jmslike_stomp", "jmslike_amqp")):
                return True
            frame = frame.f_back
        return False

    def tracer(frame: types.FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if (
            event == "call"
            and frame.f_globals.get("__name__", "").startswith("jmslike.")
            and not in_provider(frame)
        ):
            calls += 1
            if calls == point:
                sys.settrace(None)
                raise _Interrupt

    sys.settrace(tracer)
    try:
        return consumer.receive(5)
    finally:
        sys.settrace(None)


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("mode", ["auto", "client", "transacted"])
def test_an_interrupted_receive_loses_nothing(url: str, mode: str, tmp_path: Path) -> None:
    """API ``consumer.receive()`` under Ctrl-C: a KeyboardInterrupt at any point inside
    a receive loses no message, and a program that goes on after it (a notebook cell run
    again, a REPL) gets the message it did not get, in order, then the rest. Each message
    the application never had comes again; one that may have reached it before comes
    flagged redelivered (JMS 2.0, 3.4.7). Found on the embedded broker: an interrupt
    after the broker handed a message out, before ``receive`` returned it, lost it (an
    AUTO_ACKNOWLEDGE close acknowledged it, or it stayed in flight to nobody)."""
    conn = jmslike.ConnectionFactory(url.format(tmp=tmp_path)).create_connection()
    queue = f"queue://interrupted-{uuid.uuid4().hex[:8]}"
    sender = conn.create_session()
    producer = sender.create_producer(queue)
    session = (
        conn.create_session(True)
        if mode == "transacted"
        else conn.create_session(
            False, Session.AUTO_ACKNOWLEDGE if mode == "auto" else Session.CLIENT_ACKNOWLEDGE
        )
    )
    consumer = session.create_consumer(queue)
    conn.start()
    got: list[Message] = []
    point = 1
    while True:  # one message a point, until a receive runs through every point
        producer.send(sender.create_text_message(f"m{point}"))
        try:
            message = _receive_interrupted_at(consumer, point)
            interrupted = False
        except _Interrupt:
            message = consumer.receive(5)
            interrupted = True
        assert message is not None, f"nothing received after an interrupt at call {point}"
        got.append(message)
        if mode == "client":
            message.acknowledge()
        elif mode == "transacted":
            session.commit()
        if not interrupted:
            break
        point += 1
    assert point > 3, "the receive made fewer calls than expected: the test tests nothing"
    consumer.close()
    got += left_on(conn, queue)
    conn.close()
    texts = [m.text for m in got]
    sent = [f"m{i}" for i in range(1, point + 1)]
    first = [t for i, t in enumerate(texts) if t not in texts[:i]]
    assert first == sent, texts
    for i, m in enumerate(got):
        if m.text in texts[:i]:
            assert m.jms_redelivered, f"{m.text} came twice, the second time unflagged"
