"""Closing a consumer while the broker is still delivering to it, on every provider
(ORD-10: what a closing consumer holds goes back, in order, and nothing is lost).

The window is narrow in real use: a consumer's last acknowledgement frees the broker's
window just before the close, and the next message arrives while the close runs. Here
the provider consumer is granted one more message just before it closes, and its close
waits for what that brings, so the race happens every time.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from jmslike import Session
from jmslike.testing.helpers import send_texts


def test_a_delivery_arriving_while_a_consumer_closes_is_not_lost(
    make_connection, unique, drain, monkeypatch
) -> None:
    """ORD-10: a message delivered into a closing consumer's buffer after the close took
    the buffer goes back to the queue behind what the consumer held. (Before: it was
    dropped; on the embedded broker it stayed in flight to the closed consumer, and the
    queue's next consumer never got it.)"""
    queue = f"queue://{unique('q')}"
    connection = make_connection()
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    send_texts(session, queue, ["a", "b", "c"])
    consumer = session.create_consumer(queue)
    connection.start()
    held = consumer.receive(5.0)
    assert held is not None and held.text == "a"
    provider = consumer._provider
    close = provider.close

    def close_late(delivered, undelivered):  # type: ignore[no-untyped-def]
        provider.flow(1)
        time.sleep(0.3)
        close(delivered, undelivered)

    monkeypatch.setattr(provider, "close", close_late)
    consumer.close()
    other = make_connection()
    other.start()
    texts = [m.text for m in drain(other.create_session().create_consumer(queue))]
    assert texts == ["a", "b", "c"]


@pytest.mark.parametrize("mode", [Session.AUTO_ACKNOWLEDGE, Session.CLIENT_ACKNOWLEDGE])
@pytest.mark.parametrize("close", ["before the hand-out", "after the hand-out"])
def test_a_message_received_while_another_thread_closes_the_consumer_goes_back(
    make_connection, unique, drain, monkeypatch, mode, close
) -> None:
    """ORD-10, API/consumer.close: a receive() that got its message from the provider
    just as another thread closed the consumer. Closed before the receive handed it out
    (so the close did not see it), the receive returns None and the message goes back,
    ahead of the rest. (Before: the receive returned it to the closed consumer, which
    nobody finished or gave back; on the embedded broker it stayed in flight and its
    group stayed held for good.) Closed just after, the close finished it (AUTO: the
    receive returns it) or gave it back (CLIENT_ACKNOWLEDGE: the receive returns None).
    Here the close runs at that point, every time."""
    queue = f"queue://{unique('q')}"
    connection = make_connection()
    session = connection.create_session(False, mode)
    send_texts(session, queue, ["a", "b", "c"])
    consumer = session.create_consumer(queue)
    connection.start()
    first = consumer.receive(5.0)
    assert first is not None and first.text == "a"
    if mode == Session.CLIENT_ACKNOWLEDGE:
        first.acknowledge()
    deliver = session._deliver

    def close_there(*args):  # type: ignore[no-untyped-def]
        handed = deliver(*args) if close == "after the hand-out" else None
        closing = threading.Thread(target=consumer.close)
        closing.start()
        closing.join(10.0)
        return deliver(*args) if handed is None else handed

    monkeypatch.setattr(session, "_deliver", close_there)
    got = consumer.receive(5.0)
    monkeypatch.undo()
    returned = close == "after the hand-out" and mode == Session.AUTO_ACKNOWLEDGE
    assert (got.text if got is not None else None) == ("b" if returned else None)
    other = make_connection()
    other.start()
    texts = [m.text for m in drain(other.create_session().create_consumer(queue))]
    assert texts == (["c"] if returned else ["b", "c"])


def test_a_close_while_receive_asks_the_broker_ends_the_receive_with_none(
    make_connection, unique, monkeypatch
) -> None:
    """API/consumer.receive: a connection closed from another thread while a receive is
    asking the broker for its first message (over STOMP: the SUBSCRIBE, whose receipt the
    DISCONNECT cuts off) ends that receive with None, as a close during the wait does.
    (Before: the provider's "connection lost before the broker confirmed SUBSCRIBE" came
    out of receive(); seen in CI on Artemis over STOMP.)"""
    connection = make_connection()
    session = connection.create_session()
    consumer = session.create_consumer(f"queue://{unique('q')}")
    connection.start()
    provider = consumer._provider
    flow = provider.flow
    closed: list[threading.Thread] = []

    def flow_with_close(credit: int) -> None:
        if credit > 0 and not closed:
            closer = threading.Thread(target=connection.close)
            closed.append(closer)
            closer.start()
            closer.join(10.0)
        flow(credit)

    monkeypatch.setattr(provider, "flow", flow_with_close)
    result: list[object] = []
    errors: list[BaseException] = []

    def receive() -> None:
        try:
            result.append(consumer.receive(10.0))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    waiting = threading.Thread(target=receive)
    waiting.start()
    waiting.join(15.0)
    assert closed, "the receive never asked the broker"
    assert not waiting.is_alive()
    assert (errors, result) == ([], [None])


def test_consumers_closed_while_the_broker_streams_to_them_give_everything_back(
    make_factory, make_connection, unique, drain
) -> None:
    """ORD-10, ORD-11: consumers opened and closed one after another on a connection that
    stays open, each while the broker is still sending it its prefetch: every message
    they did not finish reaches the next consumer, in its place, at once. (Before, on
    RabbitMQ over AMQP: a message the queue sent as the link closed was dropped by the
    broker's AMQP 1.0 plugin, "Delivery to non-existent consumer" in its log, and stayed
    unacknowledged on the connection until the connection closed.)"""
    queue = f"queue://{unique('q')}"
    texts = [f"m{i:03}" for i in range(40)]
    connection = make_factory(prefetch=20, max_prefetch=20).create_connection()
    try:
        session = connection.create_session()
        connection.start()
        got = []
        for round_ in range(8):
            # Fewer than the prefetch: the link keeps credit, so the broker sends what
            # the close gives back to this same link again, racing the detach.
            send_texts(session, queue, texts[round_ * 5 : round_ * 5 + 5])
            consumer = session.create_consumer(queue)
            message = consumer.receive(5.0)
            assert message is not None
            got.append(message.text)
            consumer.close()
        other = make_connection()
        other.start()
        rest = [m.text for m in drain(other.create_session().create_consumer(queue))]
        assert got + rest == texts
    finally:
        connection.close()


def test_consumers_made_and_closed_in_a_loop_each_close_at_once(
    make_factory, make_connection, unique, drain, caplog
) -> None:
    """API/consumer.close: hundreds of consumers made and closed one after another on a
    connection that stays open each close with the broker's answer, and the connection
    still works after them. (Before, on RabbitMQ over AMQP: a consumer's link detach and
    its own session's end went out together, and now and then RabbitMQ answered neither:
    the close waited the whole request timeout, "did not answer a link's detach", about
    once in 300. With the end sent after the detach's answer, RabbitMQ still leaves an
    end unanswered now and then, and a consumer whose session waited for it to begin
    waited for ever.)"""
    queue = f"queue://{unique('q')}"
    connection = make_factory(request_timeout=5.0).create_connection()
    errors: list[BaseException] = []

    def make_and_close(session: Session) -> None:
        try:
            for _ in range(250):
                session.create_consumer(queue).close()
        except Exception as exc:  # the test must see it
            errors.append(exc)

    try:
        # Two threads, a session each: a consumer is made while another one's close is
        # still being answered.
        sessions = [connection.create_session() for _ in range(2)]
        with caplog.at_level(logging.WARNING, logger="jmslike"):
            threads = [threading.Thread(target=make_and_close, args=(s,)) for s in sessions]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120.0)
        assert errors == []
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        send_texts(sessions[0], queue, ["after"])
        other = make_connection()
        other.start()
        assert [m.text for m in drain(other.create_session().create_consumer(queue))] == ["after"]
    finally:
        connection.close()
