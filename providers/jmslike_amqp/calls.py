"""Work handed to a connection's own thread by every other thread.

Every other thread (the application's, jmslike's dispatchers) hands work to the
connection's thread with ``post(fn)``, which queues ``fn`` and returns at once, or
``call(fn)``, which waits for its result. Calls run in the order they were queued, so a
settlement or a credit grant is on the wire before anything queued after it. A queued
call wakes the thread (``Driver.wake``), once for all the calls queued before it runs.
``post_soon(fn)`` queues without waking: ``fn`` runs with the next calls that do, or
within ``SOON_DELAY`` (a listener's settlements, which nobody waits for: a wake-up per
message was a thread switch per message). The thread also runs timers (``call_later``)
between events.

:class:`CallQueue` is the base of the transport (lifecycle.py, transport.py), which
makes the thread, runs the queue when woken and sets ``_wake`` while its connection can
be woken.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from jmslike.errors import ConnectionFailedError

__all__ = ["NUMBERS", "SOON_BATCH", "SOON_DELAY", "CallQueue"]

log = logging.getLogger("jmslike.amqp")

T = TypeVar("T")

NUMBERS = itertools.count(1)
"""Numbers unique in the process: container ids, link names, the order of timers."""

SOON_DELAY = 0.002
"""Seconds a ``post_soon`` call may wait for a wake-up (as STOMP's held ACKs)."""

SOON_BATCH = 64
"""Calls queued at which ``post_soon`` wakes the thread at once."""


class CallQueue:
    """The queue of calls and timers of one connection's thread."""

    address: str
    """The broker (a ``failover:`` URL's members), for errors and logs."""
    _timeout: float
    """How long a caller waits for the broker (``call``, ``_await``)."""
    _thread: threading.Thread
    """The connection's thread, made (and started) by the subclass."""

    def __init__(self) -> None:
        self._calls: deque[tuple[Callable[[], Any], Callable[[BaseException], None] | None]]
        self._calls = deque()
        self._woken = False
        """A wake-up of the connection's thread is on its way (``post``)."""
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        """(due, order, function): ``call_later``'s, a heap, for the connection's thread."""
        self._closing = False
        """The connection is closing or gone: ``post`` takes no more calls."""
        self._wake: Callable[[], None] | None = None
        """Wakes the connection's thread, while it has a connection to wake."""
        self._soon_due = False
        """A run of the calls is on the thread's timers for ``post_soon``'s calls."""

    def _drain_calls(self) -> list[tuple[Callable[[], Any], Any]]:
        calls = []
        with contextlib.suppress(IndexError):  # popleft, so that no call queued meanwhile is lost
            while True:
                calls.append(self._calls.popleft())
        return calls

    def post(
        self, fn: Callable[[], object], on_error: Callable[[BaseException], None] | None = None
    ) -> None:
        """Queue ``fn`` for the connection's thread and return at once (on that thread
        itself, run it now); ``on_error`` hears of its failure. Waiting for the
        thread on every settlement and grant cost more than the work itself (about half
        of a receive's time)."""
        if self.on_own_thread():
            try:
                fn()
            except Exception as exc:  # an event handler must not stop the loop
                if on_error is not None:
                    on_error(exc)
                else:
                    log.debug("AMQP call on %s failed: %r", self.address, exc)
            return
        if self._closing:
            raise ConnectionFailedError(f"AMQP connection to {self.address} is closed")
        self._calls.append((fn, on_error))
        if self._ended():
            # The loop ended while this was queued: nobody will run it.
            closed = ConnectionFailedError(f"AMQP connection to {self.address} is closed")
            for _fn, failed in self._drain_calls():
                if failed is not None:
                    failed(closed)
            raise closed
        if not self._woken:
            # One wake-up for calls queued faster than the thread runs them: a wake-up is
            # a pipe write and a turn of the loop, and costs more than a settlement.
            wake = self._wake
            if wake is not None:  # else the thread runs the queue once it has one
                self._woken = True
                try:
                    wake()
                except BaseException:
                    # Ctrl-C landed here: left set, the flag kept every later call from
                    # waking the thread, and each waited out the timeout.
                    self._woken = False
                    raise

    def post_soon(
        self, fn: Callable[[], object], on_error: Callable[[BaseException], None] | None = None
    ) -> None:
        """As :meth:`post`, for a call that may wait up to :data:`SOON_DELAY`: it is queued
        without waking the thread (it runs before any call queued after it, as every
        call does), and the first of a batch asks the thread to run the queue again
        ``SOON_DELAY`` from now. A listener container at concurrency 8 (1 ms handler) made
        about half a thread switch a message less so (3.8 to 3.2 over RabbitMQ)."""
        if self.on_own_thread() or self._closing or len(self._calls) >= SOON_BATCH:
            self.post(fn, on_error)
            return
        self._calls.append((fn, on_error))
        if self._ended():
            self.post(lambda: None)  # raises, failing what was queued
        if not self._soon_due and not self._woken:
            # (The timer clears the flag before it runs the queue: a call queued after
            # it was cleared schedules another run, one queued before it runs with it.)
            self._soon_due = True
            try:
                self.post(lambda: self.call_later(SOON_DELAY, self._run_soon))
            except BaseException:
                self._soon_due = False  # else no later post_soon asks for a run
                raise

    def _run_soon(self) -> None:
        self._soon_due = False
        self._run_calls()

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        """The connection's thread only: run ``fn`` there in ``delay`` seconds."""
        heapq.heappush(self._timers, (time.monotonic() + delay, next(NUMBERS), fn))

    def _run_timers(self) -> None:
        timers = self._timers
        now = time.monotonic()
        while timers and timers[0][0] <= now:
            _due, _order, fn = heapq.heappop(timers)
            try:
                fn()
            except Exception as exc:  # a timer must not stop the loop
                log.debug("AMQP timer on %s failed: %r", self.address, exc)

    def _ended(self) -> bool:
        """The connection's loop is over (a call queued now would never run)."""
        return self._closing and not self._thread.is_alive()

    def on_own_thread(self) -> bool:
        """Whether the caller is the connection's thread (which must never wait for it)."""
        return threading.current_thread() is self._thread

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the connection's thread and return its result (or raise its error)."""
        if self.on_own_thread():
            return fn()
        future: Future[T] = Future()

        def run() -> None:
            if future.set_running_or_notify_cancel():
                future.set_result(fn())

        self.post(run, future.set_exception)
        return self._await(future, "answer")

    def _await(self, future: Future[T], what: str) -> T:
        """The future's result, or ConnectionFailedError saying what the broker did not do
        within the timeout."""
        try:
            return future.result(self._timeout)
        except TimeoutError:
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not {what} within {self._timeout} s"
            ) from None

    def _run_calls(self) -> None:
        self._woken = False  # before draining: a call queued from now on wakes us again
        calls = self._calls
        while calls:
            fn, on_error = calls.popleft()
            try:
                fn()
            except BaseException as exc:  # handed to whoever asked, if anyone
                if on_error is not None:
                    on_error(exc)
                else:
                    log.debug("AMQP call on %s failed: %r", self.address, exc)
