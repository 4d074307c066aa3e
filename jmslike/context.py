"""JMSContext: JMS 2.0's simplified API, a connection and a session in one object.

It is built on the public classes (Connection, Session, MessageProducer, MessageConsumer)
and adds no messaging of its own, so acknowledgement, transactions and ordering groups
behave exactly as with a session (ORD-5 to ORD-11). What it adds is JMS 2.0's life cycle:

* the session is made on first use, so ``set_client_id`` still works right after the
  context is created, as JMS 2.0 allows;
* ``create_context`` makes a sibling with a session of its own on the same connection,
  and the connection closes when the last context on it closes;
* with ``autostart`` (the JMS default) creating a consumer starts the connection.

A context is used by one thread at a time, like a session (docs/threading.md).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from jmslike.consumer import QueueBrowser
from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.errors import IllegalStateError, InvalidArgumentError, JavaNames
from jmslike.jms_consumer import JMSConsumer
from jmslike.jms_producer import JMSProducer
from jmslike.message import BytesMessage, MapMessage, MapValue, Message, TextMessage
from jmslike.session import Session

if TYPE_CHECKING:
    from collections.abc import Mapping

    from jmslike.connection import Connection, ExceptionListener

__all__ = ["JMSContext"]

log = logging.getLogger("jmslike.context")


class _SharedConnection:
    """One connection and the number of open contexts on it (JMS 2.0 createContext)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._users = 1
        self._lock = threading.Lock()

    def join(self) -> None:
        with self._lock:
            if self._users == 0:
                raise IllegalStateError("the connection of this JMSContext is closed")
            self._users += 1

    def leave(self) -> None:
        """The last context to leave closes the connection."""
        with self._lock:
            self._users -= 1
            last = self._users == 0
        if last:
            self.connection.close()


class JMSContext(JavaNames):
    """A connection and one session, as one object (JMS 2.0 JMSContext).

    Made by ``ConnectionFactory.create_context(session_mode)``; a context manager. Its
    session modes are the Session constants, repeated here as in JMS 2.0.
    """

    SESSION_TRANSACTED = Session.SESSION_TRANSACTED
    AUTO_ACKNOWLEDGE = Session.AUTO_ACKNOWLEDGE
    CLIENT_ACKNOWLEDGE = Session.CLIENT_ACKNOWLEDGE
    DUPS_OK_ACKNOWLEDGE = Session.DUPS_OK_ACKNOWLEDGE

    def __init__(self, shared: _SharedConnection, session_mode: int) -> None:
        if isinstance(session_mode, bool) or session_mode not in Session._MODE_NAMES:
            shared.leave()  # nothing of a refused context may hold the connection open
            raise InvalidArgumentError(
                f"unknown session mode {session_mode!r}: use JMSContext.AUTO_ACKNOWLEDGE, "
                "CLIENT_ACKNOWLEDGE, DUPS_OK_ACKNOWLEDGE or SESSION_TRANSACTED"
            )
        self._shared = shared
        self._session_mode = session_mode
        self._session: Session | None = None
        self._autostart = True
        self._closed = False

    @classmethod
    def _open(cls, connection: Connection, session_mode: int) -> JMSContext:
        """A context owning a new connection (what the factory calls)."""
        return cls(_SharedConnection(connection), session_mode)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("started" if self._connection.started else "")
        return f"<JMSContext {Session._MODE_NAMES.get(self._session_mode)} {state}>".rstrip()

    def __enter__(self) -> JMSContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _connection(self) -> Connection:
        return self._shared.connection

    def _get_session(self) -> Session:
        """The context's session, made on first use (so the client id can come first)."""
        self._check_open()
        if self._session is None:
            self._session = self._connection.create_session(
                self._session_mode == Session.SESSION_TRANSACTED, self._session_mode
            )
        return self._session

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("JMSContext is closed")

    def create_context(self, session_mode: int = Session.AUTO_ACKNOWLEDGE) -> JMSContext:
        """A new context with a session of its own on this context's connection; the
        connection stays open until every context on it is closed (JMS 2.0)."""
        self._check_open()
        self._shared.join()
        return JMSContext(self._shared, session_mode)

    # ---------------------------------------------------------- connection
    def get_client_id(self) -> str | None:
        self._check_open()
        return self._connection.get_client_id()

    def set_client_id(self, client_id: str) -> None:
        """Only before the connection is used, as ``Connection.set_client_id``."""
        self._check_open()
        self._connection.set_client_id(client_id)

    def get_exception_listener(self) -> ExceptionListener | None:
        self._check_open()
        return self._connection.get_exception_listener()

    def set_exception_listener(self, listener: ExceptionListener | None) -> None:
        """The connection's exception listener (shared by its contexts)."""
        self._check_open()
        self._connection.set_exception_listener(listener)

    def start(self) -> None:
        self._check_open()
        self._connection.start()

    def stop(self) -> None:
        """Pause delivery on the connection, so for every context sharing it."""
        self._check_open()
        self._connection.stop()

    def get_autostart(self) -> bool:
        return self._autostart

    def set_autostart(self, autostart: bool) -> None:
        """Whether creating a consumer starts the connection (default True, JMS 2.0)."""
        if not isinstance(autostart, bool):
            raise InvalidArgumentError(f"autostart={autostart!r}: need True or False")
        self._autostart = autostart

    def _consumer(self, consumer: JMSConsumer) -> JMSConsumer:
        if self._autostart:
            self._connection.start()
        return consumer

    # -------------------------------------------------------------- session
    def get_session_mode(self) -> int:
        return self._session_mode

    def get_transacted(self) -> bool:
        return self._session_mode == Session.SESSION_TRANSACTED

    # The attribute spellings of Connection and Session, for code that writes
    # ``context.autostart = False`` or reads ``context.transacted`` as it would there.
    client_id = property(get_client_id, set_client_id)
    exception_listener = property(get_exception_listener, set_exception_listener)
    autostart = property(get_autostart, set_autostart)
    session_mode = property(get_session_mode)
    transacted = property(get_transacted)

    def commit(self) -> None:
        self._get_session().commit()

    def rollback(self) -> None:
        self._get_session().rollback()

    def recover(self) -> None:
        self._get_session().recover()

    def acknowledge(self) -> None:
        """Acknowledge everything the session consumed; in a mode other than
        CLIENT_ACKNOWLEDGE it does nothing, as JMS 2.0 says."""
        session = self._get_session()
        if self._session_mode == Session.CLIENT_ACKNOWLEDGE:
            session.acknowledge()

    # ---------------------------------------------------------- destinations
    def create_queue(self, name: str) -> Queue:
        return self._get_session().create_queue(name)

    def create_topic(self, name: str) -> Topic:
        return self._get_session().create_topic(name)

    def create_temporary_queue(self) -> TemporaryQueue:
        return self._get_session().create_temporary_queue()

    def create_temporary_topic(self) -> TemporaryTopic:
        return self._get_session().create_temporary_topic()

    # ------------------------------------------------------------- messages
    def create_message(self) -> Message:
        return self._get_session().create_message()

    def create_text_message(self, text: str | None = None) -> TextMessage:
        return self._get_session().create_text_message(text)

    def create_bytes_message(self, data: bytes | None = None) -> BytesMessage:
        return self._get_session().create_bytes_message(data)

    def create_map_message(self, mapping: Mapping[str, MapValue] | None = None) -> MapMessage:
        return self._get_session().create_map_message(mapping)

    # ------------------------------------------------- producers, consumers
    def create_producer(self) -> JMSProducer:
        """A producer for any destination (named on each send), on this context's
        session; the factory's ordering settings apply to it as to any producer (ORD-6)."""
        return JMSProducer(self._get_session().create_producer(None))

    def create_consumer(
        self,
        destination: Destination | str,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> JMSConsumer:
        session = self._get_session()
        return self._consumer(
            JMSConsumer(session.create_consumer(destination, message_selector, no_local))
        )

    def create_durable_consumer(
        self,
        topic: Topic | str,
        name: str,
        message_selector: str | None = None,
        no_local: bool = False,
    ) -> JMSConsumer:
        """A durable subscription ``name`` of this connection's client id."""
        session = self._get_session()
        return self._consumer(
            JMSConsumer(session.create_durable_consumer(topic, name, message_selector, no_local))
        )

    def create_shared_consumer(
        self, topic: Topic | str, name: str, message_selector: str | None = None
    ) -> JMSConsumer:
        session = self._get_session()
        return self._consumer(
            JMSConsumer(session.create_shared_consumer(topic, name, message_selector))
        )

    def create_shared_durable_consumer(
        self, topic: Topic | str, name: str, message_selector: str | None = None
    ) -> JMSConsumer:
        session = self._get_session()
        return self._consumer(
            JMSConsumer(session.create_shared_durable_consumer(topic, name, message_selector))
        )

    def create_browser(
        self, queue: Destination | str, message_selector: str | None = None
    ) -> QueueBrowser:
        return self._get_session().create_browser(queue, message_selector)

    def unsubscribe(self, name: str) -> None:
        """Delete durable subscription ``name`` (it must have no active consumer)."""
        self._get_session().unsubscribe(name)

    # ---------------------------------------------------------------- close
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the session (a transaction rolls back, unacknowledged messages go back,
        ORD-10), and the connection if no other context uses it."""
        if self._closed:
            return
        session = self._session
        if session is not None:
            session.close()
        self._closed = True
        log.debug("closed %r", self)
        self._shared.leave()
