"""JMS 2.0 asynchronous send, the API layer's part (``jmslike.completion``): answers that
come back out of order are told in send order, an error goes to ``on_exception``, a send
that raised is never told, and a broker that never answers cannot hang a close.

The answers here come from a provider session whose ``send_async`` keeps them back and
lets the test answer them in any order; the same paths on every real broker are the shipped
scenarios ``test_async_sends_are_answered_in_send_order_before_close_returns`` and its
neighbours (contract suite).
Run: ``.venv/bin/python -m pytest tests/unit/test_completion.py -v``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

import jmslike
from jmslike import compat
from jmslike.completion import Completions

Done = Callable[[BaseException | None], None]


class Recorder:
    def __init__(self) -> None:
        self.got: list[tuple[str, str]] = []
        self.told = threading.Event()

    def on_completion(self, message: jmslike.Message) -> None:
        self.got.append((message.text or "", "ok"))
        self.told.set()

    def on_exception(self, message: jmslike.Message, exception: jmslike.JMSException) -> None:
        self.got.append((message.text or "", type(exception).__name__))
        self.told.set()


@pytest.fixture
def session() -> Iterator[jmslike.Session]:
    factory = jmslike.ConnectionFactory(f"embedded://completion-{uuid.uuid4().hex[:8]}")
    with factory.create_connection() as connection:
        yield connection.create_session()


def _held_back(session: jmslike.Session, monkeypatch: pytest.MonkeyPatch) -> list[Done]:
    """Make the session's provider send at once but keep every answer for the test."""
    answers: list[Done] = []
    provider = session._provider

    def send_async(destination: object, message: object, done: Done) -> None:
        provider.send(destination, message)  # type: ignore[arg-type]
        answers.append(done)

    monkeypatch.setattr(provider, "send_async", send_async)
    return answers


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, "not told within 5 s"
        time.sleep(0.01)


def test_answers_out_of_order_are_told_in_send_order(
    session: jmslike.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = _held_back(session, monkeypatch)
    recorder = Recorder()
    producer = session.create_producer("queue://completion")
    for text in "abc":
        producer.send(session.create_text_message(text), completion_listener=recorder)
    answers[2](None)
    answers[1](jmslike.JMSException("refused"))
    time.sleep(0.1)
    assert recorder.got == []  # "a" is not answered: nothing after it is told either
    answers[0](None)
    answers[0](jmslike.JMSException("a second answer"))  # the first answer counts
    _wait_for(lambda: len(recorder.got) == 3)
    assert recorder.got == [("a", "ok"), ("b", "JMSException"), ("c", "ok")]


def test_a_send_that_raised_is_never_told(
    session: jmslike.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = session._provider

    def refuse(destination: object, message: object, done: Done) -> None:
        raise jmslike.ConnectionFailedError("lost before the write")

    monkeypatch.setattr(provider, "send_async", refuse)
    recorder = Recorder()
    producer = session.create_producer("queue://completion")
    with pytest.raises(jmslike.ConnectionFailedError, match="before the write"):
        producer.send(session.create_text_message("x"), completion_listener=recorder)
    session.close()  # nothing pending: returns at once
    assert recorder.got == []


def test_close_tells_an_unanswered_send_it_is_in_doubt(monkeypatch: pytest.MonkeyPatch) -> None:
    factory = jmslike.ConnectionFactory(
        f"embedded://completion-{uuid.uuid4().hex[:8]}", request_timeout=0.2
    )
    connection = factory.create_connection()
    session = connection.create_session()
    _held_back(session, monkeypatch)
    recorder = Recorder()
    session.create_producer("queue://completion").send(
        session.create_text_message("lost"), completion_listener=recorder
    )
    started = time.monotonic()
    connection.close()
    assert time.monotonic() - started < 3
    assert recorder.got == [("lost", "SendInDoubtError")]


def test_a_listener_that_raises_does_not_stop_the_next_answers(session: jmslike.Session) -> None:
    told: list[str] = []

    class Raising:
        def on_completion(self, message: jmslike.Message) -> None:
            told.append(message.text or "")
            raise RuntimeError("the application's bug")

        def on_exception(self, message: jmslike.Message, exception: Exception) -> None:
            told.append("error")

    producer = session.create_producer("queue://completion")
    for text in "ab":
        producer.send(session.create_text_message(text), completion_listener=Raising())
    session.close()
    assert told == ["a", "b"]


def test_bad_listener_sends_nothing(session: jmslike.Session) -> None:
    producer = session.create_producer("queue://completion-bad")
    message = session.create_text_message("never")
    with pytest.raises(jmslike.InvalidArgumentError, match=r"completion_listener=.*on_exception"):
        producer.send(message, completion_listener=type("OnlyOne", (), {"on_completion": print})())
    assert message.jms_message_id is None  # refused before the headers were set
    browser = session.create_browser("queue://completion-bad")
    assert list(browser.get_enumeration()) == []


def test_jms_producer_set_async_and_java_names(session: jmslike.Session) -> None:
    recorder = Recorder()
    context_producer = jmslike.JMSProducer(session.create_producer(None))
    assert context_producer.set_async(recorder) is context_producer
    assert context_producer.get_async() is recorder
    context_producer.send("queue://completion-java", "fluent")
    told: list[str] = []

    class JavaStyle:  # a Java CompletionListener's names
        def onCompletion(self, message: jmslike.Message) -> None:  # noqa: N802
            told.append(f"completed {message.text}")

        def onException(self, message: jmslike.Message, exception: Exception) -> None:  # noqa: N802
            told.append(f"failed {message.text}")

    java = compat.as_java(session.create_producer("queue://completion-java"))
    java.send(session.create_text_message("ported"), JavaStyle())
    java.send(
        session.create_text_message("ported-qos"),
        jmslike.DeliveryMode.PERSISTENT,
        4,
        0,
        JavaStyle(),
    )
    with pytest.raises(jmslike.InvalidArgumentError, match="completionListener"):
        java.send(session.create_text_message("x"), 2)
    context_producer.set_async(None)
    context_producer.send("queue://completion-java", "synchronous again")
    session.close()
    assert recorder.got == [("fluent", "ok")]
    assert told == ["completed ported", "completed ported-qos"]


def test_completion_thread_ends_with_the_session() -> None:
    completions = Completions("jmslike-completions-test")
    recorder = Recorder()
    message = jmslike.TextMessage("m")
    completions.finisher(completions.add(message, recorder))(None)
    completions.wait_idle(1.0, "close()")
    completions.close()
    _wait_for(lambda: not any(t.name == "jmslike-completions-test" for t in threading.enumerate()))
    assert recorder.got == [("m", "ok")]
    with pytest.raises(jmslike.IllegalStateError):
        completions.add(message, recorder)
