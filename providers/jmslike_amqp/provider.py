"""The SPI classes of the AMQP 1.0 provider: JMS over AMQP as Qpid JMS maps it.

Sends are transfers (a persistent one waits for the broker's outcome); a consumer is a
receiver link whose credit is what the API asks for; acknowledging is settling ACCEPTED,
giving back is RELEASED (unseen) or MODIFIED with delivery-failed (seen, counted);
recover and rollback redeliver locally, in order. Transactions use the broker's
transaction coordinator where it has one (Artemis, Classic) and are kept by jmslike
where it has none (RabbitMQ 3.10). Selectors are the ``apache.org:selector-filter:string``
filter; durable and shared subscriptions are named as Qpid JMS names them; temporary
destinations are dynamic nodes; browsers are ``copy`` receivers. Groups are the broker's
(``group-id``) on Artemis and Classic, the client gate's on RabbitMQ. What a broker lacks
is in ``Capabilities`` (docs/providers.md has the matrix).

Threads: these classes run on the application's threads and on the connection's own
thread (``AmqpConsumer._on_message`` and what it calls); they hold Proton
objects only through the transport's handles and delivery numbers.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Sequence
from typing import Any

from proton import Delivery
from proton import Message as AmqpMessage
from proton.reactor import Copy, LinkOption, Selector

from jmslike.config import FactorySettings, ParsedURL
from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic
from jmslike.errors import (
    ConfigurationError,
    ConnectionFailedError,
    IllegalStateError,
    InvalidDestinationError,
    JMSException,
    TransactionRolledBackError,
    map_provider_errors,
)
from jmslike.message import DELIVERY_COUNT, DeliveryMode, Message
from jmslike.selector import (
    ARTEMIS_AMQP_FILTER,
    JMS_SYNTAX,
    message_lookup,
    parse_selector,
    render_selector,
)
from jmslike.selector import Selector as ClientSelector
from jmslike.spi.clientids import CLIENT_IDS
from jmslike.spi.counts import counts_for
from jmslike.spi.diagnose import size_note
from jmslike.spi.exclusive import exclusive_queues_for, exclusivity_for
from jmslike.spi.messages import DLQ_REASON, set_provider_property
from jmslike.spi.provider import (
    Capabilities,
    ConsumerSpec,
    DeliverySink,
    ExceptionCallback,
    OrderingMode,
    Provider,
    ProviderConnection,
    ProviderConsumer,
    ProviderSession,
)
from jmslike.spi.reconnect import RECONNECT_SETTINGS, reconnect_policy
from jmslike.spi.strict import Claim, Promotion, registry_for
from jmslike.spi.temporary import DeletedTemporaries
from jmslike.spi.tls import TLS_SETTINGS, tls_options
from jmslike_amqp.codec import REPLY_TO_TYPE, decode, destination_for, encode, message_key
from jmslike_amqp.credit import Credit
from jmslike_amqp.subscriptions import NullSource, SubscriptionNames, TemporaryTarget
from jmslike_amqp.transport import AmqpTransport, Capability, LinkHandle

__all__ = ["AmqpProvider"]

log = logging.getLogger("jmslike.amqp")

PERSISTENT = DeliveryMode.PERSISTENT

_DELETED_TEMPORARY = DeletedTemporaries()
"""Temporary destinations whose connection (in this process) closed or deleted them."""



class _Token:
    """One delivery: the AMQP message as it came (a redelivery carries what was sent)
    and its number on the consumer's link (the transport keeps the Proton delivery)."""

    __slots__ = ("consumer", "count", "generation", "incoming", "key", "number", "seen")

    def __init__(
        self,
        consumer: AmqpConsumer,
        incoming: AmqpMessage,
        number: int,
        count: int,
        key: str,
    ) -> None:
        self.consumer = consumer
        self.incoming = incoming
        self.number = number
        self.count = count
        self.key = key
        """The message id: what jmslike counts deliveries by where the broker does not."""
        self.generation = consumer.transport.generation
        """The connection it came over: one lost since cannot settle it (``stale``)."""
        self.seen = False
        """The application had this delivery (it was redelivered locally since): going
        back to the broker, it counts as delivered even if its redelivery was not seen."""


def stale(token: Any) -> bool:
    """The delivery came over a connection lost since (a reconnect): it cannot be
    settled, and the broker hands the message out again."""
    return isinstance(token, _Token) and token.generation != token.consumer.transport.generation


class AmqpConsumer(ProviderConsumer):
    """One receiver link; credit is what the API asked for.

    A standby of a strictly ordered destination (ORD-18) attaches no link until the
    active consumer has given its messages back and detached (``promote``): credit asked
    for meanwhile is kept and granted then.

    On RabbitMQ a strictly ordered queue (or a partition) is a single-active-consumer
    quorum queue, and such a queue puts what a *link* gives back (settled RELEASED, or
    unsettled at detach) behind the messages still waiting: seen here, ``m3 m4 m5 m1 m2``
    after a consumer holding ``m1`` and ``m2`` detached. What a closed *connection* held
    comes back first, in order. So there such a consumer has a connection of its own,
    and gives back by closing it, as every RabbitMQ consumer does over STOMP."""

    def __init__(
        self,
        session: AmqpSession,
        destination: Destination,
        sink: DeliverySink,
        selector: str | None = None,
        *,
        link_name: str | None = None,
        source_options: Sequence[Any] = (),
        capabilities: Sequence[str] = (),
        subscription: str | None = None,
        claim: Claim | None = None,
        ring: list[Credit] | None = None,
    ) -> None:
        self._session = session
        self.claim = claim
        self.exclusive = claim is not None and claim.strict
        connection = session.connection
        self.own_connection = self.exclusive and connection.rabbitmq and not destination.is_topic
        self.transport: AmqpTransport = connection.transport
        """Where this consumer's link lives: the connection's, or its own (above)."""
        self._lock = threading.Lock()
        self._credit_waiting = 0
        """Credit asked for while a standby, granted once promoted."""
        self._closed = False
        self._subscription = subscription
        """A durable subscription's name: closing detaches the link, which keeps it."""
        self.destination = destination
        self._sink = sink
        self.outstanding: dict[int, _Token] = {}
        """Deliveries pushed up and not settled yet, by number, in delivery order (the
        connection's thread adds, settling removes)."""
        connection = session.connection
        address = connection.address_of(destination)
        options: list[Any] = [*connection.node_options(destination, address), *source_options]
        if capabilities:
            options[0] = Capability("topic" if destination.is_topic else "queue", *capabilities)
        self._filter: ClientSelector | None = None
        if selector is not None:
            if connection.rabbitmq:
                # RabbitMQ 3.10 has no AMQP filters. On a topic every subscriber has a
                # queue of its own, so filtering here takes nothing from anyone.
                if not destination.is_topic:
                    raise IllegalStateError(
                        "RabbitMQ cannot filter a queue with a selector, and filtering on the "
                        "client would take messages from other consumers (capability selectors)"
                    )
                self._filter = parse_selector(selector)
            else:
                rendered = connection.broker_selector(selector)
                if rendered is not None:
                    options.append(Selector(rendered))
        if self.exclusive and connection.classic and not destination.is_topic:
            # ORD-18 across processes: Classic's exclusive consumer, as an address option.
            address += "?consumer.exclusive=true"
        self._credit: Credit | None = None
        """Where the broker stops a queue at a blocked group (Artemis): this receiver's
        credit among the others of the queue on this connection (credit.py)."""
        if ring is not None:
            self._credit = Credit(self.transport, ring, selective=selector is not None)
        on_flow = self._credit.flowed if self._credit is not None else None

        def attach() -> LinkHandle:
            if self.own_connection:
                self.transport = connection.open_transport()
            link = self.transport.open_receiver(
                address, self._on_message, options=options, on_flow=on_flow, name=link_name
            )
            if self._credit is not None:
                self._credit.link = link  # before any credit: nothing uses it yet
            return link

        self._attach = attach
        try:
            self._link: LinkHandle | None = (
                None if claim is not None and claim.waiting else attach()
            )
        except BaseException:
            self._retire()
            raise
        if subscription is not None:
            connection.subscriptions.active[subscription] += 1
        self._owed = 0
        """Deliveries dropped from the API's buffer at a reconnect: credit to grant again."""
        connection.consumers.add(self)

    def interrupted(self) -> None:
        """The connection's thread, as its connection is lost under a reconnect policy:
        what was buffered from it and not handed out is dropped (the broker delivers it
        again, flagged redelivered, in order: ORD-11); what the application holds can no
        longer be settled."""
        lost = [t for t in self.outstanding.values() if stale(t)]
        self.outstanding = {n: t for n, t in self.outstanding.items() if not stale(t)}
        # Every token the API layer drops passes through the predicate (a listener
        # container's feed drops what waits in its own queue without returning it).
        dropped: dict[int, _Token] = {}

        def pick(token: Any) -> bool:
            if stale(token):
                dropped[id(token)] = token
                return True
            return False

        if self.revoke is not None:
            self.revoke(pick)
        counts = self._session.connection.counts
        for token in dropped.values():
            counts.returned_unseen(token.key)
        self._owed += len(dropped)
        if len(lost) > len(dropped) and self._session.transacted:
            # The application holds some in its transaction: it rolled back at the broker.
            self._session.transaction_lost()

    def restored(self) -> None:
        """The connection's thread, once the link is attached again: the credit the API
        layer had asked for and not got is granted on the new link."""
        link, owed, self._owed = self._link, self._owed, 0
        if link is None or self._closed:
            return
        if self._credit is not None:
            self._credit.restart(owed)
            return
        credit = link.credit_lost + owed
        if credit > 0:
            self.transport.grant_now(link, credit)

    def promote(self) -> None:
        """The active consumer of the strictly ordered destination is gone: attach now
        and grant what was asked for meanwhile (ORD-18)."""
        with self._lock:
            if self._closed or self._link is not None:
                return
            self._link = self._attach()
            credit, self._credit_waiting = self._credit_waiting, 0
        if credit > 0:
            self.flow(credit)

    def flow(self, credit: int) -> None:
        """Grant ``credit`` more deliveries; 0 withdraws what is left (a drain: the broker
        sends what it has at once and gives the rest of the credit back). A grant made
        while a drain is on its way still counts: AMQP's flow arithmetic adds it to
        whatever the drain leaves."""
        with self._lock:
            if self._link is None:  # a standby: keep the credit for later
                self._credit_waiting = self._credit_waiting + credit if credit > 0 else 0
                return
            link = self._link
        transport = self.transport
        policy = self._credit
        if policy is not None:
            transport.post(lambda: policy.flow(credit))
            return
        if credit > 0:
            transport.flow(link, credit)
        elif not self._session.connection.rabbitmq:
            transport.withdraw(link)
        # RabbitMQ 3.10 cannot drain a classic queue's link: the channel crashes
        # (function_clause in rabbit_classic_queue:handle_event({send_drained, ...}))
        # and takes the connection down. The credit stays; what it brings waits in the
        # consumer's buffer, like a STOMP window (docs/providers.md, limits).

    @property
    def link(self) -> LinkHandle:
        """The receiver link (a consumer that has messages has one)."""
        link = self._link
        if link is None:
            raise IllegalStateError(f"consumer on {self.destination} has no link yet")
        return link

    def _on_message(self, incoming: AmqpMessage, number: int) -> None:
        """The connection's thread: decode and hand to the API (which never blocks)."""
        connection = self._session.connection
        message = decode(incoming, self.destination, connection.reply_to_of(incoming))
        key = message.jms_message_id or ""
        count = connection.count_delivery(incoming, key)
        message.jms_redelivered = count > 1
        set_provider_property(message, DELIVERY_COUNT, count)
        if self._filter is not None and not self._filter.matches(message_lookup(message)):
            self.transport.settle(self.link, number, Delivery.ACCEPTED)  # not for us
            connection.forget(key)
            self.flow(1)  # the credit it used is given back
            return
        token = _Token(self, incoming, number, count, key)
        self.outstanding[number] = token
        self._sink(message, token)
        if self._credit is not None:
            self._credit.delivered(incoming.group_id is not None)

    def _retire(self) -> None:
        """Leave the queue's ring of receivers (credit.py), on the connection's thread."""
        policy = self._credit
        if policy is not None and not policy.closed:
            with contextlib.suppress(JMSException):
                self.transport.post(policy.retire)

    def close(self, delivered: Sequence[Any], undelivered: Sequence[Any]) -> None:
        """Give back what was pushed and not finished, in order (ORD-10), then detach.

        In a transaction, what the application saw belongs to the transaction (ORD-10):
        the link stays attached, so that the broker keeps the group here, until commit
        accepts those messages or rollback gives them back."""
        session = self._session
        with self._lock:
            self._closed = True
            standby = self._link is None
        self._retire()  # nothing pokes a closed consumer for a group's next message
        if standby:
            self._release_claim()
            return
        if self.own_connection and not session.transacted:
            # Closing the connection gives everything back, first and in order.
            session.give_back(undelivered, seen=False)
            session.give_back(delivered, seen=True)
            self.detach()
            return
        session.give_back(undelivered, seen=False)
        if session.transacted and self.outstanding:
            # (With none of its messages in the transaction it goes at once: a partition
            # handed over after its last commit must not wait for a commit that may
            # never come.)
            session.zombies.append(self)
            return
        session.give_back(delivered, seen=True)
        self.detach()

    def detach(self) -> None:
        connection = self._session.connection
        if self.own_connection:
            try:
                for token in self.outstanding.values():
                    connection.counts.returned_unseen(token.key)
                self.outstanding = {}
                connection.close_transport(self.transport)
            finally:
                self._release_claim()
            return
        durable = self._subscription is not None
        # A standby promoted while the broker still holds this link could be given
        # messages that come after the ones this link gives back (seen on Classic, ORD-18).
        wait = durable or self.claim is not None
        try:
            self.transport.close_link(
                self.link,
                keep=durable,
                wait=wait,
                before=self._return_late,
                on_late=self._arrived_late,
            )
        finally:
            if durable:
                connection.subscriptions.active[self._subscription or ""] -= 1
            self._release_claim()

    def _return_late(self) -> None:
        """On the connection's thread, as the link closes: deliveries that arrived after
        the API gave back what it held were never seen by the application; back to the
        queue, uncounted, in the order they came (ORD-10, ORD-11)."""
        connection = self._session.connection
        late, self.outstanding = list(self.outstanding.values()), {}
        for token in late:
            connection.counts.returned_unseen(token.key)
            self.transport.settle(self.link, token.number, Delivery.RELEASED)

    def _arrived_late(self, incoming: AmqpMessage) -> None:
        """The connection's thread: a transfer the broker sent before it read the detach.
        It was never seen here; where jmslike counts, its redelivery must not count it
        (seen on Classic: such a message came back flagged redelivered, count 2)."""
        self._session.connection.counts.returned_unseen(message_key(incoming))

    def _release_claim(self) -> None:
        """A standby may take over now: what this consumer held went back first."""
        if self.claim is not None:
            claim, self.claim = self.claim, None
            self._session.connection.strict.detach(claim)


SENDERS_KEPT = 64
"""Sender links a session keeps open, the most recently used (a service that replies to a
temporary queue per request would otherwise keep one per request: 4.7 KiB each on
Artemis, found by the soak). A transacted session keeps all it used: its links' transfers
belong to the open transaction."""


class AmqpSession(ProviderSession):
    """One JMS session. A transacted one uses the broker's transaction coordinator
    (Artemis); where the broker has none (RabbitMQ 3.10 never answers the attach), jmslike
    keeps the transaction itself: sends wait in order until commit, which sends them
    (each confirmed) and then accepts what was consumed. ORD-8 holds either way; only a
    connection lost in the middle of such a commit can leave it half done."""

    def __init__(self, connection: AmqpConnection, transacted: bool) -> None:
        self.connection = connection
        self.transacted = transacted
        self._senders: OrderedDict[str, LinkHandle] = OrderedDict()
        """Sender links by address, least recently used first (bounded: ``SENDERS_KEPT``)."""
        self._coordinator: LinkHandle | None = None
        if transacted and connection.coordinated:
            self._coordinator = connection.transport.open_coordinator()
        self._txn: Any = None
        self._pending: list[tuple[Destination, Message]] = []
        """Sends of a client-kept transaction, made at commit."""
        self.zombies: list[AmqpConsumer] = []
        """Consumers closed inside the transaction, detached when it ends."""
        self._tx_lost = False
        """The connection was lost (and made again) while a transaction was open: the
        broker rolled it back, and the next commit says so."""
        connection.sessions.add(self)

    def interrupted(self) -> None:
        """The connection's thread, as the connection is lost under a reconnect policy:
        the broker rolls back an open transaction with it."""
        if self.transacted and (self._txn is not None or self._pending):
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

    def send(self, destination: Destination, message: Message) -> None:
        self.connection.check_temporary(destination, consuming=False)
        if self.transacted and self._coordinator is None:
            self._pending.append((destination, message))
            return
        self._transfer(destination, message, confirm=message.jms_delivery_mode == PERSISTENT)

    def _transfer(
        self, destination: Destination, message: Message, *, confirm: bool, alone: bool = False
    ) -> None:
        """Send now: in the session's transaction if there is one (its discharge
        confirms) unless ``alone``, else waiting for the broker's outcome when ``confirm``."""
        connection = self.connection
        address = connection.address_of(destination)
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
        reply_to = message.jms_reply_to
        outgoing = encode(
            message,
            address,
            connection.address_of(reply_to) if reply_to is not None else None,
            wire_priority=connection.capabilities.priority,
        )
        txn = self._transaction() if self._coordinator is not None and not alone else None
        try:
            connection.transport.send(sender, outgoing, confirm=confirm and txn is None, txn=txn)
        except ConnectionFailedError as exc:
            body = outgoing.body
            note = size_note(len(body)) if isinstance(body, (bytes, str)) else ""
            if note:
                raise type(exc)(f"{exc}{note}") from exc
            raise

    def create_consumer(self, spec: ConsumerSpec, sink: DeliverySink) -> ProviderConsumer:
        connection = self.connection
        destination = spec.destination
        capabilities = connection.capabilities
        for wanted, capability, have in (
            (spec.durable, "durable_subscriptions", capabilities.durable_subscriptions),
            (spec.shared, "shared_subscriptions", capabilities.shared_subscriptions),
            (spec.no_local, "no_local", False),
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
        extra: dict[str, Any] = {}
        if named:
            if durable and not shared and connection.client_id is None:
                raise IllegalStateError(
                    f"durable subscription {name!r} needs a client id "
                    "(connection.client_id or the factory's client_id), as in JMS"
                )
            link_name, options, source_capabilities = connection.subscriptions.link(
                name, client_id=connection.client_id, durable=durable, shared=shared
            )
            extra = {
                "link_name": link_name,
                "source_options": options,
                "capabilities": source_capabilities,
                "subscription": name if durable else None,
            }
        # ORD-18 per queue, and for a topic per subscription (a plain topic consumer is
        # a subscription of its own). The broker keeps no exclusivity over AMQP here,
        # so jmslike keeps it for the process, as over STOMP (jmslike/spi/strict.py).
        promote = Promotion()  # bound to the consumer once made

        # Receivers that compete for one queue (or one shared subscription) on a broker
        # that stops the queue at a blocked group share a ring (credit.py).
        ring = None
        if connection.head_blocking and (shared or not destination.is_topic):
            place = f"shared:{name}:{durable}" if shared else f"queue:{destination.key}"
            ring = connection.rings.setdefault(place, [])
        claim = connection.strict.attach(
            destination.key,
            name if named else f"own-{id(promote)}" if destination.is_topic else None,
            exclusive=spec.exclusive,
            standby=spec.standby,
            promote=promote,
            what=str(destination) + (f" subscription {name!r}" if named else ""),
        )
        if claim.strict and not (destination.is_topic or destination.is_temporary):
            # ORD-18 across processes: the broker itself holds the queue to one consumer.
            connection.declare_exclusive_queue(destination, required=False)
        try:
            consumer = AmqpConsumer(
                self, destination, sink, spec.selector, claim=claim, ring=ring, **extra
            )
        except BaseException:
            connection.strict.detach(claim)
            raise
        promote.bind(consumer.promote)
        return consumer

    def acknowledge(self, tokens: Sequence[Any]) -> None:
        for token in tokens:
            consumer = token.consumer
            consumer.outstanding.pop(token.number, None)
            if stale(token):
                # Came over a connection lost since: the broker delivers it again, and
                # jmslike's count must say that copy is not the first.
                continue
            consumer.transport.settle(consumer.link, token.number, Delivery.ACCEPTED)
            self.connection.forget(token.key)

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
        the link, which deletes the subscription."""
        connection = self.connection
        if not connection.capabilities.durable_subscriptions:
            raise IllegalStateError(
                f"{connection.broker} over AMQP has no durable subscriptions "
                "(capability durable_subscriptions)"
            )
        if connection.subscriptions.active[name] > 0:
            raise IllegalStateError(
                f"durable subscription {name!r} has an active consumer: close it first"
            )
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
            with contextlib.suppress(JMSException):
                self.rollback()
            raise TransactionRolledBackError(
                f"the connection to AMQP broker {transport.address} was lost and made again "
                "during this transaction: it was rolled back"
            )
        if self._coordinator is None:
            # Every send confirmed, whatever its delivery mode: a failure must show
            # before anything consumed is accepted.
            pending, self._pending = self._pending, []
            for done, (destination, message) in enumerate(pending):
                try:
                    self._transfer(destination, message, confirm=True)
                except JMSException as exc:
                    raise TransactionRolledBackError(
                        f"commit failed after {done} of {len(pending)} sends: {exc}"
                    ) from exc
            self.acknowledge(tokens)
        else:
            txn = self._transaction()
            self._txn = None
            for token in tokens:
                token.consumer.outstanding.pop(token.number, None)
            # A delivery of a connection lost since (given again locally by the rollback
            # that the loss caused) cannot be settled: the broker delivers it again.
            tokens = [token for token in tokens if not stale(token)]
            for token in tokens:
                self.connection.forget(token.key)
            transport.settle_all([(t.consumer.link, t.number) for t in tokens], txn=txn)
            transport.discharge(self._coordinator, txn, fail=False)
        self._detach_zombies(give_back=False)

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
        self._pending.clear()
        try:
            if self._txn is not None and self._coordinator is not None:
                txn, self._txn = self._txn, None
                self.connection.transport.discharge(self._coordinator, txn, fail=True)
        finally:
            self._detach_zombies(give_back=True)

    def close(self) -> None:
        transport = self.connection.transport
        if self.transacted:
            with contextlib.suppress(JMSException):
                self.rollback()
        for link in (*self._senders.values(), self._coordinator):
            if link is not None:
                with contextlib.suppress(JMSException):
                    transport.close_link(link)
        self._senders.clear()


class AmqpConnection(ProviderConnection):
    def __init__(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> None:
        self.settings = settings
        self._on_exception = on_exception
        self.client_id: str | None = None

        members = url.members or (url,)
        first = members[0]
        # failover:(amqp://u:p@a,amqp://u:p@b): the members carry the credentials
        holder = next((m for m in members if m.user), None)
        if not user and holder is not None:
            user, password = holder.user, holder.password
        # amqp://host:5672/name: RabbitMQ's vhost "name", which its AMQP 1.0 plugin takes
        # from the open frame's hostname as "vhost:name" (other brokers ignore it).
        vhost = (first.path or "").strip("/")

        tls = tls_options(settings)
        reconnect = reconnect_policy(url, settings.extra)
        self._acked: deque[tuple[float, str]] | None = (
            deque(maxlen=RECENT_ACKS) if reconnect.attempts != 0 else None
        )
        """Under a reconnect policy: (when, key) of recent acknowledgements, which AMQP
        never confirms: one still on its way when the connection is lost did not count,
        and that message comes again (see ``_interrupted``)."""
        self._ack_window = max(idle_timeout_of(settings), settings.request_timeout) + 1.0
        self.sessions: weakref.WeakSet[AmqpSession] = weakref.WeakSet()
        self.consumers: weakref.WeakSet[AmqpConsumer] = weakref.WeakSet()

        def connect(container_id: str | None) -> AmqpTransport:
            cell: list[AmqpTransport] = []
            transport = AmqpTransport(
                first.host,
                first.port or 5672,
                user,
                password,
                timeout=settings.request_timeout,
                on_lost=on_exception,
                ssl=first.scheme == "amqps",
                ssl_ca_file=tls.ca_file,
                ssl_verify_host=tls.verify_host,
                container_id=container_id,
                virtual_host=f"vhost:{vhost}" if vhost else None,
                idle_timeout=idle_timeout_of(settings),
                members=[(m.host, m.port or 5672) for m in members],
                reconnect=reconnect,
                on_interrupted=lambda: self._interrupted(cell[0]),
                on_restored=lambda: self._restored(cell[0]),
            )
            cell.append(transport)
            return transport

        self._connect = connect
        self.transport = connect(None)
        self._extra_transports: set[AmqpTransport] = set()
        properties = self.transport.remote_properties()
        product = str((properties or {}).get("product", "")) if properties else ""
        lowered = product.lower()
        self.rabbitmq = "rabbitmq" in lowered
        # Artemis says "apache-activemq-artemis", Classic "ActiveMQ".
        self.classic = "activemq" in lowered and "artemis" not in lowered
        self.broker = (
            "rabbitmq"
            if self.rabbitmq
            else "artemis"
            if "artemis" in lowered
            else "activemq"
            if self.classic
            else product
        )
        self._prefixes: tuple[str, str] = (
            ("/queue/", "/topic/")
            if self.rabbitmq
            else (
                str((properties or {}).get("queue-prefix") or ""),
                str((properties or {}).get("topic-prefix") or ""),
            )
        )
        self.exclusivity = exclusivity_for(
            self.broker, first.host, settings, user, password, vhost or "/"
        )
        self.exclusive_queues = exclusive_queues_for(self.transport.address)
        native = not self.rabbitmq
        self.head_blocking = self.broker == "artemis"
        """The broker stops a queue's dispatch at a message whose group is pinned to a
        consumer without credit (credit.py); Classic skips such a message, RabbitMQ
        keeps no groups."""
        self.rings: dict[str, list[Credit]] = {}
        """Receivers competing for one node on this connection (credit.py), by node."""
        self.coordinated = not self.rabbitmq
        """The broker has a transaction coordinator (RabbitMQ 3.10 never answers one)."""
        self.capabilities = Capabilities(
            provider="amqp",
            broker=self.broker,
            broker_version=product,
            ordering_mode=OrderingMode.BROKER if native else OrderingMode.CLIENT_GATE,
            native_groups=native,
            group_scope="consumer" if native else "none",
            selectors=native,  # RabbitMQ: on topics only, filtered here
            transactions=True,
            delivery_delay=False,
            priority=False,
            # RabbitMQ 3.10 drops a topic link's queue when the link detaches, and
            # refuses dynamic nodes ("amqp:not-implemented: Dynamic targets not supported").
            durable_subscriptions=native,
            # Classic 5.x has no JMS 2.0 shared subscriptions, over any protocol.
            shared_subscriptions=native and not self.classic,
            temporary_destinations=native,
            browsers=native,
            exclusive_consumers=True,
            exclusive_scope=self.exclusivity.scope,
            time_to_live=True,
            delivery_count=True,
            dead_letter_queue=True,
            persistent=True,
            extra={
                "gate_scope": f"amqp://{self.transport.address}",
                "exclusive_hint": self.exclusivity.hint,
                # A listener container's sessions take from one link (jmslike/_feed.py).
                "container_feed": True,
            },
        )
        self._lock = threading.Lock()
        self.subscriptions = SubscriptionNames()
        self.counts = counts_for(self.transport.address)
        """jmslike's delivery counts for this broker (see ``count_delivery``)."""
        self.strict = registry_for(self.transport.address)
        self._temporary: dict[str, LinkHandle] = {}
        """Temporary destinations made here: name -> the dynamic sender link that keeps
        it alive (Artemis deletes it when the link or the connection closes)."""

    def _interrupted(self, transport: AmqpTransport) -> None:
        """``transport`` lost its connection and makes it again (its thread). Messages
        acknowledged lately may not have been acknowledged at the broker: counted as
        delivered once more, so that if one comes again it comes flagged redelivered
        (Artemis sends a delivery count of 0 then)."""
        acked = self._acked
        if acked:
            horizon = time.monotonic() - self._ack_window
            for when, key in list(acked):
                if when >= horizon:
                    self.counts.count(key, False)
            acked.clear()
        if transport is self.transport:
            for session in list(self.sessions):
                session.interrupted()
        for consumer in list(self.consumers):
            if consumer.transport is transport:
                consumer.interrupted()

    def _restored(self, transport: AmqpTransport) -> None:
        """``transport`` is connected again, its links attached (its thread). The
        broker deleted this connection's temporary destinations with the old one."""
        for consumer in list(self.consumers):
            if consumer.transport is transport:
                consumer.restored()
        if transport is self.transport and self._temporary:
            log.warning(
                "AMQP %s: temporary destinations %s were deleted with the lost connection",
                transport.address,
                sorted(self._temporary),
            )

    def forget(self, key: str) -> None:
        """``key`` was acknowledged: it will not come again (unless the connection is
        lost before the broker read the acknowledgement: ``_interrupted``)."""
        self.counts.forget(key)
        if self._acked is not None and key:
            self._acked.append((time.monotonic(), key))

    def count_delivery(self, incoming: AmqpMessage, key: str) -> int:
        """JMSXDeliveryCount of a delivery of the message with id ``key``.

        RabbitMQ leaves ``delivery-count`` at 0 and says only "not the first acquirer";
        Classic leaves it alone when a message comes back MODIFIED (delivery failed): there
        jmslike counts, as over STOMP, and a message only buffered and given back unseen
        keeps its number. Artemis counts what comes back to it, one per MODIFIED, but never
        hears of a recover or rollback, which redeliver locally: jmslike counts there too
        and takes the higher number, so a message seen twice before its consumer closed
        comes back as 3, not 2. A message without an id has no key: the broker's count.
        """
        if self.rabbitmq:
            return self.counts.count(key, not incoming.first_acquirer)
        broker = int(incoming.delivery_count or 0) + 1
        if self.classic:
            return self.counts.count(key, broker > 1)
        return self.counts.count(key, broker > 1, floor=broker) if key else broker

    def check_temporary(self, destination: Destination, *, consuming: bool) -> None:
        """JMS: a deleted temporary destination takes no sends, and only the connection
        that made one consumes from it (Artemis would quietly create it again)."""
        if not destination.is_temporary:
            return
        if destination.name in _DELETED_TEMPORARY:
            raise InvalidDestinationError(
                f"{destination} was deleted with the connection that created it"
            )
        if consuming and destination.name not in self._temporary:
            raise InvalidDestinationError(
                f"only the connection that created {destination} may consume from it"
            )

    def _create_temporary(self, kind: str) -> str:
        if not self.capabilities.temporary_destinations:
            raise IllegalStateError(
                f"{self.broker} over AMQP has no temporary destinations "
                "(capability temporary_destinations)"
            )
        sender = self.transport.open_sender(None, options=TemporaryTarget(kind), restore=False)
        name = str(self.transport.remote_target(sender))
        self._temporary[name] = sender
        return name

    def create_temporary_queue(self) -> TemporaryQueue:
        return TemporaryQueue(self._create_temporary("temporary-queue"))

    def create_temporary_topic(self) -> TemporaryTopic:
        return TemporaryTopic(self._create_temporary("temporary-topic"))

    def delete_temporary(self, destination: Destination) -> None:
        sender = self._temporary.pop(destination.name, None)
        if sender is None:
            raise InvalidDestinationError(f"{destination} was not created by this connection")
        _DELETED_TEMPORARY.add(destination.name)
        self.transport.close_link(sender)

    def broker_selector(self, selector: str | None) -> str | None:
        """The selector written from its parsed tree as this broker must be given it (None:
        none). Artemis runs every AMQP selector through its SelectorTranslator, which
        renames header fields and rewrites every ``'PERSISTENT'`` literal, a property's
        included: it gets Core names already, and those literals guarded from it."""
        dialect = ARTEMIS_AMQP_FILTER if self.broker == "artemis" else JMS_SYNTAX
        return render_selector(selector, dialect)

    def node_options(self, destination: Destination, address: str) -> list[LinkOption]:
        """What a link to ``destination`` announces: its kind.

        Not a durable terminus on RabbitMQ, although its STOMP plugin declares ``/queue/x``
        durable: Qpid JMS attaches with durability ``none``, so RabbitMQ declares the queue
        non-durable for a Java client, and a durable terminus from jmslike was refused
        ("inequivalent arg 'durable'") on every queue a Java application had made (seen in
        the Java interop tests). Java interop wins; one RabbitMQ queue shared by STOMP and
        AMQP clients must be declared beforehand (the refusal says so)."""
        del address  # (kept in the signature: where a broker needs per-address options)
        return [Capability("topic" if destination.is_topic else "queue")]

    def address_of(self, destination: Destination) -> str:
        """The node address: RabbitMQ's AMQP 1.0 plugin wants ``/queue/x`` or
        ``/topic/x``; Classic announces ``queue://`` and ``topic://`` prefixes in its open
        frame (as Qpid JMS reads them: without one a name is a queue there); Artemis
        takes the name (with the ``queue``/``topic`` capability). A temporary
        destination's address is the broker's own."""
        if destination.is_temporary:
            return destination.name
        if (
            self.rabbitmq
            and not destination.is_topic
            and (
                destination.name in self.exclusive_queues
                or (
                    self.settings.is_strictly_ordered(destination)
                    and self.declare_exclusive_queue(destination, required=False)
                )
            )
        ):
            # A single-active-consumer queue: /queue/<name> would declare it again
            # without the argument, and be refused.
            return "/amq/queue/" + destination.name
        queue_prefix, topic_prefix = self._prefixes
        return (topic_prefix if destination.is_topic else queue_prefix) + destination.name

    def queue_depths(self, prefix: str) -> dict[str, int] | None:
        depths = self.exclusivity.depths
        return depths(prefix) if depths is not None else None

    def open_transport(self) -> AmqpTransport:
        """Another connection to the same broker, for a consumer that needs its own."""
        transport = self._connect(None)
        with self._lock:
            self._extra_transports.add(transport)
        return transport

    def close_transport(self, transport: AmqpTransport) -> None:
        with self._lock:
            self._extra_transports.discard(transport)
        transport.close()

    def declare_exclusive_queue(self, queue: Destination, *, required: bool = True) -> bool:
        """Have the broker hold ``queue`` to one active consumer across processes (ORD-18,
        partitions), once per process; see jmslike.spi.exclusive. ``required=False``
        (ORD-18 declared late): a refusal is logged and False returned."""
        declare = self.exclusivity.declare
        if declare is None:
            return self.exclusivity.scope == "broker"
        return self.exclusive_queues.declare(queue.name, declare, required=required)

    def reply_to_of(self, incoming: AmqpMessage) -> Destination | None:
        """The JMSReplyTo of a received message, from ``reply-to`` and its kind."""
        address = incoming.reply_to
        if not address:
            return None
        annotations: dict[Any, Any] = incoming.annotations or {}
        kind = annotations.get(REPLY_TO_TYPE)
        queue_prefix, topic_prefix = self._prefixes
        for prefix, topic in ((queue_prefix, False), (topic_prefix, True)):
            if prefix and address.startswith(prefix):
                code = kind if isinstance(kind, int) else 1 if topic else 0
                return destination_for(code, address[len(prefix) :])
        return destination_for(kind if isinstance(kind, int) else None, address)

    def create_session(self, transacted: bool, acknowledge_mode: int) -> ProviderSession:
        return AmqpSession(self, transacted)

    def set_client_id(self, client_id: str) -> None:
        """AMQP carries the client id as the container id, fixed when connecting: with no
        session open yet, the connection is opened again under that id. Artemis refuses
        an id another connection holds (in any process); RabbitMQ does not check, so
        this process keeps its own claims as well."""
        address = self.transport.address
        CLIENT_IDS.claim(address, client_id, self)
        self.transport.close()
        try:
            self.transport = self._connect(client_id)
        except JMSException:
            CLIENT_IDS.release(address, client_id, self)
            self.transport = self._connect(None)
            raise
        self.client_id = client_id

    def close(self) -> None:
        _DELETED_TEMPORARY.update(self._temporary)
        CLIENT_IDS.release(self.transport.address, self.client_id, self)
        for transport in list(self._extra_transports):
            with contextlib.suppress(JMSException):
                self.close_transport(transport)
        self.transport.close()


RECENT_ACKS = 100_000
"""Acknowledgements remembered for a reconnect (``AmqpConnection._acked``), at most."""

IDLE_TIMEOUT_MS = 60_000
"""Qpid JMS's ``amqp.idleTimeout`` default: a connection that hears nothing (not even the
broker's empty keep-alive frames) for a minute is lost."""


def idle_timeout_of(settings: FactorySettings) -> float:
    """``idleTimeout`` (or Qpid JMS's ``amqp.idleTimeout``) in milliseconds, as seconds;
    0 turns it off."""
    raw = settings.extra.get("idleTimeout", settings.extra.get("amqp.idleTimeout", IDLE_TIMEOUT_MS))
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = -1
    if value < 0:
        raise ConfigurationError(
            f"idleTimeout={raw!r}: milliseconds, an integer >= 0 (0 turns it off)"
        )
    return value / 1000


class AmqpProvider(Provider):
    """``amqp://host:port`` and ``amqps://``."""

    name = "amqp"
    schemes = ("amqp", "amqps")
    setting_names = (
        TLS_SETTINGS | RECONNECT_SETTINGS | {"managementUrl", "idleTimeout", "amqp.idleTimeout"}
    )

    def check_settings(self, settings: FactorySettings) -> None:
        tls_options(settings)
        idle_timeout_of(settings)
        reconnect_policy(ParsedURL(scheme="amqp"), settings.extra)

    def check_url(self, url: ParsedURL) -> None:
        for member in url.members or (url,):
            if not member.host:
                raise ConfigurationError(
                    f"AMQP URL {member} needs a host, e.g. amqp://127.0.0.1:5672"
                )

    def connect(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> ProviderConnection:
        with map_provider_errors(f"AMQP connection to {url.address} failed"):
            return AmqpConnection(url, settings, user, password, on_exception)
