"""The listener container for coroutines: ``jmslike.MessageListenerContainer`` with a
handler that runs on the event loop.

The synchronous container keeps doing all the work (its sessions, the feed that hands
groups out, finishing each message after the handler, ORD-17); each of its sessions'
threads runs the handler's coroutine on the loop and waits for it, so up to
``concurrency`` coroutines run at once, each group's one at a time.
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from jmslike.aio._bridge import call_handler
from jmslike.aio.connection import ConnectionFactory
from jmslike.connection import ConnectionFactory as SyncFactory
from jmslike.container import RUN_POLL, STOP_SIGNALS, checked_signals
from jmslike.container import MessageListenerContainer as SyncContainer
from jmslike.destination import Destination
from jmslike.errors import IllegalStateError, JMSException, not_callable
from jmslike.message import Message
from jmslike.session import Session

__all__ = ["MessageListenerContainer"]

_HANDLING: contextvars.ContextVar[MessageListenerContainer | None] = contextvars.ContextVar(
    "jmslike_aio_container", default=None
)


class MessageListenerContainer:
    """Runs ``on_message(message)`` (a coroutine function, or a plain function run on
    the loop) for every message of ``destination``, ``concurrency`` at a time, each
    group in order. The keywords are the synchronous container's; ``async with`` (or
    ``await container.start()``) starts it, leaving the block stops it."""

    def __init__(
        self,
        factory: ConnectionFactory | SyncFactory,
        destination: Destination | str,
        on_message: Callable[[Message], Awaitable[object] | object],
        *,
        concurrency: int = 1,
        acknowledge_mode: int = Session.AUTO_ACKNOWLEDGE,
        message_selector: str | None = None,
        exception_listener: Callable[[JMSException], object] | None = None,
        strictly_ordered: bool = False,
    ) -> None:
        if not callable(on_message):
            raise not_callable("on_message", on_message, "on_message")
        self._factory = factory.sync if isinstance(factory, ConnectionFactory) else factory
        self._destination = destination
        self._on_message = on_message
        self._options: dict[str, Any] = {
            "concurrency": concurrency,
            "acknowledge_mode": acknowledge_mode,
            "message_selector": message_selector,
            "exception_listener": exception_listener,
            "strictly_ordered": strictly_ordered,
        }
        self.sync: SyncContainer | None = None
        """The synchronous container, once started."""
        self._stopping: asyncio.Future[None] | None = None

    @property
    def processed(self) -> int:
        return self.sync.processed if self.sync is not None else 0

    @property
    def failed(self) -> int:
        return self.sync.failed if self.sync is not None else 0

    @property
    def running(self) -> bool:
        return self.sync is not None and self.sync.running

    async def start(self) -> None:
        """Open the container's connection and sessions and start delivery."""
        if self.sync is not None:
            raise IllegalStateError(
                "this listener container was started already"
                if self.sync.running
                else "this listener container is stopped, and a stopped container does not "
                "start again: make a new one"
            )
        loop = asyncio.get_running_loop()
        handler = self._on_message

        async def handle(message: Message) -> None:
            _HANDLING.set(self)
            await call_handler(handler, message)

        def on_message(message: Message) -> None:
            # On a container session's thread: the message is finished once this returns.
            asyncio.run_coroutine_threadsafe(handle(message), loop).result()

        self.sync = await asyncio.to_thread(
            SyncContainer, self._factory, self._destination, on_message, **self._options
        )

    async def stop(self) -> None:
        """Finish the messages in hand, give back what was only buffered, and close.
        From the handler itself it cannot wait for the handler: it returns at once and
        the container stops once the handler has returned."""
        sync = self.sync
        if sync is None:
            return
        if _HANDLING.get() is self:
            if self._stopping is None:
                self._stopping = asyncio.ensure_future(asyncio.to_thread(sync.stop))
            return
        await asyncio.to_thread(sync.stop)

    async def run(self, signals: Iterable[int] = STOP_SIGNALS) -> int | None:
        """The synchronous container's ``run()`` on the event loop: wait until one of
        ``signals`` comes, then stop (the messages in hand finished, the rest left on the
        broker) and return its number; None if the container was stopped otherwise;
        ConnectionFailedError once the connection is lost for good. The loop's signal
        handlers (``loop.add_signal_handler``, Unix, the main thread's loop) serve while
        it waits, and the process's previous handlers come back before it stops."""
        sync = self.sync
        if sync is None:
            raise IllegalStateError(
                "run() before start(): use 'async with container:' or await start() first"
            )
        wanted = checked_signals(signals)
        loop = asyncio.get_running_loop()
        caught: asyncio.Future[int] = loop.create_future()

        def on_signal(number: int) -> None:
            if not caught.done():
                caught.set_result(number)

        previous: dict[int, Any] = {}
        try:
            for number in wanted:
                previous[number] = signal.getsignal(number)
                loop.add_signal_handler(number, on_signal, number)
            while not caught.done() and sync._waits_for_run():
                await asyncio.wait({caught}, timeout=RUN_POLL)
        finally:
            for number, handler in previous.items():
                loop.remove_signal_handler(number)  # (which sets the default, not the old)
                signal.signal(number, signal.SIG_DFL if handler is None else handler)
        got = caught.result() if caught.done() else None
        return await asyncio.to_thread(sync._end_run, got)

    async def __aenter__(self) -> MessageListenerContainer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        if self._stopping is not None:
            await self._stopping
