"""One AMQP 1.0 connection as the threads other than its own use it: links, sends,
credit, settlement, browsing and transactions.

Proton is single-threaded, and no Proton object leaves the connection's thread: other
threads hold a :class:`LinkHandle` and delivery numbers (links.py says why), and every
operation here is queued for that thread with ``post`` or ``call`` (calls.py). Incoming
messages go to the receiver's callback on the connection's thread; those callbacks only
decode and buffer (the API's delivery sink never blocks and never runs user code), so no
application code runs there (docs/threading.md). Outgoing messages are encoded by the
thread that sends them.

The transport is made of layers, one job each:

- ``calls.py``: ``CallQueue``, the work other threads hand the connection's thread;
- ``lifecycle.py``: ``ConnectionLifecycle``, the thread itself: connecting to the
  members, losing the connection and making it again (links attached again under their
  names), closing; and the state it shares with the events;
- ``events.py``: ``Events``, Proton's events for the connection, on its thread;
- ``links.py``: ``LinkHandle`` and the link options (``Capability``, ``Coordinator``);
- this module: ``AmqpTransport``, the operations on links, made with the constructor
  of ``ConnectionLifecycle``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

from cproton import pn_delivery_local, pn_disposition_data, pn_disposition_set_failed
from proton import Delivery, Described, Endpoint, Link, Message, symbol, ulong
from proton._data import obj2dat
from proton.reactor import LinkOption

from jmslike.errors import (
    ConnectionFailedError,
    JMSException,
    SendInDoubtError,
    TransactionInDoubtError,
    TransactionRolledBackError,
)
from jmslike.spi.provider import AT_ONCE, SendDone
from jmslike_amqp.calls import NUMBERS
from jmslike_amqp.driver import Driver
from jmslike_amqp.lifecycle import ConnectionLifecycle
from jmslike_amqp.links import Capability, Coordinator, LinkHandle, MessageCallback
from jmslike_amqp.outcomes import Outcome, Told
from jmslike_amqp.pncalls import delivery_settle, delivery_settled, delivery_update, to_delivery

if TYPE_CHECKING:
    from jmslike_amqp.received import Incoming

__all__ = ["AmqpTransport", "Capability", "Encodable", "LinkHandle", "MessageCallback"]


class Encodable(Protocol):
    """What can be sent: anything that encodes itself as one AMQP message."""

    def encode(self) -> bytes: ...


log = logging.getLogger("jmslike.amqp")

AT_ONCE_WINDOW = 1000
"""Transfers a sender link may have queued for the connection's thread and still take a
send made at once (``jmslike.spi.provider.AT_ONCE``: on an event loop, which must not
wait for credit). Such a send is queued even if the credit ran out since it was
allowed: Proton holds it until the broker grants more, and this bounds how many."""

AT_ONCE_LOW = AT_ONCE_WINDOW // 2
"""Transfers still waiting at which a sender held back by ``AT_ONCE_WINDOW`` is woken
(``LinkHandle.drained``): one wake-up per few hundred sends, not a hand-over each."""

DECLARED = 0x33
TRANSACTIONAL_STATE = 0x34
_DECLARE = symbol("amqp:declare:list")
_DISCHARGE = symbol("amqp:discharge:list")
_ACCEPTED_OUTCOME = Described(ulong(Delivery.ACCEPTED), [])
_REMOTE_CLOSED = Endpoint.REMOTE_CLOSED


def _queued(senders: Sequence[LinkHandle]) -> int:
    """The connection's thread: transfers Proton holds on ``senders``, not yet written."""
    return sum(handle._link.queued for handle in senders if handle._link is not None)


class AmqpTransport(ConnectionLifecycle):
    """An open AMQP connection and the thread that drives it (lifecycle.py); its links,
    for every thread."""

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
        return f"{self._container_id}:{kind}:{next(NUMBERS)}"

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
    def send(
        self,
        sender: LinkHandle,
        message: Encodable,
        *,
        confirm: bool,
        txn: Any = None,
        done: SendDone | None = None,
        made: Callable[[], None] | None = None,
    ) -> None:
        """Send ``message`` (a ``proton.Message``, or jmslike's own encoding of one); with
        ``confirm``, wait for the broker's outcome (accepted, or an error naming the
        refusal), or with ``done`` too return at once and pass the outcome to ``done``
        (None, or the error) on the connection's thread. In transaction ``txn`` nothing
        is waited for: the discharge confirms every transfer of the transaction at once.
        ``made`` is called on the connection's thread once the transfer is made (a
        caller that a Ctrl-C stopped can tell, after :meth:`call`, whether it was)."""
        # Encoded here, not on the connection's thread, which every send and receive of the
        # connection shares.
        data = message.encode()
        outcome: Outcome | None = None
        if confirm and txn is None:
            outcome = Future() if done is None else Told(done)
        gate = sender.credit
        # A send made at once was allowed with the gate open (AmqpSession.sends_at_once),
        # which the connection's thread may have closed since: it goes anyway, within
        # AT_ONCE_WINDOW, rather than hold up the event loop it is made on.
        if not gate.is_set() and not AT_ONCE.get() and not gate.wait(self._timeout):
            raise ConnectionFailedError(
                f"AMQP broker {self.address} gave no credit to send to {sender.address!r}"
                f" within {self._timeout} s; the message was not sent"
            )

        def transfer() -> None:
            sender.transferred += 1
            drained = sender.drained
            if drained is not None and sender.posted - sender.transferred <= AT_ONCE_LOW:
                sender.drained = None
                drained()
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
            if made is not None:
                made()

        if outcome is None:
            self.post(transfer)
            sender.posted += 1
            return

        def failed(exc: BaseException) -> None:
            if not outcome.done():
                outcome.set_exception(exc)

        # Posted, not called: the only wait is for the broker's outcome.
        self.post(transfer, failed)
        sender.posted += 1
        if not isinstance(outcome, Future):
            return  # told to ``done``
        try:
            self._await(outcome, f"settle a send to {sender.address!r}")
        except ConnectionFailedError as exc:
            if outcome.done():
                raise  # in doubt once its transfer was made, else not sent (_fail_requests)
            # No answer in time: the transfer was made, or is still queued and may be.
            raise SendInDoubtError(
                f"{exc}; the broker may have stored the message or may yet store it"
            ) from exc

    # ---------------------------------------------------------------- receiving
    def flow(self, receiver: LinkHandle, credit: int) -> None:
        """Grant ``credit`` more deliveries (a grant made while a drain is on its way
        still counts: AMQP's flow arithmetic adds it to whatever the drain leaves)."""

        def grant() -> None:
            link = self._link_of(receiver)
            if receiver._reattaching:  # granted once the broker has attached it again
                receiver.credit_lost += credit
                return
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

    def withdraw(self, receiver: LinkHandle, *, plain: bool = False) -> None:
        """Take back the receiver's credit, without waiting: a drain, so the broker sends
        what it has at once and gives the rest back; with ``plain``, a flow frame that
        sets the credit to 0 (what transfers were already on their way still come, and
        ``flow`` counts them).

        RabbitMQ needs ``plain`` (it cannot drain a classic queue's link), and so does
        ActiveMQ Classic: it turns a link's credit into its subscription's prefetch,
        answers a drain with a pull that a grant sent right after it races (the link then
        got nothing more, or kept the drained credit and took the next groups'
        messages), and resets the prefetch on a credit of 0 alone."""

        def take_back() -> None:
            link = self._link_of(receiver)
            if receiver._reattaching:
                receiver.credit_lost = 0
                return
            if link.credit <= 0:
                return
            if plain:
                link.drain_mode = False
                link.flow(-link.credit)  # Proton sends the credit it is left with: 0
            else:
                link.drain(0)
            # Written as a frame now: a grant posted behind this one (a receive() that
            # withdrew a grown request and asks for 1) would otherwise change the link
            # before Proton wrote anything, and the broker would never see the 0 or the
            # drain, and keep the whole credit.
            self._engine.transport.pending()

        self.post(take_back)

    # The connection's thread only: what a receiver's credit policy (credit.py) uses
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
        if receiver._reattaching:
            receiver.credit_lost = credit if drain else receiver.credit_lost + credit
            return True
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
            if receiver._reattaching or link.state & _REMOTE_CLOSED or link.credit + credit <= 0:
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
        if not delivery_settled(pointer):  # the broker has not settled it first
            if txn is not None:
                local = pn_delivery_local(to_delivery(pointer))
                obj2dat([txn, _ACCEPTED_OUTCOME], pn_disposition_data(local))  # type: ignore[no-untyped-call]
                delivery_update(pointer, TRANSACTIONAL_STATE)
            else:
                if failed:
                    pn_disposition_set_failed(pn_delivery_local(to_delivery(pointer)), True)
                delivery_update(pointer, outcome)
        delivery_settle(pointer)

    def browse(
        self, source: str, options: Sequence[LinkOption], batch: int = 500
    ) -> list[Incoming]:
        """Every message a ``copy`` receiver sees on ``source`` now, in queue order: grant
        ``batch`` credit in drain mode until a drain ends with fewer messages than that
        (the broker answers a drain at once with what it has)."""
        seen: list[Incoming] = []
        cell: list[LinkHandle] = []

        def collect(message: Incoming, number: int) -> None:
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

    def peek_now(
        self,
        source: str,
        options: Sequence[LinkOption],
        done: Callable[[Incoming | None, bool], None],
    ) -> None:
        """The connection's thread only: look at the first message of ``source`` without
        taking it, and tell ``done(head, answered)`` there: a ``copy`` receiver with a
        drain of 1, closed as soon as the broker answers. ``head`` None is an empty
        queue; ``answered`` False means no answer within the timeout (or the connection
        went), so nothing is known."""
        cell: list[LinkHandle] = []
        first: list[Incoming] = []

        def finish(answered: bool) -> None:
            handle = cell[0]
            if handle._closed:
                return  # told already
            handle._closed = True
            link = handle._link
            if link is not None:
                self._attaching.pop(link, None)  # nobody waits for the attach
                self._close_now(handle, link)
            done(first[0] if first else None, answered)

        def collect(message: Incoming, number: int) -> None:
            first.append(message)
            self._settle_now(cell[0], number, Delivery.ACCEPTED, False, None)  # a copy
            finish(True)  # its one credit is used

        def flowed() -> None:
            if self.credit_now(cell[0]) <= 0:
                finish(True)  # the drain's answer: nothing to send

        receiver = self._engine.create_link(True, source, self.link_name("peek"), list(options))
        handle, _attached = self._track(receiver, source, collect, flowed)
        cell.append(handle)
        receiver.drain(1)  # sent after the attach: a receiver may grant credit at once
        self.call_later(self._timeout, lambda: finish(False))

    # ----------------------------------------------------------- transactions
    def open_coordinator(self) -> LinkHandle:
        """A link to the broker's transaction coordinator (one per JMS session, as Qpid
        JMS does); a broker without one refuses the attach, which raises here."""

        def attach() -> tuple[LinkHandle, Future[None]]:
            options = Coordinator()
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
        sent: list[Future[tuple[int, Any, str]]] | None = None,
        after: Sequence[LinkHandle] = (),
    ) -> tuple[int, Any, str]:
        """Send a transaction request and wait for its outcome; with ``after``, only once
        Proton has written every transfer made on those senders (see ``discharge``).
        ``sent`` gets the outcome's future once the request is sent (by the connection's
        thread, which no Ctrl-C stops); given back with one, the request is not sent
        again, its outcome is waited for (a commit whose caller a Ctrl-C stopped)."""
        if sent:
            return self._await(sent[0], "answer a transaction request")

        def transfer() -> Future[tuple[int, Any, str]] | None:
            if _queued(after):
                return None  # still held for credit: asked again (``_written``)
            link = self._link_of(coordinator)
            delivery = link.send(Message(body=Described(descriptor, value)))
            outcome: Future[tuple[int, Any, str]] = Future()
            self._controls[delivery] = outcome
            if sent is not None:
                sent.append(outcome)
            return outcome

        outcome = self.call(transfer)
        if outcome is None:
            outcome = self._written(transfer, after)
        return self._await(outcome, "answer a transaction request")

    def _written(
        self,
        transfer: Callable[[], Future[tuple[int, Any, str]] | None],
        after: Sequence[LinkHandle],
    ) -> Future[tuple[int, Any, str]]:
        """Ask ``transfer`` again until the senders' transfers have left: rare (a
        transaction larger than the credit the broker grants), so a short poll rather
        than one more wake-up on every flow frame."""
        deadline = time.monotonic() + self._timeout
        pause = 0.001
        while time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
            outcome = self.call(transfer)
            if outcome is not None:
                return outcome
        held = self.call(lambda: _queued(after))
        raise TransactionRolledBackError(
            f"AMQP broker {self.address} gave no credit for {held} sends of the transaction"
            f" within {self._timeout} s; it was not committed (the broker rolls it back when"
            " the session closes)"
        )

    def declare(self, coordinator: LinkHandle) -> Any:
        """Start a transaction; returns its id."""
        state, data, reason = self._control(coordinator, _DECLARE, [None])
        if state != DECLARED or not data:
            raise JMSException(f"AMQP broker {self.address} refused a transaction: {reason}")
        # Already a copy (events._owned): Proton decodes binary as a view of its input
        # buffer, which later frames overwrite. Kept as a view, the id had become another
        # by the discharge under load (Artemis: "AMQ119014: Transaction not found",
        # connection closed); copied here, on the caller's thread, it still did now and
        # then (Classic: "Transaction ... has not been started").
        return data[0]

    def discharge(
        self,
        coordinator: LinkHandle,
        txn: Any,
        *,
        fail: bool,
        senders: Sequence[LinkHandle] = (),
        sent: list[Future[tuple[int, Any, str]]] | None = None,
    ) -> None:
        """End transaction ``txn``: commit, or with ``fail`` roll back. A refused commit
        raises TransactionRolledBackError (the broker rolled it back); a commit whose
        outcome was lost with the connection raises TransactionInDoubtError. ``sent``:
        see ``_control`` (the same list given again carries on a discharge that a Ctrl-C
        stopped; a second discharge of one transaction is refused by the broker).

        The discharge waits until Proton has written every transfer on ``senders`` (the
        transaction's): Proton holds a transfer beyond its link's credit, but writes the
        discharge on the coordinator's link at once, so the broker read the discharge
        first and then transfers naming a transaction that was over (Artemis closed the
        connection: "AMQ119014: Transaction not found"; seen with 1,000 sends in one
        transaction, 300 of them held)."""
        if sent is None:
            sent = []
        try:
            state, _data, reason = self._control(
                coordinator, _DISCHARGE, [txn, fail], sent, after=senders
            )
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
    def _close_now(self, handle: LinkHandle, link: Link, *, keep: bool = False) -> None:
        """The connection's thread: close (``keep``: only detach) ``handle``'s link; it
        hears of nothing more, and is let go of at once if the broker closed it first
        (else when the broker answers, which also ends its own session if it has one)."""
        handle._closed = True
        handle._on_message = None
        handle._on_flow = None
        if keep:
            link.detach()
        else:
            link.close()
        if link.state & _REMOTE_CLOSED:
            self._engine.end_own_session(link)
            self._let_go(link, free=False)

    def close_link(
        self,
        handle: LinkHandle,
        *,
        keep: bool = False,
        wait: bool = False,
        before: Callable[[], None] | None = None,
        on_late: Callable[[Incoming], None] | None = None,
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
            handle._late = on_late
            answered: Future[None] | None = None
            if wait and not link.state & _REMOTE_CLOSED:
                answered = self._detaching[link] = Future()
            self._close_now(handle, link, keep=keep)
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
