"""The thread model: where user code runs.

* A connection's I/O belongs to its provider (a socket reader, a reactor thread, or for
  the embedded broker whichever thread changed the broker). Providers only append
  deliveries to consumer buffers; no user code ever runs there.
* Each session that has a message listener gets one dispatcher thread, and its
  listeners run there and only there, one message at a time, as JMS requires of a
  session. The work queue is bounded by flow credit: a listener consumer asks the broker
  for its next message only when the one before it is done.
* Exception listeners run on one notifier thread per connection, so a slow or failing
  exception listener never stalls I/O or message delivery.
* A listener that raises is reported (``ListenerError`` to the exception listener) and the
  dispatcher keeps running.

docs/threading.md tells the same story for users.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

from jmslike.errors import JMSException
from jmslike.placement import FREE, Placement
from jmslike.spi.wakes import HELD

__all__ = ["ExceptionNotifier", "ListenerTarget", "SessionDispatcher"]

log = logging.getLogger("jmslike.dispatch")

_STOP = object()
_TICK = object()  # wakes the dispatcher to look at its timers again


class ListenerTarget(Protocol):
    """A consumer as the dispatcher sees it."""

    def _dispatch_one(self) -> None:
        """Deliver the next buffered message to the listener, if there is one and it is due."""


class SessionDispatcher:
    """One thread per session that runs the session's message listeners, serially."""

    def __init__(self, name: str, placement: Placement = FREE) -> None:
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = placement.thread(self._run, name)
        self._idle = threading.Condition()
        self._busy = False
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timers_lock = threading.Lock()
        self._order = itertools.count()
        self._thread.start()

    def wake(self, target: ListenerTarget) -> None:
        """Ask the dispatcher to look at ``target``'s buffer (any thread, never blocks;
        held back while this thread holds wake-ups, see ``hold_wakes``)."""
        held = getattr(HELD, "wakes", None)
        if held is not None:
            held.append((self._queue.put, target))
            return
        self._queue.put(target)

    def call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the dispatcher thread, after what is already queued."""
        self._queue.put(fn)

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the dispatcher thread once ``delay`` seconds have passed (a timer
        without a thread of its own: a consumer checks there whether its grown request
        went unanswered, once per request)."""
        with self._timers_lock:
            entry = (time.monotonic() + delay, next(self._order), fn)
            heapq.heappush(self._timers, entry)
            earliest = self._timers[0] is entry
        if earliest and not self.in_dispatcher():
            self._queue.put(_TICK)

    def _next_item(self) -> object:
        """The next queued item, or a timer's function once it is due."""
        while True:
            if not self._timers:
                # No timer (the common case): no lock and no clock per message. A timer
                # added meanwhile by another thread comes with a _TICK.
                item = self._queue.get()
                if item is not _TICK:
                    return item
                continue
            with self._timers_lock:
                now = time.monotonic()
                if self._timers and self._timers[0][0] <= now:
                    return heapq.heappop(self._timers)[2]
                wait = self._timers[0][0] - now if self._timers else None
            try:
                item = self._queue.get(timeout=wait) if wait is not None else self._queue.get()
            except queue.Empty:
                continue
            if item is not _TICK:
                return item

    def in_dispatcher(self) -> bool:
        return threading.current_thread() is self._thread

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no listener is running (used by stop() and close())."""
        if self.in_dispatcher():
            return True
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Finish the listener in hand, then end the thread."""
        self._queue.put(_STOP)
        if not self.in_dispatcher():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._next_item()
            if item is _STOP:
                return
            with self._idle:
                self._busy = True
            try:
                if callable(item):
                    item()
                else:
                    item._dispatch_one()  # type: ignore[attr-defined]
            except Exception:  # the loop must survive anything
                log.exception("dispatcher %s: unexpected error", self._thread.name)
            finally:
                with self._idle:
                    self._busy = False
                    self._idle.notify_all()


class ExceptionNotifier:
    """Delivers errors to a connection's exception listener on a thread of its own."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.listener: Callable[[JMSException], object] | None = None

    def report(self, exc: JMSException) -> None:
        """Queue ``exc`` for the exception listener; log it when there is none, or when
        the connection is closed already (a provider's thread can still report while
        close() runs: a thread started then would outlive the connection)."""
        if self.listener is None:
            # With the cause's traceback: a listener's bug is found from this line alone.
            cause = exc.__cause__
            log.warning(
                "%s: %s (no exception listener set)",
                self._name,
                exc,
                exc_info=(type(cause), cause, cause.__traceback__) if cause is not None else None,
            )
            return
        with self._lock:
            if self._closed:
                log.info("%s: %s (reported after close)", self._name, exc)
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put(exc)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            listener = self.listener
            if listener is None:
                continue
            try:
                listener(item)  # type: ignore[arg-type]
            except Exception:
                log.exception("exception listener of %s raised", self._name)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._thread is not None:
                self._queue.put(_STOP)
                if threading.current_thread() is not self._thread:
                    self._thread.join(5.0)
                self._thread = None
