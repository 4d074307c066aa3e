"""OpenTelemetry tracing and metrics for jmslike, as a plugin.

A plugin like any third-party one: the ``otel`` entry point of the ``jmslike`` group
names this module, and its ``jmslike_middleware`` hook gives each new connection a
:class:`~jmslike_otel._telemetry.TracingInterceptor` while instrumentation is on.

Instrumentation is opt-in, the way OpenTelemetry instrumentors are, because the
registry imports every installed plugin in every process::

    import jmslike_otel
    jmslike_otel.instrument()          # global providers; or pass tracer_provider=...
    ...
    jmslike_otel.uninstrument()

or set ``JMSLIKE_OTEL=1`` to instrument with the global providers at the first
connection. While it is off the hook returns None, so a connection gets no interceptor
and its sends and deliveries pay nothing. This module imports nothing from
OpenTelemetry: without it installed, ``import jmslike_otel`` works, the hook returns
None and, if ``JMSLIKE_OTEL`` asked for tracing, says why once in the log.

What the spans, attributes and metrics are, and how trace context travels in message
properties, is in docs/plugins.md; the names are in :mod:`jmslike_otel.attributes`.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

from jmslike.spi import hookimpl

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.propagators.textmap import TextMapPropagator
    from opentelemetry.trace import TracerProvider

    from jmslike.connection import Connection
    from jmslike.middleware import Interceptor
    from jmslike_otel._telemetry import Telemetry

__all__ = ["ENV_VAR", "instrument", "is_instrumented", "jmslike_middleware", "uninstrument"]

log = logging.getLogger("jmslike_otel")

ENV_VAR = "JMSLIKE_OTEL"
"""Set to 1 (true, yes) to instrument with the global providers at the first connection."""

_MISSING = (
    "OpenTelemetry is not installed, so jmslike_otel cannot trace (pip install 'jmslike[otel]')"
)


class _State:
    """The switch every TracingInterceptor reads; one per process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.telemetry: Telemetry | None = None
        self.env_tried = False
        """``JMSLIKE_OTEL`` is acted on once: after ``uninstrument()`` it stays off."""
        self.warned_missing = False


_state = _State()


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    *,
    propagator: TextMapPropagator | None = None,
) -> None:
    """Trace and measure every connection created from now on.

    Providers left None are OpenTelemetry's global ones; ``propagator`` None means the
    global propagator (W3C ``traceparent``/``tracestate`` and ``baggage`` by default).
    Calling it again replaces the providers, for existing instrumented connections too.
    Raises ImportError when OpenTelemetry is not installed: an explicit request should
    fail loudly, unlike the environment variable.
    """
    try:
        from jmslike_otel._telemetry import Telemetry
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    telemetry = Telemetry(tracer_provider, meter_provider, propagator)
    with _state.lock:
        _state.telemetry = telemetry
        _state.env_tried = True


def uninstrument() -> None:
    """Stop: new connections get no interceptor, existing ones stop reporting."""
    with _state.lock:
        _state.telemetry = None
        _state.env_tried = True


def is_instrumented() -> bool:
    return _state.telemetry is not None


def _env_enabled() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def _from_env() -> bool:
    """Instrument with the global providers if ``JMSLIKE_OTEL`` asks and nothing decided yet."""
    with _state.lock:
        if _state.telemetry is not None:
            return True
        if _state.env_tried or not _env_enabled():
            return False
        _state.env_tried = True
        try:
            from jmslike_otel._telemetry import Telemetry
        except ImportError as exc:
            if not _state.warned_missing:
                _state.warned_missing = True
                log.warning("%s=%s ignored: %s (%s)", ENV_VAR, os.environ[ENV_VAR], _MISSING, exc)
            return False
        _state.telemetry = Telemetry(None, None, None)
        log.info("jmslike_otel: tracing every connection (%s)", ENV_VAR)
        return True


@hookimpl
def jmslike_middleware(connection: Connection) -> Interceptor | None:
    """The tracing interceptor for a new connection, or None while instrumentation is off."""
    if _state.telemetry is None and not _from_env():
        return None
    try:
        from jmslike_otel._telemetry import TracingInterceptor
    except ImportError:  # instrumented, so importable; but never fail a connection
        return None
    return TracingInterceptor(_state, connection)
