"""The asyncio API's factory and connection.

A connection's own calls (open, start, stop, close) may run on any thread in the
synchronous API, so here they run on the event loop's default executor
(``asyncio.to_thread``); a session's calls run on that session's thread (``_bridge``).
Exception listeners run on the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from jmslike.aio._bridge import inside_listener
from jmslike.aio._synced import Synced
from jmslike.aio.session import Session
from jmslike.config import ParsedURL
from jmslike.connection import Connection as SyncConnection
from jmslike.connection import ConnectionFactory as SyncFactory
from jmslike.declare import QueueDeclaration
from jmslike.destination import Destination
from jmslike.errors import IllegalStateError, InvalidArgumentError, JMSException, not_callable
from jmslike.session import Session as SyncSession
from jmslike.spi.provider import Capabilities

__all__ = ["Connection", "ConnectionFactory", "connect"]


class ConnectionFactory:
    """Makes connections for coroutines. Takes what ``jmslike.ConnectionFactory`` takes
    (a URL and settings, so ordering set by configuration applies here too), or a
    ready synchronous factory."""

    def __init__(self, url: str | SyncFactory | None = None, **settings: Any) -> None:
        if isinstance(url, SyncFactory):
            if settings:
                raise InvalidArgumentError(
                    f"settings {sorted(settings)} given with a ready ConnectionFactory: "
                    "set them on that factory"
                )
            self.sync = url
        else:
            self.sync = SyncFactory(url, **settings) if url is not None else SyncFactory(**settings)
        """The synchronous factory behind this one."""

    def __setattr__(self, name: str, value: Any) -> None:
        """Any attribute but ``sync`` is the synchronous factory's, which refuses a
        setting assigned after the fact (``factory.enable_ordering_group = True`` was
        kept here, and ordering stayed off) and takes ``interceptors``."""
        if name == "sync":
            object.__setattr__(self, name, value)
        else:
            setattr(self.sync, name, value)

    @classmethod
    def from_config(cls, name: str, path: str | None = None) -> ConnectionFactory:
        """A named factory from ``jmslike.toml``, as ``jmslike.ConnectionFactory.from_config``."""
        return cls(SyncFactory.from_config(name, path))

    def __repr__(self) -> str:
        return f"<aio {self.sync!r}>"

    async def create_connection(
        self, user: str | None = None, password: str | None = None
    ) -> Connection:
        """Open a connection (stopped: ``await connection.start()`` to receive)."""
        sync = await asyncio.to_thread(self.sync.create_connection, user, password)
        return Connection(sync, asyncio.get_running_loop())


async def connect(url: str | None = None, **settings: Any) -> Connection:
    """Open a connection in one call: ``async with await aio.connect(url) as c:``."""
    return await ConnectionFactory(url, **settings).create_connection()


class Connection:
    """A JMS connection for coroutines; ``async with`` closes it."""

    __slots__ = (
        "__weakref__",
        "_exception_listener",
        "_listener_tasks",
        "_loop",
        "_sessions",
        "sync",
    )
    """No other attribute: one assigned by mistake raises instead of being kept."""

    def __init__(self, sync: SyncConnection, loop: asyncio.AbstractEventLoop) -> None:
        self.sync = sync
        """The synchronous connection behind this one."""
        self._loop = loop
        self._sessions: list[Session] = []
        self._listener_tasks: set[asyncio.Future[Any]] = set()
        self._exception_listener: Any = None

    def __repr__(self) -> str:
        return f"<aio {self.sync!r}>"

    capabilities: Synced[Capabilities] = Synced()

    url: Synced[ParsedURL] = Synced()

    client_id: Synced[str | None] = Synced()

    closed: Synced[bool] = Synced()

    started: Synced[bool] = Synced()

    async def set_client_id(self, client_id: str) -> None:
        await asyncio.to_thread(self.sync.set_client_id, client_id)

    def set_exception_listener(self, listener: Any) -> None:
        """Tell ``listener(error)`` (a function or a coroutine function) of errors that no
        call could raise (a lost connection, a listener that raised), on the event loop."""
        if listener is None:
            self.sync.set_exception_listener(None)
            self._exception_listener = None
            return
        if not callable(listener):
            raise not_callable("exception listener", listener, "on_exception")
        self._exception_listener = listener
        loop = self._loop

        def run(error: JMSException) -> None:
            result = listener(error)
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._listener_tasks.add(task)
                task.add_done_callback(self._listener_tasks.discard)

        self.sync.set_exception_listener(lambda error: loop.call_soon_threadsafe(run, error))

    @property
    def exception_listener(self) -> Any:
        """The listener ``set_exception_listener`` was given; assigning it is that call
        (the synchronous connection's attribute spelling)."""
        return self._exception_listener

    @exception_listener.setter
    def exception_listener(self, listener: Any) -> None:
        self.set_exception_listener(listener)

    async def create_session(
        self, transacted: bool = False, acknowledge_mode: int = SyncSession.AUTO_ACKNOWLEDGE
    ) -> Session:
        """A new session, with a thread of its own for its calls and listeners."""
        sync = await asyncio.to_thread(self.sync.create_session, transacted, acknowledge_mode)
        session = Session(sync, self, self._loop)
        self._sessions.append(session)
        return session

    async def declare_queue(self, queue: Destination | str) -> QueueDeclaration:
        """:meth:`jmslike.Connection.declare_queue`, on a worker thread."""
        return await asyncio.to_thread(self.sync.declare_queue, queue)

    async def start(self) -> None:
        await asyncio.to_thread(self.sync.start)

    async def stop(self) -> None:
        """Pause delivery; waits for listeners in progress (not from one of them)."""
        self._refuse_inside("stopped")
        await asyncio.to_thread(self.sync.stop)

    async def close(self) -> None:
        """Close every session (giving back what they held, ORD-10) and the connection."""
        if self.sync.closed:
            return
        self._refuse_inside("closed")
        try:
            await asyncio.to_thread(self.sync.close)
        finally:
            for session in self._sessions:
                session._bridge.abandon()
            self._sessions.clear()

    def _forget(self, session: Session) -> None:
        """A closed session: a connection that makes a session per request keeps none."""
        if session in self._sessions:
            self._sessions.remove(session)

    def _refuse_inside(self, what: str) -> None:
        """From one of its own listeners this would wait for that listener: refused, as
        the synchronous API refuses it on the listener's thread."""
        session = inside_listener()
        if session is not None and session._connection is self.sync:
            raise IllegalStateError(f"a connection cannot be {what} from its own message listener")

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
