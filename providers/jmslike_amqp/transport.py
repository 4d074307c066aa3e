"""One AMQP 1.0 connection, driven by a Proton container on a thread of its own.

Proton is single-threaded: its objects may only be touched by the thread running the
container. Every other thread (the application's, jmslike's dispatchers) hands work to it
with ``call(fn)``: the function is queued, the container is woken through Proton's
``EventInjector``, runs it, and ``call`` returns its result or raises its error. Incoming
messages are handed to the consumer's ``on_message`` callback on the container thread;
those callbacks only decode and buffer (the API's delivery sink never blocks and never
runs user code), so no application code runs there (docs/threading.md).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from proton import Delivery, Link, Message, symbol
from proton.handlers import MessagingHandler
from proton.reactor import ApplicationEvent, Container, EventInjector, LinkOption

from jmslike.errors import ConnectionFailedError, JMSException, JMSSecurityError

__all__ = ["AmqpTransport", "Capability"]

log = logging.getLogger("jmslike.amqp")

T = TypeVar("T")
MessageCallback = Callable[[Message, Delivery], None]

_NUMBERS = itertools.count(1)


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
    ) -> None:
        self.address = f"{host}:{port}"
        self._timeout = timeout
        self._on_lost = on_lost
        self._calls: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._receivers: dict[Link, MessageCallback] = {}
        self._outcomes: dict[Delivery, Future[None]] = {}
        self._opened: Future[None] = Future()
        self._closing = False
        self._handler = _Handler(self)
        self._container = Container(self._handler)
        self._container.container_id = f"jmslike-{next(_NUMBERS)}"
        self._injector = EventInjector()
        self._container.selectable(self._injector)
        scheme = "amqps" if ssl else "amqp"
        self._url = f"{scheme}://{host}:{port}"
        self._user, self._password = user, password
        self.connection: Any = None
        self._thread = threading.Thread(
            target=self._run, name=f"jmslike-amqp-{self.address}", daemon=True
        )
        self._thread.start()
        try:
            self._opened.result(timeout)
        except TimeoutError:
            self.close()
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not open the connection within {timeout} s"
            ) from None

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        try:
            self._container.run()
        except Exception as exc:  # the loop must report, not die silently
            log.exception("AMQP container for %s stopped", self.address)
            self._fail(ConnectionFailedError(f"AMQP connection to {self.address}: {exc}"))

    def _start(self) -> None:
        """On the container thread, at start: open the connection."""
        self.connection = self._container.connect(
            url=self._url,
            user=self._user,
            password=self._password,
            allowed_mechs="PLAIN" if self._user else "ANONYMOUS",
            reconnect=False,
        )

    def _fail(self, error: JMSException) -> None:
        opened = self._opened.done() and self._opened.exception() is None
        if not self._opened.done():
            self._opened.set_exception(error)
        for _fn, future in self._drain_calls():
            future.set_exception(error)
        for future in list(self._outcomes.values()):
            if not future.done():
                future.set_exception(error)
        self._outcomes.clear()
        if opened and not self._closing:
            self._closing = True  # once: the connection is gone
            self._on_lost(error)

    def _drain_calls(self) -> list[tuple[Callable[[], Any], Future[Any]]]:
        calls = list(self._calls)
        self._calls.clear()
        return calls

    # ------------------------------------------------------------------ calls
    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the container thread and return its result (or raise its error)."""
        if threading.current_thread() is self._thread:
            return fn()
        if self._closing:
            raise ConnectionFailedError(f"AMQP connection to {self.address} is closed")
        future: Future[T] = Future()
        self._calls.append((fn, future))
        self._injector.trigger(ApplicationEvent("jmslike_call"))
        try:
            return future.result(self._timeout)
        except TimeoutError:
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not answer within {self._timeout} s"
            ) from None

    def _run_calls(self) -> None:
        while self._calls:
            fn, future = self._calls.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the caller
                    future.set_exception(exc)

    # ---------------------------------------------------------------- links
    def open_receiver(self, source: str, on_message: MessageCallback, **options: Any) -> Link:
        """A receiver link with no credit yet (``flow`` grants it)."""

        def attach() -> Link:
            receiver = self._container.create_receiver(self.connection, source, **options)
            self._receivers[receiver] = on_message
            return receiver

        return self.call(attach)

    def open_sender(self, target: str | None, **options: Any) -> Link:
        return self.call(
            lambda: self._container.create_sender(self.connection, target, **options)
        )

    def send(self, sender: Link, message: Message, *, confirm: bool) -> None:
        """Send ``message``; with ``confirm``, wait for the broker's outcome (accepted, or
        an error naming the refusal)."""

        def transfer() -> Future[None] | None:
            delivery = sender.send(message)
            if not confirm:
                return None
            outcome: Future[None] = Future()
            self._outcomes[delivery] = outcome
            return outcome

        outcome = self.call(transfer)
        if outcome is not None:
            try:
                outcome.result(self._timeout)
            except TimeoutError:
                raise ConnectionFailedError(
                    f"AMQP broker {self.address} did not settle a send to {sender.target.address}"
                    f" within {self._timeout} s"
                ) from None

    def settle(self, delivery: Delivery, outcome: int, *, failed: bool = False) -> None:
        """Settle a received delivery: ``Delivery.ACCEPTED``, ``RELEASED`` (back to the
        queue, not counted as delivered), or ``MODIFIED`` with ``failed`` (back, counted)."""

        def done() -> None:
            if not delivery.settled:
                if failed:
                    delivery.local.failed = True
                delivery.update(outcome)
                delivery.settle()

        self.call(done)

    def flow(self, receiver: Link, credit: int) -> None:
        self.call(lambda: receiver.flow(credit))

    def close_link(self, link: Link) -> None:
        def close() -> None:
            self._receivers.pop(link, None)
            link.close()

        self.call(close)

    def close(self) -> None:
        """Close the connection and let the container thread end (within the timeout),
        then free the injector's pipe, which Proton leaves open."""
        if self._closing:
            return
        self._closing = True

        def shut_down() -> None:
            if self.connection is not None:
                self.connection.close()
            self._injector.close()  # with the connection gone, the container's loop ends

        if self._thread.is_alive():
            self._calls.append((shut_down, Future()))
            self._injector.trigger(ApplicationEvent("jmslike_call"))
            self._thread.join(self._timeout)
        if self._thread.is_alive():  # the broker never answered the close
            self._calls.append((self._container.stop, Future()))
            self._injector.trigger(ApplicationEvent("jmslike_call"))
            self._thread.join(1.0)
        for fd in self._injector.pipe:
            with contextlib.suppress(OSError):
                os.close(fd)


class Capability(LinkOption):
    """The node's kind as Qpid JMS announces it (``queue``, ``topic``...) on the link's
    target (a sender) or source (a receiver), so that Artemis creates the right kind of
    address for a name it has not seen (anycast for a queue)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def apply(self, link: Link) -> None:
        terminus = link.source if link.is_receiver else link.target
        terminus.capabilities.put_symbol(symbol(self.kind))


class _Handler(MessagingHandler):
    """Proton's events, on the container thread."""

    def __init__(self, transport: AmqpTransport) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self._transport = transport

    def on_start(self, event: Any) -> None:
        self._transport._start()

    def on_connection_opened(self, event: Any) -> None:
        if not self._transport._opened.done():
            self._transport._opened.set_result(None)

    def on_jmslike_call(self, event: Any) -> None:
        self._transport._run_calls()

    def on_message(self, event: Any) -> None:
        callback = self._transport._receivers.get(event.receiver)
        if callback is not None:
            callback(event.message, event.delivery)

    def on_accepted(self, event: Any) -> None:
        self._resolve(event.delivery, None)

    def on_rejected(self, event: Any) -> None:
        condition = event.delivery.remote.condition
        reason = f"{condition.name}: {condition.description}" if condition else "rejected"
        self._resolve(event.delivery, JMSException(f"AMQP broker refused a send: {reason}"))

    def on_released(self, event: Any) -> None:
        self._resolve(event.delivery, JMSException("AMQP broker released a send unprocessed"))

    def _resolve(self, delivery: Delivery, error: JMSException | None) -> None:
        outcome = self._transport._outcomes.pop(delivery, None)
        if outcome is not None and not outcome.done():
            if error is None:
                outcome.set_result(None)
            else:
                outcome.set_exception(error)

    def on_transport_error(self, event: Any) -> None:
        self._lost(event)

    def on_disconnected(self, event: Any) -> None:
        self._lost(event)

    def _lost(self, event: Any) -> None:
        """The socket is gone: say why, once (refused credentials are a security error)."""
        transport = self._transport
        if transport._closing:
            return
        condition = event.transport.condition if event.transport is not None else None
        if condition is not None:
            text = f"{condition.name}: {condition.description}"
        elif not transport._opened.done():
            text = "the broker closed the socket before the connection opened"
        else:
            text = "the broker closed the socket"
        security = condition is not None and "unauthorized" in str(condition.name)
        error_type = JMSSecurityError if security else ConnectionFailedError
        transport._fail(error_type(f"AMQP connection to {transport.address} failed: {text}"))

    def on_connection_remote_close(self, event: Any) -> None:
        condition = event.connection.remote_condition
        if condition is not None:
            self._transport._fail(
                ConnectionFailedError(
                    f"AMQP broker {self._transport.address} closed the connection: "
                    f"{condition.name}: {condition.description}"
                )
            )
