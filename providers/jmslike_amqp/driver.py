"""Proton's AMQP engine over one socket: the I/O loop of one jmslike AMQP connection.

Proton's ``Container`` runs a general reactor: every event of the engine becomes a
Python ``Event`` with its connection, session, link and delivery wrapped, and is passed
to the application's handler, then to a global handler that re-reads the socket's
interest and timers, and an idle loop adds events of its own. Measured on a receive of
20,000 messages (docs/performance.md), that machinery took more than half of the
connection thread's time, and raw Proton's own receiver reached 13,500 msg/s with it
against 34,000 msg/s with the engine driven directly. So jmslike drives the engine
itself, as Proton's C "connection driver" does: a ``Connection`` bound to a
``Transport`` and a ``Collector``, bytes moved between the socket and the transport,
and each collected event handed to the one method of the handler that wants it.

Thread contract: everything here runs on the thread that calls :meth:`Driver.run`,
except :meth:`Driver.wake`, which any thread may call to have the loop run the
handler's ``on_wake`` (its queue of work for this thread).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from cproton import PN_DELIVERY, addressof
from proton import (
    SSL,
    Collector,
    Condition,
    Connection,
    Endpoint,
    Event,
    EventType,
    Link,
    Session,
    SSLDomain,
    Transport,
)
from proton.reactor import LinkOption

from jmslike.spi.wakes import hold_wakes, release_wakes
from jmslike_amqp.links import OwnSession
from jmslike_amqp.pncalls import (
    collector_peek,
    collector_pop,
    delivery_link,
    event_delivery,
    event_type,
    of_collector,
    to_event,
)

__all__ = ["Driver", "is_classic"]

log = logging.getLogger("jmslike.amqp")

_READ, _WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)
_END_ANSWER_GRACE = 1.0
"""Seconds an own session's end may go unanswered before the links waiting for it
begin anyway (its answer comes within milliseconds, or never)."""


def is_classic(product: str) -> bool:
    """Whether an open frame's ``product`` is ActiveMQ Classic ("ActiveMQ"; Artemis says
    "apache-activemq-artemis")."""
    lowered = product.lower()
    return "activemq" in lowered and "artemis" not in lowered


class Driver:
    """One AMQP connection's engine and socket. ``handler`` has ``on_<event>`` methods
    (Proton's event names, e.g. ``on_link_flow``) taking the event, ``on_wake()``,
    ``next_timer()`` (the monotonic time its next timer is due, or None) with
    ``on_timer()`` (called once it is due), and
    ``on_delivery(delivery, link)``: a delivery event, the one that comes with every
    message, is not wrapped into a Proton ``Event`` (which wraps the delivery, its link,
    session, connection and transport, each with a reference count and a record lookup:
    a quarter of the connection thread's time in a send of 20,000 messages), nor is the
    delivery wrapped: it comes as Proton's C pointer, and its link too, both as
    ``pncalls`` takes them (``pncalls.key_of(link)`` is :meth:`key_of`'s name for it;
    ``pncalls.to_delivery`` gives the pointer Proton's binding takes)."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Any,
        *,
        container_id: str,
        user: str | None,
        password: str | None,
        tls: tuple[str | None, bool] | None,
        virtual_host: str | None,
        desired_capabilities: Sequence[Any] | None,
        timeout: float,
        idle_timeout: float = 0.0,
    ) -> None:
        self._host, self._port, self._timeout = host, port, timeout
        self._handler = handler
        self.quick_ack = _QUICKACK is not None
        """``TCP_QUICKACK`` after every read: the kernel acknowledges what came in at once
        instead of up to 40 ms later. ActiveMQ Classic leaves Nagle's algorithm on at its
        end (its connector's ``tcpNoDelay``), so a frame it writes while its previous one
        is unacknowledged at the TCP level waited for that delayed acknowledgement: its
        connection set-up (SASL, then open) took 47 ms here against 3 ms with this.
        On until the broker is known, then kept for Classic only (``keep_quick_ack``)."""
        self._methods: dict[int, Callable[[Any], None]] = {}
        """Event type number -> the handler's method for it; events without one are
        skipped without being wrapped."""
        for kind in list(EventType.TYPES.values()):
            method = getattr(handler, kind.method, None)
            if method is not None and kind.number != PN_DELIVERY:
                self._methods[kind.number] = method
        self._on_delivery: Callable[[Any, Any], None] = handler.on_delivery
        self.connection = Connection()
        self.collector = Collector()
        self.connection.collect(self.collector)
        self._collector_pointer = of_collector(self.collector._impl)
        self.connection.container = container_id
        self.connection.hostname = virtual_host or host
        if desired_capabilities:
            self.connection.desired_capabilities = list(desired_capabilities)
        self.transport = Transport()
        sasl = self.transport.sasl()
        sasl.allow_insecure_mechs = True  # PLAIN over plain TCP, as the Container allows
        if user:
            self.connection.user = user
            self.connection.password = password or ""
        sasl.allowed_mechs("PLAIN" if user else "ANONYMOUS")
        if idle_timeout > 0:
            # Proton closes the connection when nothing came for this long, and sends
            # empty frames at half the broker's: a stalled peer or route is noticed.
            self.transport.idle_timeout = idle_timeout
        self.transport.bind(self.connection)
        if tls is not None:
            # TLS inside Proton's transport (OpenSSL): ``tls`` is the CA file to trust
            # (None: the system's) and whether the certificate must name ``host``.
            ca_file, verify_host = tls
            domain = SSLDomain(SSLDomain.MODE_CLIENT)
            if ca_file is not None:
                domain.set_trusted_ca_db(ca_file)
            mode = SSLDomain.VERIFY_PEER_NAME if verify_host else SSLDomain.VERIFY_PEER
            domain.set_peer_authentication(mode, ca_file)
            SSL(self.transport, domain).peer_hostname = host
        self._session: Any = None
        self._ending: dict[int, float] = {}
        """Own sessions (``OwnSession``) ended here whose end the broker has not answered
        yet, by :meth:`key_of`, with the time after which it is taken as lost: see
        :meth:`create_link`."""
        self._unbegun: list[Link] = []
        """Links of own sessions not begun yet because ``_ending`` was not empty."""
        self._socket: socket.socket | None = None
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._pipe_lock = threading.Lock()
        self._stopped = False
        self._write_closed = False

    @staticmethod
    def key_of(endpoint: Link | Session) -> int:
        """The key a delivery event gives for a link: the address of the C link (and the
        same for a session)."""
        return addressof(endpoint._impl)  # type: ignore[no-any-return]

    # -------------------------------------------------------------- any thread
    def wake(self) -> None:
        """Have the loop call the handler's ``on_wake`` soon (from any thread)."""
        with self._pipe_lock, contextlib.suppress(BlockingIOError, OSError):
            if self._wake_write >= 0:  # else released: the loop is over
                os.write(self._wake_write, b"\0")  # a full pipe: a wake-up is pending

    def stop(self) -> None:
        """End the loop without waiting for the broker (from any thread)."""
        self._stopped = True
        self.wake()

    # ---------------------------------------------------------- the loop's own
    def open(self) -> None:
        self.connection.open()

    def session(self) -> Any:
        """The connection's shared session (opened on first use), as the Container keeps;
        a link with ``OwnSession`` gets one of its own instead."""
        if self._session is None:
            self._session = self.connection.session()
            self._session.open()
        return self._session

    def create_link(
        self,
        receiver: bool,
        address: str | None,
        name: str,
        options: LinkOption | list[LinkOption] | None = None,
    ) -> Link:
        """A receiver from ``address`` (its source) or a sender to it (its target), on the
        connection's session (or, with ``OwnSession`` among ``options``, on a new one),
        with ``options`` applied, opened.

        A new own session is begun only once the broker has answered the end of every own
        session ended before it (or that answer is overdue: :meth:`_ends_overdue`). Proton
        frees a session's channel number as soon as it writes the end and gives the next
        session the lowest free number, so the next consumer would begin on the channel
        whose end is still unanswered, and Proton, which maps what comes in by channel,
        would take a late answer to the old session for the new one's. Such a link is
        made now and begun by :meth:`session_ended`.
        """
        listed = options if isinstance(options, list) else [options] if options else []
        own = any(isinstance(option, OwnSession) for option in listed)
        session = self.connection.session() if own else self.session()
        link = session.receiver(name) if receiver else session.sender(name)
        if address:
            (link.source if receiver else link.target).address = address
        for option in listed:
            if option.test(link):
                option.apply(link)
        if own and self._ending:
            self._unbegun.append(link)
            return link
        if own:
            session.open()
        link.open()
        return link

    def end_own_session(self, link: Link) -> None:
        """End ``link``'s session if it is the link's own (``OwnSession``), once the broker
        has answered the link's detach: with the detach and the end written together,
        RabbitMQ 3.10 now and then answered neither (once in a few hundred consumers made
        and closed in a loop), and the consumer's close waited its whole timeout for the
        detach's answer. One never begun is only forgotten: the broker has nothing to
        answer."""
        session = link.session
        if session == self._session or session.state & Endpoint.LOCAL_CLOSED:
            return
        if link in self._unbegun:
            self._unbegun.remove(link)
            return
        session.close()
        self._ending[self.key_of(session)] = time.monotonic() + _END_ANSWER_GRACE

    def session_ended(self, session: Any, *, free: bool) -> None:
        """The broker ended ``session`` (its answer to our end, or its own): ``free`` it if
        it was a link's own (its link was let go of when the detach was answered, which
        comes before the end); once no own session's end is outstanding, the links
        waiting for one begin."""
        self._ending.pop(self.key_of(session), None)
        if free and session != self._session:
            session.free()
        if not self._ending:
            self._begin_waiting()

    def _begin_waiting(self) -> None:
        waiting, self._unbegun = self._unbegun, []
        for link in waiting:
            link.session.open()
            link.open()

    def _end_due(self) -> float | None:
        """When the oldest unanswered end of an own session is taken as lost, if any."""
        return min(self._ending.values(), default=None)

    def _ends_overdue(self) -> None:
        """An own session's end went unanswered past its grace: RabbitMQ 3.10 now and then
        answers no end at all (one in several hundred in a loop of consumers made and
        closed), and the session is gone on its side; the links waiting for it begin.
        Such a session is not freed: Proton keeps it until the connection goes."""
        log.debug("AMQP broker %s:%s did not answer a session's end", self._host, self._port)
        self._ending.clear()
        self._begin_waiting()

    def run(self) -> None:
        """Connect, then move bytes and dispatch events until the transport closes (or
        :meth:`stop`). A socket that cannot connect closes the transport with the reason,
        which the handler hears as ``on_transport_error``."""
        selector = selectors.DefaultSelector()
        try:
            self._connect()
            selector.register(self._wake_read, _READ)
            if self._socket is not None:
                selector.register(self._socket, _READ)
            self._loop(selector)
        finally:
            selector.close()
            self.release()

    def keep_quick_ack(self, product: str) -> None:
        """The broker opened the connection as ``product``: quick TCP acknowledgements
        stay on for ActiveMQ Classic (Nagle at its end), off for the others (a system
        call a read saved)."""
        self.quick_ack = self.quick_ack and is_classic(product)

    def release(self) -> None:
        """Close the socket and the wake-up pipe (again: harmless)."""
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
        with self._pipe_lock:  # no wake() may write to a number the system gave again
            for fd in (self._wake_read, self._wake_write):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._wake_read = self._wake_write = -1

    def _connect(self) -> None:
        try:
            sock = socket.create_connection((self._host, self._port), self._timeout)
        except OSError as exc:
            self._io_failed(f"connect to {self._host}:{self._port}: {exc}")
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self._socket = sock

    def _io_failed(self, text: str) -> None:
        transport = self.transport
        if not transport.condition:
            transport.condition = Condition("proton:io", text)
        with contextlib.suppress(Exception):
            transport.close_tail()
        with contextlib.suppress(Exception):
            transport.close_head()

    def _loop(self, selector: selectors.BaseSelector) -> None:
        try:
            self._loop_holding_wakes(selector)
        finally:
            release_wakes()

    def _loop_holding_wakes(self, selector: selectors.BaseSelector) -> None:
        """The loop. The sessions' dispatchers that deliveries wake are woken as the
        thread goes to wait for the socket, not at once (``hold_wakes`` says why)."""
        transport = self.transport
        sock = self._socket
        interest = _READ
        collector = self._collector_pointer
        while not self._stopped:
            hold_wakes()
            self._dispatch()
            wanted = 0
            if sock is not None:
                self._write(sock)
                # Asking the transport for capacity and pending output makes it process
                # what it was given, which may collect events (an error, a close).
                wanted = (_READ if transport.capacity() > 0 else 0) | (
                    _WRITE if transport.pending() > 0 else 0
                )
            if transport.closed:
                self._dispatch()
                return
            if collector_peek(collector) is not None:
                continue  # handle those before waiting
            if sock is not None and transport.capacity() < 0 and transport.pending() == 0:
                # The broker closed the socket without AMQP's close (an abort), and the
                # handler has heard of it: nothing will come in again, and nothing is
                # left to go out. Without this the transport's head stayed open, and the
                # loop, its thread and its socket waited for ever once the failed
                # connection was closed (tests/integration/test_fuzz_brokers.py).
                transport.close_head()
                continue
            if sock is None:
                return  # never connected, and the transport says so: nothing to wait for
            if wanted != interest:
                if wanted:
                    if interest:
                        selector.modify(sock, wanted)
                    else:
                        selector.register(sock, wanted)
                else:
                    selector.unregister(sock)
                interest = wanted
            now = time.monotonic()
            end_due = self._end_due()
            if end_due is not None and end_due <= now:
                self._ends_overdue()
                continue  # links begun: their frames go out first
            deadline = transport.tick(now)
            timer = self._handler.next_timer()
            if end_due is not None:
                timer = end_due if timer is None else min(timer, end_due)
            if timer is not None and (not deadline or timer < deadline):
                deadline = timer
            timeout = max(0.0, deadline - now) if deadline else None
            release_wakes()
            for key, mask in selector.select(timeout):
                if key.fd == self._wake_read:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self._wake_read, 4096):
                            pass
                    self._handler.on_wake()
                elif mask & _READ:
                    self._read(sock)
            if timer is not None and timer <= time.monotonic():
                self._handler.on_timer()

    def _read(self, sock: socket.socket) -> None:
        """Read what the socket has (up to a few transport buffers: events are handled
        between reads, in batches)."""
        transport = self.transport
        for _ in range(8):
            capacity = transport.capacity()
            if capacity <= 0:
                return
            try:
                data = sock.recv(capacity)
            except BlockingIOError:
                return
            except OSError as exc:
                self._io_failed(f"read from {self._host}:{self._port}: {exc}")
                return
            if not data:
                transport.close_tail()  # the broker closed the socket
                return
            transport.push(data)
            if self.quick_ack:  # Linux clears it again as it sees fit: set after every read
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)  # type: ignore[arg-type]
            if len(data) < capacity:
                return  # the socket is empty for now

    def _write(self, sock: socket.socket) -> None:
        transport = self.transport
        pending = transport.pending()
        while pending > 0:
            try:
                sent = sock.send(transport.peek(pending) or b"")
            except BlockingIOError:
                return
            except OSError as exc:
                self._io_failed(f"write to {self._host}:{self._port}: {exc}")
                return
            transport.pop(sent)
            pending = transport.pending()
        if pending < 0 and not self._write_closed:  # nothing more will be written
            self._write_closed = True
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)

    def _dispatch(self) -> None:
        """Hand each collected event to the handler's method for its type (Proton's
        calls through ``pncalls``: they keep the interpreter lock)."""
        impl = self._collector_pointer
        methods = self._methods
        on_delivery = self._on_delivery
        while True:
            event = collector_peek(impl)
            if event is None:
                return
            number = event_type(event)
            if number == PN_DELIVERY:
                pointer = event_delivery(event)
                on_delivery(pointer, delivery_link(pointer))
            else:
                method = methods.get(number)
                if method is not None:
                    method(Event.wrap(to_event(event)))  # type: ignore[no-untyped-call]
            collector_pop(impl)
