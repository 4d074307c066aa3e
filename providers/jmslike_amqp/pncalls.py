"""Proton's C calls on a received message's path, made without letting the interpreter
lock go.

cffi lets the interpreter lock go around every C call it makes, so that a long call
lets other threads run. Proton's engine calls never block and take well under a
microsecond, and each received message costs the connection's thread about sixteen of
them (the collector's event, the delivery's state, its bytes, the link's advance, the
settlement). Each time the lock went while a listener's thread waited for it (back from
its handler), that thread was woken, found the lock taken again and went back to sleep.
A listener container at concurrency 8 on RabbitMQ made about 6 thread switches a
message that way; made through ``ctypes.PyDLL``, which keeps the lock, the same calls
leave about 3.8 (docs/performance.md, "Proton's calls on a delivery's path keep the
interpreter lock").

The functions are the C library's own, found in the extension module Proton's binding
is built as (``cproton_ffi``), so that both act on the same engine. Pointers are plain
ints here. Where that module does not export them (a Proton built another way),
:data:`KEPT` is False and each function below makes the same call through Proton's
binding, on its cffi pointers, as before: every caller passes on what it got from this
module, never mixing the two kinds. The calls run on the connection's own thread only,
as every Proton call does.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from typing import Any

import cproton
import cproton_ffi
from cproton_ffi import ffi

__all__ = [
    "KEPT",
    "collector_peek",
    "collector_pop",
    "delivery_aborted",
    "delivery_link",
    "delivery_partial",
    "delivery_pending",
    "delivery_readable",
    "delivery_settle",
    "delivery_settled",
    "delivery_update",
    "event_delivery",
    "event_type",
    "key_of",
    "link_advance",
    "link_recv",
    "of_collector",
    "to_delivery",
    "to_event",
]

log = logging.getLogger("jmslike.amqp")

_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "pn_collector_peek": (ctypes.c_void_p, [ctypes.c_void_p]),
    "pn_collector_pop": (ctypes.c_bool, [ctypes.c_void_p]),
    "pn_event_type": (ctypes.c_int, [ctypes.c_void_p]),
    "pn_event_delivery": (ctypes.c_void_p, [ctypes.c_void_p]),
    "pn_delivery_link": (ctypes.c_void_p, [ctypes.c_void_p]),
    "pn_delivery_aborted": (ctypes.c_bool, [ctypes.c_void_p]),
    "pn_delivery_readable": (ctypes.c_bool, [ctypes.c_void_p]),
    "pn_delivery_partial": (ctypes.c_bool, [ctypes.c_void_p]),
    "pn_delivery_pending": (ctypes.c_size_t, [ctypes.c_void_p]),
    "pn_delivery_settled": (ctypes.c_bool, [ctypes.c_void_p]),
    "pn_delivery_update": (None, [ctypes.c_void_p, ctypes.c_uint64]),
    "pn_delivery_settle": (None, [ctypes.c_void_p]),
    "pn_link_recv": (ctypes.c_ssize_t, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    "pn_link_advance": (ctypes.c_bool, [ctypes.c_void_p]),
}


def _load() -> dict[str, Any] | None:
    """The C functions, bound through ``ctypes.PyDLL`` (calls keep the lock), or None."""
    try:
        library = ctypes.PyDLL(cproton_ffi.__file__)
        functions = {}
        for name, (result, arguments) in _SIGNATURES.items():
            function = getattr(library, name)
            function.restype = result
            function.argtypes = arguments
            functions[name] = function
    except (OSError, AttributeError, TypeError) as exc:
        log.debug("Proton's C calls go through cffi (%r)", exc)
        return None
    return functions


_C = _load()
KEPT = _C is not None
"""Whether the calls below keep the interpreter lock (else they are cffi's)."""

_F: dict[str, Any] = (
    _C if _C is not None else {name: getattr(cproton, name) for name in _SIGNATURES}
)
"""Each function by its C name: the kept calls, or Proton's binding's."""

collector_pop: Callable[[Any], Any] = _F["pn_collector_pop"]
event_type: Callable[[Any], int] = _F["pn_event_type"]
event_delivery: Callable[[Any], Any] = _F["pn_event_delivery"]
delivery_link: Callable[[Any], Any] = _F["pn_delivery_link"]
delivery_aborted: Callable[[Any], bool] = _F["pn_delivery_aborted"]
delivery_readable: Callable[[Any], bool] = _F["pn_delivery_readable"]
delivery_partial: Callable[[Any], bool] = _F["pn_delivery_partial"]
delivery_pending: Callable[[Any], int] = _F["pn_delivery_pending"]
delivery_settled: Callable[[Any], bool] = _F["pn_delivery_settled"]
delivery_update: Callable[[Any, int], None] = _F["pn_delivery_update"]
delivery_settle: Callable[[Any], None] = _F["pn_delivery_settle"]
link_advance: Callable[[Any], Any] = _F["pn_link_advance"]

if _C is not None:
    collector_peek: Callable[[Any], Any] = _C["pn_collector_peek"]
    """The collector's next event, or None (ctypes gives NULL back as None)."""
    _recv = _C["pn_link_recv"]

    def link_recv(link: Any, limit: int) -> bytes | None:
        """Up to ``limit`` bytes of the link's current delivery; None at its end."""
        buffer = ctypes.create_string_buffer(limit)
        got = _recv(link, buffer, limit)
        return buffer.raw[:got] if got >= 0 else None

    def of_collector(collector: Any) -> Any:
        """The pointer these functions take for a cffi collector pointer."""
        return int(ffi.cast("uintptr_t", collector))

    def key_of(link: Any) -> int:
        """A link pointer of this module's as a link's key (``Driver.key_of``)."""
        return int(link)

    def to_event(event: Any) -> Any:
        """An event pointer of this module's as Proton's binding takes it."""
        return ffi.cast("pn_event_t *", event)

    def to_delivery(delivery: Any) -> Any:
        """A delivery pointer of this module's as Proton's binding takes it."""
        return ffi.cast("pn_delivery_t *", delivery)

else:

    def collector_peek(collector: Any) -> Any:
        event = cproton.pn_collector_peek(collector)
        return None if cproton.isnull(event) else event

    def link_recv(link: Any, limit: int) -> bytes | None:
        got, data = cproton.pn_link_recv(link, limit)
        return bytes(data) if got >= 0 else None

    def of_collector(collector: Any) -> Any:
        return collector

    def key_of(link: Any) -> int:
        return cproton.addressof(link)  # type: ignore[no-any-return]

    def to_event(event: Any) -> Any:
        return event

    def to_delivery(delivery: Any) -> Any:
        return delivery
