"""SENDs written several at a time over STOMP while a producer streams (issue 17).

A SEND nobody waits for (non-persistent, or inside a transaction, whose COMMIT is
waited for) that follows the previous one within 0.1 ms waits in the
connection's outbox for company (``StompTransport._streams``, ``Wire.hold``): it goes
with the next frame written, with ``sendBatch`` (16) held ones, or 2 ms later from the
flusher thread. One ``sendall`` per message made Artemis over STOMP, which sets
``TCP_NODELAY``, take a third fewer messages a second (docs/performance.md). What that
must never change, checked on each broker over its real STOMP port:

* a send loop's messages all arrive, in order, also the last few that only the flusher
  writes, with no later frame to carry them;
* a connection closed right after the loop loses none (the DISCONNECT goes after them);
* a transaction's streamed SENDs go before its COMMIT, and a rollback drops them all;
* a send on its own is written before ``send`` returns, and so is every send with
  ``sendBatch=0``;
* a loop's frames really go several to a write (the socket's ``sendall`` is counted);
* asynchronous persistent sends (JMS 2.0, each asking its RECEIPT) stream the same way:
  every one stored and told, in send order; a held one whose write fails is told
  ``SendInDoubtError`` once, and its ``send`` does not raise as well.

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_send_streaming.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from brokercases import CASES, case_url

import jmslike
import jmslike_stomp.transport
from jmslike import Connection, ConnectionFactory, DeliveryMode, Session
from jmslike.testing.helpers import CompletionRecorder

STOMP_CASES = [case for case in CASES if str(case.values[0]).endswith("stomp")]

COUNT = 500


def _url(case: str, setting: str = "") -> str:
    url = case_url(case)
    return url + ("&" if "?" in url else "?") + setting if setting else url


def _queue() -> str:
    return f"queue://stream-{uuid.uuid4().hex[:8]}"


def _wire(connection: Connection) -> Any:
    return connection._provider.transport._wire  # type: ignore[attr-defined]


class _CountingSocket:
    """The connection's socket, with its ``sendall`` calls counted; from the
    ``fail_from``-th on each raises as a dead connection's would, and writes nothing."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self.writes = 0
        self.fail_from = 0

    def sendall(self, data: bytes) -> None:
        self.writes += 1
        if self.fail_from and self.writes >= self.fail_from:
            raise BrokenPipeError(32, "Broken pipe (a test's socket)")
        self._sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@contextlib.contextmanager
def _counted(connection: Connection) -> Iterator[_CountingSocket]:
    """The connection's socket swapped for a counting one, and back afterwards
    (``TCP_NODELAY`` was set on the real socket already)."""
    wire = _wire(connection)
    counting = _CountingSocket(wire._transport.socket)
    wire._transport.socket = wire._tuned = counting
    try:
        yield counting
    finally:
        wire._transport.socket = wire._tuned = counting._sock


def _send_loop(connection: Connection, queue: str, count: int, *, transacted: bool = False) -> Any:
    session = connection.create_session(transacted, Session.AUTO_ACKNOWLEDGE)
    producer = session.create_producer(queue)
    producer.delivery_mode = DeliveryMode.NON_PERSISTENT
    for index in range(count):
        producer.send(session.create_text_message(f"m{index:04d}"))
    return session


def _receive_all(url: str, queue: str, count: int) -> list[str]:
    got: list[str] = []
    with ConnectionFactory(url).create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        while len(got) < count and (message := consumer.receive(10.0)) is not None:
            got.append(message.text)
        extra = consumer.receive(0.2)
        if extra is not None:
            got.append(extra.text)
    return got


def _expected(count: int) -> list[str]:
    return [f"m{index:04d}" for index in range(count)]


@pytest.mark.parametrize("case", STOMP_CASES)
def test_a_send_loop_arrives_whole_and_in_order_with_the_connection_left_open(
    case: str,
) -> None:
    """The last frames of a loop wait for nobody's next write: the flusher writes them,
    and a consumer on another connection gets every message, in order, while the
    producer's connection stays open and idle."""
    url = _url(case)
    queue = _queue()
    with ConnectionFactory(url).create_connection() as connection:
        _send_loop(connection, queue, COUNT)
        assert _receive_all(url, queue, COUNT) == _expected(COUNT)


@pytest.mark.parametrize("case", STOMP_CASES)
def test_a_connection_closed_right_after_a_send_loop_loses_nothing(case: str) -> None:
    url = _url(case)
    queue = _queue()
    connection = ConnectionFactory(url).create_connection()
    _send_loop(connection, queue, COUNT)
    connection.close()  # at once: held SENDs go before the DISCONNECT
    assert _receive_all(url, queue, COUNT) == _expected(COUNT)


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
@pytest.mark.parametrize("case", STOMP_CASES)
def test_streamed_sends_of_a_transaction_go_before_its_commit(case: str, outcome: str) -> None:
    url = _url(case)
    queue = _queue()
    with ConnectionFactory(url).create_connection() as connection:
        session = _send_loop(connection, queue, COUNT, transacted=True)
        getattr(session, outcome)()
        expected = _expected(COUNT) if outcome == "commit" else []
        assert _receive_all(url, queue, len(expected)) == expected


@pytest.mark.parametrize("case", STOMP_CASES)
def test_a_loop_writes_several_sends_at_a_time(case: str) -> None:
    """Several frames a ``sendall``: the reason for holding them. (The count is of the
    client's writes only; how the broker reads them is its own.)"""
    url = _url(case)
    queue = _queue()
    with ConnectionFactory(url).create_connection() as connection, _counted(connection) as counting:
        _send_loop(connection, queue, COUNT)
        time.sleep(0.05)  # the flusher writes the tail
        writes = counting.writes
    assert writes <= COUNT // 4, f"{writes} writes for {COUNT} sends"
    assert _receive_all(url, queue, COUNT) == _expected(COUNT)


@pytest.mark.parametrize("setting", ["", "sendBatch=0"], ids=["default", "sendBatch=0"])
@pytest.mark.parametrize("case", STOMP_CASES)
def test_a_send_on_its_own_is_written_before_send_returns(case: str, setting: str) -> None:
    """A send that follows none within 0.1 ms is not held: its frame has left the
    outbox when ``send`` returns (a lone message is never delayed). With ``sendBatch=0``
    none is held, loop or not."""
    queue = _queue()
    with ConnectionFactory(_url(case, setting)).create_connection() as connection:
        wire = _wire(connection)
        session = connection.create_session()
        producer = session.create_producer(queue)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        held = []
        for index in range(20):
            if not setting:
                time.sleep(0.005)  # each one on its own
            producer.send(session.create_text_message(f"m{index:04d}"))
            held.append(len(wire._outbox))
        assert held == [0] * 20
    assert _receive_all(_url(case), queue, 20) == _expected(20)


@pytest.mark.parametrize("case", STOMP_CASES)
def test_asynchronous_sends_stream_and_are_all_told_in_order(case: str) -> None:
    """A loop of asynchronous persistent sends writes several SENDs at a time (each with
    its own receipt), and every message is stored once and told completed, in order."""
    url = _url(case)
    queue = _queue()
    told = CompletionRecorder(COUNT)
    with ConnectionFactory(url).create_connection() as connection, _counted(connection) as counting:
        session = connection.create_session()
        producer = session.create_producer(queue)
        for index in range(COUNT):
            producer.send(session.create_text_message(f"m{index:04d}"), completion_listener=told)
        assert told.all_told.wait(30.0), f"{len(told.told)} of {COUNT} told"
        writes = counting.writes
    assert told.told == [(text, None) for text in _expected(COUNT)]
    assert writes <= COUNT // 2, f"{writes} writes for {COUNT} asynchronous sends"
    assert _receive_all(url, queue, COUNT) == _expected(COUNT)


@pytest.mark.parametrize("case", STOMP_CASES)
def test_a_held_asynchronous_send_that_fails_to_be_written_is_told_once(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes fail from the second on under an asynchronous send loop: the first message
    is stored and told completed; the others, held, return and are told
    ``SendInDoubtError``: none raised and told, none untold, all told in send order. The
    connection goes on once writes work again. (Every send after the first is held
    however slow the machine: a write's error path can take longer than the 1 ms under
    which an asynchronous send counts as streaming.)"""
    monkeypatch.setattr(jmslike_stomp.transport, "ASYNC_STREAM_GAP", 60.0)
    url = _url(case)
    queue = _queue()
    count = 40
    told = CompletionRecorder(0)
    returned: list[str] = []
    with ConnectionFactory(url, request_timeout=10.0).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        with _counted(connection) as counting:
            counting.fail_from = counting.writes + 2
            for index in range(count):
                text = f"m{index:04d}"
                try:
                    producer.send(session.create_text_message(text), completion_listener=told)
                except jmslike.JMSException:
                    continue
                returned.append(text)
            deadline = time.monotonic() + 10.0
            while len(told.told) < len(returned) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)  # a send told twice would show now
        assert returned == _expected(count)  # none raised: each was held
        assert [text for text, _ in told.told] == returned  # each told once, in send order
        assert told.told[0] == ("m0000", None)
        doubts = told.told[1:]
        assert all(isinstance(error, jmslike.SendInDoubtError) for _, error in doubts), doubts
        producer.send(session.create_text_message("after"))  # the connection goes on
    assert _receive_all(url, queue, 2) == ["m0000", "after"]
