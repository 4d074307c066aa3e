"""The OpenTelemetry side of jmslike_otel: instruments, propagation, the interceptor.

Imported only when tracing is switched on (``jmslike_otel.instrument()`` or
``JMSLIKE_OTEL=1``), so that ``import jmslike_otel``, which the plugin registry does for
every process, works without OpenTelemetry installed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from opentelemetry import metrics, propagate, trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter, Setter, TextMapPropagator
from opentelemetry.trace import Link, Span, SpanKind
from opentelemetry.util.types import AttributeValue

import jmslike
from jmslike.errors import JMSException
from jmslike.middleware import DeliveryContext, Interceptor, SendContext
from jmslike_otel import attributes as a

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.destination import Destination
    from jmslike.message import Message
    from jmslike_otel import _State

__all__ = ["Telemetry", "TracingInterceptor"]

log = logging.getLogger("jmslike_otel")

Attributes = dict[str, AttributeValue]

SCOPE = "jmslike_otel"
"""The instrumentation scope name of every tracer and meter this plugin creates."""


class _PropertyGetter(Getter["Message"]):
    """Reads trace context from message properties (only string values count)."""

    def get(self, carrier: Message, key: str) -> list[str] | None:
        value = carrier.properties.get(key)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: Message) -> list[str]:
        return carrier.property_names()


class _PropertySetter(Setter["Message"]):
    """Writes trace context as string properties.

    A message whose properties are read-only (a received message sent on again without
    ``clear_properties()``) or a propagator key that is no JMS property name (only
    custom propagators have such keys; ``traceparent``, ``tracestate`` and ``baggage``
    are fine) is sent without that header rather than failing the send: tracing must
    never cost a message.
    """

    def set(self, carrier: Message, key: str, value: str) -> None:
        try:
            carrier.set_string_property(key, value)
        except JMSException as exc:
            log.debug("trace context %r not carried by message: %s", key, exc)


GETTER = _PropertyGetter()
SETTER = _PropertySetter()


class Telemetry:
    """The tracer, the metric instruments and the propagator of one ``instrument()``."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: metrics.MeterProvider | None,
        propagator: TextMapPropagator | None,
    ) -> None:
        version = jmslike.__version__
        self.tracer = trace.get_tracer(SCOPE, version, tracer_provider)
        meter = metrics.get_meter(SCOPE, version, meter_provider)
        self.propagator = propagator
        """None: the global propagator (W3C trace context and baggage unless the
        application or OTEL_PROPAGATORS set another), looked up per message so a later
        ``propagate.set_global_textmap`` applies."""
        self.sent = meter.create_counter(
            a.SENT_MESSAGES, "{message}", "Messages jmslike attempted to send to the broker."
        )
        self.consumed = meter.create_counter(
            a.CONSUMED_MESSAGES,
            "{message}",
            "Messages delivered to the application, by receive() or to a listener.",
        )
        self.redelivered = meter.create_counter(
            a.REDELIVERED_MESSAGES,
            "{message}",
            "Deliveries of messages marked redelivered (JMSRedelivered), a subset of "
            f"{a.CONSUMED_MESSAGES}.",
        )
        self.dead_lettered = meter.create_counter(
            a.DEAD_LETTERED_MESSAGES,
            "{message}",
            "Messages the session moved to the dead-letter queue (ORD-13).",
        )
        self.operation_duration = meter.create_histogram(
            a.OPERATION_DURATION, "s", "Duration of send operations."
        )
        self.process_duration = meter.create_histogram(
            a.PROCESS_DURATION, "s", "Duration of message listeners."
        )
        self.group_wait = meter.create_histogram(
            a.GROUP_WAIT,
            "s",
            "For the first delivery of a message with an ordering group: the wall-clock "
            "time when it reaches the application (receive() returns it or its listener "
            "is called) minus its JMSTimestamp (when it was sent); 0 if the clocks of "
            "sender and receiver disagree the other way.",
        )

    def inject(self, message: Message) -> None:
        """Put the current context on ``message``; a failing propagator (an application's
        own) costs the trace link, never the send."""
        try:
            if self.propagator is None:
                propagate.inject(message, setter=SETTER)
            else:
                self.propagator.inject(message, setter=SETTER)
        except Exception:
            log.debug("trace context not injected into %s", message.jms_message_id, exc_info=True)

    def extract(self, message: Message) -> Context:
        """The producer's context from ``message``; empty if there is none or it is bad."""
        try:
            if self.propagator is None:
                return propagate.extract(message, getter=GETTER)
            return self.propagator.extract(message, getter=GETTER)
        except Exception:
            log.debug("trace context not extracted from %s", message.jms_message_id, exc_info=True)
            return Context()


def _error_type(exc: BaseException) -> str:
    cls = type(exc)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class TracingInterceptor(Interceptor):
    """Spans and metrics around every send and delivery of one connection.

    The interceptor reads the switch (``_State``) on each call rather than holding a
    Telemetry: ``uninstrument()`` then silences connections that already exist, and a
    second ``instrument()`` with other providers reaches them too.
    """

    def __init__(self, state: _State, connection: Connection) -> None:
        self._state = state
        self._connection = connection
        capabilities = connection.capabilities
        self._base: Attributes = {
            a.MESSAGING_SYSTEM: a.SYSTEM,
            a.JMSLIKE_BROKER: capabilities.broker,
            a.JMSLIKE_PROVIDER: capabilities.provider,
        }

    def __repr__(self) -> str:
        return "<jmslike_otel.TracingInterceptor>"

    # ----------------------------------------------------------------- send
    def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
        telemetry = self._state.telemetry
        if telemetry is None:
            proceed()
            return
        destination = context.destination
        message = context.message
        metric = self._metric_attributes(destination, "send")
        attributes = self._span_attributes(destination, message, "send", "send")
        started = time.perf_counter()
        error: str | None = None
        try:
            with self._span(telemetry, destination, "send", SpanKind.PRODUCER, attributes) as span:
                # Inside the span: its context is what the consumer's span joins.
                telemetry.inject(message)
                try:
                    proceed()
                except BaseException as exc:
                    error = _error_type(exc)
                    span.set_attribute(a.ERROR_TYPE, error)
                    raise
        finally:
            if error is not None:
                metric[a.ERROR_TYPE] = error
            telemetry.sent.add(1, metric)
            telemetry.operation_duration.record(time.perf_counter() - started, metric)

    # -------------------------------------------------------------- deliver
    def deliver(self, context: DeliveryContext, proceed: Callable[[], None]) -> None:
        telemetry = self._state.telemetry
        if telemetry is None:
            proceed()
            return
        now = time.time()
        message = context.message
        destination = context.destination
        process = context.handler is not None
        operation = "process" if process else "receive"
        metric = self._metric_attributes(destination, operation)
        self._count_delivery(telemetry, destination, message, metric, now)

        attributes = self._span_attributes(destination, message, operation, operation)
        attributes[a.REDELIVERED] = message.jms_redelivered
        attributes[a.DELIVERY_COUNT] = message.delivery_count
        subscription = context.consumer.subscription_name
        if subscription is not None:
            attributes[a.DESTINATION_SUBSCRIPTION_NAME] = subscription
        creation = telemetry.extract(message)
        producer = trace.get_current_span(creation).get_span_context()
        links = [Link(producer)] if producer.is_valid else None
        # Parent: the caller's span if there is one (receive() inside a request), else the
        # producer's context, so that the consumer side joins the producer's trace.
        ambient = trace.get_current_span().get_span_context().is_valid
        parent = None if ambient else creation
        # Current conventions: "receive" is a CLIENT span (the application pulls),
        # "process" a CONSUMER span (the broker pushes to a listener).
        kind = SpanKind.CONSUMER if process else SpanKind.CLIENT
        started = time.perf_counter()
        error: str | None = None
        try:
            with self._span(
                telemetry, destination, operation, kind, attributes, links, parent
            ) as span:
                try:
                    proceed()
                except BaseException as exc:
                    error = _error_type(exc)
                    span.set_attribute(a.ERROR_TYPE, error)
                    raise
        finally:
            if process:
                if error is not None:
                    metric[a.ERROR_TYPE] = error
                telemetry.process_duration.record(time.perf_counter() - started, metric)

    def _count_delivery(
        self,
        telemetry: Telemetry,
        destination: Destination,
        message: Message,
        metric: Attributes,
        now: float,
    ) -> None:
        telemetry.consumed.add(1, metric)
        if message.jms_redelivered:
            telemetry.redelivered.add(1, metric)
        elif message.ordering_group is not None and message.jms_timestamp > 0:
            # First deliveries only: a redelivery's age includes the failed attempts,
            # which is not waiting; the redelivered counter tells those apart.
            wait = max(0.0, now - message.jms_timestamp / 1000.0)
            telemetry.group_wait.record(wait, self._destination_attributes(destination))

    # --------------------------------------------------------- dead letters
    def dead_lettered(self, context: DeliveryContext, reason: str) -> None:
        telemetry = self._state.telemetry
        if telemetry is not None:
            telemetry.dead_lettered.add(1, self._destination_attributes(context.destination))

    # -------------------------------------------------------------- helpers
    @contextmanager
    def _span(
        self,
        telemetry: Telemetry,
        destination: Destination,
        operation: str,
        kind: SpanKind,
        attributes: Attributes,
        links: list[Link] | None = None,
        parent: Context | None = None,
    ) -> Iterator[Span]:
        name = f"{operation} {'(temporary)' if destination.is_temporary else destination.name}"
        with telemetry.tracer.start_as_current_span(
            name,
            context=parent,
            kind=kind,
            attributes=attributes,
            links=links,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            yield span

    def _destination_attributes(self, destination: Destination | None) -> Attributes:
        """What metrics are split by: low cardinality, so no temporary names."""
        attributes: Attributes = {a.MESSAGING_SYSTEM: a.SYSTEM}
        if destination is None:
            return attributes
        if destination.is_temporary:
            attributes[a.DESTINATION_TEMPORARY] = True
        else:
            attributes[a.DESTINATION_NAME] = destination.name
        return attributes

    def _metric_attributes(self, destination: Destination, operation: str) -> Attributes:
        attributes = self._destination_attributes(destination)
        attributes[a.OPERATION_NAME] = operation
        return attributes

    def _span_attributes(
        self, destination: Destination, message: Message, operation_type: str, operation: str
    ) -> Attributes:
        attributes = dict(self._base)
        attributes[a.OPERATION_TYPE] = operation_type
        attributes[a.OPERATION_NAME] = operation
        attributes[a.DESTINATION_NAME] = destination.name
        attributes[a.DESTINATION_KIND] = destination.kind
        if destination.is_temporary:
            attributes[a.DESTINATION_TEMPORARY] = True
        client_id = self._connection.client_id
        if client_id is not None:
            attributes[a.MESSAGING_CLIENT_ID] = client_id
        if message.jms_message_id is not None:
            attributes[a.MESSAGE_ID] = message.jms_message_id
        if message.jms_correlation_id is not None:
            attributes[a.MESSAGE_CONVERSATION_ID] = message.jms_correlation_id
        group = message.ordering_group
        if group is not None:
            attributes[a.ORDERING_GROUP] = group
            sequence = message.group_sequence
            if sequence is not None:
                attributes[a.GROUP_SEQUENCE] = sequence
        return attributes
