"""MessageListenerContainer: ordered parallel processing across groups (ORD-17).

Like Spring's DefaultMessageListenerContainer: ``concurrency`` sessions, each with one
consumer and a listener on the session's own dispatcher thread. Parallelism across
groups and order within a group then fall out of the session rules rather than being
re-implemented here: a session takes one message at a time and holds its group until it
is finished (ORD-9, ORD-10), so at most ``concurrency`` groups are in progress, no group
is ever processed by two threads at once, and messages in no group go to whichever
session is free.

On a strictly ordered destination (ORD-18) there is nothing to parallelise: the broker
lets one consumer at a time take messages, so the container runs one session and says
so once, rather than failing on its second consumer or idling N-1 threads.
"""

from __future__ import annotations

import logging
import signal
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from jmslike._feed import Feed
from jmslike.destination import Destination, parse_destination
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidArgumentError,
    JavaNames,
    JMSException,
    not_callable,
)
from jmslike.message import Message
from jmslike.session import Session

if TYPE_CHECKING:
    from jmslike.connection import Connection, ConnectionFactory
    from jmslike.consumer import MessageConsumer

__all__ = ["MessageListenerContainer"]

log = logging.getLogger("jmslike.container")

FEED_WINDOW = 16
"""Messages per session the broker may have out to a container's feed (at least)."""

RUN_POLL = 0.1
"""Seconds between ``run()``'s looks at the signals it caught and at the connection."""

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""What ``run()`` stops on by default: Ctrl-C, and the SIGTERM of ``docker stop``,
systemd and Kubernetes."""


def checked_signals(signals: Iterable[int]) -> tuple[int, ...]:
    """``run()``'s signals, each one a process can catch, or InvalidArgumentError."""
    wanted = tuple(signals)
    for number in wanted:
        if number not in signal.valid_signals() or number in (signal.SIGKILL, signal.SIGSTOP):
            raise InvalidArgumentError(f"run(signals=...): {number!r} is not a signal to catch")
    return wanted


class MessageListenerContainer(JavaNames):
    """Runs ``on_message`` for every message of a destination, ``concurrency`` at a time.

    Finishing follows ``acknowledge_mode``: AUTO/DUPS_OK finish when ``on_message``
    returns or raises (a raise redelivers, up to the factory's redelivery limit);
    CLIENT_ACKNOWLEDGE acknowledges after a successful return and recovers after a raise;
    SESSION_TRANSACTED commits after a successful return and rolls back after a raise.
    """

    def __init__(
        self,
        factory: ConnectionFactory,
        destination: Destination | str,
        on_message: Callable[[Message], object],
        *,
        concurrency: int = 1,
        acknowledge_mode: int = Session.AUTO_ACKNOWLEDGE,
        message_selector: str | None = None,
        exception_listener: Callable[[JMSException], object] | None = None,
        start: bool = True,
        strictly_ordered: bool = False,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise InvalidArgumentError(f"concurrency {concurrency!r}: need an int >= 1")
        if not callable(on_message):
            raise not_callable("on_message", on_message, "on_message")
        if not isinstance(strictly_ordered, bool):
            raise InvalidArgumentError(f"strictly_ordered={strictly_ordered!r}: need True or False")
        self._destination = parse_destination(destination)
        self._strictly_ordered = strictly_ordered or factory.settings.is_strictly_ordered(
            self._destination
        )
        self._concurrency = concurrency
        self._acknowledge_mode = acknowledge_mode
        self._on_message = on_message
        self._lock = threading.Lock()
        self.processed = 0
        self.failed = 0
        self._connection: Connection = factory.create_connection()
        self._sessions: list[Session] = []
        self._consumers: list[MessageConsumer] = []
        self._stopped = False
        self._stopped_event = threading.Event()
        if message_selector is not None and not message_selector.strip():
            message_selector = None
        # Where the provider asks for it, the sessions take from one subscription, a
        # feed, and jmslike hands its messages out by group (jmslike/_feed.py says why);
        # the embedded broker keeps groups per session and hands them out itself, to
        # sessions that ask for one message at a time (ORD-17). A partitioned queue is
        # consumed partition by partition, each strictly ordered.
        self._feed: Feed | None = None
        partitioned = factory.settings.partitions_for(self.destination) is not None
        if (
            not self.strictly_ordered
            and not partitioned
            and self._connection.capabilities.extra.get("container_feed")
        ):
            window = max(factory.settings.prefetch, FEED_WINDOW) * concurrency
            self._feed = Feed(self._connection, self.destination, message_selector, window)
        # A container is one subscriber: on a topic without a feed its sessions share a
        # subscription of their own, so each message is processed once, not once per
        # session (a strictly ordered one runs with one session anyway).
        shared = None
        if self._feed is None and self.destination.is_topic and not self.strictly_ordered:
            if self._connection.capabilities.shared_subscriptions:
                shared = f"jmslike-container-{uuid.uuid4().hex}"
            elif concurrency > 1:
                log.warning(
                    "listener container on %s: the provider has no shared subscriptions, "
                    "and each session would get every message, so it runs with concurrency 1 "
                    "instead of the %d asked for",
                    self.destination,
                    concurrency,
                )
                self._concurrency = 1
        try:
            if exception_listener is not None:
                self._connection.set_exception_listener(exception_listener)
            while len(self._sessions) < self.concurrency:
                session = self._connection.create_session(
                    acknowledge_mode == Session.SESSION_TRANSACTED, acknowledge_mode
                )
                consumer = session._attach_consumer(
                    self.destination,
                    message_selector,
                    False,
                    strictly_ordered=self.strictly_ordered,
                    subscription=shared,
                    shared=shared is not None,
                    feed=self._feed,
                    container=not partitioned,
                )
                consumer.set_message_listener(self._listener_for(session))
                self._sessions.append(session)
                self._consumers.append(consumer)
                if consumer.strictly_ordered:  # declared here, by the factory, or earlier
                    self._limit_to_one()
        except BaseException:
            self._connection.close()
            raise
        if start:
            self.start()

    def _limit_to_one(self) -> None:
        """ORD-18: a strictly ordered destination runs at concurrency 1; one warning if
        more was asked for (as IBM overrides an MDB's concurrency and logs it)."""
        self._strictly_ordered = True
        if self.concurrency > 1:
            log.warning(
                "listener container on %s: the destination is strictly ordered (ORD-18), "
                "so it runs with concurrency 1 instead of the %d asked for",
                self.destination,
                self.concurrency,
            )
            self._concurrency = 1

    def __repr__(self) -> str:
        return (
            f"<MessageListenerContainer {self.destination} concurrency={self.concurrency} "
            f"processed={self.processed}>"
        )

    def __enter__(self) -> MessageListenerContainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Read-only: fixed when the container is made (its sessions and consumers are made
    # then); ``container.concurrency = 8`` afterwards was kept and changed nothing.
    @property
    def destination(self) -> Destination:
        return self._destination

    @property
    def concurrency(self) -> int:
        return self._concurrency

    @property
    def acknowledge_mode(self) -> int:
        return self._acknowledge_mode

    @property
    def strictly_ordered(self) -> bool:
        return self._strictly_ordered

    @property
    def connection(self) -> Connection:
        return self._connection

    def _listener_for(self, session: Session) -> Callable[[Message], None]:
        mode = session.acknowledge_mode

        def listener(message: Message) -> None:
            try:
                self._on_message(message)
            except Exception:
                with self._lock:
                    self.failed += 1
                if mode == Session.SESSION_TRANSACTED:
                    session.rollback()
                elif mode == Session.CLIENT_ACKNOWLEDGE:
                    session.recover()
                raise  # the session reports it, and redelivers in AUTO/DUPS_OK
            with self._lock:
                self.processed += 1
            if mode == Session.SESSION_TRANSACTED:
                session.commit()
            elif mode == Session.CLIENT_ACKNOWLEDGE:
                session.acknowledge()

        return listener

    def start(self) -> None:
        """Start delivery (the constructor does, unless ``start=False``). A stopped
        container does not start again: ``stop()`` closed its connection."""
        if self._stopped:
            raise IllegalStateError(
                f"this listener container on {self.destination} is stopped, and a stopped "
                "container does not start again (stop() drained it and closed its "
                "connection): make a new MessageListenerContainer"
            )
        self._connection.start()

    def stop(self) -> None:
        """Finish the messages in hand, give back what was only buffered, and close.

        Called from ``on_message`` itself, it cannot wait for the listener it runs in:
        it stops on a helper thread instead and returns at once.
        """
        if self._connection._in_own_listener():
            threading.Thread(target=self.stop, name="jmslike-container-stop", daemon=True).start()
            return
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        try:
            self._connection.stop()
        finally:
            self._connection.close()
            self._stopped_event.set()

    def run(self, signals: Iterable[int] = STOP_SIGNALS) -> int | None:
        """Wait until one of ``signals`` comes, then ``stop()``: the messages in hand are
        finished, what was only buffered goes back, the connection closes. The main loop
        of a worker process: ``with MessageListenerContainer(...) as c: c.run()``.

        Python's default SIGTERM ends a process at once, in the middle of a message: the
        broker hands that message to another consumer, flagged redelivered, and its work
        is done twice. The handlers are run()'s only while it waits, and the previous
        ones are back before it stops the container, so a second Ctrl-C during a slow
        stop interrupts as usual.

        Returns the signal's number, or None if the container was stopped otherwise (by
        a listener, another thread). Raises ConnectionFailedError once the connection is
        lost for good, so that a supervisor can start the process again. Python runs
        signal handlers on the main thread only: elsewhere pass ``signals=()``.
        """
        wanted = checked_signals(signals)
        if wanted and threading.current_thread() is not threading.main_thread():
            raise IllegalStateError(
                f"run() on thread {threading.current_thread().name!r}: Python handles "
                "signals on the main thread only; call it there, or pass signals=() to "
                "wait for stop() alone"
            )
        caught: list[int] = []

        def on_signal(number: int, _frame: object) -> None:
            caught.append(number)  # nothing more here: the handler interrupts any code

        previous: dict[int, Any] = {}
        try:
            for number in wanted:
                previous[number] = signal.signal(number, on_signal)
            while not caught and self._waits_for_run():
                self._stopped_event.wait(RUN_POLL)
        finally:
            for number, handler in previous.items():
                # (None: a handler not set from Python, which cannot be put back)
                signal.signal(number, signal.SIG_DFL if handler is None else handler)
        return self._end_run(caught[0] if caught else None)

    def _waits_for_run(self) -> bool:
        """Neither stopped nor lost: ``run()`` goes on waiting."""
        return not self._stopped and self._connection._failed is None

    def _end_run(self, caught: int | None) -> int | None:
        """After ``run()``'s wait: stop on the signal ``caught``, or raise if the
        connection was lost for good."""
        if caught is not None:
            log.info(
                "listener container on %s: %s, stopping (finishing the messages in hand)",
                self.destination,
                signal.Signals(caught).name,
            )
            self.stop()
            return caught
        failed = self._connection._failed
        if failed is not None and not self._stopped:
            self.stop()
            raise ConnectionFailedError(
                f"listener container on {self.destination}: {failed}"
            ) from failed
        return None

    def close(self) -> None:
        """``stop()``, under the name every JMS object is closed by."""
        self.stop()

    @property
    def running(self) -> bool:
        return not self._stopped
