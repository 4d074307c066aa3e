"""A JMS consumer over AMQP 1.0: one receiver link whose credit is what the API asks for.

A delivery goes up to the API layer with a ``_Token``: the AMQP message as it came (a
local redelivery decodes it again) and its number on the link, by which the transport
settles it (the Proton delivery never leaves the connection's thread, transport.py).
Giving back (``AmqpSession.give_back``) is RELEASED, unseen, or MODIFIED with
delivery-failed, seen and counted. A token of a connection lost since is ``stale``: it
cannot be settled, and the broker hands the message out again.

Threads: ``AmqpConsumer._on_message``, ``interrupted`` and ``restored`` run on the
connection's own thread; the rest on the application's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from proton import Delivery
from proton.reactor import Copy, Selector

from jmslike.destination import Destination
from jmslike.errors import IllegalStateError, InvalidSelectorError, JMSException
from jmslike.message import DELIVERY_COUNT
from jmslike.selector import message_lookup, parse_selector
from jmslike.spi.messages import set_provider_property
from jmslike.spi.nolocal import MessageFilter, NoLocalFilter
from jmslike.spi.provider import DeliverySink, ProviderConsumer
from jmslike.spi.strict import Claim
from jmslike_amqp.codec import decode, message_key
from jmslike_amqp.credit import Credit, Ring
from jmslike_amqp.links import Capability, LinkHandle, OwnSession
from jmslike_amqp.transport import AmqpTransport

if TYPE_CHECKING:
    from jmslike_amqp.received import Incoming
    from jmslike_amqp.session import AmqpSession

__all__ = ["AmqpConsumer", "stale"]


class _Token:
    """One delivery: the AMQP message as it came (a redelivery carries what was sent)
    and its number on the consumer's link (the transport keeps the Proton delivery)."""

    __slots__ = ("consumer", "count", "epoch", "generation", "incoming", "key", "number", "seen")

    def __init__(
        self,
        consumer: AmqpConsumer,
        incoming: Incoming,
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
        link = consumer._link
        self.epoch = link.epoch if link is not None else 0
        """The link it came over: one the broker closed since cannot settle it."""
        self.seen = False
        """The application had this delivery (it was redelivered locally since): going
        back to the broker, it counts as delivered even if its redelivery was not seen."""


def stale(token: Any) -> bool:
    """The delivery came over a connection lost since (a reconnect), or over a link the
    broker closed since: it cannot be settled, and the broker hands the message out
    again."""
    if not isinstance(token, _Token):
        return False
    consumer = token.consumer
    if token.generation != consumer.transport.generation:
        return True
    link = consumer._link
    return link is not None and token.epoch != link.epoch


class AmqpConsumer(ProviderConsumer):
    """One receiver link; credit is what the API asked for.

    A standby of a strictly ordered destination (ORD-18) gets no credit until the active
    consumer has given its messages back and detached (``promote``): credit asked for
    meanwhile is kept and granted then. It attaches no link until then either, except on
    a non-durable shared subscription (``hold_subscription``): the broker ends that with
    its last link, and with it what it held (Artemis: the standby found an empty queue,
    8 of 10 messages gone), so the standby's link, attached with no credit, keeps it.

    On RabbitMQ a strictly ordered queue (or a partition, or a strictly ordered shared
    subscription's queue) is a single-active-consumer quorum queue, and such a queue
    puts what a *link* gives back (settled RELEASED, or unsettled at detach) behind the
    messages still waiting: seen here, ``m3 m4 m5 m1 m2`` after a consumer holding ``m1``
    and ``m2`` detached. What a closed *connection* held comes back first, in order. So
    there such a consumer has a connection of its own, and gives back by closing it,
    as every RabbitMQ consumer does over STOMP."""

    adaptive_credit = True
    """Requests may grow: every AMQP broker here lets ``flow(0)`` take credit back (a
    drain, or on RabbitMQ and ActiveMQ Classic a credit of 0, see ``flow``)."""

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
        address: str | None = None,
        prepare: Callable[[], None] | None = None,
        no_local: bool = False,
        claim: Claim | None = None,
        ring: Ring | None = None,
        hold_subscription: bool = False,
        count_scope: str = "",
    ) -> None:
        self._session = session
        self.count_scope = count_scope
        """The prefix of this consumer's keys in the delivery counts
        (jmslike.spi.counts.count_scope)."""
        self.claim = claim
        self.exclusive = claim is not None and claim.strict
        connection = session.connection
        # A queue, or a subscription's queue (``address``, RabbitMQ: jmslike declared it).
        queue_like = address is not None or not destination.is_topic
        self.own_connection = self.exclusive and connection.rabbitmq and queue_like
        self.transport: AmqpTransport = connection.transport
        """Where this consumer's link lives: the connection's, or its own (above)."""
        self._lock = threading.Lock()
        self._credit_waiting = 0
        """Credit asked for while a standby, granted once promoted."""
        self._standing_by = claim is not None and claim.waiting
        self._closed = False
        self._subscription = subscription
        """A durable subscription's name: closing detaches the link, which keeps it."""
        self.destination = destination
        self._sink = sink
        self.outstanding: dict[int, _Token] = {}
        """Deliveries pushed up and not settled yet, by number, in delivery order (the
        connection's thread adds, settling removes)."""
        connection = session.connection
        options: list[Any]
        if address is None:
            address = connection.address_of(destination)
            options = [*connection.node_options(destination, address), *source_options]
        else:  # a subscription's queue that jmslike declared (RabbitMQ)
            options = [Capability("queue"), *source_options]
        if capabilities:
            options[0] = Capability("topic" if destination.is_topic else "queue", *capabilities)
        self._filter: MessageFilter | None = None
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
        if no_local:
            # No broker here takes a no-local filter from these links: jmslike drops the
            # connection's own messages (jmslike.spi.nolocal).
            connection.published.keep()
            self._filter = NoLocalFilter(connection.published, self._filter)
        if connection.rabbitmq and not self.own_connection:
            # A message RabbitMQ sends as the link closes stays with its session: a
            # session of its own, ended after the link, gives such messages back.
            options.append(OwnSession())
        if self.exclusive and connection.classic and not destination.is_topic:
            # ORD-18 across processes: Classic's exclusive consumer, as an address option.
            address += "?consumer.exclusive=true"
        self._credit: Credit | None = None
        """Where the broker stops a queue at a blocked group (Artemis): this receiver's
        credit among the others of the queue on this connection (credit.py)."""
        if ring is not None:
            self._credit = Credit(
                self.transport,
                ring,
                selective=selector is not None,
                # A queue's head can be looked at before a poke; a shared subscription's
                # queue has no address here.
                look=None if destination.is_topic else self._look,
            )
        on_flow = self._credit.flowed if self._credit is not None else None

        def attach() -> LinkHandle:
            if self.own_connection:
                self.transport = connection.open_transport()
            link = self.transport.open_receiver(
                address, self._on_message, options=options, on_flow=on_flow, name=link_name
            )
            if self._credit is not None:
                self._credit.link = link  # before any credit: nothing uses it yet
            link._on_broker_close = self._link_closed
            link.before_attach = prepare
            return link

        self._attach = attach
        self._probe = (address, options) if self.own_connection else None
        """Where ``_settle_before_close`` attaches its probe."""
        try:
            self._link: LinkHandle | None = (
                None if self._standing_by and not hold_subscription else attach()
            )
        except JMSException as exc:
            self._retire()
            if selector is not None and exc.error_code == "amqp:invalid-field":
                # Classic's selector grammar is narrower than JMS's (no letters outside
                # ASCII in a name): the broker's parser has the last word.
                raise InvalidSelectorError(
                    f"{connection.broker} refused the selector {selector!r}: {exc}"
                ) from exc
            raise
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

    def _link_closed(self, attached: bool) -> None:
        """The connection's thread: the broker closed this consumer's link on its own and
        it is being attached again. What came over the old link is stale: dropped as at
        a reconnect (``interrupted``); once the broker has attached the new one, the
        credit asked for is granted on it (``restored``)."""
        if attached:
            self.restored()
        else:
            self.interrupted()

    def restored(self) -> None:
        """The connection's thread, once the link is attached again: the credit the API
        layer had asked for and not got is granted on the new link."""
        link, owed, self._owed = self._link, self._owed, 0
        if link is None or self._closed or self._standing_by:
            return
        if self._credit is not None:
            self._credit.restart(owed)
            return
        credit = link.credit_lost + owed
        if credit > 0:
            self.transport.grant_now(link, credit)

    def promote(self) -> None:
        """The active consumer of the strictly ordered destination is gone: attach now
        (unless the link already holds the subscription) and grant what was asked for
        meanwhile (ORD-18)."""
        with self._lock:
            if self._closed or not self._standing_by:
                return
            self._standing_by = False
            if self._link is None:
                self._link = self._attach()
            credit, self._credit_waiting = self._credit_waiting, 0
        if credit > 0:
            self.flow(credit)

    def flow(self, credit: int) -> None:
        """Grant ``credit`` more deliveries; 0 withdraws what is left. A grant made while
        a withdrawal is on its way still counts: AMQP's flow arithmetic adds it to
        whatever the withdrawal leaves.

        The withdrawal is a drain (the broker sends what it has at once and gives the
        rest of the credit back), except on two brokers, where it is a flow frame that
        sets the credit to 0: RabbitMQ 3.10 cannot drain a classic queue's link (the
        channel crashes, ``function_clause`` in ``rabbit_classic_queue:handle_event(
        {send_drained, ...})``, and takes the connection down), and ActiveMQ Classic
        answers a drain with a pull that a grant made right after it races
        (``AmqpTransport.withdraw``)."""
        with self._lock:
            if self._standing_by or self._link is None:  # a standby: keep it for later
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
        else:
            connection = self._session.connection
            transport.withdraw(link, plain=connection.classic or connection.rabbitmq)

    @property
    def link(self) -> LinkHandle:
        """The receiver link (a consumer that has messages has one)."""
        link = self._link
        if link is None:
            raise IllegalStateError(f"consumer on {self.destination} has no link yet")
        return link

    def _on_message(self, incoming: Incoming, number: int) -> None:
        """The connection's thread: decode and hand to the API (which never blocks)."""
        connection = self._session.connection
        message = decode(incoming, self.destination, connection.reply_to_of(incoming))
        key = self.count_scope + message.jms_message_id if message.jms_message_id else ""
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
            self._credit.delivered(incoming.group_id)

    def _look(self, done: Callable[[Incoming | None, bool], None]) -> None:
        """The connection's thread: the head of this consumer's queue, for credit.py."""
        address = self._session.connection.address_of(self.destination)
        self.transport.peek_now(address, [Capability("queue"), Copy()], done)

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
        if session.transacted and self.outstanding and not session.connection.transport.gone:
            # (With none of its messages in the transaction it goes at once: a partition
            # handed over after its last commit must not wait for a commit that may
            # never come. Nor when the session's connection is lost for good: its
            # transaction can never end, and a consumer with a connection of its own
            # (RabbitMQ) kept that connection, and so the partition's single active
            # consumer, until the process closed its connection, 150 s in
            # test_groups_kept_when_a_process_freezes[rabbitmq-amqp].)
            session.zombies.append(self)
            return
        session.give_back(delivered, seen=True)
        self.detach()

    def detach(self) -> None:
        connection = self._session.connection
        if self.own_connection:
            try:
                self._settle_before_close()
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
            self._release_claim()

    def _settle_before_close(self) -> None:
        """RabbitMQ, single-active-consumer queues (partitions, strict queues): before the
        consumer's own connection closes, a receiver of the same queue, given no credit,
        attached and detached again, its detach's answer waited for. RabbitMQ takes
        settled dispositions without answering, and a connection closed right after them
        handed back what they accepted: a consumer of a partition that acknowledged its
        40 messages and closed at once had its last 7 come again, flagged redelivered,
        in 4 runs of 4. The probe's detach is answered after the queue took them. Not
        this link's own detach: that would let the queue hand its next messages to a
        standby in another process before the close gives back what this link still
        holds (ORD-11)."""
        if (
            self._link is None
            or self.transport.gone
            or self._probe is None
            or self.destination.name not in self._session.connection.exclusive_queues
        ):
            return
        address, options = self._probe
        self._session.connection.closing_transport(self.transport)
        with contextlib.suppress(JMSException):
            probe = self.transport.open_receiver(
                address, lambda _message, _number: None, options=options, restore=False
            )
            self.transport.close_link(probe, wait=True)

    def _return_late(self) -> None:
        """On the connection's thread, as the link closes: deliveries that arrived after
        the API gave back what it held were never seen by the application; back to the
        queue, uncounted, in the order they came (ORD-10, ORD-11)."""
        connection = self._session.connection
        late, self.outstanding = list(self.outstanding.values()), {}
        for token in late:
            connection.counts.returned_unseen(token.key)
            self.transport.settle(self.link, token.number, Delivery.RELEASED)

    def _arrived_late(self, incoming: Incoming) -> None:
        """The connection's thread: a transfer the broker sent before it read the detach.
        It was never seen here; where jmslike counts, its redelivery must not count it
        (seen on Classic: such a message came back flagged redelivered, count 2). It may
        also be one this consumer gave back seen, sent again at once: that keeps its count."""
        key = message_key(incoming)
        self._session.connection.counts.arrived_unseen(self.count_scope + key if key else "")

    def _release_claim(self) -> None:
        """A standby may take over now: what this consumer held went back first. And a
        durable subscription it consumed may be unsubscribed (once this consumer is
        gone, whether it was active, a standby, or had a connection of its own)."""
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            self._session.connection.subscriptions.active[subscription] -= 1
        if self.claim is not None:
            claim, self.claim = self.claim, None
            self._session.connection.strict.detach(claim)
