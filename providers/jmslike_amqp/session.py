"""A JMS session over AMQP 1.0: sends, acknowledgements, local redelivery, transactions.

Sends are transfers (a persistent one waits for the broker's outcome) on sender links
kept per address (at most ``SENDERS_KEPT``); acknowledging is settling ACCEPTED, giving
back is RELEASED (unseen) or MODIFIED with delivery-failed (seen, counted); recover and
rollback redeliver locally, in order. Transactions use the broker's transaction
coordinator where it has one (Artemis, Classic) and are kept by jmslike where it has none
(RabbitMQ 3.10). Browsers are ``copy`` receivers; durable and shared subscriptions are
named as Qpid JMS names them (subscriptions.py), or on RabbitMQ are queues jmslike
declares (jmslike.spi.rabbit_subscriptions).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from proton import Delivery
from proton.reactor import Copy, Selector

from jmslike.destination import Destination, Queue
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidDestinationError,
    JMSException,
    TransactionRolledBackError,
)
from jmslike.message import DELIVERY_COUNT, DeliveryMode, Message
from jmslike.spi.counts import count_scope
from jmslike.spi.diagnose import note_capped_browse, size_note
from jmslike.spi.messages import DLQ_REASON, set_provider_property
from jmslike.spi.names import refuse_artemis_wildcards
from jmslike.spi.provider import (
    ConsumerSpec,
    DeliverySink,
    ProviderConsumer,
    ProviderSession,
    SendDone,
)
from jmslike.spi.strict import Promotion
from jmslike_amqp.codec import decode, encode
from jmslike_amqp.consumer import AmqpConsumer, stale
from jmslike_amqp.credit import Ring
from jmslike_amqp.durability import EXISTING
from jmslike_amqp.kept import KeptCommit, send_kept
from jmslike_amqp.links import Capability, LinkHandle
from jmslike_amqp.subscriptions import NullSource, SubscriptionNames
from jmslike_amqp.transport import AT_ONCE_LOW, AT_ONCE_WINDOW

log = logging.getLogger("jmslike.amqp")

if TYPE_CHECKING:
    from jmslike_amqp.connection import AmqpConnection

__all__ = ["SENDERS_KEPT", "AmqpSession"]

PERSISTENT = DeliveryMode.PERSISTENT

SENDERS_KEPT = 64
"""Sender links a session keeps open, the most recently used (a service that replies to a
temporary queue per request would otherwise keep one per request: 4.7 KiB each on
Artemis, found by the soak). A transacted session keeps all it used: its links' transfers
belong to the open transaction."""


CLIENT_ACKNOWLEDGE = 2


class AmqpSession(ProviderSession):
    """One JMS session. A transacted one uses the broker's transaction coordinator
    (Artemis); where the broker has none (RabbitMQ 3.10 never answers the attach), jmslike
    keeps the transaction itself: sends wait in order until commit, which sends them
    (each confirmed) and then accepts what was consumed. ORD-8 holds either way; only a
    connection lost in the middle of such a commit can leave it half done."""

    def __init__(
        self, connection: AmqpConnection, transacted: bool, acknowledge_mode: int = 1
    ) -> None:
        self.connection = connection
        self.transacted = transacted
        self.client_acknowledge = acknowledge_mode == CLIENT_ACKNOWLEDGE and not transacted
        self._senders: OrderedDict[str, LinkHandle] = OrderedDict()
        """Sender links by address, least recently used first (bounded: ``SENDERS_KEPT``)."""
        self._senders_lock = threading.Lock()
        """Held while a send finds (or attaches) its link: threads that share the session
        for sends (docs/threading.md) must get one link an address. Two links attached
        at once by two threads' first sends let Artemis read their messages out of each
        thread's order."""
        self._last_sent: tuple[Destination, str, LinkHandle] | None = None
        """The destination this session last sent to, its address and sender link
        (:meth:`sends_at_once`)."""
        self._coordinator: LinkHandle | None = None
        if transacted and connection.coordinated:
            self._coordinator = connection.transport.open_coordinator()
        self._txn: Any = None
        self._discharge: tuple[Any, list[Any]] = (None, [])
        """The transaction a commit discharges, and its request once sent (``commit``)."""
        self._pending: list[tuple[Destination, Message]] = []
        """Sends of a client-kept transaction, made at commit."""
        self._kept: KeptCommit | None = None
        """The client-kept commit a Ctrl-C stopped, carried on by the next ``commit()``."""
        self.zombies: list[AmqpConsumer] = []
        """Consumers closed inside the transaction, detached when it ends."""
        self._tx_lost = False
        """The connection was lost (and made again) while a transaction was open: the
        broker rolled it back, and the next commit says so."""
        connection.sessions.add(self)

    def interrupted(self) -> None:
        """The connection's thread, as the connection is lost under a reconnect policy:
        the broker rolls back an open transaction with it."""
        if self.transacted and (self._txn is not None or self._pending or self._kept):
            self.transaction_lost()
        self._txn = None  # declared on the lost connection's coordinator

    def transaction_lost(self) -> None:
        """The broker rolled the open transaction back with the lost connection."""
        self._tx_lost = True

    def _transaction(self) -> Any:
        if self._txn is None:
            assert self._coordinator is not None
            self._txn = self.connection.transport.declare(self._coordinator)
        return self._txn

    def _check_target(self, destination: Destination) -> None:
        self.connection.check_temporary(destination, consuming=False)
        if self.connection.broker == "artemis":
            refuse_artemis_wildcards(destination, self.connection.transport.address)

    def send(self, destination: Destination, message: Message) -> None:
        self._check_target(destination)
        self.connection.published.note(destination, message)
        if self.transacted and self._coordinator is None:
            self._pending.append((destination, message))
            return
        self._transfer(destination, message, confirm=message.jms_delivery_mode == PERSISTENT)

    def sends_at_once(self, destination: Destination, delivery_mode: int) -> bool:
        """A non-persistent send outside a transaction, to the destination this session
        last sent to, while its sender link has the broker's credit: it is encoded, queued
        for the connection's thread and not waited for (``AmqpTransport.send``). Not a
        first send to a destination (it attaches a link: a round trip), a persistent one
        (it waits for the broker's outcome), one in a transaction (its first send
        declares it), or one without credit (it waits for the broker to grant some), nor
        while ``AT_ONCE_WINDOW`` transfers of the link wait for the connection's thread
        (the credit may have run out meanwhile). Read on the event loop's thread while
        nothing runs on the session's own."""
        sender = self._unwaited_sender(destination, delivery_mode)
        return (
            sender is not None
            and sender.credit.is_set()
            and sender.posted - sender.transferred < AT_ONCE_WINDOW
        )

    def wake_when_at_once(
        self, destination: Destination, delivery_mode: int, wake: Callable[[], None]
    ) -> bool:
        """Only ``AT_ONCE_WINDOW`` stands in the way of :meth:`sends_at_once`: ``wake`` is
        called on the connection's thread once half of those transfers went."""
        sender = self._unwaited_sender(destination, delivery_mode)
        if (
            sender is None
            or not sender.credit.is_set()  # then the wait is for credit: a thread's
            or sender.posted - sender.transferred < AT_ONCE_WINDOW
        ):
            return False
        sender.drained = wake
        if sender.posted - sender.transferred <= AT_ONCE_LOW:  # went meanwhile
            sender.drained = None
            wake()
        return True

    def _unwaited_sender(self, destination: Destination, delivery_mode: int) -> LinkHandle | None:
        """The sender link a send to ``destination`` would use without waiting for a link
        or an outcome: non-persistent, outside a transaction, to the destination this
        session last sent to, whose link is still kept; else None."""
        last = self._last_sent
        if (
            last is None
            or delivery_mode == PERSISTENT
            or self.transacted
            or last[0] != destination
            or self._senders.get(last[1]) is not last[2]
        ):
            return None
        return last[2]

    def send_async(
        self,
        destination: Destination,
        message: Message,
        done: SendDone,
    ) -> None:
        self._check_target(destination)
        self.connection.published.note(destination, message)
        # The transfer is made in order with every other send of the connection; only
        # the broker's outcome is waited for elsewhere (JMS 2.0 asynchronous send).
        self._transfer(destination, message, confirm=True, done=done)

    def _transfer(
        self,
        destination: Destination,
        message: Message,
        *,
        confirm: bool,
        alone: bool = False,
        done: SendDone | None = None,
        made: Callable[[], None] | None = None,
    ) -> None:
        """Send now: in the session's transaction if there is one (its discharge
        confirms) unless ``alone``, else waiting for the broker's outcome when ``confirm``
        (or handing it to ``done``); ``made``: see ``AmqpTransport.send``."""
        connection = self.connection
        address = connection.address_of(destination)
        with self._senders_lock:
            sender = self._senders.get(address)
            if sender is None:
                sender = self._senders[address] = connection.transport.open_sender(
                    address, options=connection.node_options(destination, address)
                )
                if len(self._senders) > SENDERS_KEPT and not self.transacted:
                    _old, oldest = self._senders.popitem(last=False)
                    with contextlib.suppress(JMSException):
                        connection.transport.close_link(oldest)
            else:
                self._senders.move_to_end(address)
            self._last_sent = (destination, address, sender)
        reply_to = message.jms_reply_to
        outgoing = encode(
            message,
            address,
            connection.address_of(reply_to) if reply_to is not None else None,
            wire_priority=connection.capabilities.priority,
            wire_group_seq=not connection.classic,
        )
        txn = self._transaction() if self._coordinator is not None and not alone else None
        if txn is not None and self._discharge[0] is txn and self._discharge_sent(txn):
            raise IllegalStateError(
                "a send after a commit() that was interrupted once its discharge had gone "
                f"to AMQP broker {connection.transport.address}: call commit() again "
                "first, to finish it and learn its outcome"
            )
        try:
            connection.transport.send(
                sender, outgoing, confirm=confirm and txn is None, txn=txn, done=done, made=made
            )
        except ConnectionFailedError as exc:
            body = outgoing.body
            note = size_note(len(body)) if isinstance(body, (bytes, str)) else ""
            if note:
                raise type(exc)(f"{exc}{note}") from exc
            raise

    def _subscription_link(self, spec: ConsumerSpec, *, strict: bool) -> dict[str, Any]:
        """How a consumer of a named (durable or shared) subscription attaches: named as
        Qpid JMS names its links, so that Artemis and Classic keep the subscription
        (jmslike_amqp.subscriptions); on RabbitMQ, whose plugin keeps none, to the queue
        jmslike declares for it (jmslike.spi.rabbit_subscriptions)."""
        connection = self.connection
        name = spec.subscription or ""
        durable, shared = spec.durable, spec.shared
        if connection.rabbitmq:
            subscriptions, client_id = connection.rabbit_subscriptions, connection.client_id

            def declare() -> str:
                return subscriptions.declare(
                    spec.destination.name,
                    name,
                    client_id,
                    durable=durable,
                    shared=shared,
                    selector=spec.selector,
                    strict=strict,
                )

            # The queue outlives its links: durable, or deleted by the broker a while
            # after its last consumer (jmslike.spi.rabbit_subscriptions), so an outage
            # may outlast it: declared again before a reconnect attaches the link (an
            # attach to a missing queue closes the connection).
            return {
                "address": EXISTING + declare(),
                "subscription": name if durable else None,
                "prepare": None if durable else declare,
            }
        link_name, options, source_capabilities = connection.subscriptions.link(
            name, client_id=connection.client_id, durable=durable, shared=shared
        )
        return {
            "link_name": link_name,
            "source_options": options,
            "capabilities": source_capabilities,
            "subscription": name if durable else None,
            "hold_subscription": shared and not durable,
        }

    def create_consumer(self, spec: ConsumerSpec, sink: DeliverySink) -> ProviderConsumer:
        connection = self.connection
        destination = spec.destination
        capabilities = connection.capabilities
        for wanted, capability, have in (
            (spec.durable, "durable_subscriptions", capabilities.durable_subscriptions),
            (spec.shared, "shared_subscriptions", capabilities.shared_subscriptions),
        ):
            if wanted and not have:
                raise IllegalStateError(
                    f"{connection.broker} over AMQP has no {capability.replace('_', ' ')} "
                    f"(capability {capability})"
                )
        connection.check_temporary(destination, consuming=True)
        name = spec.subscription or ""
        named = spec.named
        durable, shared = spec.durable, spec.shared
        if named and durable and not shared and connection.client_id is None:
            raise IllegalStateError(
                f"durable subscription {name!r} needs a client id "
                "(connection.client_id or the factory's client_id), as in JMS"
            )
        # ORD-18 per queue, and for a topic per subscription (a plain topic consumer is
        # a subscription of its own): jmslike keeps it within the process, as over STOMP
        # (jmslike/spi/strict.py), and the broker across processes where it can
        # (jmslike/spi/exclusive.py).
        promote = Promotion()  # bound to the consumer once made

        # Receivers that compete for one queue (or one shared subscription) on a broker
        # that stops the queue at a blocked group share a ring (credit.py).
        ring = None
        if connection.head_blocking and (shared or not destination.is_topic):
            place = f"shared:{name}:{durable}" if shared else f"queue:{destination.key}"
            ring = connection.rings.setdefault(place, Ring())
        claim = connection.strict.attach(
            destination.key,
            name if named else f"own-{id(promote)}" if destination.is_topic else None,
            exclusive=spec.exclusive,
            standby=spec.standby,
            promote=promote,
            what=str(destination) + (f" subscription {name!r}" if named else ""),
        )
        extra: dict[str, Any] = {}
        try:
            if named:
                extra = self._subscription_link(spec, strict=claim.strict)
            if claim.strict and not (destination.is_topic or destination.is_temporary):
                # ORD-18 across processes: the broker itself holds the queue to one consumer.
                connection.declare_exclusive_queue(destination, required=False)
            elif claim.strict and destination.is_topic and not connection.rabbitmq:
                connection.exclusivity.hold_topic(
                    connection.exclusive_queues, destination.name, shared=shared
                )
            scope = count_scope(spec, connection.client_id)
            consumer = AmqpConsumer(
                self,
                destination,
                sink,
                spec.selector,
                claim=claim,
                ring=ring,
                count_scope=scope,
                no_local=spec.no_local,
                **extra,
            )
        except BaseException:
            connection.strict.detach(claim)
            raise
        promote.bind(consumer.promote)
        return consumer

    def acknowledge(self, tokens: Sequence[Any]) -> None:
        """Accept each; with CLIENT_ACKNOWLEDGE, raise ConnectionFailedError (after the
        others are accepted) for those that came over a connection lost since, under a
        failover URL: the broker delivers them again, so the application must not take
        them as done."""
        settle = self._finished(tokens)
        for token in settle:
            consumer = token.consumer
            consumer.transport.settle(consumer.link, token.number, Delivery.ACCEPTED)
        lost = len(tokens) - len(settle)
        if lost and self.client_acknowledge:
            raise ConnectionFailedError(
                f"acknowledge(): {lost} message(s) came over an AMQP connection to "
                f"{self.connection.transport.address} (or a link) that was lost since: the broker "
                "delivers them again, flagged redelivered, so their work may be done twice"
            )

    def _finished(self, tokens: Sequence[Any]) -> list[Any]:
        """No longer outstanding here: the tokens to settle, each forgotten by the delivery
        counts. Left out: those that came over a connection (or link) lost since; the
        broker delivers them again, and jmslike's count must say that copy is not the
        first."""
        settle = []
        for token in tokens:
            token.consumer.outstanding.pop(token.number, None)
            if not stale(token):
                settle.append(token)
                self.connection.forget(token.key)
        return settle

    def acknowledge_soon(
        self, tokens: Sequence[Any], written: Callable[[bool], None] | None = None
    ) -> None:
        """As :meth:`acknowledge`, the settlements queued for the connection's thread
        without waking it (``CallQueue.post_soon``: they go with its next wake-up, or
        within 2 ms, before anything queued after them). ``written`` hears from that
        thread once they went, or False if the connection closed first. Settled on each
        consumer's own connection (an exclusive consumer on RabbitMQ has one of its own):
        tokens of more than one connection are acknowledged at once, as the default
        does."""
        transports = {id(token.consumer.transport) for token in tokens}
        if len(transports) != 1:
            super().acknowledge_soon(tokens, written)
            return
        transport = tokens[0].consumer.transport
        # (Links taken now: a consumer closed meanwhile has none, and its link settles
        # nothing once gone.)
        settle = [(token.consumer.link, token.number) for token in self._finished(tokens)]

        told: list[bool] = []  # written is called once: by run, or by the first failure

        def tell(ok: bool) -> None:
            if written is not None and not told:
                told.append(ok)
                written(ok)

        def run() -> None:
            for link, number in settle:
                transport._settle_now(link, number, Delivery.ACCEPTED, False, None)
            tell(True)

        try:
            transport.post_soon(run, lambda _error: tell(False))
        except ConnectionFailedError:
            tell(False)
            raise

    def redeliver(self, token: Any) -> Message:
        token.seen = True
        token.count = (
            self.connection.counts.count(token.key, True) if token.key else token.count + 1
        )
        message = decode(token.incoming, token.consumer.destination, None)
        message.jms_redelivered = True
        set_provider_property(message, DELIVERY_COUNT, token.count)
        return message

    def release(self, tokens: Sequence[Any]) -> None:
        self.give_back(tokens, seen=True)

    def return_unseen(self, tokens: Sequence[Any]) -> None:
        self.give_back(tokens, seen=False)

    def give_back(self, tokens: Sequence[Any], *, seen: bool) -> None:
        """Back to the queue, in order. One the application saw counts as delivered
        (MODIFIED, delivery failed) where the broker counts, and so does one it saw before
        a recover or rollback put it back in the buffer, unseen since; RabbitMQ refuses
        MODIFIED (it ends the session), so there RELEASED, and first-acquirer tells the
        rest. Unseen, its number in jmslike's count goes back one."""
        rabbitmq = self.connection.rabbitmq
        counts = self.connection.counts
        for token in tokens:
            consumer = token.consumer
            consumer.outstanding.pop(token.number, None)
            if not seen:
                counts.returned_unseen(token.key)
            transport = consumer.transport
            if consumer.own_connection:
                continue  # given back by closing its connection (AmqpConsumer doc)
            if (seen or token.seen) and not rabbitmq:
                transport.settle(consumer.link, token.number, Delivery.MODIFIED, failed=True)
            else:
                transport.settle(consumer.link, token.number, Delivery.RELEASED)

    def dead_letter(self, token: Any, reason: str) -> None:
        message = decode(token.incoming, token.consumer.destination, None)
        set_provider_property(message, DLQ_REASON, reason)
        message.jms_delivery_mode = PERSISTENT
        dlq = Queue(self.connection.settings.dead_letter_queue)
        self._transfer(dlq, message, confirm=True, alone=True)
        self.acknowledge([token])

    def browse(self, destination: Destination, selector: str | None) -> Sequence[Message]:
        """A receiver in ``copy`` distribution mode sees the queue without taking from it;
        Artemis lists what it will deliver, in order (ORD-20)."""
        connection = self.connection
        if connection.rabbitmq:
            raise IllegalStateError("RabbitMQ has no queue browsers (capability browsers)")
        options: list[Any] = [Capability("queue"), Copy()]
        rendered = connection.broker_selector(selector)
        if rendered is not None:
            options.append(Selector(rendered))
        seen = connection.transport.browse(connection.address_of(destination), options)
        if connection.classic:
            note_capped_browse(log, connection.transport.address, destination.key, len(seen))
        # Artemis expires a message only when it would deliver it or its reaper runs; a
        # browser must not list one whose time has passed (ORD-13).
        now = time.time()
        return [
            decode(incoming, destination, connection.reply_to_of(incoming))
            for incoming in seen
            if not incoming.expiry_time or incoming.expiry_time > now
        ]

    def unsubscribe(self, name: str) -> None:
        """Attach the subscription's link name with no source (Artemis answers with the
        subscription's queue, or with none if there is no such subscription), then close
        the link, which deletes the subscription; without a client id on Artemis, through
        the management API."""
        connection = self.connection
        if connection.subscriptions.active[name] > 0:
            raise IllegalStateError(
                f"durable subscription {name!r} has an active consumer: close it first"
            )
        if connection.rabbitmq:
            # A queue jmslike named (jmslike.spi.rabbit_subscriptions): the management
            # API deletes it, from any connection or process, and refuses while in use.
            connection.rabbit_subscriptions.unsubscribe(name, connection.client_id)
            return
        if connection.client_id is None and connection.broker == "artemis":
            # A shared one, kept as the queue ``<name>:global`` (seen on 2.x; Qpid JMS's
            # queue too). Artemis finds it by link name only if the link's *desired*
            # capabilities say "shared" and "global" (Qpid JMS sends them); Proton
            # cannot set a link's capabilities, and without them Artemis looks for
            # ``<container id>.<name>``: "Unknown subscription link".
            connection.exclusivity.unsubscribe([f"{name}:global"], name, connection.broker)
            return
        transport = connection.transport
        for link_name in SubscriptionNames.lookups(name, connection.client_id):
            receiver = transport.open_receiver(
                None, lambda _message, _delivery: None, options=[NullSource()], name=link_name
            )
            found = transport.remote_source(receiver)
            transport.close_link(receiver, keep=not found, wait=True)
            if found:
                return
        raise InvalidDestinationError(
            f"no durable subscription {name!r} for client id {connection.client_id!r} on "
            f"{connection.broker}"
        )

    def commit(self, tokens: Sequence[Any]) -> None:
        if not self.transacted:
            raise IllegalStateError("commit on a session that is not transacted")
        transport = self.connection.transport
        if self._tx_lost:
            # As over STOMP: what the transaction did before the loss is gone, so what
            # it did since goes too, and the application hears that it was rolled back.
            self._tx_lost = False
            self._kept = None  # (sends it made before the loss stay: not atomic, kept.py)
            with contextlib.suppress(JMSException):
                self.rollback()
            raise TransactionRolledBackError(
                f"the connection to AMQP broker {transport.address} was lost and made again "
                "during this transaction: it was rolled back"
            )
        if self._coordinator is None:
            # Every send confirmed, whatever its delivery mode: a failure must show
            # before anything consumed is accepted.
            kept = self._kept
            if kept is None:  # else a commit that Ctrl-C stopped, carried on (KeptCommit)
                kept = self._kept = KeptCommit(self._pending)
                self._pending = []
            try:
                send_kept(
                    kept,
                    self._kept_transfer,
                    transport.call,
                    self.connection.settings.request_timeout,
                )
            except JMSException:
                self._kept = None  # ended: rolled back, or in doubt
                raise
            self._kept = None
            self.acknowledge(tokens)
        else:
            # The transaction stays the session's until its discharge has an outcome: a
            # commit that Ctrl-C stopped is carried on by the next call, which settles
            # in it again (a delivery settled already is left alone) and waits for the
            # discharge already sent (``_discharge``) rather than sending a second.
            # Before, the next call declared another transaction, and the first, with
            # its sends, was never discharged.
            txn = self._transaction()
            for token in tokens:
                token.consumer.outstanding.pop(token.number, None)
            # A delivery of a connection lost since (given again locally by the rollback
            # that the loss caused) cannot be settled: the broker delivers it again.
            tokens = [token for token in tokens if not stale(token)]
            for token in tokens:
                self.connection.forget(token.key)
            transport.settle_all([(t.consumer.link, t.number) for t in tokens], txn=txn)
            if self._discharge[0] is not txn:
                self._discharge = (txn, [])
            else:
                self._discharge_sent(txn)  # carrying on: what the stopped call queued ran
            try:
                transport.discharge(
                    self._coordinator,
                    txn,
                    fail=False,
                    senders=list(self._senders.values()),
                    sent=self._discharge[1],
                )
            except JMSException:
                self._txn, self._discharge = None, (None, [])
                raise
            self._txn, self._discharge = None, (None, [])
        self._detach_zombies(give_back=False)

    def _discharge_sent(self, txn: Any) -> bool:
        """Whether a commit that a Ctrl-C stopped sent the discharge of ``txn``: then the
        transaction is over, or ending, at the broker. A request that commit queued runs
        on the connection's thread before this answers (one round there, only after such
        a commit): a Ctrl-C between queuing it and waking that thread left it waiting for
        the next call, and a send in the transaction went after it (Artemis: "AMQ119014:
        Transaction not found", connection closed)."""
        if txn is None or self._discharge[0] is not txn:
            return False
        if not self._discharge[1]:
            self.connection.transport.call(lambda: None)
        return bool(self._discharge[1])

    def _kept_transfer(
        self, send: tuple[Destination, Message], done: SendDone, made: Callable[[], None]
    ) -> None:
        self._transfer(send[0], send[1], confirm=True, done=done, made=made)

    def _detach_zombies(self, *, give_back: bool) -> None:
        """The transaction ended: consumers closed in it detach now, after giving back
        what they held when it was rolled back (in order, counted: ORD-10, ORD-11)."""
        zombies, self.zombies = self.zombies, []
        for consumer in zombies:
            with contextlib.suppress(JMSException):
                if give_back:
                    self.give_back(list(consumer.outstanding.values()), seen=True)
                consumer.detach()

    def rollback(self) -> None:
        if not self.transacted:
            raise IllegalStateError("rollback on a session that is not transacted")
        if self._discharge_sent(self._txn):
            raise IllegalStateError(
                "rollback() after a commit() that was interrupted once its discharge had "
                f"gone to AMQP broker {self.connection.transport.address}: call commit() "
                "again first, to finish it and learn its outcome"
            )
        kept = self._kept
        if kept is not None and kept.made:
            raise IllegalStateError(
                f"rollback() after a commit() that was interrupted once {kept.made} of its "
                f"{len(kept.sends)} sends had gone to AMQP broker "
                f"{self.connection.transport.address} (a transaction jmslike keeps is "
                "not atomic at the broker): call commit() again first, to finish it"
            )
        self._kept = None
        self._pending.clear()
        try:
            if self._txn is not None and self._coordinator is not None:
                txn, self._txn = self._txn, None
                self.connection.transport.discharge(
                    self._coordinator, txn, fail=True, senders=list(self._senders.values())
                )
        finally:
            self._detach_zombies(give_back=True)

    def close(self) -> None:
        transport = self.connection.transport
        if self.transacted:
            with contextlib.suppress(JMSException):
                if self._discharge_sent(self._txn):
                    self._txn = None  # its commit's discharge went: nothing to undo
            with contextlib.suppress(JMSException):
                self.rollback()
        for link in (*self._senders.values(), self._coordinator):
            if link is not None:
                with contextlib.suppress(JMSException):
                    transport.close_link(link)
        self._senders.clear()
