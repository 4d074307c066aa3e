"""The asyncio API's session: the synchronous session run on its own thread (``_bridge``).

Making messages and destinations touches no broker, so those stay plain methods; the
rest are coroutines. A session is still one thread of control, as in JMS: its calls run
one at a time, in the order the coroutines made them, so two tasks that share a session
wait for each other (a waiting ``receive`` lets queued calls in between, every
``RECEIVE_SLICE`` seconds). Give each task that waits for messages a session of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from jmslike.aio._bridge import SessionBridge, inside_listener
from jmslike.aio._synced import Synced
from jmslike.aio.endpoints import MessageConsumer, MessageProducer, QueueBrowser
from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.errors import IllegalStateError
from jmslike.message import BytesMessage, MapMessage, MapValue, Message, TextMessage
from jmslike.session import Session as SyncSession

if TYPE_CHECKING:
    from jmslike.aio.connection import Connection

__all__ = ["Session"]

T = TypeVar("T")


class Session:
    """A JMS session for coroutines: ``await session.create_consumer(...)``,
    ``await session.commit()``, ``async with session:``."""

    AUTO_ACKNOWLEDGE = SyncSession.AUTO_ACKNOWLEDGE
    CLIENT_ACKNOWLEDGE = SyncSession.CLIENT_ACKNOWLEDGE
    DUPS_OK_ACKNOWLEDGE = SyncSession.DUPS_OK_ACKNOWLEDGE
    SESSION_TRANSACTED = SyncSession.SESSION_TRANSACTED

    __slots__ = ("__weakref__", "_bridge", "connection", "sync")
    """No other attribute: one assigned by mistake raises instead of being kept."""

    def __init__(
        self, sync: SyncSession, connection: Connection, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.sync = sync
        """The synchronous session; use it only through ``run`` (its thread)."""
        self.connection = connection
        self._bridge = SessionBridge(sync, loop)

    def __repr__(self) -> str:
        return f"<aio {self.sync!r}>"

    transacted: Synced[bool] = Synced()

    acknowledge_mode: Synced[int] = Synced()

    closed: Synced[bool] = Synced()

    # ------------------------------------------------- no broker involved: plain calls
    def create_queue(self, name: str) -> Queue:
        return self.sync.create_queue(name)

    def create_topic(self, name: str) -> Topic:
        return self.sync.create_topic(name)

    def create_message(self) -> Message:
        return self.sync.create_message()

    def create_text_message(self, text: str | None = None) -> TextMessage:
        return self.sync.create_text_message(text)

    def create_bytes_message(self, data: bytes | None = None) -> BytesMessage:
        return self.sync.create_bytes_message(data)

    def create_map_message(self, mapping: Mapping[str, MapValue] | None = None) -> MapMessage:
        return self.sync.create_map_message(mapping)

    # ------------------------------------------------------------------- coroutines
    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on this session's thread: for the synchronous API's calls that this
        class does not mirror (``session.run(lambda: session.sync.recover())``)."""
        return await self._bridge.call(fn)

    async def create_producer(
        self, destination: Destination | str | None = None
    ) -> MessageProducer:
        sync = await self._bridge.call(lambda: self.sync.create_producer(destination))
        return MessageProducer(sync, self._bridge)

    async def create_consumer(
        self,
        destination: Destination | str,
        message_selector: str | None = None,
        no_local: bool = False,
        *,
        standby: bool = False,
        strictly_ordered: bool = False,
    ) -> MessageConsumer:
        """As the synchronous ``create_consumer`` (ORD-18 for ``strictly_ordered``)."""
        sync = await self._bridge.call(
            lambda: self.sync.create_consumer(
                destination,
                message_selector,
                no_local,
                standby=standby,
                strictly_ordered=strictly_ordered,
            )
        )
        return MessageConsumer(sync, self._bridge)

    async def create_durable_subscriber(
        self,
        topic: Topic | str,
        name: str,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> MessageConsumer:
        sync = await self._bridge.call(
            lambda: self.sync.create_durable_subscriber(topic, name, message_selector, no_local)
        )
        return MessageConsumer(sync, self._bridge)

    async def create_shared_consumer(
        self, topic: Topic | str, name: str, message_selector: str | None = None
    ) -> MessageConsumer:
        sync = await self._bridge.call(
            lambda: self.sync.create_shared_consumer(topic, name, message_selector)
        )
        return MessageConsumer(sync, self._bridge)

    async def create_shared_durable_consumer(
        self, topic: Topic | str, name: str, message_selector: str | None = None
    ) -> MessageConsumer:
        sync = await self._bridge.call(
            lambda: self.sync.create_shared_durable_consumer(topic, name, message_selector)
        )
        return MessageConsumer(sync, self._bridge)

    async def create_browser(
        self, queue: Destination | str, message_selector: str | None = None
    ) -> QueueBrowser:
        sync = await self._bridge.call(lambda: self.sync.create_browser(queue, message_selector))
        return QueueBrowser(sync, self._bridge)

    async def create_temporary_queue(self) -> TemporaryQueue:
        return await self._bridge.call(self.sync.create_temporary_queue)

    async def create_temporary_topic(self) -> TemporaryTopic:
        return await self._bridge.call(self.sync.create_temporary_topic)

    async def unsubscribe(self, name: str) -> None:
        await self._bridge.call(lambda: self.sync.unsubscribe(name))

    async def acknowledge(self) -> None:
        """CLIENT_ACKNOWLEDGE: finish every message this session received (ORD-10)."""
        await self._bridge.call(self.sync.acknowledge)

    async def recover(self) -> None:
        """Give back what this session holds unfinished, in order (ORD-11)."""
        await self._bridge.call(self.sync.recover)

    async def commit(self) -> None:
        await self._bridge.call(self.sync.commit)

    async def rollback(self) -> None:
        """Give back what this transaction received, in order (ORD-11)."""
        await self._bridge.call(self.sync.rollback)

    async def close(self) -> None:
        """Close; waits for the listener in progress (from this session's own listener:
        IllegalStateError, as in the synchronous API)."""
        if self.sync.closed:
            return
        if inside_listener() is self.sync:
            raise IllegalStateError("a session cannot be closed from its own message listener")
        # Not on the session's thread: closing waits for that thread to finish its work.
        await asyncio.to_thread(self.sync.close)
        self._bridge.abandon()
        self.connection._forget(self)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
