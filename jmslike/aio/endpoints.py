"""Producers, consumers and browsers of the asyncio API: each call that talks to the
broker is a coroutine run on its session's thread (``_bridge``); settings stay plain
attributes, read and set on the loop as in the synchronous API."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
from collections.abc import AsyncIterator

from jmslike.aio._bridge import AsyncListener, SessionBridge
from jmslike.aio._synced import Synced
from jmslike.consumer import MessageConsumer as SyncConsumer
from jmslike.consumer import QueueBrowser as SyncBrowser
from jmslike.consumer import wait_seconds
from jmslike.destination import Destination
from jmslike.errors import IllegalStateError, not_callable
from jmslike.message import Message
from jmslike.producer import MessageProducer as SyncProducer
from jmslike.spi.provider import AT_ONCE

__all__ = ["DRAIN_LOOK", "MessageConsumer", "MessageProducer", "QueueBrowser"]

DRAIN_LOOK = 0.05
"""Seconds a send held back by its provider's window of sends still to be written waits
for the provider's wake-up (``ProviderSession.wake_when_at_once``) before it goes to the
session's thread instead."""


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


RECEIVE_SLICE = 0.05
"""Seconds a receive waits on the session's thread before it lets the session's other
queued calls run (a send of another task, say) and waits again. A message that comes
is returned at once; only an idle wait is cut into slices."""


class MessageProducer:
    """Sends messages; ``await producer.send(message)`` returns as the synchronous
    ``send`` does (a persistent send once the broker has the message)."""

    __slots__ = ("__weakref__", "_bridge", "_drained", "sync")
    """No other attribute: a setting this class did not mirror (``disable_message_id``
    was one) was kept on it and never reached the sends; now a misspelt one raises."""

    def __init__(self, sync: SyncProducer, bridge: SessionBridge) -> None:
        self.sync = sync
        """The synchronous producer, for settings this class does not mirror."""
        self._bridge = bridge
        self._drained: asyncio.Future[None] | None = None
        """What a send held back by the provider's window waits for (``_wake``)."""

    destination: Synced[Destination | None] = Synced()

    delivery_mode: Synced[int] = Synced(settable=True)
    priority: Synced[int] = Synced(settable=True)
    time_to_live: Synced[float] = Synced(settable=True)
    delivery_delay: Synced[float] = Synced(settable=True)
    disable_message_id: Synced[bool] = Synced(settable=True)
    disable_message_timestamp: Synced[bool] = Synced(settable=True)

    def enable_ordering_group(self, name: str | None = None) -> str:
        """As the synchronous producer's (ORD-2): later sends carry the group."""
        return self.sync.enable_ordering_group(name)

    def disable_ordering_group(self) -> None:
        self.sync.disable_ordering_group()

    ordering_group: Synced[str | None] = Synced()

    async def send(
        self,
        message: Message,
        delivery_mode: int | None = None,
        priority: int | None = None,
        time_to_live: float | None = None,
        *,
        destination: Destination | str | None = None,
        delivery_delay: float | None = None,
    ) -> None:
        """Send ``message``; the arguments are the synchronous ``send``'s."""
        sync = self.sync
        send = functools.partial(
            sync.send,
            message,
            delivery_mode,
            priority,
            time_to_live,
            destination=destination,
            delivery_delay=delivery_delay,
        )
        session = sync._session
        mode = delivery_mode if delivery_mode is not None else sync.delivery_mode
        while session._connection._send_chain is None and self._bridge.idle():
            provider, target = session._provider, sync._target(destination)
            if provider.sends_at_once(target, mode):
                # The provider says this send waits for nothing (a broker in this
                # process; a transfer or frame queued for a thread of the connection's):
                # made on the loop, as a receive with a message at hand is. Not with
                # interceptors: theirs is code that may wait.
                token = AT_ONCE.set(True)
                try:
                    send()
                finally:
                    AT_ONCE.reset(token)
                return
            # Held back only by the provider's window of sends still to be written: wait
            # on the loop until it half empties, then look again, instead of handing
            # each send over. No wake-up within DRAIN_LOOK (the connection went, and
            # with it the sends that would have emptied the window): the session's
            # thread makes the send, and tells what became of the connection.
            drained = self._drained = self._bridge.loop.create_future()
            if not provider.wake_when_at_once(target, mode, self._wake):
                break
            try:
                await asyncio.wait_for(drained, DRAIN_LOOK)
            except TimeoutError:
                break
        await self._bridge.call(send)

    def _wake(self) -> None:
        """The provider's window half emptied (any thread): the waiting send looks again."""
        drained, loop = self._drained, self._bridge.loop
        if drained is not None:
            loop.call_soon_threadsafe(_set_done, drained)

    async def close(self) -> None:
        await self._bridge.call(self.sync.close)

    async def __aenter__(self) -> MessageProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class MessageConsumer:
    """Receives with ``await consumer.receive()`` or ``async for``, or gives messages to
    an asynchronous listener that runs on the event loop.

    A receive that is cancelled (``asyncio.wait_for``, a task group ending) while its
    message was arriving keeps that message for this consumer's next receive, as
    ``asyncio.Queue.get`` keeps an item: it is not lost and not reordered. Until then it
    counts as received (an ``acknowledge()`` or ``commit()`` covers it); closing the
    consumer gives it back to the broker unseen, in every acknowledge mode.
    """

    __slots__ = ("__weakref__", "_bridge", "_kept", "_listener", "_unkept", "sync")
    """No other attribute: ``consumer.message_listener = f`` was kept on it and never
    called; a misspelt attribute raises now, and that one says what to await."""

    def __init__(self, sync: SyncConsumer, bridge: SessionBridge) -> None:
        self.sync = sync
        """The synchronous consumer, for what this class does not mirror."""
        self._bridge = bridge
        self._listener: AsyncListener | None = None
        self._kept: collections.deque[Message] = collections.deque()
        """Messages received for receives that were cancelled, oldest first; read and
        filled on the session's thread only."""
        self._unkept: set[concurrent.futures.Future[Message | None]] = set()
        """Cancelled receives still running on the session's thread: until each has put
        what it brings in ``_kept``, a receive may not take a message at hand on the loop,
        which would be a later one (seen: 11 before 10 on ActiveMQ over AMQP, since the
        bridge turns idle in the callback that runs just before the one that keeps)."""

    destination: Synced[Destination] = Synced()

    message_selector: Synced[str | None] = Synced()

    closed: Synced[bool] = Synced()

    @property
    def message_listener(self) -> AsyncListener | None:
        """The listener given to ``set_message_listener``; set through that coroutine,
        which waits until the session's thread has it."""
        return self._listener

    @message_listener.setter
    def message_listener(self, listener: AsyncListener | None) -> None:
        raise AttributeError(
            "an asyncio consumer's listener is set with "
            "'await consumer.set_message_listener(listener)'"
        )

    async def receive(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` seconds (None: until one comes).

        None on timeout, or once the consumer, its session or its connection is closed.
        AUTO/DUPS_OK: the next receive finishes this message (ORD-10), as in JMS.
        """
        if timeout is not None:
            timeout = wait_seconds(timeout, "receive")
        sync = self.sync
        if (
            (sync._buffer or sync._takes)
            and not sync.closed
            and not self._kept
            and not self._unkept
            and sync._connection._delivery_chain is None
            and self._bridge.idle()
        ):
            # A message at hand (or, on the embedded broker, one taken in the call): taken
            # on the loop, without the two thread hand-overs a wait costs (a receive
            # loop on the embedded broker: 17,000 msg/s through the session's thread).
            # Not with interceptors: theirs is code that may wait.
            message = sync.receive(0.0)
            if message is not None:
                return message
        loop = self._bridge.loop
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            wait = RECEIVE_SLICE if deadline is None else max(0.0, deadline - loop.time())
            message = await self._receive_once(min(wait, RECEIVE_SLICE))
            if message is not None:
                return message
            if self.sync.closed or (deadline is not None and loop.time() >= deadline):
                return None

    async def receive_no_wait(self) -> Message | None:
        """A message if one can be had at once, else None."""
        return await self._receive_once(0.0)

    async def _receive_once(self, wait: float) -> Message | None:
        kept = self._kept
        sync = self.sync

        def take() -> Message | None:
            if kept:
                return kept.popleft()
            return None if sync.closed else sync.receive(wait)

        try:
            future = self._bridge.submit(take)
        except IllegalStateError:
            if self._closed_meanwhile():
                return None
            raise
        try:
            return await self._bridge.result(future)
        except IllegalStateError:
            if self._closed_meanwhile():
                return None
            raise
        except BaseException:
            # Cancelled while it ran: what it brings is this consumer's next message.
            self._unkept.add(future)
            future.add_done_callback(self._keep)
            raise

    def _closed_meanwhile(self) -> bool:
        """The consumer or its session closed while a receive waited: the receive returns
        None, as a synchronous receive that a close cuts short does (JMS)."""
        return self.sync.closed or self._bridge.session.closed

    def _keep(self, future: concurrent.futures.Future[Message | None]) -> None:
        try:
            if future.cancelled() or future.exception() is not None:
                return
            message = future.result()
            if message is not None:
                self._kept.appendleft(message)
        finally:
            self._unkept.discard(future)  # only once the message is where a receive looks

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        """Receive until the consumer, its session or its connection is closed."""
        while (message := await self.receive()) is not None:
            yield message

    async def set_message_listener(self, listener: AsyncListener | None) -> None:
        """Give this consumer's messages to ``listener`` on the event loop (None: stop).

        ``listener(message)`` may be a coroutine function: the message is finished when
        its coroutine returns or raises (ORD-10), and the session's next message waits
        for that (ORD-9). An exception is reported to the connection's exception
        listener as ``ListenerError``, as for a synchronous listener.
        """
        if listener is not None and not callable(listener):
            raise not_callable("message listener", listener, "on_message")
        sync_listener = None if listener is None else self._bridge.listener(listener)
        await self._bridge.call(lambda: self.sync.set_message_listener(sync_listener))
        self._listener = listener

    async def close(self) -> None:
        """Close; what it held unacknowledged goes back in order (ORD-10), with any
        message a cancelled receive kept."""
        kept = self._kept
        sync = self.sync

        def close() -> None:
            if kept:
                kept.clear()
                sync._close_giving_back()
            else:
                sync.close()

        await self._bridge.call(close)

    async def __aenter__(self) -> MessageConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class QueueBrowser:
    """Looks at a queue's messages without taking them (ORD-20)."""

    __slots__ = ("__weakref__", "_bridge", "sync")

    def __init__(self, sync: SyncBrowser, bridge: SessionBridge) -> None:
        self.sync = sync
        self._bridge = bridge

    queue: Synced[Destination] = Synced()

    async def get_enumeration(self) -> list[Message]:
        """A snapshot of the waiting messages, in the order they will be delivered."""
        return await self._bridge.call(self.sync.get_enumeration)

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        for message in await self.get_enumeration():
            yield message

    async def close(self) -> None:
        await self._bridge.call(self.sync.close)
