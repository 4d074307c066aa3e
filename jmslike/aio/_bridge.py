"""How a coroutine's call reaches a session, and how a session's listener reaches the loop.

A session is one thread of control (JMS, docs/threading.md), and the asyncio API keeps
that rule instead of adding locks: every call an ``aio.Session`` makes on its session,
producers and consumers runs on that session's dispatcher thread (``run_in_dispatcher``),
one at a time in the order made, and the coroutine awaits the result. No call that
waits runs on the event loop (a receive that finds a message at hand takes it there:
``SessionBridge.idle`` says when the loop may act as the session's thread).

A message listener given to the asyncio API runs on the event loop, while the
dispatcher thread waits for it to end, so a message is finished when the coroutine
returns or raises (ORD-10), and a session's listeners still run one at a time (ORD-9).
Session calls the listener makes meanwhile (acknowledge, commit, send...) cannot queue
behind the waiting dispatcher, so they go to it directly: the dispatcher, while it waits,
runs the calls the listener hands it (``_Listening``). They so run on the thread where a
listener's own calls run in the synchronous API, with the same rules.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from jmslike.errors import IllegalStateError
from jmslike.message import Message
from jmslike.session import Session

__all__ = ["AsyncListener", "SessionBridge", "call_handler", "inside_listener"]

T = TypeVar("T")

AsyncListener = Callable[[Message], Awaitable[object] | object]
"""A listener of the asyncio API: a coroutine function, or a plain function run on the loop."""


class _Listening:
    """One listener call in progress: the calls its coroutine hands the waiting
    dispatcher thread, until the coroutine ends."""

    __slots__ = ("_calls", "_lock", "_open", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._open = True

    def offer(self, call: Callable[[], None]) -> bool:
        """Hand ``call`` to the waiting dispatcher; False once the listener has ended (a
        task it started may outlive it), so the caller queues it the ordinary way."""
        with self._lock:
            if self._open:
                self._calls.put(call)
            return self._open

    def end(self, _future: object = None) -> None:
        with self._lock:
            self._open = False
            self._calls.put(None)

    def serve(self) -> None:
        """On the dispatcher thread: run the handed calls until the listener ends."""
        while (call := self._calls.get()) is not None:
            call()


_INSIDE: contextvars.ContextVar[_Listening | None] = contextvars.ContextVar(
    "jmslike_aio_listening", default=None
)


async def call_handler(handler: AsyncListener, message: Message) -> None:
    """Run a handler of the asyncio API: a coroutine function is awaited, a plain
    function just called (on the loop either way)."""
    result = handler(message)
    if inspect.isawaitable(result):
        await result


def inside_listener() -> Session | None:
    """The session whose listener the current task runs in, if any."""
    listening = _INSIDE.get()
    return listening.session if listening is not None else None


class SessionBridge:
    """Runs a session's calls on its dispatcher thread for coroutines of one loop."""

    def __init__(self, session: Session, loop: asyncio.AbstractEventLoop) -> None:
        self.session = session
        self.loop = loop
        self._pending: set[concurrent.futures.Future[Any]] = set()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` for the session's thread; its future tells the result."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return  # the caller was cancelled before it ran: nothing was done
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the awaiting coroutine
                future.set_exception(exc)

        listening = _INSIDE.get()
        if listening is None or listening.session is not self.session or not listening.offer(run):
            self.session.run_in_dispatcher(run)  # raises at once if the session is closed
            self._pending.add(future)
            future.add_done_callback(self._pending.discard)
        return future

    def idle(self) -> bool:
        """Nothing of this bridge's is queued or running on the session's thread, and no
        listener may be running there: the event loop may act as the session's one thread
        for a call that returns at once (a session is one thread at a time, not one
        particular thread; the loop runs one coroutine at a time)."""
        return (
            not self._pending
            and _INSIDE.get() is None
            and not any(c._listener is not None for c in self.session._consumers)
        )

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the session's thread and return what it returned."""
        return await self.result(self.submit(fn))

    async def result(self, future: concurrent.futures.Future[T]) -> T:
        """Await a submitted call (cancelling the await cancels the call if it has not
        started; one that has runs to its end)."""
        return await asyncio.wrap_future(future, loop=self.loop)

    def abandon(self) -> None:
        """The session closed: calls still queued will never run (its thread has
        ended), so their coroutines are told instead of waiting for good."""
        for future in list(self._pending):
            if not future.done():
                future.set_exception(IllegalStateError("session is closed"))

    def listener(self, handler: AsyncListener) -> Callable[[Message], None]:
        """The synchronous listener that runs ``handler`` on the loop, for the dispatcher."""
        loop = self.loop
        session = self.session

        def on_message(message: Message) -> None:
            listening = _Listening(session)

            async def run() -> None:
                _INSIDE.set(listening)
                await call_handler(handler, message)

            future = asyncio.run_coroutine_threadsafe(run(), loop)
            future.add_done_callback(listening.end)
            listening.serve()
            future.result()  # the handler's exception, reported as for any listener

        return on_message
