"""One AMQP 1.0 connection's life on its own thread: connect, lose, connect again, close.

The thread connects to the first member that answers (a ``failover:`` URL's members in
turn) and runs Proton's engine (``driver.py``) until the connection ends, handing the
engine's events to ``events.Events``. Under a reconnect policy (``failover:`` URLs,
jmslike/spi/reconnect.py) the same thread outlives its connections: when one is lost it
fails what waited for the broker (a send or commit on its way may or may not have been
taken, and its caller is told), raises ``generation`` (deliveries of the lost connection
can no longer be settled), tells the owner, and connects again, to each member in turn
with back-off. The new connection gets every open link again under its name, before
calls queued meanwhile run on it; the owner then grants the credit it had asked for
(docs/providers.md, "Reconnecting").

:class:`ConnectionLifecycle` holds the state the thread and the events share (open
links' handles, and the requests that wait for the broker's answer); the operations on
links that other threads ask for are its subclass's, ``transport.AmqpTransport``.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from proton import Delivery, Endpoint, Link, symbol

from jmslike.errors import ConnectionFailedError, JMSException, SendInDoubtError
from jmslike.placement import FREE, Placement
from jmslike.spi.diagnose import wrong_port_hint
from jmslike.spi.reconnect import Reconnect
from jmslike_amqp.calls import NUMBERS, CallQueue
from jmslike_amqp.driver import Driver
from jmslike_amqp.events import Events
from jmslike_amqp.links import LinkHandle
from jmslike_amqp.outcomes import Outcome

__all__ = ["SOLE_CONNECTION", "ConnectionLifecycle"]

log = logging.getLogger("jmslike.amqp")

_SNIFF_AFTER = 3.0
"""Seconds without the broker's open before the port is sniffed (jmslike.spi.diagnose)."""

SOLE_CONNECTION = symbol("sole-connection-for-container")
_REMOTE_CLOSED = Endpoint.REMOTE_CLOSED


class ConnectionLifecycle(CallQueue):
    """An AMQP connection and the thread that drives it: opened by the constructor, made
    again under a reconnect policy, closed by ``close``."""

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
        placement: Placement = FREE,
    ) -> None:
        super().__init__()
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
        self._attached_again: dict[int, LinkHandle] = {}
        """Receivers the broker closed on its own, attached again and not answered yet."""
        self._stop = threading.Event()
        """Set by close: ends a wait between reconnect attempts."""
        self._idle_timeout = idle_timeout
        self._tls = (ssl_ca_file, ssl_verify_host) if ssl else None
        self._virtual_host = virtual_host
        self.container_id = container_id
        self._timeout = timeout
        self._on_lost = on_lost
        self._delivery_numbers = itertools.count(1)
        # The rest is the connection's thread's, keyed by Proton objects.
        self._handles: dict[int, LinkHandle] = {}
        """Open links' handles by the address of the C link (``Driver.key_of``): a
        delivery event finds its link's handle without wrapping the link."""
        self._outcomes: dict[Delivery, Outcome] = {}
        """Persistent transfers outside a transaction -> where their answer goes."""
        self._controls: dict[Delivery, Future[tuple[int, Any, str]]] = {}
        """Transaction control transfers (declare, discharge) -> their outcome."""
        self._attaching: dict[Link, Future[None]] = {}
        self._draining: dict[Link, Future[None]] = {}
        """Receivers asked to drain -> resolved once the broker has used up the credit."""
        self._detaching: dict[Link, Future[None]] = {}
        """Links whose close or detach the caller waits for the broker to answer."""
        self._flushing: dict[Link, Future[None]] = {}
        """Senders being closed -> resolved once the broker has answered every transfer."""
        self._opened: Future[None] = Future()
        self._container_id = container_id or f"jmslike-{os.getpid()}-{next(NUMBERS)}"
        self._credentials = (user, password)
        self._member = self._members[0]
        """The member connected to (or tried) now."""
        self._driver: Driver | None = None
        """The engine and socket, made and dropped on the connection's thread."""
        self.connection: Any = None
        self._thread = placement.thread(self._run, f"jmslike-amqp-{self.address}")
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
            if isinstance(exc, JMSException):  # raised on purpose, its reason in its text
                log.error("AMQP connection to %s given up: %s", self.address, exc)
                log.debug("where it was raised", exc_info=True)
            else:
                log.exception("AMQP connection thread for %s stopped", self.address)
            self._reconnect = Reconnect()
            self._fail(ConnectionFailedError(f"AMQP connection to {self.address}: {exc}"))
        finally:
            self._closing = True
            self._fail(ConnectionFailedError(f"AMQP connection to {self.address} is closed"))
            self._forget_links()

    @property
    def gone(self) -> bool:
        """The connection is lost for good, or closing: nothing sent on it will reach the
        broker again, so a transaction open on it can never be committed."""
        return self._closing

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
            Events(self),
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
                    if handle.before_attach is not None:
                        try:
                            handle.before_attach()
                        except Exception as exc:  # the attach says what is missing
                            log.warning(
                                "AMQP %s: preparing link %s again failed: %s",
                                self.address,
                                handle.name,
                                exc,
                            )
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
                self._attached_again.clear()
            self._driver = self.connection = None
            driver.release()
        return up

    def _connection_opened(self, product: str = "") -> None:
        """The broker (``product``, from its open frame) opened the connection (the first
        one, or one made again)."""
        self._up = True
        if self._driver is not None:
            self._driver.keep_quick_ack(product)
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
                if not handle._reattaching:  # else what waits for the attach is kept
                    handle.credit_lost = 0 if link.drain_mode else max(link.credit, 0)
                handle._reattaching = False
            handle._link = None
            handle._deliveries.clear()
            handle._unsettled.clear()
            if handle.is_sender:
                handle.credit.clear()  # sends wait for the new link's credit
            self._lost_links[id(handle)] = handle
        self._handles.clear()
        self._restoring.clear()
        self._attached_again.clear()
        self._timers.clear()
        self._soon_due = False  # its timer went with the others: the next post_soon asks again
        if self._on_interrupted is not None:
            try:
                self._on_interrupted()
            except Exception:
                log.exception("AMQP %s: dropping stale deliveries failed", self.address)

    def _fail_requests(self, error: JMSException) -> None:
        """Fail every request waiting for the broker's answer. A send whose transfer was
        made (so possibly written) is in doubt, not simply failed: see SendInDoubtError."""
        for outcome in self._outcomes.values():
            if not outcome.done():
                in_doubt = SendInDoubtError(
                    f"{error}; a persistent send was written and its outcome lost: the "
                    "broker may have stored it"
                )
                in_doubt.__cause__ = error
                outcome.set_exception(in_doubt)
        futures: list[Future[Any]] = [*self._controls.values()]
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

    # ---------------------------------------------------------------- closing
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

    def _attach_again(
        self, handle: LinkHandle, link: Link, reason: str, *, mendable: bool = True
    ) -> None:
        """The connection's thread: the broker closed an attached receiver on its own
        (seen on Classic: a commit naming a transaction it did not know made it close
        the link of the consumer whose messages were in it). Its unsettled deliveries
        went back to the queue with it, so they are stale here (``epoch``); the link is
        attached again under its name and its owner drops what it buffered and asks for
        its credit again. Left closed, the consumer would wait for ever for messages the
        broker no longer sent it. Not a temporary destination's link (it is gone with
        its destination), nor one closed for a reason a new attach cannot mend
        (``mendable`` False: its queue deleted, access withdrawn)."""
        driver = self._driver
        if (
            not mendable
            or handle._recipe is None
            or handle._closed
            or self._closing
            or driver is None
        ):
            # A link without a source feeds no consumer (unsubscribe's look-up of a name
            # the broker does not know: it attaches, then closes it "not-found").
            if (not mendable or handle._recipe is None) and handle.address:
                log.error(
                    "AMQP broker %s closed receiver link %s on %s (%s): its consumer gets "
                    "nothing more",
                    self.address,
                    handle.name,
                    handle.address,
                    reason,
                )
            return
        log.warning(
            "AMQP broker %s closed receiver link %s on %s (%s): attaching it again; what it "
            "held went back to the queue",
            self.address,
            handle.name,
            handle.address,
            reason,
        )
        handle.credit_lost = 0 if link.drain_mode else max(link.credit, 0)
        drained = self._draining.pop(link, None)
        if drained is not None and not drained.done():
            drained.set_result(None)  # nothing more comes for that credit
        handle.epoch += 1
        handle._reattaching = True
        handle._deliveries.clear()
        self._tell_broker_closed(handle, False)
        receiver, address, options = handle._recipe

        def attach() -> None:
            # After this pass's output: Proton writes a pass's attaches before its
            # detaches, and Classic never answered an attach under the name of a link
            # whose detach came after it.
            # Until then the handle stays under the old link's key: a connection lost
            # meanwhile attaches it again with the others.
            if handle._closed or self._driver is not driver or self._closing:
                return
            self._handles.pop(Driver.key_of(link), None)
            fresh = driver.create_link(receiver, address, handle.name, options)
            handle._link = fresh
            self._handles[Driver.key_of(fresh)] = handle
            self._restoring[Driver.key_of(fresh)] = handle
            self._attached_again[Driver.key_of(fresh)] = handle

        self.call_later(0.0, attach)

    def _tell_broker_closed(self, handle: LinkHandle, attached: bool) -> None:
        """The connection's thread: tell a link's owner it was closed by the broker and is
        attached again (``_attach_again``). Credit waits for the broker's attach: Classic
        closed the whole connection (amqp:decode-error) on a flow frame for a link it was
        still attaching."""
        if attached:
            handle._reattaching = False
        told = handle._on_broker_close
        if told is None:
            return
        try:
            told(attached)
        except Exception:
            log.exception("AMQP %s: re-attaching link %s failed", self.address, handle.name)

    def _let_go(self, link: Link, *, free: bool = True) -> None:
        """Both ends have closed ``link``: drop what refers to it, here on the connection's
        thread. Deliveries never settled went back to the broker with the link.

        Proton keeps a closed link (and the record behind its Python wrapper) until it
        is freed or its connection is: a service replying to a new temporary queue per
        request grew by a sender link each time (2 KiB of RSS on Artemis), and a
        connection by a receiver link per consumer closed (docs/reliability.md, Soak).
        ``free=False`` where events of the link may still wait in the collector (the
        broker's close read in the same batch as deliveries not yet handed out): those
        must not meet a freed link, so such a link stays until the connection goes."""
        handle = self._handles.pop(Driver.key_of(link), None)
        if handle is not None:
            handle._release()
        if free:
            link.free()

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
