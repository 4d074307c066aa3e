"""jmslike_otel (issue 6, part 2): spans, metrics and trace context through the plugin.

Every test instruments with its own SDK providers (in-memory exporter and reader), so
nothing global is touched; the plugin is the entry-point one, registered here only if
the registry has not loaded it (plugins disabled in the environment).
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import jmslike_otel
from jmslike import ConnectionFactory, JMSException, Message, Session
from jmslike.spi import get_registry
from jmslike_otel import attributes as a

WAIT = 5.0


def url() -> str:
    return f"embedded://otel-{uuid.uuid4().hex}"


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider

    def spans(self, count: int) -> list[ReadableSpan]:
        """The first ``count`` finished spans, waiting for dispatcher threads to end theirs."""
        deadline = time.monotonic() + WAIT
        while len(self.exporter.get_finished_spans()) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        spans = list(self.exporter.get_finished_spans())
        assert len(spans) >= count, f"expected {count} spans, got {[s.name for s in spans]}"
        return spans

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found

    def total(self, name: str) -> int:
        return sum(int(point.value) for point in self.points(name))


@pytest.fixture
def plugin_registered() -> Iterator[None]:
    registry = get_registry()
    registry.load_plugins()
    manager = registry.plugin_manager
    ours = not manager.is_registered(jmslike_otel)
    if ours:
        manager.register(jmslike_otel, name=f"otel-test-{uuid.uuid4().hex}")
    yield
    if ours:
        manager.unregister(jmslike_otel)


@pytest.fixture
def otel(plugin_registered: None) -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    jmslike_otel.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Otel(exporter, reader, tracer_provider)
    finally:
        jmslike_otel.uninstrument()
        meter_provider.shutdown()
        tracer_provider.shutdown()


def by_name(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def test_the_plugin_is_an_entry_point() -> None:
    found = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="jmslike")}
    assert found.get("otel") == "jmslike_otel", (
        f"entry point otel missing ({found}); reinstall: pip install -e ."
    )


def test_send_and_listener_spans_share_a_trace(otel: Otel) -> None:
    got: list[Message] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        got.append(message)
        done.set()

    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://orders")
        producer.enable_ordering_group("joe")
        message = session.create_text_message("x")
        message.jms_correlation_id = "conv-1"
        producer.send(message)
        session.create_consumer("queue://orders").set_message_listener(listener)
        connection.start()
        assert done.wait(WAIT)
        spans = otel.spans(2)

    [send] = by_name(spans, "send orders")
    [process] = by_name(spans, "process orders")
    assert send.kind is SpanKind.PRODUCER and process.kind is SpanKind.CONSUMER
    assert send.attributes is not None and process.attributes is not None
    for span, operation in ((send, "send"), (process, "process")):
        attrs = span.attributes
        assert attrs is not None
        assert attrs[a.MESSAGING_SYSTEM] == "jmslike"
        assert attrs[a.OPERATION_TYPE] == operation
        assert attrs[a.OPERATION_NAME] == operation
        assert attrs[a.DESTINATION_NAME] == "orders"
        assert attrs[a.DESTINATION_KIND] == "queue"
        assert attrs[a.MESSAGE_ID] == message.jms_message_id
        assert attrs[a.MESSAGE_CONVERSATION_ID] == "conv-1"
        assert attrs[a.ORDERING_GROUP] == "joe"
        assert attrs[a.GROUP_SEQUENCE] == 1
        assert attrs[a.JMSLIKE_BROKER] == "jmslike-embedded"
    assert process.attributes[a.REDELIVERED] is False
    assert process.attributes[a.DELIVERY_COUNT] == 1

    assert send.context is not None and process.context is not None
    assert process.context.trace_id == send.context.trace_id, "one trace"
    assert process.parent is not None and process.parent.span_id == send.context.span_id
    assert [link.context.span_id for link in process.links] == [send.context.span_id]
    assert process.status.status_code is StatusCode.UNSET

    traceparent = got[0].get_string_property("traceparent")
    assert traceparent is not None and f"{send.context.trace_id:032x}" in traceparent

    assert otel.total(a.SENT_MESSAGES) == 1
    assert otel.total(a.CONSUMED_MESSAGES) == 1
    [consumed] = otel.points(a.CONSUMED_MESSAGES)
    assert dict(consumed.attributes) == {
        a.MESSAGING_SYSTEM: "jmslike",
        a.DESTINATION_NAME: "orders",
        a.OPERATION_NAME: "process",
    }
    [duration] = otel.points(a.PROCESS_DURATION)
    assert duration.count == 1


def test_receive_gives_a_receive_span(otel: Otel) -> None:
    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        producer.send(session.create_text_message("a"))
        producer.send(session.create_text_message("b"))
        consumer = session.create_consumer("queue://q")
        connection.start()
        assert consumer.receive(WAIT) is not None
        outer = otel.tracer_provider.get_tracer("test")
        with outer.start_as_current_span("handle request") as request:
            assert consumer.receive(WAIT) is not None
        spans = otel.spans(5)

    sends = by_name(spans, "send q")
    receives = by_name(spans, "receive q")
    assert len(sends) == 2 and len(receives) == 2
    first, second = receives
    assert first.kind is SpanKind.CLIENT
    assert first.attributes is not None and first.attributes[a.OPERATION_TYPE] == "receive"
    assert first.context is not None and sends[0].context is not None
    # No span around the first receive(): it joins the producer's trace.
    assert first.context.trace_id == sends[0].context.trace_id
    # Inside a span, receive() is part of that span's trace and links to the producer.
    assert second.parent is not None
    assert second.parent.span_id == request.get_span_context().span_id
    assert [link.context.span_id for link in second.links] == [sends[1].context.span_id]
    assert otel.points(a.PROCESS_DURATION) == [], "receive() has no processing to time"
    assert otel.total(a.CONSUMED_MESSAGES) == 2


def test_a_failing_listener_gives_an_error_span_and_a_redelivery(otel: Otel) -> None:
    errors: list[JMSException] = []
    seen: list[bool] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        seen.append(message.jms_redelivered)
        if len(seen) == 1:
            raise ValueError("first time fails")
        done.set()

    with ConnectionFactory(url()).create_connection() as connection:
        connection.set_exception_listener(errors.append)
        session = connection.create_session()
        session.create_producer("queue://q").send(session.create_text_message("x"))
        session.create_consumer("queue://q").set_message_listener(listener)
        connection.start()
        assert done.wait(WAIT)
        spans = otel.spans(3)

    assert seen == [False, True]
    failed, retried = by_name(spans, "process q")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes[a.ERROR_TYPE] == "ValueError"
    assert [event.name for event in failed.events] == ["exception"]
    assert retried.status.status_code is StatusCode.UNSET
    assert retried.attributes is not None
    assert retried.attributes[a.REDELIVERED] is True
    assert retried.attributes[a.DELIVERY_COUNT] == 2
    assert otel.total(a.REDELIVERED_MESSAGES) == 1
    assert otel.total(a.CONSUMED_MESSAGES) == 2
    durations = {p.attributes.get(a.ERROR_TYPE): p.count for p in otel.points(a.PROCESS_DURATION)}
    assert durations == {"ValueError": 1, None: 1}


def test_a_failed_send_gives_an_error_span(otel: Otel, monkeypatch: pytest.MonkeyPatch) -> None:
    class BrokerGone(JMSException):
        pass

    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")

        def broken(*args: object) -> None:
            raise BrokerGone("broker went away")

        monkeypatch.setattr(session._provider, "send", broken)
        with pytest.raises(BrokerGone):
            producer.send(session.create_text_message("x"))
        [span] = otel.spans(1)
    error_type = f"{__name__}.{BrokerGone.__qualname__}"
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is not None and "broker went away" in span.status.description
    assert span.attributes is not None and span.attributes[a.ERROR_TYPE] == error_type
    [sent] = otel.points(a.SENT_MESSAGES)
    assert sent.value == 1 and sent.attributes[a.ERROR_TYPE] == error_type


def test_forwarding_a_received_message_still_sends(otel: Otel) -> None:
    """Its properties are read-only: the trace context cannot go on it, the message can."""
    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        session.create_producer("queue://in").send(session.create_text_message("x"))
        connection.start()
        received = session.create_consumer("queue://in").receive(WAIT)
        assert received is not None
        session.create_producer("queue://out").send(received)
        forwarded = session.create_consumer("queue://out").receive(WAIT)
        assert forwarded is not None
        spans = otel.spans(4)
    assert [s.name for s in spans] == ["send in", "receive in", "send out", "receive out"]
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


def test_dead_lettering_is_counted(otel: Otel) -> None:
    factory = ConnectionFactory(url(), max_redeliveries=0)
    with factory.create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        session.create_producer("queue://q").send(session.create_text_message("x"))
        consumer = session.create_consumer("queue://q")
        connection.start()
        assert consumer.receive(WAIT) is not None
        session.recover()
    [dead] = otel.points(a.DEAD_LETTERED_MESSAGES)
    assert dead.value == 1
    assert dict(dead.attributes) == {a.MESSAGING_SYSTEM: "jmslike", a.DESTINATION_NAME: "q"}


def test_group_wait_is_measured_for_grouped_messages_only(otel: Otel) -> None:
    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        grouped = session.create_producer("queue://q")
        grouped.enable_ordering_group("g")
        plain = session.create_producer("queue://q")
        grouped.send(session.create_text_message("1"))
        plain.send(session.create_text_message("2"))
        grouped.send(session.create_text_message("3"))
        time.sleep(0.05)
        consumer = session.create_consumer("queue://q")
        connection.start()
        for _ in range(3):
            assert consumer.receive(WAIT) is not None
    [wait] = otel.points(a.GROUP_WAIT)
    assert wait.count == 2
    assert wait.min >= 0.04, "at least the time the messages sat on the queue"
    assert dict(wait.attributes) == {a.MESSAGING_SYSTEM: "jmslike", a.DESTINATION_NAME: "q"}


def test_uninstrument_stops_tracing(otel: Otel) -> None:
    with ConnectionFactory(url()).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        producer.send(session.create_text_message("traced"))
        assert len(otel.spans(1)) == 1
        jmslike_otel.uninstrument()
        assert not jmslike_otel.is_instrumented()
        producer.send(session.create_text_message("not traced"))
        assert len(otel.exporter.get_finished_spans()) == 1, "existing connections stop too"
    with ConnectionFactory(url()).create_connection() as connection:
        assert connection._send_chain is None and connection._delivery_chain is None


def test_not_instrumented_means_no_interceptor(plugin_registered: None) -> None:
    assert not jmslike_otel.is_instrumented()
    with ConnectionFactory(url()).create_connection() as connection:
        assert jmslike_otel.jmslike_middleware(connection) is None
        assert connection._send_chain is None and connection._delivery_chain is None


def test_the_environment_variable_instruments_with_the_global_providers(
    plugin_registered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jmslike_otel.ENV_VAR, "1")
    monkeypatch.setattr(jmslike_otel._state, "env_tried", False)
    try:
        with ConnectionFactory(url()).create_connection() as connection:
            assert jmslike_otel.is_instrumented()
            assert connection._send_chain is not None
            session = connection.create_session()
            session.create_producer("queue://q").send(session.create_text_message("x"))
        jmslike_otel.uninstrument()
        with ConnectionFactory(url()).create_connection() as connection:
            assert connection._send_chain is None, "uninstrument() wins over the variable"
    finally:
        jmslike_otel.uninstrument()
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider), "untouched"


def test_without_opentelemetry_the_plugin_loads_and_does_nothing(tmp_path: Any) -> None:
    """In a fresh interpreter where ``import opentelemetry`` fails, as the registry sees it."""
    code = textwrap.dedent(
        """
        import logging, sys
        sys.modules["opentelemetry"] = None  # import opentelemetry... raises ImportError
        logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
        import jmslike_otel
        from jmslike import ConnectionFactory
        from jmslike.spi import get_registry
        for _ in range(2):
            with ConnectionFactory("embedded://no-otel").create_connection() as connection:
                assert connection._send_chain is None
        assert get_registry().plugin_manager.get_plugin("otel") is jmslike_otel
        try:
            jmslike_otel.instrument()
        except ImportError as exc:
            print("instrument:", exc)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("JMSLIKE_")}
    env["JMSLIKE_OTEL"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("JMSLIKE_OTEL=1 ignored") == 1, result.stderr
    assert "pip install 'jmslike[otel]'" in result.stdout
