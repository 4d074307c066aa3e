"""Where the broker's answer to one persistent transfer goes.

A synchronous send waits for its answer, so it needs a ``concurrent.futures.Future``. An
asynchronous send (JMS 2.0) only hands its answer on: a Future made a condition and a
lock per message nobody waits on, a third of the sender's time in a profile of 20,000
asynchronous sends (py-spy, 2026-12-03). :class:`Told` is the lock-free stand-in.

Both are set on the connection's thread (events.py, ``ConnectionLifecycle``, the failure
handler of a posted call), or, once that thread has ended, by the sending thread, which
fails the calls nobody will run (``CallQueue.post``): never by two threads at once.
"""

from __future__ import annotations

from typing import Protocol

from jmslike.spi.provider import SendDone

__all__ = ["Outcome", "Told"]


class Outcome(Protocol):
    """The part of ``Future[None]`` the connection's thread uses to settle a send."""

    def done(self) -> bool: ...

    def set_result(self, result: None) -> None: ...

    def set_exception(self, exception: BaseException | None) -> None: ...


class Told:
    """An asynchronous send's outcome: the first answer goes to ``tell`` (None, or the
    error) and later ones are dropped (the callers ask ``done()`` first, as a Future
    needs)."""

    __slots__ = ("_tell", "_told")

    def __init__(self, tell: SendDone) -> None:
        self._tell = tell
        self._told = False

    def done(self) -> bool:
        return self._told

    def set_result(self, result: None) -> None:
        self._answer(None)

    def set_exception(self, exception: BaseException | None) -> None:
        self._answer(exception)

    def _answer(self, error: BaseException | None) -> None:
        if self._told:
            return
        self._told = True
        self._tell(error)
