"""One AMQP 1.0 connection, driven by Proton's engine on a thread of its own.

Proton is single-threaded: its objects may only be touched by the thread that drives the
connection (``driver.py``'s loop). That includes letting go of them: a Proton wrapper's
``__del__`` lowers the C object's reference count, without a lock and (cffi releases the
GIL around C calls) at the same time as the connection's thread works on it. So no
Proton link or delivery ever leaves this module: other threads hold a
:class:`LinkHandle` and delivery numbers, and the objects behind them live and die on
the connection's thread. (Twice a process using the provider died in
``malloc_consolidate`` before it was built this way.)

Every other thread (the application's, jmslike's dispatchers) hands work to the
connection's thread with ``post(fn)``, which queues ``fn`` and returns at once, or
``call(fn)``, which waits for its result. Calls run in the order they were queued, so a
settlement or a credit grant is on the wire before anything queued after it. A queued
call wakes the thread (``Driver.wake``), once for all the calls queued before it runs.
Incoming messages go to the receiver's callback on the connection's thread; those
callbacks only decode and buffer (the API's delivery sink never blocks and never runs
user code), so no application code runs there (docs/threading.md). Outgoing messages
are encoded by the thread that sends them.

Under a reconnect policy (``failover:`` URLs, jmslike/spi/reconnect.py) the same thread
outlives its connections: when one is lost it fails what waited for the broker (a send
or commit on its way may or may not have been taken, and its caller is told), raises
``generation`` (deliveries of the lost connection can no longer be settled), tells the
owner, and connects again, to each member in turn with back-off. The new connection gets
every open link again under its name, before calls queued meanwhile run on it; the owner
then grants the credit it had asked for (docs/providers.md, "Reconnecting").

The engine's events go to :class:`_Events`, one plain handler with a method per event it
wants, rather than Proton's ``Container`` and ``MessagingHandler``: the reactor wraps
every event and passes it through a chain of handlers, and in a receive of 20,000
messages that took more than half of the connection thread's time
(docs/performance.md).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from cproton import (
    pn_delivery_aborted,
    pn_delivery_local,
    pn_delivery_partial,
    pn_delivery_pending,
    pn_delivery_readable,
    pn_delivery_settle,
    pn_delivery_settled,
    pn_delivery_update,
    pn_disposition_data,
    pn_disposition_set_failed,
)
from proton import Data, Delivery, Described, Endpoint, Link, Message, Terminus, symbol, ulong
from proton._data import obj2dat
from proton.reactor import LinkOption

from jmslike.errors import (
    ConnectionFailedError,
    InvalidClientIDError,
    JMSException,
    JMSSecurityError,
    TransactionInDoubtError,
    TransactionRolledBackError,
)
from jmslike.spi.diagnose import inequivalent_note, wrong_port_hint
from jmslike.spi.reconnect import Reconnect
from jmslike_amqp.codec import IncomingMessage
from jmslike_amqp.driver import Driver

__all__ = ["AmqpTransport", "Capability", "LinkHandle", "MessageCallback"]

log = logging.getLogger("jmslike.amqp")

_SNIFF_AFTER = 3.0
"""Seconds without the broker's open before the port is sniffed (jmslike.spi.diagnose)."""

T = TypeVar("T")
MessageCallback = Callable[[Message, int], None]
"""A receiver's callback: the message and its delivery number (for ``settle``)."""

SOLE_CONNECTION = symbol("sole-connection-for-container")
_ESTABLISHMENT_FAILED = symbol("amqp:connection-establishment-failed")
DECLARED = 0x33
TRANSACTIONAL_STATE = 0x34
_DECLARE = symbol("amqp:declare:list")
_DISCHARGE = symbol("amqp:discharge:list")
_ACCEPTED_OUTCOME = Described(ulong(Delivery.ACCEPTED), [])
_LOCAL_CLOSED = Endpoint.LOCAL_CLOSED
_REMOTE_CLOSED = Endpoint.REMOTE_CLOSED

_NUMBERS = itertools.count(1)


class LinkHandle:
    """A link as the threads other than the connection's know it.

    ``name``, ``address`` and the credit gate may be read anywhere; the fields with a
    leading underscore belong to the connection's thread, which also clears ``_link`` when
    the link closes, so that the last reference to the Proton object goes there."""

    __slots__ = (
        "_closed",
        "_deliveries",
        "_late",
        "_link",
        "_on_flow",
        "_on_message",
        "_recipe",
        "_unsettled",
        "address",
        "credit",
        "credit_lost",
        "is_sender",
        "name",
    )

    def __init__(
        self,
        link: Link,
        address: str | None,
        on_message: MessageCallback | None,
        on_flow: Callable[[], None] | None = None,
    ):
        self.name: str = link.name
        self.address = address or ""
        self.is_sender: bool = link.is_sender
        self.credit = threading.Event()
        """Senders: set while the broker's credit lasts; a send waits while it is clear."""
        self._link: Link | None = link
        self._closed = False
        """Closed (or detached) here: let go of once the broker has answered."""
        self._on_message = on_message
        self._on_flow = on_flow
        """Receivers: told (on the connection's thread) of each flow frame from the broker."""
        self._late: Callable[[Message], None] | None = None
        """A receiver closed here, not yet by the broker: told of transfers that were on
        their way (they are released unseen)."""
        self._deliveries: dict[int, Any] = {}
        """Receivers: deliveries handed up and not settled yet, by number: Proton's C
        pointers, alive while the link is (cleared with it), never wrapped (a wrapper per
        delivery, with its two dispositions, cost a tenth of the connection thread's time
        in a listener container's receive)."""
        self._unsettled: set[Delivery] = set()
        """Senders: transfers outside transactions the broker has not answered."""
        self._recipe: tuple[bool, str | None, Any] | None = None
        """(receiver, address, link options): how to attach the link again after a
        reconnect; None for one that must not be (a temporary destination's)."""
        self.credit_lost = 0
        """Receivers: the credit the link had when its connection was lost."""

    def _release(self) -> None:
        """The connection's thread, once the link is gone: let go of its Proton objects.
        A send still waiting for credit goes on, and fails at once: no link."""
        self._link = None
        self._late = None
        self._on_flow = None
        self._deliveries.clear()
        self._unsettled.clear()
        self.credit.set()

    def __repr__(self) -> str:
        kind = "sender" if self.is_sender else "receiver"
        return f"<LinkHandle {kind} {self.name} {self.address!r}>"


class AmqpTransport:
    """An open AMQP connection and the thread that drives it."""

    def __init__(
        self,
        host: str,
        port: int,
        user: str | None,
        password: str | None,
        *,
        timeout: float,
        on_lost: Callable[[JMSException], None],
        ssl: bool = False,
        ssl_ca_file: str | None = None,
        ssl_verify_host: bool = True,
        container_id: str | None = None,
        virtual_host: str | None = None,
        idle_timeout: float = 0.0,
        members: Sequence[tuple[str, int]] = (),
        reconnect: Reconnect | None = None,
        on_interrupted: Callable[[], None] | None = None,
        on_restored: Callable[[], None] | None = None,
    ) -> None:
        self._members = list(members) or [(host, port)]
        """Where to connect, in order: a ``failover:`` URL's members, or the one broker."""
        self.address = ",".join(f"{h}:{p}" for h, p in self._members)
        self._reconnect = reconnect or Reconnect()
        self._on_interrupted = on_interrupted
        """Called on the connection's thread as soon as a connection that will be made
        again is lost (it must not block): what came over it can no longer be settled."""
        self._on_restored = on_restored
        """Called on the connection's thread once the broker opened the new connection
        and every link is attached again (it must not block): credit is granted there."""
        self.generation = 0
        """Raised at each loss under a reconnect policy: deliveries of an older generation
        can no longer be settled (the broker hands them out again)."""
        self._up = False
        """The current engine's connection is open (the broker answered the open)."""
        self._more_members = False
        """The first connect has members left to try after the current one."""
        self._attempt_error: JMSException | None = None
        self._lost_links: dict[int, LinkHandle] = {}
        """Links of a lost connection to attach again, in the order they were made."""
        self._restoring: dict[int, LinkHandle] = {}
        """Links attached again after a reconnect that the broker has not answered yet."""
        self._stop = threading.Event()
        """Set by close: ends a wait between reconnect attempts."""
        self._idle_timeout = idle_timeout
        self._tls = (ssl_ca_file, ssl_verify_host) if ssl else None
        self._virtual_host = virtual_host
        self.container_id = container_id
        self._timeout = timeout
        self._on_lost = on_lost
        self._calls: deque[tuple[Callable[[], Any], Callable[[BaseException], None] | None]]
        self._calls = deque()
        self._woken = False
        """A wake-up of the connection's thread is on its way (``post``)."""
        self._delivery_numbers = itertools.count(1)
        # The rest is the connection's thread's, keyed by Proton objects.
        self._handles: dict[int, LinkHandle] = {}
        """Open links' handles by the address of the C link (``Driver.key_of``): a
        delivery event finds its link's handle without wrapping the link."""
        self._outcomes: dict[Delivery, Future[None]] = {}
        self._controls: dict[Delivery, Future[tuple[int, Any, str]]] = {}
        """Transaction control transfers (declare, discharge) -> their outcome."""
        self._attaching: dict[Link, Future[None]] = {}
        self._draining: dict[Link, Future[None]] = {}
        """Receivers asked to drain -> resolved once the broker has used up the credit."""
        self._detaching: dict[Link, Future[None]] = {}
        """Links whose close or detach the caller waits for the broker to answer."""
        self._flushing: dict[Link, Future[None]] = {}
        """Senders being closed -> resolved once the broker has answered every transfer."""
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        """(due, order, function): ``call_later``'s, a heap, for the connection's thread."""
        self._opened: Future[None] = Future()
        self._closing = False
        self._container_id = container_id or f"jmslike-{os.getpid()}-{next(_NUMBERS)}"
        self._credentials = (user, password)
        self._member = self._members[0]
        """The member connected to (or tried) now."""
        self._driver: Driver | None = None
        """The engine and socket, made and dropped on the connection's thread."""
        self._wake: Callable[[], None] | None = None
        self.connection: Any = None
        self._thread = threading.Thread(
            target=self._run, name=f"jmslike-amqp-{self.address}", daemon=True
        )
        self._thread.start()
        try:
            self._wait_open(host, port, timeout)
        except TimeoutError:
            self.close()
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not open the connection within {timeout} s"
            ) from None

    def _wait_open(self, host: str, port: int, timeout: float) -> None:
        """Wait for the broker's open; past a few seconds, look whether the port speaks
        another protocol: a STOMP port stays silent for an AMQP header, and the caller
        waited the whole timeout before (ActiveMQ's 61613) to learn nothing. A
        ``failover:`` list is not sniffed: its next member is tried instead."""
        if len(self._members) > 1:
            self._opened.result(timeout * len(self._members))  # each member gets the timeout
            return
        first = min(timeout, _SNIFF_AFTER)
        try:
            self._opened.result(first)
            return
        except TimeoutError:
            hint = None if self._tls else wrong_port_hint(host, port, "AMQP 1.0")
            if hint:
                self.close()
                raise ConnectionFailedError(
                    f"cannot connect to AMQP broker {self.address}: {hint}"
                ) from None
        self._opened.result(max(0.0, timeout - first))

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        """The connection's thread: connect to the first member that answers and run the
        engine until the connection ends; under a reconnect policy, connect again (every
        member in turn, with back-off) and go on; at the end let go of every Proton
        object here."""
        members = self._members
        current = 0
        try:
            for index in range(len(members)):
                self._more_members = index + 1 < len(members)
                current = index
                if self._drive(members[index]) or self._opened.done():
                    break
            attempt = 0
            while self._reconnecting():
                attempt += 1
                if self._stop.wait(self._reconnect.delay_before(attempt)):
                    break
                # Every member once, starting with the one after the member lost.
                for step in range(1, len(members) + 1):
                    index = (current + step) % len(members)
                    if self._drive(members[index]):
                        current, attempt = index, 0  # up, and lost again
                        break
                    if not self._reconnecting():
                        break
                if attempt and self._reconnecting() and self._reconnect.gives_up_after(attempt):
                    reason = self._attempt_error or "no answer"
                    self._reconnect = Reconnect()  # the loss is final now
                    self._fail(
                        ConnectionFailedError(
                            f"AMQP connection to {self.address} was lost; gave up after "
                            f"{attempt} reconnect attempts: {reason}"
                        )
                    )
        except Exception as exc:  # the loop must report, not die silently
            log.exception("AMQP connection thread for %s stopped", self.address)
            self._reconnect = Reconnect()
            self._fail(ConnectionFailedError(f"AMQP connection to {self.address}: {exc}"))
        finally:
            self._closing = True
            self._fail(ConnectionFailedError(f"AMQP connection to {self.address} is closed"))
            self._forget_links()

    def _reconnecting(self) -> bool:
        """A connection that was open is lost, and the policy says to make it again."""
        return (
            self._reconnect.attempts != 0
            and not self._closing
            and self._opened.done()
            and self._opened.exception() is None
        )

    def _drive(self, member: tuple[str, int]) -> bool:
        """Connect to ``member`` and run the engine until the connection ends; whether
        the broker had opened it. Links of a lost connection are attached again first,
        under their names (a durable subscription's keeps the subscription)."""
        host, port = member
        user, password = self._credentials
        self._member = member
        self._up = False
        self._attempt_error = None
        driver = Driver(
            host,
            port,
            _Events(self),
            container_id=self._container_id,
            user=user,
            password=password,
            tls=self._tls,
            # The open frame's hostname; RabbitMQ reads "vhost:<name>" as the vhost.
            virtual_host=self._virtual_host,
            # A JMS client id is the container id; Artemis then refuses a second
            # connection with it, in any process (Qpid JMS asks the same).
            desired_capabilities=[SOLE_CONNECTION] if self.container_id else None,
            timeout=self._timeout,
            idle_timeout=self._idle_timeout,
        )
        up = False
        try:
            self._driver, self.connection = driver, driver.connection
            driver.open()
            again = self._opened.done()
            if again:
                for handle in self._lost_links.values():
                    if handle._recipe is None:
                        continue
                    receiver, address, options = handle._recipe
                    link = driver.create_link(receiver, address, handle.name, options)
                    handle._link = link
                    self._handles[Driver.key_of(link)] = handle
                    self._restoring[Driver.key_of(link)] = handle
            else:
                self._wake = driver.wake
                self._run_calls()  # any queued before the wake-up existed
            if again or self._more_members:
                # A member that accepts TCP and never opens must not hold up the others.
                def too_slow() -> None:
                    if self._driver is driver and not self._up:
                        self._attempt_error = ConnectionFailedError(
                            f"{host}:{port} did not open the connection within {self._timeout} s"
                        )
                        driver.stop()

                self.call_later(self._timeout, too_slow)
            driver.run()
            up = self._up
            self._fail(ConnectionFailedError(f"AMQP connection to {self.address} is closed"))
        finally:
            self._wake = None
            if self._reconnecting():
                closed = ConnectionFailedError(f"AMQP connection to {host}:{port} is closed")
                self._fail_requests(closed)
                for handle in self._handles.values():
                    handle._link = None
                    handle._deliveries.clear()
                    handle._unsettled.clear()
                self._handles.clear()
                self._restoring.clear()
            self._driver = self.connection = None
            driver.release()
        return up

    def _connection_opened(self) -> None:
        """The broker opened the connection (the first one, or one made again)."""
        self._up = True
        if not self._opened.done():
            self._opened.set_result(None)
            return
        log.warning("AMQP connection to %s is back (generation %d)", self.address, self.generation)
        self._lost_links.clear()
        if self._on_restored is not None:
            try:
                self._on_restored()
            except Exception:  # the connection is back whatever the owner's hook did
                log.exception("AMQP %s: restoring state after a reconnect failed", self.address)
        driver = self._driver
        if driver is not None:
            self._wake = driver.wake
        self._run_calls()  # what other threads asked for meanwhile, on the new links

    def _interrupt(self, error: JMSException) -> None:
        """The connection is lost and will be made again: what waited for the broker
        fails (a send or commit on its way may or may not have been taken: the caller is
        told), deliveries of the lost connection become stale, and each open link is
        kept to be attached again. Calls queued meanwhile wait for the new connection."""
        log.warning("AMQP connection to %s lost: reconnecting (%s)", self.address, error)
        self.generation += 1
        self._wake = None
        unattached = {Driver.key_of(link) for link in self._attaching}
        self._fail_requests(
            ConnectionFailedError(
                f"the AMQP connection to {self.address} was lost before the broker answered "
                f"({error}); it is being made again"
            )
        )
        for key, handle in self._handles.items():
            link = handle._link
            if handle._closed or handle._recipe is None or key in unattached:
                handle._release()
                continue
            if not handle.is_sender and link is not None:
                # What the receiver's owner had asked for and not got: granted again on
                # the new link (a drain on its way had taken it back already).
                handle.credit_lost = 0 if link.drain_mode else max(link.credit, 0)
            handle._link = None
            handle._deliveries.clear()
            handle._unsettled.clear()
            if handle.is_sender:
                handle.credit.clear()  # sends wait for the new link's credit
            self._lost_links[id(handle)] = handle
        self._handles.clear()
        self._restoring.clear()
        self._timers.clear()
        if self._on_interrupted is not None:
            try:
                self._on_interrupted()
            except Exception:
                log.exception("AMQP %s: dropping stale deliveries failed", self.address)

    def _fail_requests(self, error: JMSException) -> None:
        """Fail every request waiting for the broker's answer."""
        futures: list[Future[Any]] = [*self._outcomes.values(), *self._controls.values()]
        futures += [*self._attaching.values(), *self._detaching.values()]
        futures += [*self._flushing.values(), *self._draining.values()]
        for registry in (
            self._outcomes,
            self._controls,
            self._attaching,
            self._detaching,
            self._flushing,
            self._draining,
        ):
            registry.clear()
        for future in futures:
            if not future.done():
                future.set_exception(error)

    def _fail(self, error: JMSException) -> None:
        if self._reconnecting():
            if self._up:
                self._up = False
                self._interrupt(error)
            elif self._attempt_error is None:
                self._attempt_error = error  # a reconnect attempt failed
            return
        if not self._opened.done() and self._more_members:
            self._attempt_error = error  # the next member is tried
            return
        opened = self._opened.done() and self._opened.exception() is None
        if not self._opened.done():
            self._opened.set_exception(error)
        for _fn, on_error in self._drain_calls():
            if on_error is not None:
                on_error(error)
        for handle in self._handles.values():
            handle.credit.set()  # a send waiting for credit goes on, and fails: no link
        self._fail_requests(error)
        if opened and not self._closing:
            self._closing = True  # once: the connection is gone
            self._on_lost(error)

    def _forget_links(self) -> None:
        """The loop has ended: let go of every Proton object, here on its thread."""
        for handle in [*self._handles.values(), *self._lost_links.values()]:
            handle._release()
        self._handles.clear()
        self._lost_links.clear()
        self._timers.clear()
        self._outcomes.clear()
        self._controls.clear()

    def _drain_calls(self) -> list[tuple[Callable[[], Any], Any]]:
        calls = []
        with contextlib.suppress(IndexError):  # popleft, so that no call queued meanwhile is lost
            while True:
                calls.append(self._calls.popleft())
        return calls

    # ------------------------------------------------------------------ calls
    def post(
        self, fn: Callable[[], object], on_error: Callable[[BaseException], None] | None = None
    ) -> None:
        """Queue ``fn`` for the connection's thread and return at once (on that thread
        itself, run it now); ``on_error`` hears of its failure. Waiting for the
        thread on every settlement and grant cost more than the work itself (about half
        of a receive's time)."""
        if threading.current_thread() is self._thread:
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
                wake()

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        """The connection's thread only: run ``fn`` there in ``delay`` seconds."""
        heapq.heappush(self._timers, (time.monotonic() + delay, next(_NUMBERS), fn))

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

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the connection's thread and return its result (or raise its error)."""
        if threading.current_thread() is self._thread:
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

    def _link_of(self, handle: LinkHandle) -> Link:
        """The connection's thread: the Proton link behind ``handle``, while it is open."""
        link = handle._link
        if link is None:
            raise ConnectionFailedError(
                f"AMQP link {handle.name} to {handle.address!r} on {self.address} is closed"
            )
        return link

    # ---------------------------------------------------------------- links
    def open_receiver(
        self,
        source: str | None,
        on_message: MessageCallback,
        *,
        name: str | None = None,
        options: LinkOption | list[LinkOption] | None = None,
        on_flow: Callable[[], None] | None = None,
        restore: bool = True,
    ) -> LinkHandle:
        """A receiver link with no credit yet (``flow`` grants it), once the broker has
        attached it: a JMS consumer exists from its creation, so a message sent after it
        must reach it. ``on_flow`` hears of each flow frame the broker sends on it.
        ``restore``: attached again, under its name, after a reconnect."""

        def attach() -> tuple[LinkHandle, Future[None]]:
            receiver = self._engine.create_link(
                True, source, name or self.link_name("receiver"), options
            )
            tracked = self._track(receiver, source, on_message, on_flow)
            if restore:
                tracked[0]._recipe = (True, source, options)
            return tracked

        handle, attached = self.call(attach)
        self._wait_attached(attached, source or "")
        return handle

    def open_sender(
        self,
        target: str | None,
        *,
        name: str | None = None,
        options: LinkOption | list[LinkOption] | None = None,
        restore: bool = True,
    ) -> LinkHandle:
        """A sender link, once the broker has attached it; with ``restore`` attached
        again, under its name, after a reconnect."""

        def attach() -> tuple[LinkHandle, Future[None]]:
            sender = self._engine.create_link(
                False, target, name or self.link_name("sender"), options
            )
            tracked = self._track(sender, target, None)
            if restore:
                tracked[0]._recipe = (False, target, options)
            return tracked

        handle, attached = self.call(attach)
        self._wait_attached(attached, target or "")
        return handle

    def _track(
        self,
        link: Link,
        address: str | None,
        on_message: MessageCallback | None,
        on_flow: Callable[[], None] | None = None,
    ) -> tuple[LinkHandle, Future[None]]:
        handle = LinkHandle(link, address, on_message, on_flow)
        self._handles[Driver.key_of(link)] = handle
        future: Future[None] = Future()
        self._attaching[link] = future
        return handle, future

    def link_name(self, kind: str) -> str:
        """A link name unique on the connection. Proton's default is built from the
        address, so a second consumer of one queue would reuse the first one's name, and
        the broker takes such an attach for the same link (it never answers)."""
        return f"{self._container_id}:{kind}:{next(_NUMBERS)}"

    @property
    def _engine(self) -> Driver:
        """The connection thread's engine (it exists while the connection does)."""
        driver = self._driver
        if driver is None:
            raise ConnectionFailedError(f"AMQP connection to {self.address} is closed")
        return driver

    def _wait_attached(self, attached: Future[None], address: str) -> None:
        self._await(attached, f"attach a link to {address!r}")

    def remote_source(self, handle: LinkHandle) -> str | None:
        """The address the broker gave the link's source (a subscription's queue)."""
        return self.call(lambda: self._link_of(handle).remote_source.address)

    def remote_target(self, handle: LinkHandle) -> str | None:
        """The address the broker gave the link's target (a dynamic node's name)."""
        return self.call(lambda: self._link_of(handle).remote_target.address)

    def remote_properties(self) -> dict[Any, Any]:
        """The properties of the broker's open frame (product, version, prefixes)."""
        return self.call(lambda: dict(self.connection.remote_properties or {}))

    # ---------------------------------------------------------------- sending
    def send(self, sender: LinkHandle, message: Message, *, confirm: bool, txn: Any = None) -> None:
        """Send ``message``; with ``confirm``, wait for the broker's outcome (accepted, or
        an error naming the refusal). In transaction ``txn`` nothing is waited for: the
        discharge confirms every transfer of the transaction at once."""
        # Encoded here, not on the connection's thread, which every send and receive of the
        # connection shares.
        data = message.encode()
        outcome: Future[None] | None = Future() if confirm and txn is None else None
        gate = sender.credit
        if not gate.is_set() and not gate.wait(self._timeout):
            raise ConnectionFailedError(
                f"AMQP broker {self.address} gave no credit to send to {sender.address!r}"
                f" within {self._timeout} s; the message was not sent"
            )

        def transfer() -> None:
            link = self._link_of(sender)
            delivery = link.delivery(str(next(self._delivery_numbers)))
            link.stream(data)
            link.advance()
            if link.credit <= 0:
                # Proton would queue the next ones until the broker grants more (Artemis
                # grants 1,000 at a time): the sender waits instead, as Qpid JMS does.
                gate.clear()
            if txn is not None:
                delivery.local.data = [txn]
                delivery.update(TRANSACTIONAL_STATE)
                return
            sender._unsettled.add(delivery)
            if outcome is not None:
                self._outcomes[delivery] = outcome

        if outcome is None:
            self.post(transfer)
            return

        def failed(exc: BaseException) -> None:
            if not outcome.done():
                outcome.set_exception(exc)

        # Posted, not called: the only wait is for the broker's outcome.
        self.post(transfer, failed)
        self._await(outcome, f"settle a send to {sender.address!r}")

    def flush(self, sender: LinkHandle) -> None:
        """Return once the broker has answered every transfer on ``sender`` (outside a
        transaction). Proton keeps a transfer that has no credit yet and drops it when
        its link or connection closes, and RabbitMQ drops transfers it has read but not
        routed when the connection closes: without this wait a producer closed right
        after a burst of non-persistent sends lost the end of it (seen: 1,000 of 3,000
        on Artemis, 1,336 of 3,000 on RabbitMQ). One round trip, at close only."""

        def check() -> Future[None] | None:
            link = sender._link
            if link is None or not sender._unsettled or link.state & _REMOTE_CLOSED:
                return None
            return self._flushing.setdefault(link, Future())

        try:
            flushed = self.call(check)
        except JMSException:
            return  # the connection is gone: nothing more can be sent
        if flushed is None:
            return
        try:
            flushed.result(self._timeout)
        except TimeoutError:
            log.error(
                "AMQP broker %s did not answer every send to %r within %s s",
                self.address,
                sender.address,
                self._timeout,
            )
        except JMSException:
            pass  # the connection went: the application has been told

    def _answered_transfer(self, handle: LinkHandle, link: Link, delivery: Delivery) -> None:
        unsettled = handle._unsettled
        unsettled.discard(delivery)
        if not unsettled and self._flushing:
            flushed = self._flushing.pop(link, None)
            if flushed is not None:
                flushed.set_result(None)

    # ---------------------------------------------------------------- receiving
    def flow(self, receiver: LinkHandle, credit: int) -> None:
        """Grant ``credit`` more deliveries (a grant made while a drain is on its way
        still counts: AMQP's flow arithmetic adds it to whatever the drain leaves)."""

        def grant() -> None:
            link = self._link_of(receiver)
            link.drain_mode = False
            # A broker that sent more than the credit leaves Proton's credit below 0,
            # and a grant of n would then open only n - overrun: RabbitMQ 3.10 adds up
            # the grants a waiting single-active-consumer link made (credit 1, then 2
            # in all: 3 transfers came), and the link stalled with one message left.
            overrun = max(0, -link.credit)
            if overrun:
                log.debug("broker overran a receiver's credit by %d; granted again", overrun)
            link.flow(credit + overrun)

        self.post(grant)

    def withdraw(self, receiver: LinkHandle) -> None:
        """Take back the receiver's credit, without waiting: a drain, so the broker sends
        what it has at once and gives the rest back."""

        def take_back() -> None:
            link = self._link_of(receiver)
            if link.credit > 0:
                link.drain(0)

        self.post(take_back)

    # The connection's thread only: what a receiver's credit policy (provider.py) uses
    # from inside its callbacks, where waiting for the thread would wait for itself.
    def credit_now(self, receiver: LinkHandle) -> int:
        """The credit ``receiver`` has granted and the broker has not used yet."""
        link = receiver._link
        return link.credit if link is not None else 0

    def grant_now(self, receiver: LinkHandle, credit: int, *, drain: bool = False) -> bool:
        """Grant ``credit`` more on ``receiver`` now; with ``drain``, ask the broker to send
        at once what it has for the link's credit and give back the rest (it answers
        with a flow frame, or by using the credit up). False if the link is gone."""
        link = receiver._link
        if link is None or link.state & _REMOTE_CLOSED:
            return False
        if drain:
            link.drain(credit)
        else:
            link.drain_mode = False
            link.flow(credit)
        return True

    def drain(self, receiver: LinkHandle, credit: int = 0) -> bool:
        """Grant ``credit`` more in drain mode and return once the broker has answered
        (True), or after the timeout (False): the broker then has sent everything it will
        send for the credit, and gives the rest back."""

        def start() -> Future[None] | None:
            link = self._link_of(receiver)
            if link.state & _REMOTE_CLOSED or link.credit + credit <= 0:
                return None
            drained = self._draining.setdefault(link, Future())
            link.drain(credit)
            return drained

        drained = self.call(start)
        if drained is None:
            return True
        try:
            drained.result(self._timeout)
        except TimeoutError:
            return False
        return True

    def settle(
        self,
        receiver: LinkHandle,
        number: int,
        outcome: int,
        *,
        failed: bool = False,
        txn: Any = None,
    ) -> None:
        """Settle delivery ``number`` of ``receiver``: ``Delivery.ACCEPTED``, ``RELEASED``
        (back to the queue, not counted as delivered), or ``MODIFIED`` with ``failed``
        (back, counted). With ``txn`` it is accepted as part of that transaction (undone
        if it aborts)."""
        self.post(lambda: self._settle_now(receiver, number, outcome, failed, txn))

    def settle_all(self, deliveries: Sequence[tuple[LinkHandle, int]], *, txn: Any) -> None:
        """Accept many deliveries in transaction ``txn`` with one call to the thread."""

        def settle() -> None:
            for receiver, number in deliveries:
                self._settle_now(receiver, number, Delivery.ACCEPTED, False, txn)

        self.call(settle)

    def _settle_now(
        self, receiver: LinkHandle, number: int, outcome: int, failed: bool, txn: Any
    ) -> None:
        pointer = receiver._deliveries.pop(number, None)
        if pointer is None:
            return  # settled already, or its link is gone (the broker took it back)
        if not pn_delivery_settled(pointer):  # the broker has not settled it first
            if txn is not None:
                local = pn_delivery_local(pointer)
                obj2dat([txn, _ACCEPTED_OUTCOME], pn_disposition_data(local))  # type: ignore[no-untyped-call]
                pn_delivery_update(pointer, TRANSACTIONAL_STATE)
            else:
                if failed:
                    pn_disposition_set_failed(pn_delivery_local(pointer), True)
                pn_delivery_update(pointer, outcome)
        pn_delivery_settle(pointer)

    def browse(self, source: str, options: Sequence[LinkOption], batch: int = 500) -> list[Message]:
        """Every message a ``copy`` receiver sees on ``source`` now, in queue order: grant
        ``batch`` credit in drain mode until a drain ends with fewer messages than that
        (the broker answers a drain at once with what it has)."""
        seen: list[Message] = []
        cell: list[LinkHandle] = []

        def collect(message: Message, number: int) -> None:
            seen.append(message)
            # A copy: settling takes nothing from the queue.
            self._settle_now(cell[0], number, Delivery.ACCEPTED, False, None)

        cell.append(self.open_receiver(source, collect, options=list(options), restore=False))
        try:
            while True:
                before = len(seen)
                if not self.drain(cell[0], batch):
                    raise ConnectionFailedError(
                        f"AMQP broker {self.address} did not answer a browse of {source!r} "
                        f"within {self._timeout} s"
                    )
                if len(seen) - before < batch:
                    return list(seen)
        finally:
            self.close_link(cell[0])

    # ----------------------------------------------------------- transactions
    def open_coordinator(self) -> LinkHandle:
        """A link to the broker's transaction coordinator (one per JMS session, as Qpid
        JMS does); a broker without one refuses the attach, which raises here."""

        def attach() -> tuple[LinkHandle, Future[None]]:
            options = _Coordinator()
            coordinator = self._engine.create_link(
                False, None, self.link_name("coordinator"), options
            )
            tracked = self._track(coordinator, "the transaction coordinator", None)
            tracked[0]._recipe = (False, None, options)
            return tracked

        handle, attached = self.call(attach)
        self._wait_attached(attached, "the transaction coordinator")
        return handle

    def _control(
        self,
        coordinator: LinkHandle,
        descriptor: symbol,
        value: list[Any],
        sent: list[bool] | None = None,
    ) -> tuple[int, Any, str]:
        def transfer() -> Future[tuple[int, Any, str]]:
            link = self._link_of(coordinator)
            delivery = link.send(Message(body=Described(descriptor, value)))
            if sent is not None:
                sent.append(True)
            outcome: Future[tuple[int, Any, str]] = Future()
            self._controls[delivery] = outcome
            return outcome

        return self._await(self.call(transfer), "answer a transaction request")

    def declare(self, coordinator: LinkHandle) -> Any:
        """Start a transaction; returns its id."""
        state, data, reason = self._control(coordinator, _DECLARE, [None])
        if state != DECLARED or not data:
            raise JMSException(f"AMQP broker {self.address} refused a transaction: {reason}")
        txn = data[0]
        # A copy: Proton decodes binary as a memoryview of its input buffer, which later
        # frames overwrite. Kept as a view, the id had become another by the discharge
        # under load (Artemis: "AMQ119014: Transaction not found", connection closed).
        return bytes(txn) if isinstance(txn, memoryview) else txn

    def discharge(self, coordinator: LinkHandle, txn: Any, *, fail: bool) -> None:
        """End transaction ``txn``: commit, or with ``fail`` roll back. A refused commit
        raises TransactionRolledBackError (the broker rolled it back); a commit whose
        outcome was lost with the connection raises TransactionInDoubtError."""
        sent: list[bool] = []
        try:
            state, _data, reason = self._control(coordinator, _DISCHARGE, [txn, fail], sent)
        except ConnectionFailedError as exc:
            if fail or not sent:
                raise
            raise TransactionInDoubtError(
                f"AMQP commit to {self.address} got no outcome: it may have taken effect ({exc})"
            ) from exc
        if state != Delivery.ACCEPTED:
            if fail:
                raise JMSException(f"AMQP broker {self.address} refused a rollback: {reason}")
            raise TransactionRolledBackError(
                f"AMQP broker {self.address} rolled the transaction back: {reason}"
            )

    # ---------------------------------------------------------------- closing
    def close_link(
        self,
        handle: LinkHandle,
        *,
        keep: bool = False,
        wait: bool = False,
        before: Callable[[], None] | None = None,
        on_late: Callable[[Message], None] | None = None,
    ) -> None:
        """Close a link; with ``keep`` only detach it, so that the broker keeps what the
        link stands for (a durable subscription). With ``wait``, return once the broker
        has answered: a link name used again (a durable subscription's) must not be
        attached while the broker still holds the old link, or the attach is never
        answered; and an unsubscribe is done only when the broker has deleted it.
        ``before`` runs on the connection's thread right before the close, so that no
        delivery can arrive between the two; ``on_late`` is told of each transfer the
        broker sent before it read the close (it is released, unseen)."""

        def close() -> Future[None] | None:
            link = handle._link
            if link is None:
                handle._closed = True
                if self._lost_links.pop(id(handle), None) is not None:
                    handle._release()  # lost with a connection: not attached again
                return None
            if before is not None:
                before()
            handle._closed = True
            handle._on_message = None
            handle._on_flow = None
            handle._late = on_late
            answered: Future[None] | None = None
            if wait and not link.state & _REMOTE_CLOSED:
                answered = self._detaching[link] = Future()
            if keep:
                link.detach()
            else:
                link.close()
            if link.state & _REMOTE_CLOSED:
                self._let_go(link)
            return answered

        if handle.is_sender:
            self.flush(handle)
        answered = self.call(close)
        if answered is not None:
            try:
                answered.result(self._timeout)
            except TimeoutError:
                log.warning("AMQP broker %s did not answer a link's detach", self.address)
            except JMSException:
                pass  # the connection is gone, and the link with it

    def _let_go(self, link: Link) -> None:
        """Both ends have closed ``link``: drop what refers to it, here on the connection's
        thread. Deliveries never settled went back to the broker with the link."""
        handle = self._handles.pop(Driver.key_of(link), None)
        if handle is not None:
            handle._release()

    def close(self) -> None:
        """Close the connection and let its thread end: once the broker has answered the
        close, or after the timeout without waiting for it."""
        if self._closing:
            return
        if self._up:
            for handle in [h for h in list(self._handles.values()) if h.is_sender]:
                self.flush(handle)
        self._closing = True
        self._stop.set()  # a wait between reconnect attempts ends

        def shut_down() -> None:
            if self.connection is not None:
                self.connection.close()

        if self._thread.is_alive():
            self._calls.append((shut_down, None))
            if self._wake is not None:
                self._wake()
            elif self._driver is not None and self._opened.done():
                self._driver.stop()  # a reconnect attempt under way: no need to finish it
            # A peer that never opened will not answer the close either (a port of
            # another protocol): no reason to wait the whole timeout for it.
            opened = self._opened.done() and self._opened.exception() is None
            self._thread.join(self._timeout if opened else 1.0)
        driver = self._driver
        if self._thread.is_alive() and driver is not None:  # the broker never answered
            driver.stop()
            self._thread.join(1.0)


class _Coordinator(LinkOption):
    """A sender's target that is the broker's transaction coordinator."""

    def apply(self, link: Link) -> None:
        link.target.type = Terminus.COORDINATOR
        link.target.capabilities.put_object(symbol("amqp:local-transactions"))


class Capability(LinkOption):
    """The node's kind as Qpid JMS announces it (``queue``, ``topic``...) on the link's
    target (a sender) or source (a receiver), so that Artemis creates the right kind of
    address for a name it has not seen (anycast for a queue)."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = kinds

    def apply(self, link: Link) -> None:
        terminus = link.source if link.is_receiver else link.target
        data = terminus.capabilities
        if len(self.kinds) == 1:
            data.put_symbol(symbol(self.kinds[0]))
            return
        # More than one: an array. Symbols put one after the other encode a list the
        # broker cannot read (Artemis: "List incorrectly encoded").
        data.put_array(False, Data.SYMBOL)
        data.enter()
        for kind in self.kinds:
            data.put_symbol(symbol(kind))
        data.exit()


def _reason(condition: Any, default: str) -> str:
    return f"{condition.name}: {condition.description}" if condition else default


class _Events:
    """Proton's events for one connection, on its thread. The driver calls ``on_<event>``
    where this class has it and skips the rest."""

    def __init__(self, transport: AmqpTransport) -> None:
        self._transport = transport

    def on_wake(self) -> None:
        self._transport._run_calls()

    def next_timer(self) -> float | None:
        timers = self._transport._timers
        return timers[0][0] if timers else None

    def on_timer(self) -> None:
        self._transport._run_timers()

    # ------------------------------------------------------------- connection
    def on_connection_remote_open(self, event: Any) -> None:
        properties = event.connection.remote_properties or {}
        if properties.get(_ESTABLISHMENT_FAILED):
            return  # the broker's close follows, with the reason
        self._transport._connection_opened()

    def on_connection_remote_close(self, event: Any) -> None:
        transport = self._transport
        connection = event.connection
        condition = connection.remote_condition
        if condition is None:
            if not connection.state & _LOCAL_CLOSED:  # the broker's, not an answer to ours
                transport._fail(
                    ConnectionFailedError(f"AMQP broker {transport.address} closed the connection")
                )
        else:
            container = transport.container_id
            if container and condition.name == "amqp:invalid-field":
                transport._fail(
                    InvalidClientIDError(
                        f"client id {container!r} is in use on AMQP broker "
                        f"{transport.address}: {condition.description}"
                    )
                )
            else:
                transport._fail(
                    ConnectionFailedError(
                        f"AMQP broker {transport.address} closed the connection: "
                        f"{_reason(condition, '')}"
                    )
                )
        if not connection.state & _LOCAL_CLOSED:
            connection.close()

    def on_transport_error(self, event: Any) -> None:
        self._lost(event)

    def on_transport_tail_closed(self, event: Any) -> None:
        connection = event.connection
        if connection is not None and connection.state & Endpoint.LOCAL_ACTIVE:
            self._lost(event)

    def _lost(self, event: Any) -> None:
        """The socket is gone: say why, once (refused credentials are a security error)."""
        transport = self._transport
        if transport._closing:
            return
        condition = event.transport.condition if event.transport is not None else None
        hint = None
        if (
            condition is not None
            and "framing-error" in str(condition.name)
            and not transport._opened.done()
        ):
            # Another protocol's bytes (Proton quotes them all): name the protocol. Not
            # once the broker opened the connection: that port speaks AMQP, the error is
            # a cut ("connection aborted"), and a probe would only delay the reconnect.
            host, port = transport._member
            hint = wrong_port_hint(host, port, "AMQP 1.0") if transport._tls is None else None
        if hint is not None:
            text = hint
        elif condition is not None:
            text = _reason(condition, "")
        elif not transport._opened.done():
            text = "the broker closed the socket before the connection opened"
        else:
            text = "the broker closed the socket"
        security = condition is not None and "unauthorized" in str(condition.name)
        error_type = JMSSecurityError if security else ConnectionFailedError
        transport._fail(error_type(f"AMQP connection to {transport.address} failed: {text}"))

    # ---------------------------------------------------------------- session
    def on_session_remote_close(self, event: Any) -> None:
        """A broker that refuses an attach by ending the whole session (RabbitMQ does,
        e.g. PRECONDITION_FAILED on a queue declared otherwise): every link of it waiting
        to attach fails with the broker's reason, instead of timing out. A session ended
        with an error ends the connection, as Proton's own handler does."""
        session = event.session
        condition = session.remote_condition
        text = _reason(condition, "session ended")
        text += inequivalent_note(text)
        transport = self._transport
        attaching = transport._attaching
        told = False
        for link in [link for link in attaching if link.session == session]:
            future = attaching.pop(link)
            if not future.done():
                future.set_exception(
                    JMSException(f"AMQP broker {transport.address} refused a link: {text}")
                )
                told = True
        if not session.state & _LOCAL_CLOSED:
            session.close()
        if condition is not None:
            # Once, where it is news: a caller waiting for the link raises it already.
            level = logging.DEBUG if told else logging.ERROR
            log.log(level, "AMQP broker %s ended a session: %s", transport.address, text)
            event.connection.close()

    # ------------------------------------------------------------------ links
    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if self._transport._restoring:
            self._transport._restoring.pop(Driver.key_of(link), None)
        if link.state & Endpoint.LOCAL_ACTIVE:
            attached = self._transport._attaching.pop(link, None)
            if attached is not None and not attached.done():
                attached.set_result(None)

    def on_link_remote_detach(self, event: Any) -> None:
        self._answered(event.link)

    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        condition = link.remote_condition
        if condition is not None:
            transport = self._transport
            reason = _reason(condition, "refused")
            refused = JMSException(f"AMQP broker {transport.address} refused a link: {reason}")
            attached = transport._attaching.pop(link, None)
            if attached is not None and not attached.done():
                attached.set_exception(refused)
            if transport._restoring.pop(Driver.key_of(link), None) is not None:
                # A link attached again after a reconnect, refused: nobody waits for it.
                log.error("AMQP %s: link %s not restored: %s", transport.address, link.name, reason)
                transport._on_lost(refused)
        self._answered(link)
        if not link.state & _LOCAL_CLOSED:
            link.close()

    def _answered(self, link: Link) -> None:
        transport = self._transport
        answered = transport._detaching.pop(link, None)
        if answered is not None and not answered.done():
            answered.set_result(None)
        handle = transport._handles.get(Driver.key_of(link))
        if handle is not None and handle._closed:
            transport._let_go(link)

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        transport = self._transport
        if link.is_sender:
            handle = transport._handles.get(Driver.key_of(link))
            if handle is not None and link.credit > 0:
                handle.credit.set()
            return
        drained = transport._draining.get(link)
        if drained is not None and link.credit == 0:
            del transport._draining[link]
            link.drain_mode = False
            if not drained.done():
                drained.set_result(None)
        handle = transport._handles.get(Driver.key_of(link))
        if handle is not None and handle._on_flow is not None:
            handle._on_flow()

    # ------------------------------------------------------------- deliveries
    def on_delivery(self, pointer: Any, link_key: int) -> None:
        """A delivery event (``pointer``: Proton's C delivery)."""
        handle = self._transport._handles.get(link_key)
        link = handle._link if handle is not None else None
        if handle is None or link is None:  # a link already let go of
            delivery = Delivery.wrap(pointer)  # type: ignore[no-untyped-call]
            link = delivery.link
            if link.is_receiver and delivery.readable and not delivery.partial:
                link.recv(delivery.pending)
                link.advance()
                delivery.update(Delivery.RELEASED)
                delivery.settle()
            return
        if not handle.is_sender:
            self._received(handle, link, pointer)
            return
        delivery = Delivery.wrap(pointer)  # type: ignore[no-untyped-call]
        if delivery.updated:
            self._answer(handle, link, delivery)

    def _received(self, handle: LinkHandle, link: Link, pointer: Any) -> None:
        if pn_delivery_aborted(pointer):
            pn_delivery_settle(pointer)
            return
        if not pn_delivery_readable(pointer) or pn_delivery_partial(pointer):
            return
        message = IncomingMessage()
        message.decode(link.recv(pn_delivery_pending(pointer)))
        link.advance()
        callback = handle._on_message
        if callback is None:
            # Closed here, and the broker sent it before it read the close: back, unseen.
            late = handle._late
            if late is not None:
                late(message)
            pn_delivery_update(pointer, Delivery.RELEASED)
            pn_delivery_settle(pointer)
            return
        number = next(self._transport._delivery_numbers)
        handle._deliveries[number] = pointer
        callback(message, number)

    def _answer(self, handle: LinkHandle, link: Link, delivery: Delivery) -> None:
        """The broker's outcome of a transfer: a send's, or a transaction request's."""
        transport = self._transport
        state = delivery.remote_state
        if state:
            transport._answered_transfer(handle, link, delivery)
        control = transport._controls.pop(delivery, None) if transport._controls else None
        if control is not None and not control.done():
            reason = _reason(delivery.remote.condition, "no reason given")
            control.set_result((state, delivery.remote.data, reason))
        outcome = transport._outcomes.pop(delivery, None) if transport._outcomes else None
        if outcome is not None and not outcome.done():
            if state == Delivery.ACCEPTED:
                outcome.set_result(None)
            elif state == Delivery.REJECTED:
                reason = _reason(delivery.remote.condition, "rejected")
                outcome.set_exception(JMSException(f"AMQP broker refused a send: {reason}"))
            elif state in (Delivery.RELEASED, Delivery.MODIFIED):
                outcome.set_exception(JMSException("AMQP broker released a send unprocessed"))
            else:
                transport._outcomes[delivery] = outcome  # not an outcome yet
        if delivery.settled:
            delivery.settle()
