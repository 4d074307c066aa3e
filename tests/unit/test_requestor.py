"""QueueRequestor / TopicRequestor (JMS 1.1's request/reply helpers): what they refuse,
before anything is sent, and what they leave behind when closed.

Their request/reply behaviour on every broker is the shipped scenario
``test_queue_requestor_drops_the_late_reply_of_a_request_that_gave_up`` (contract suite).
Run: ``.venv/bin/python -m pytest tests/unit/test_requestor.py -v``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import jmslike
from jmslike import Session


@pytest.fixture
def connection() -> Iterator[jmslike.Connection]:
    factory = jmslike.ConnectionFactory(f"embedded://requestor-{uuid.uuid4().hex[:8]}")
    with factory.create_connection() as connection:
        yield connection


def _queued(connection: jmslike.Connection, queue: str) -> list[str]:
    browser = connection.create_session().create_browser(queue)
    return [m.text for m in browser.get_enumeration()]


@pytest.mark.parametrize(
    ("transacted", "mode"),
    [(True, Session.SESSION_TRANSACTED), (False, Session.CLIENT_ACKNOWLEDGE)],
)
def test_a_session_that_would_hang_the_request_is_refused(
    connection: jmslike.Connection, transacted: bool, mode: int
) -> None:
    """Java requires AUTO or DUPS_OK and does not check: a transacted request never leaves
    and its caller waits for ever."""
    session = connection.create_session(transacted, mode)
    with pytest.raises(jmslike.IllegalStateError, match="not transacted"):
        jmslike.QueueRequestor(session, "queue://svc")


def test_a_request_on_a_stopped_connection_is_refused_and_not_sent(
    connection: jmslike.Connection,
) -> None:
    session = connection.create_session()
    requestor = jmslike.QueueRequestor(session, "queue://svc")
    with pytest.raises(jmslike.IllegalStateError, match=r"connection\.start\(\)"):
        requestor.request(session.create_text_message("lost?"))
    assert _queued(connection, "queue://svc") == []


@pytest.mark.parametrize("timeout", [-1, float("nan"), "5", True])
def test_a_bad_timeout_is_named_and_nothing_is_sent(
    connection: jmslike.Connection, timeout: object
) -> None:
    session = connection.create_session()
    requestor = jmslike.QueueRequestor(session, "queue://svc")
    connection.start()
    with pytest.raises(jmslike.InvalidArgumentError, match="request timeout"):
        requestor.request(session.create_text_message("x"), timeout=timeout)  # type: ignore[arg-type]
    assert _queued(connection, "queue://svc") == []


@pytest.mark.parametrize(
    ("cls", "destination"),
    [(jmslike.QueueRequestor, "topic://svc"), (jmslike.TopicRequestor, "queue://svc")],
)
def test_the_wrong_kind_of_destination_is_named(
    connection: jmslike.Connection, cls: type, destination: str
) -> None:
    with pytest.raises(jmslike.InvalidDestinationError, match=destination):
        cls(connection.create_session(), destination)


def test_close_closes_the_session_and_deletes_the_reply_queue(
    connection: jmslike.Connection,
) -> None:
    session = connection.create_session()
    requestor = jmslike.QueueRequestor(session, jmslike.Queue("svc"))
    connection.start()
    assert requestor.request(session.create_text_message("a"), timeout=0.05) is None
    request = connection.create_session().create_consumer("queue://svc").receive(2.0)
    assert request is not None
    replies = request.jms_reply_to
    assert isinstance(replies, jmslike.TemporaryQueue)
    with requestor:
        pass  # ``with`` closes it, as close() does
    requestor.close()  # a second close does nothing
    other = connection.create_session()
    with pytest.raises(jmslike.IllegalStateError):
        session.create_text_message("x")
    with pytest.raises(jmslike.InvalidDestinationError):
        other.create_producer(replies).send(other.create_text_message("late"))
    with pytest.raises(jmslike.IllegalStateError, match="closed"):
        requestor.request(other.create_text_message("again"))


def test_a_reply_with_no_correlation_id_is_taken_as_java_takes_it(
    connection: jmslike.Connection,
) -> None:
    """The late-reply rule needs a correlation id; without one the next reply is the
    answer, as in Java."""
    session = connection.create_session()
    requestor = jmslike.QueueRequestor(session, "queue://svc")
    connection.start()
    assert requestor.request(session.create_text_message("a"), timeout=0.05) is None
    service = connection.create_session()
    request = service.create_consumer("queue://svc").receive(2.0)
    service.create_producer(request.jms_reply_to).send(service.create_text_message("bare"))
    reply = requestor.request(session.create_text_message("b"), timeout=2.0)
    assert reply is not None and reply.text == "bare"
    requestor.close()
