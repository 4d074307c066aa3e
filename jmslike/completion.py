"""JMS 2.0 asynchronous send: ``producer.send(message, completion_listener=...)``.

A persistent send normally waits for the broker's answer, one round trip a message. An
asynchronous send hands the message to the provider and returns; the broker's answers
arrive later and the session's completion thread calls the listener, in send order (JMS
2.0, section 7.3), whatever order the answers came in (two destinations of one session
are two links or receipts, answered independently). A session's ``commit``, ``rollback``
and ``close`` (and so the connection's ``close``) first wait until every send of the
session was completed, so a close never drops an answer the application waits for.

Errors the send can see at once (bad input, a closed session, a lost connection, a
provider that refuses the message before writing it) are raised by ``send`` itself and the
listener is not called; only what the broker answers later goes to ``on_exception``.

Threads: the listener runs on one thread per session (``jmslike-completions-N``), never
on the sender's thread nor on a connection's I/O thread; it must not close, commit or roll
back its own session or stop or close its connection (IllegalStateError), as JMS says.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from typing import Protocol, runtime_checkable

from jmslike.errors import IllegalStateError, InvalidArgumentError, JMSException, SendInDoubtError
from jmslike.message import Message
from jmslike.placement import FREE, Placement
from jmslike.spi.provider import SendDone

__all__ = ["CompletionListener", "Completions", "check_completion_listener"]

log = logging.getLogger("jmslike.completion")


@runtime_checkable
class CompletionListener(Protocol):
    """What ``send(..., completion_listener=...)`` calls once the broker answered.

    Any object with these two methods will do; a Java ``CompletionListener`` ported with
    ``onCompletion``/``onException`` goes through :mod:`jmslike.compat`."""

    def on_completion(self, message: Message) -> None:
        """The broker has the message (for a persistent one: stored)."""

    def on_exception(self, message: Message, exception: JMSException) -> None:
        """The send failed after ``send`` returned, or its outcome is unknown
        (:class:`~jmslike.SendInDoubtError`: the connection was lost after the write)."""


def check_completion_listener(listener: object) -> CompletionListener:
    """The listener, or InvalidArgumentError naming what it lacks (before any send)."""
    missing = [
        name
        for name in ("on_completion", "on_exception")
        if not callable(getattr(listener, name, None))
    ]
    if missing:
        raise InvalidArgumentError(
            f"completion_listener={listener!r} has no {' or '.join(missing)} method: pass an "
            "object with on_completion(message) and on_exception(message, exception)"
        )
    return listener  # type: ignore[return-value]


class _Pending:
    """One send waiting for its answer."""

    __slots__ = ("error", "finished", "listener", "message")

    def __init__(self, message: Message, listener: CompletionListener) -> None:
        self.message = message
        self.listener = listener
        self.finished = False
        self.error: BaseException | None = None


class Completions:
    """A session's asynchronous sends, answered in send order on a thread of their own."""

    def __init__(self, name: str, placement: Placement = FREE) -> None:
        self._name = name
        self._placement = placement
        self._pending: collections.deque[_Pending] = collections.deque()
        lock = threading.Lock()
        self._cond = threading.Condition(lock)
        """The completion thread waits here for the head of the queue to be answered."""
        self._idle = threading.Condition(lock)
        """``wait_idle`` waits here, woken only once nothing is left: waking it on every
        answer cost a close after 5,000 asynchronous sends a tenth of its throughput."""
        self._thread: threading.Thread | None = None
        self._calling = False
        self._closed = False

    def add(self, message: Message, listener: CompletionListener) -> _Pending:
        """Register a send about to be handed to the provider (before it is, so an answer
        that comes back at once finds it)."""
        entry = _Pending(message, listener)
        with self._cond:
            if self._closed:
                raise IllegalStateError("session is closed")
            self._pending.append(entry)
            if self._thread is None:
                self._thread = self._placement.thread(self._run, self._name)
                self._thread.start()
        return entry

    def withdraw(self, entry: _Pending) -> None:
        """``send`` raised: the listener is not called for this message (JMS 2.0)."""
        with self._cond:
            try:
                self._pending.remove(entry)
            except ValueError:
                return
            self._cond.notify_all()
            self._idle.notify_all()

    def finisher(self, entry: _Pending) -> SendDone:
        """The callable a provider calls, from any thread, with the outcome (None: the
        broker has the message); the first call counts."""
        return functools.partial(self._finish, entry)

    def _finish(self, entry: _Pending, error: BaseException | None) -> None:
        with self._cond:
            if entry.finished:
                return
            entry.finished = True
            entry.error = error
            if self._pending and self._pending[0] is entry:  # else the head holds it back
                self._cond.notify()  # the completion thread, the only one waiting there

    def in_callback(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def wait_idle(self, timeout: float, what: str) -> None:
        """Return once every send so far was answered and its listener has returned.

        A send the broker leaves unanswered for ``timeout`` seconds is completed with
        SendInDoubtError (the connection's own timeout would have said the same of a
        blocking send), so a close cannot hang on a broker that stopped answering."""
        if self.in_callback():
            raise IllegalStateError(
                f"{what} from a completion listener of the same session (JMS 2.0 forbids it)"
            )
        with self._cond:
            if self._idle.wait_for(lambda: not self._pending and not self._calling, timeout):
                return
            for entry in self._pending:
                if not entry.finished:
                    entry.finished = True
                    entry.error = SendInDoubtError(
                        f"no answer from the broker within {timeout} s before {what}; the "
                        "broker may have stored the message or may yet store it"
                    )
            self._cond.notify_all()
            self._idle.wait_for(lambda: not self._pending and not self._calling)

    def close(self) -> None:
        """After ``wait_idle``: the thread ends."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        cond = self._cond
        pending = self._pending
        answered: list[_Pending] = []
        while True:
            with cond:
                self._calling = False
                if not pending:
                    self._idle.notify_all()
                cond.wait_for(
                    lambda: bool(pending and pending[0].finished) or (self._closed and not pending)
                )
                if not pending:
                    self._thread = None
                    return  # closed, nothing left
                answered.clear()  # every answered one at the head: one wake-up for a run
                while pending and pending[0].finished:
                    answered.append(pending.popleft())
                self._calling = True
            for entry in answered:
                self._call(entry)

    @staticmethod
    def _call(entry: _Pending) -> None:
        error = entry.error
        try:
            if error is None:
                entry.listener.on_completion(entry.message)
            else:
                if not isinstance(error, JMSException):
                    wrapped = JMSException(f"send failed: {error!r}")
                    wrapped.__cause__ = error
                    error = wrapped
                entry.listener.on_exception(entry.message, error)
        except Exception:  # the application's; the next answers still go out
            log.exception("completion listener %r raised", entry.listener)
