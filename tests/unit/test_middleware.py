"""Interceptors (issue 6): contributed by hook or factory, folded once per connection."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest

import jmslike
from jmslike import ConnectionFactory, JMSException, Message, Session
from jmslike.middleware import DeliveryContext, Interceptor, InterceptorError, SendContext
from jmslike.spi import get_registry, hookimpl

pytestmark = pytest.mark.embedded


def url() -> str:
    return f"embedded://mw-{uuid.uuid4().hex}"


class Recorder(Interceptor):
    def __init__(self) -> None:
        self.sent: list[tuple[str | None, str | None]] = []
        self.delivered: list[tuple[str | None, bool, str]] = []
        self.dead: list[str] = []

    def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
        context.message.set_string_property("traceparent", "00-abc-def-01")
        proceed()
        self.sent.append((context.message.jms_message_id, context.group))

    def deliver(self, context: DeliveryContext, proceed: Callable[[], None]) -> None:
        proceed()
        self.delivered.append((context.group, context.redelivered, threading.current_thread().name))

    def dead_lettered(self, context: DeliveryContext, reason: str) -> None:
        self.dead.append(reason)


def test_send_interceptor_changes_properties_and_sees_the_group() -> None:
    recorder = Recorder()
    factory = ConnectionFactory(url(), interceptors=[recorder])
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        producer.enable_ordering_group("joe")
        producer.send(session.create_text_message("x"))
        consumer = session.create_consumer("queue://q")
        connection.start()
        message = consumer.receive(1.0)
        assert message is not None
        assert message.get_string_property("traceparent") == "00-abc-def-01"
    assert recorder.sent == [(message.jms_message_id, "joe")]
    assert recorder.delivered[0][:2] == ("joe", False)


def test_veto_raises_to_the_caller_and_sends_nothing() -> None:
    class Veto(Interceptor):
        def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
            if context.message.get_string_property("kind") == "forbidden":
                raise JMSException("forbidden message")
            proceed()

    factory = ConnectionFactory(url(), interceptors=[Veto()])
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        bad = session.create_text_message("no")
        bad.set_string_property("kind", "forbidden")
        with pytest.raises(JMSException, match="forbidden"):
            producer.send(bad)
        producer.send(session.create_text_message("yes"))
        assert [m.text for m in session.create_browser("queue://q")] == ["yes"]  # type: ignore[attr-defined]


def test_a_broken_send_interceptor_fails_the_send_not_the_connection() -> None:
    class Broken(Interceptor):
        def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
            raise ZeroDivisionError("bug")

    factory = ConnectionFactory(url(), interceptors=[Broken()])
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        with pytest.raises(InterceptorError) as info:
            producer.send(session.create_text_message("x"))
        assert isinstance(info.value.__cause__, ZeroDivisionError)
        assert "was not sent" in str(info.value)
        assert not connection.closed


def test_a_send_interceptor_that_forgets_to_proceed_is_an_error() -> None:
    class Forgetful(Interceptor):
        def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
            pass

    factory = ConnectionFactory(url(), interceptors=[Forgetful()])
    with factory.create_connection() as connection:
        session = connection.create_session()
        with pytest.raises(InterceptorError, match="neither sent"):
            session.create_producer("queue://q").send(session.create_text_message("x"))


def test_a_broken_delivery_interceptor_reports_and_delivers_anyway() -> None:
    class Broken(Interceptor):
        def deliver(self, context: DeliveryContext, proceed: Callable[[], None]) -> None:
            raise RuntimeError("tracing backend down")

    errors: list[JMSException] = []
    got = threading.Event()
    factory = ConnectionFactory(url(), interceptors=[Broken()])
    with factory.create_connection() as connection:
        connection.set_exception_listener(errors.append)
        session = connection.create_session()
        session.create_producer("queue://q").send(session.create_text_message("x"))
        session.create_consumer("queue://q").set_message_listener(lambda m: got.set())
        connection.start()
        assert got.wait(2.0), "the listener still gets the message"
    assert errors and isinstance(errors[0], InterceptorError)
    assert "tracing backend down" in str(errors[0])


def test_listener_errors_pass_through_interceptors_unchanged() -> None:
    """The application's own error is not the interceptor's: it is redelivered as usual."""
    recorder = Recorder()
    errors: list[JMSException] = []
    seen: list[bool] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        seen.append(message.jms_redelivered)
        if len(seen) == 1:
            raise ValueError("first time fails")
        done.set()

    factory = ConnectionFactory(url(), interceptors=[recorder])
    with factory.create_connection() as connection:
        connection.set_exception_listener(errors.append)
        session = connection.create_session()
        session.create_producer("queue://q").send(session.create_text_message("x"))
        session.create_consumer("queue://q").set_message_listener(listener)
        connection.start()
        assert done.wait(2.0)
    assert seen == [False, True]
    assert isinstance(errors[0], jmslike.ListenerError)
    assert [d[1] for d in recorder.delivered] == [True]  # the failed one raised through
    assert recorder.delivered[0][2].startswith("jmslike-session-"), "on the dispatcher"


def test_dead_lettering_is_observed() -> None:
    recorder = Recorder()
    factory = ConnectionFactory(url(), interceptors=[recorder], max_redeliveries=0)
    with factory.create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        session.create_producer("queue://q").send(session.create_text_message("x"))
        consumer = session.create_consumer("queue://q")
        connection.start()
        assert consumer.receive(1.0) is not None
        session.recover()
    assert len(recorder.dead) == 1 and "max_redeliveries=0" in recorder.dead[0]


class CountingPlugin:
    """A pluggy plugin contributing an interceptor through jmslike_middleware."""

    def __init__(self) -> None:
        self.calls = 0
        self.recorder = Recorder()

    @hookimpl
    def jmslike_middleware(self, connection: jmslike.Connection) -> Interceptor:
        self.calls += 1
        return self.recorder


@pytest.fixture
def plugin() -> Iterator[CountingPlugin]:
    plugin = CountingPlugin()
    manager = get_registry().plugin_manager
    get_registry().load_plugins()
    manager.register(plugin, name=f"counting-{uuid.uuid4().hex}")
    yield plugin
    manager.unregister(plugin)


def test_hook_is_asked_once_per_connection_not_per_message(plugin: CountingPlugin) -> None:
    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        for n in range(20):
            producer.send(session.create_text_message(str(n)))
    assert plugin.calls == 1
    assert len(plugin.recorder.sent) == 20


def test_no_interceptors_means_no_chain() -> None:
    with ConnectionFactory(url()).create_connection() as connection:
        assert connection._send_chain is None and connection._delivery_chain is None
