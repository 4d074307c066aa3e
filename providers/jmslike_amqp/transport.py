"""One AMQP 1.0 connection, driven by a Proton container on a thread of its own.

Proton is single-threaded: its objects may only be touched by the thread running the
container. Every other thread (the application's, jmslike's dispatchers) hands work to it
with ``call(fn)``: the function is queued, the container is woken through Proton's
``EventInjector``, runs it, and ``call`` returns its result or raises its error.
Settlements, credit and transfers use ``post(fn)`` instead, which queues the same way but
does not wait (calls run in queue order, so nothing overtakes them). Incoming
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
from functools import partial
from typing import Any, TypeVar

from proton import Data, Delivery, Described, Endpoint, Link, Message, Terminus, symbol, ulong
from proton.handlers import MessagingHandler
from proton.reactor import ApplicationEvent, Container, EventInjector, LinkOption

from jmslike.errors import (
    ConnectionFailedError,
    InvalidClientIDError,
    JMSException,
    JMSSecurityError,
    TransactionRolledBackError,
)

__all__ = ["AmqpTransport", "Capability"]

log = logging.getLogger("jmslike.amqp")

T = TypeVar("T")
MessageCallback = Callable[[Message, Delivery], None]

SOLE_CONNECTION = symbol("sole-connection-for-container")
_ESTABLISHMENT_FAILED = symbol("amqp:connection-establishment-failed")
DECLARED = 0x33
TRANSACTIONAL_STATE = 0x34
_DECLARE = symbol("amqp:declare:list")
_DISCHARGE = symbol("amqp:discharge:list")
_ACCEPTED_OUTCOME = Described(ulong(Delivery.ACCEPTED), [])

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
        container_id: str | None = None,
        virtual_host: str | None = None,
    ) -> None:
        self.address = f"{host}:{port}"
        self._virtual_host = virtual_host
        self.container_id = container_id
        self._timeout = timeout
        self._on_lost = on_lost
        self._calls: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._woken = False
        """A wake-up of the container thread is on its way (``post``)."""
        self._receivers: dict[Link, MessageCallback] = {}
        self._outcomes: dict[Delivery, Future[None]] = {}
        self._controls: dict[Delivery, Future[tuple[int, Any, str]]] = {}
        """Transaction control transfers (declare, discharge) -> their outcome."""
        self._late: dict[Link, Callable[[Message], None]] = {}
        """Receivers closed here and not yet by the broker -> told of transfers that
        were on their way (released unseen)."""
        self._attaching: dict[Link, Future[None]] = {}
        self._draining: dict[Link, Future[None]] = {}
        """Receivers asked to drain -> resolved once the broker has used up the credit."""
        self._detaching: dict[Link, Future[None]] = {}
        """Links whose close or detach the caller waits for the broker to answer."""
        self._credit: dict[Link, threading.Event] = {}
        """Senders -> set while the broker's credit lasts; a send waits while it is clear."""
        self._unsettled: dict[Link, set[Delivery]] = {}
        """Senders -> their transfers outside transactions the broker has not answered."""
        self._flushing: dict[Link, Future[None]] = {}
        """Senders being closed -> resolved once the broker has answered every transfer."""
        self._opened: Future[None] = Future()
        self._closing = False
        self._handler = _Handler(self)
        self._container = Container(self._handler)
        self._container.container_id = container_id or f"jmslike-{os.getpid()}-{next(_NUMBERS)}"
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
            # A JMS client id is the container id; Artemis then refuses a second
            # connection with it, in any process (Qpid JMS asks the same).
            desired_capabilities=[SOLE_CONNECTION] if self.container_id else None,
            # The open frame's hostname; RabbitMQ reads "vhost:<name>" as the vhost.
            virtual_host=self._virtual_host,
        )

    def _fail(self, error: JMSException) -> None:
        opened = self._opened.done() and self._opened.exception() is None
        if not self._opened.done():
            self._opened.set_exception(error)
        futures: list[Future[Any]] = [future for _fn, future in self._drain_calls()]
        futures += [*self._outcomes.values(), *self._controls.values()]
        futures += [*self._attaching.values(), *self._detaching.values()]
        futures += self._flushing.values()
        self._flushing.clear()
        for gate in self._credit.values():
            gate.set()  # a send waiting for credit goes on, and fails on the closed connection
        self._outcomes.clear()
        self._controls.clear()
        self._attaching.clear()
        self._detaching.clear()
        for future in futures:
            if not future.done():
                future.set_exception(error)
        if opened and not self._closing:
            self._closing = True  # once: the connection is gone
            self._on_lost(error)

    def _drain_calls(self) -> list[tuple[Callable[[], Any], Future[Any]]]:
        calls = []
        with contextlib.suppress(IndexError):  # popleft, so that no call queued meanwhile is lost
            while True:
                calls.append(self._calls.popleft())
        return calls

    # ------------------------------------------------------------------ calls
    def post(self, fn: Callable[[], T]) -> Future[T]:
        """Queue ``fn`` for the container thread and return at once; the future tells how
        it went. Calls run in the order they were queued, so a posted settlement or credit
        grant is on the wire before anything queued after it. Waiting for the thread on
        every settlement and grant cost more than the work itself (about half of a
        receive's time)."""
        future: Future[T] = Future()
        if threading.current_thread() is self._thread:
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever reads the future
                future.set_exception(exc)
            return future
        if self._closing:
            raise ConnectionFailedError(f"AMQP connection to {self.address} is closed")
        self._calls.append((fn, future))
        if not self._woken:
            # One wake-up for calls queued faster than the thread runs them: a trigger is
            # a pipe write and an event, and costs more than a settlement.
            self._woken = True
            self._injector.trigger(ApplicationEvent("jmslike_call"))
        return future

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the container thread and return its result (or raise its error)."""
        if threading.current_thread() is self._thread:
            return fn()
        future = self.post(fn)
        try:
            return future.result(self._timeout)
        except TimeoutError:
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not answer within {self._timeout} s"
            ) from None

    def _run_calls(self) -> None:
        self._woken = False  # before draining: a call queued from now on wakes us again
        while self._calls:
            fn, future = self._calls.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the caller, if one waits
                    log.debug("AMQP call on %s failed: %r", self.address, exc)
                    future.set_exception(exc)

    # ---------------------------------------------------------------- links
    def open_receiver(
        self, source: str | None, on_message: MessageCallback, **options: Any
    ) -> Link:
        """A receiver link with no credit yet (``flow`` grants it), once the broker has
        attached it: a JMS consumer exists from its creation, so a message sent after it
        must reach it."""

        def attach() -> tuple[Link, Future[None]]:
            options.setdefault("name", self.link_name("receiver"))
            receiver = self._container.create_receiver(self.connection, source, **options)
            self._receivers[receiver] = on_message
            return receiver, self._attach_future(receiver)

        receiver, attached = self.call(attach)
        self._wait_attached(attached, source or "")
        return receiver

    def open_sender(self, target: str | None, **options: Any) -> Link:
        def attach() -> tuple[Link, Future[None]]:
            options.setdefault("name", self.link_name("sender"))
            sender = self._container.create_sender(self.connection, target, **options)
            self._credit[sender] = threading.Event()
            self._unsettled[sender] = set()
            return sender, self._attach_future(sender)

        sender, attached = self.call(attach)
        self._wait_attached(attached, target or "")
        return sender

    def link_name(self, kind: str) -> str:
        """A link name unique on the connection. Proton's default is built from the
        address, so a second consumer of one queue would reuse the first one's name, and
        the broker takes such an attach for the same link (it never answers)."""
        return f"{self._container.container_id}:{kind}:{next(_NUMBERS)}"

    def _attach_future(self, link: Link) -> Future[None]:
        future: Future[None] = Future()
        self._attaching[link] = future
        return future

    def _wait_attached(self, attached: Future[None], address: str) -> None:
        try:
            attached.result(self._timeout)
        except TimeoutError:
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not attach a link to {address!r} within "
                f"{self._timeout} s"
            ) from None

    def send(self, sender: Link, message: Message, *, confirm: bool, txn: Any = None) -> None:
        """Send ``message``; with ``confirm``, wait for the broker's outcome (accepted, or
        an error naming the refusal). In transaction ``txn`` nothing is waited for: the
        discharge confirms every transfer of the transaction at once."""

        outcome: Future[None] | None = Future() if confirm and txn is None else None
        gate = self._credit.get(sender)
        if gate is not None and not gate.wait(self._timeout):
            raise ConnectionFailedError(
                f"AMQP broker {self.address} gave no credit to send to {sender.target.address}"
                f" within {self._timeout} s; the message was not sent"
            )

        def transfer() -> None:
            delivery = sender.send(message)
            if sender.credit <= 0 and gate is not None:
                # Proton would queue the next ones until the broker grants more (Artemis
                # grants 1,000 at a time): the sender waits instead, as Qpid JMS does.
                gate.clear()
            if txn is not None:
                delivery.local.data = [txn]
                delivery.update(TRANSACTIONAL_STATE)
                return
            unsettled = self._unsettled.get(sender)
            if unsettled is not None:
                unsettled.add(delivery)
            if outcome is not None:
                self._outcomes[delivery] = outcome

        # Posted, not called: the only wait is for the broker's outcome, where there is one.
        posted = self.post(transfer)
        if outcome is not None:
            posted.add_done_callback(partial(_pass_failure, outcome))
            try:
                outcome.result(self._timeout)
            except TimeoutError:
                raise ConnectionFailedError(
                    f"AMQP broker {self.address} did not settle a send to {sender.target.address}"
                    f" within {self._timeout} s"
                ) from None

    def settle(
        self, delivery: Delivery, outcome: int, *, failed: bool = False, txn: Any = None
    ) -> None:
        """Settle a received delivery: ``Delivery.ACCEPTED``, ``RELEASED`` (back to the
        queue, not counted as delivered), or ``MODIFIED`` with ``failed`` (back, counted).
        With ``txn`` it is accepted as part of that transaction (undone if it aborts)."""

        def done() -> None:
            if not delivery.settled:
                if txn is not None:
                    delivery.local.data = [txn, _ACCEPTED_OUTCOME]  # type: ignore[list-item]
                    delivery.update(TRANSACTIONAL_STATE)
                    delivery.settle()
                    return
                if failed:
                    delivery.local.failed = True
                delivery.update(outcome)
                delivery.settle()

        self.post(done)

    def settle_all(self, deliveries: list[Delivery], *, txn: Any) -> None:
        """Accept many deliveries in transaction ``txn`` with one call to the thread."""

        def done() -> None:
            for delivery in deliveries:
                if not delivery.settled:
                    delivery.local.data = [txn, _ACCEPTED_OUTCOME]  # type: ignore[list-item]
                    delivery.update(TRANSACTIONAL_STATE)
                    delivery.settle()

        self.call(done)

    # ----------------------------------------------------------- transactions
    def open_coordinator(self) -> Link:
        """A link to the broker's transaction coordinator (one per JMS session, as Qpid
        JMS does); a broker without one refuses the attach, which raises here."""

        def attach() -> tuple[Link, Future[None]]:
            coordinator = self._container.create_sender(
                self.connection, None, name=self.link_name("coordinator")
            )
            coordinator.target.type = Terminus.COORDINATOR
            coordinator.target.capabilities.put_object(symbol("amqp:local-transactions"))
            return coordinator, self._attach_future(coordinator)

        coordinator, attached = self.call(attach)
        self._wait_attached(attached, "the transaction coordinator")
        return coordinator

    def _control(
        self, coordinator: Link, descriptor: symbol, value: list[Any]
    ) -> tuple[int, Any, str]:
        def transfer() -> Future[tuple[int, Any, str]]:
            delivery = coordinator.send(Message(body=Described(descriptor, value)))
            outcome: Future[tuple[int, Any, str]] = Future()
            self._controls[delivery] = outcome
            return outcome

        try:
            return self.call(transfer).result(self._timeout)
        except TimeoutError:
            raise ConnectionFailedError(
                f"AMQP broker {self.address} did not answer a transaction request within "
                f"{self._timeout} s"
            ) from None

    def declare(self, coordinator: Link) -> Any:
        """Start a transaction; returns its id."""
        state, data, reason = self._control(coordinator, _DECLARE, [None])
        if state != DECLARED or not data:
            raise JMSException(f"AMQP broker {self.address} refused a transaction: {reason}")
        return data[0]

    def discharge(self, coordinator: Link, txn: Any, *, fail: bool) -> None:
        """End transaction ``txn``: commit, or with ``fail`` roll back. A refused commit
        raises TransactionRolledBackError (the broker rolled it back)."""
        state, _data, reason = self._control(coordinator, _DISCHARGE, [txn, fail])
        if state != Delivery.ACCEPTED:
            if fail:
                raise JMSException(f"AMQP broker {self.address} refused a rollback: {reason}")
            raise TransactionRolledBackError(
                f"AMQP broker {self.address} rolled the transaction back: {reason}"
            )

    def browse(self, source: str, options: list[Any], batch: int = 500) -> list[Message]:
        """Every message a ``copy`` receiver sees on ``source`` now, in queue order: grant
        ``batch`` credit in drain mode until a drain ends with fewer messages than that
        (the broker answers a drain at once with what it has)."""
        seen: list[Message] = []

        def collect(message: Message, delivery: Delivery) -> None:
            seen.append(message)
            delivery.settle()  # a copy: settling takes nothing from the queue

        receiver = self.open_receiver(source, collect, options=options)
        try:
            while True:
                before = len(seen)

                if not self.drain(receiver, batch):
                    raise ConnectionFailedError(
                        f"AMQP broker {self.address} did not answer a browse of {source!r} "
                        f"within {self._timeout} s"
                    )
                if len(seen) - before < batch:
                    return list(seen)
        finally:
            self.close_link(receiver)

    def flow(self, receiver: Link, credit: int) -> None:
        self.post(lambda: receiver.flow(credit))

    def drain(self, receiver: Link, credit: int = 0) -> bool:
        """Grant ``credit`` more in drain mode and return once the broker has answered
        (True), or after the timeout (False): the broker then has sent everything it will
        send for the credit, and gives the rest back. With ``credit`` 0 this takes back
        what the receiver has; a receiver without credit returns at once."""

        def start() -> Future[None] | None:
            if receiver.state & Endpoint.REMOTE_CLOSED or receiver.credit + credit <= 0:
                return None
            drained = self._draining.setdefault(receiver, Future())
            receiver.drain(credit)
            return drained

        drained = self.call(start)
        if drained is None:
            return True
        try:
            drained.result(self._timeout)
        except TimeoutError:
            return False
        return True

    def flush(self, sender: Link) -> None:
        """Return once the broker has answered every transfer on ``sender`` (outside a
        transaction). Proton keeps a transfer that has no credit yet and drops it when
        its link or connection closes, and RabbitMQ drops transfers it has read but not
        routed when the connection closes: without this wait a producer closed right
        after a burst of non-persistent sends lost the end of it (seen: 1,000 of 3,000
        on Artemis, 1,336 of 3,000 on RabbitMQ). One round trip, at close only."""

        def check() -> Future[None] | None:
            if not self._unsettled.get(sender) or sender.state & Endpoint.REMOTE_CLOSED:
                return None
            return self._flushing.setdefault(sender, Future())

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
                "AMQP broker %s did not answer %d sends to %s within %s s",
                self.address,
                len(self._unsettled.get(sender, ())),
                sender.target.address,
                self._timeout,
            )
        except JMSException:
            pass  # the connection went: the application has been told

    def _answered_transfer(self, delivery: Delivery) -> None:
        link = delivery.link
        unsettled = self._unsettled.get(link)
        if unsettled is None:
            return
        unsettled.discard(delivery)
        flushed = self._flushing.get(link)
        if flushed is not None and not unsettled:
            del self._flushing[link]
            flushed.set_result(None)

    def close_link(
        self,
        link: Link,
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
        ``before`` runs on the container thread right before the close, so that no
        delivery can arrive between the two; ``on_late`` is told of each transfer the
        broker sent before it read the close (it is released, unseen)."""

        def close() -> Future[None] | None:
            if before is not None:
                before()
            self._receivers.pop(link, None)
            if on_late is not None and not link.state & Endpoint.REMOTE_CLOSED:
                self._late[link] = on_late
            self._credit.pop(link, None)
            self._unsettled.pop(link, None)
            answered: Future[None] | None = None
            if wait and not link.state & Endpoint.REMOTE_CLOSED:
                answered = self._detaching[link] = Future()
            if keep:
                link.detach()
            else:
                link.close()
            return answered

        if link.is_sender:
            self.flush(link)
        answered = self.call(close)
        if answered is not None:
            try:
                answered.result(self._timeout)
            except TimeoutError:
                log.warning("AMQP broker %s did not answer a link's detach", self.address)
            except JMSException:
                pass  # the connection is gone, and the link with it

    def close(self) -> None:
        """Close the connection and let the container thread end (within the timeout),
        then free the injector's pipe, which Proton leaves open."""
        if self._closing:
            return
        for sender in list(self._credit):
            self.flush(sender)
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


def _pass_failure(outcome: Future[None], posted: Future[Any]) -> None:
    """A transfer that failed (or never ran: the connection went) fails its outcome."""
    error = posted.exception()
    if error is not None and not outcome.done():
        outcome.set_exception(error)


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


class _Handler(MessagingHandler):
    """Proton's events, on the container thread."""

    def __init__(self, transport: AmqpTransport) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self._transport = transport

    def on_start(self, event: Any) -> None:
        self._transport._start()

    def on_connection_opened(self, event: Any) -> None:
        properties = event.connection.remote_properties or {}
        if properties.get(_ESTABLISHMENT_FAILED):
            return  # the broker's close follows, with the reason
        if not self._transport._opened.done():
            self._transport._opened.set_result(None)

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        if link.is_sender:
            gate = self._transport._credit.get(link)
            if gate is not None and link.credit > 0:
                gate.set()
            return
        drained = self._transport._draining.get(link)
        if drained is not None and link.credit == 0:
            del self._transport._draining[link]
            link.drain_mode = False
            if not drained.done():
                drained.set_result(None)

    def on_link_remote_detach(self, event: Any) -> None:
        self._answered(event.link)

    def on_link_remote_close(self, event: Any) -> None:
        # Proton's own endpoint handler (a child of MessagingHandler) still gets the event.
        self._answered(event.link)

    def _answered(self, link: Link) -> None:
        self._transport._late.pop(link, None)
        answered = self._transport._detaching.pop(link, None)
        if answered is not None and not answered.done():
            answered.set_result(None)

    def on_link_opened(self, event: Any) -> None:
        attached = self._transport._attaching.pop(event.link, None)
        if attached is not None and not attached.done():
            attached.set_result(None)

    def on_session_remote_close(self, event: Any) -> None:
        """A broker that refuses an attach by ending the whole session (RabbitMQ does,
        e.g. PRECONDITION_FAILED on a queue declared otherwise): every link of it waiting
        to attach fails with the broker's reason, instead of timing out."""
        condition = event.session.remote_condition
        text = f"{condition.name}: {condition.description}" if condition else "session ended"
        attaching = self._transport._attaching
        for link in [link for link in attaching if link.session == event.session]:
            future = attaching.pop(link)
            if not future.done():
                future.set_exception(
                    JMSException(f"AMQP broker {self._transport.address} refused a link: {text}")
                )

    def on_link_error(self, event: Any) -> None:
        attached = self._transport._attaching.pop(event.link, None)
        condition = event.link.remote_condition
        text = f"{condition.name}: {condition.description}" if condition else "refused"
        if attached is not None and not attached.done():
            attached.set_exception(
                JMSException(f"AMQP broker {self._transport.address} refused a link: {text}")
            )

    def on_delivery(self, event: Any) -> None:
        """Outcomes of transaction requests (declared, accepted, rejected), and
        transfers to receivers closed here; ordinary transfers are left to
        MessagingHandler's own handlers."""
        delivery = event.delivery
        link = event.link
        if link.is_receiver:
            late = self._transport._late.get(link)
            if late is not None and delivery.readable and not delivery.partial:
                message = Message()
                message.decode(link.recv(delivery.pending))
                link.advance()
                late(message)
                delivery.update(Delivery.RELEASED)
                delivery.settle()
            return
        if not delivery.updated:
            return
        if delivery.remote_state:
            self._transport._answered_transfer(delivery)
        outcome = self._transport._controls.pop(delivery, None)
        if outcome is None or outcome.done():
            return
        condition = delivery.remote.condition
        reason = f"{condition.name}: {condition.description}" if condition else "no reason given"
        outcome.set_result((delivery.remote_state, delivery.remote.data, reason))

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
            container = self._transport.container_id
            if container and condition.name == "amqp:invalid-field":
                self._transport._fail(
                    InvalidClientIDError(
                        f"client id {container!r} is in use on AMQP broker "
                        f"{self._transport.address}: {condition.description}"
                    )
                )
                return
            self._transport._fail(
                ConnectionFailedError(
                    f"AMQP broker {self._transport.address} closed the connection: "
                    f"{condition.name}: {condition.description}"
                )
            )
