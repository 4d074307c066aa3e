"""A STOMP subscription (``StompConsumer``) and the delivery it hands up (``_Token``).

A queue consumer subscribes on the first request for messages, with the window its
session asks for (STOMP has no other credit); a topic consumer and a temporary queue's
subscribe at once. Delivery counts are kept by jmslike, per message, because the brokers
do not send them (Classic sends only ``redelivered``; RabbitMQ not even a stable message
id). Closing hands back what the subscription holds, in order (ORD-10).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jmslike.destination import Destination
from jmslike.errors import JMSException
from jmslike.message import DELIVERY_COUNT, Message
from jmslike.selector import message_lookup
from jmslike.spi.messages import set_provider_property
from jmslike.spi.nolocal import MessageFilter
from jmslike.spi.provider import DeliverySink, ProviderConsumer
from jmslike.spi.strict import Claim
from jmslike_stomp.codec import decode
from jmslike_stomp.dialect import ID_HEADER
from jmslike_stomp.transport import StompTransport
from jmslike_stomp.wire import ACK_DELAY

if TYPE_CHECKING:
    from jmslike_stomp.session import StompSession

__all__ = ["StompConsumer", "_Token"]

log = logging.getLogger("jmslike.stomp")


class _Token:
    """One delivery: what acknowledging, redelivering or dead-lettering it needs.

    It keeps the frame, not the decoded message: the application may change the message
    it was given, and a redelivery or a dead-lettered copy must carry what was sent."""

    __slots__ = ("_ack_id", "body", "consumer", "generation", "headers", "key", "queued")

    def __init__(
        self, consumer: StompConsumer, ack_id: str, key: str, headers: dict[str, str], body: bytes
    ) -> None:
        self.consumer = consumer
        self._ack_id = ack_id
        self.key = key
        self.headers = headers
        self.body = body
        self.generation = consumer.transport.generation
        self.queued = False
        """Its ACK is in the outbox or written (``Wire.Queued``): never written again."""

    @property
    def ack_id(self) -> str:
        """The id to ACK or NACK with; "" when there is nothing to acknowledge: the broker
        needs no ACK, or the delivery came over a connection since lost (the broker hands
        the message out again, flagged redelivered)."""
        if self.generation != self.consumer.transport.generation:
            return ""
        return self._ack_id

    @property
    def lost(self) -> bool:
        """It needed an ACK and came over a connection lost since: it cannot be
        acknowledged any more (the broker delivers it again)."""
        return bool(self._ack_id) and self.generation != self.consumer.transport.generation

    def decode(self) -> Message:
        return self.consumer.decode(self.headers, self.body)


class StompConsumer(ProviderConsumer):
    """One STOMP subscription, made on the first request for messages."""

    def __init__(
        self,
        session: StompSession,
        destination: Destination,
        sink: DeliverySink,
        headers: dict[str, str],
        client_filter: MessageFilter | None,
        sub_id: str,
        claim: Claim,
        count_scope: str,
    ) -> None:
        self._session = session
        self.count_scope = count_scope
        """The prefix of this subscription's keys in the delivery counts
        (jmslike.spi.counts.count_scope)."""
        # RabbitMQ hands back what a subscription holds only when its connection closes
        # (UNSUBSCRIBE keeps them, and a NACK comes straight back to the same subscription):
        # there each consumer gets a connection of its own, closed to give back (ORD-10).
        # Not for temporary queues, which belong to the session's connection.
        temporary_queue = destination.is_temporary and not destination.is_topic
        self.own_connection = session.connection.dialect.consumer_connection and not (
            temporary_queue
        )
        self._transport = (
            session.connection.open_transport(self.revoke_stale)
            if self.own_connection
            else session.transport
        )
        if not self.own_connection:
            session.connection.consumers.add(self)
        self.dialect = session.connection.dialect
        self.destination = destination
        self.inbox = (
            session.connection.temporary_inboxes[destination.name]
            if temporary_queue and self.dialect.temp_queue_implicit
            else None
        )
        """RabbitMQ's temporary queue: its frames come through the connection's inbox."""
        self._sink = sink
        self._headers = headers
        self._filter = client_filter
        self.sub_id = sub_id
        self.ack_batch = 0
        """How many of this subscription's ACKs may be written together
        (``StompSession.acknowledge_soon``); 0: each on its own. Set by the session."""
        self.ack_delay = ACK_DELAY
        """How long a held ACK of this subscription waits at most for company
        (``Wire.hold``): :data:`~jmslike_stomp.wire.FEED_ACK_DELAY` for a listener
        container's shared subscription. Set by the session."""
        self.cumulative_sub = sub_id if headers.get("ack") == "client" else None
        """The subscription's id where it acknowledges cumulatively (``ack:client``): its
        held ACKs replace each other (``Wire.hold``)."""
        self._durable_name: str | None = None
        self.prepare: Callable[[], None] | None = None
        """What the broker needs done before each SUBSCRIBE, a reconnect's too (RabbitMQ:
        declare a strictly ordered subscription's queue, which may have expired)."""
        self._subscribed = False
        self._closed = False
        self._lock = threading.Lock()
        self.claim = claim
        self.exclusive = claim.strict
        self._waiting = claim.waiting
        """A standby of a strictly ordered destination: subscribe once promoted (ORD-18)."""
        self._wanted = False
        self.unfinished: dict[int, _Token] = {}
        """Deliveries pushed up and not acknowledged, committed, dead-lettered or given
        back yet, by identity."""

    fixed_window = True

    def flow(self, credit: int) -> None:
        """STOMP has no credit: the broker pushes up to the subscription's window, fixed
        when subscribing. So the only thing to do is to subscribe, on first use."""
        if credit > 0 and not self._closed and not self._subscribed:
            self.subscribe()

    def decode(self, headers: dict[str, str], body: bytes) -> Message:
        message = decode(headers, body, self.dialect, self.destination.is_topic)
        if self.inbox is not None:
            # RabbitMQ names the queue's real name (/queue/amq.gen-...): JMSDestination is
            # the temporary queue the application made.
            message.jms_destination = self.destination
        return message

    def subscribe(self) -> None:
        with self._lock:
            if self._waiting:
                self._wanted = True
                return
            if self._subscribed:
                return
            if self.inbox is not None:
                # RabbitMQ subscribes the creating connection to its temporary queue by
                # itself (and refuses a SUBSCRIBE to one): take what its inbox holds.
                self.inbox.attach(self._on_frame)
            else:
                self._transport.subscribe(
                    self.sub_id, self._headers, self._on_frame, prepare=self.prepare
                )
            self._subscribed = True

    def promote(self) -> None:
        """The active consumer of the strictly ordered destination gave its messages back:
        this standby takes over (ORD-18), subscribing now if it was asked for messages.

        It runs on the thread of the consumer that let go (in its close, or its
        connection's): a failure to subscribe is this consumer's, not that close's, so it
        goes to the connection's exception listener."""
        with self._lock:
            self._waiting = False
            wanted = self._wanted and not self._closed
        if not wanted:
            return
        # A refused SUBSCRIBE (RabbitMQ then drops the connection) reaches this call; on
        # a connection of its own, that loss is not the jmslike connection's.
        self._transport.quiet = self.own_connection
        try:
            self.subscribe()
        except JMSException as exc:
            log.warning(
                "STOMP %s: standby of %s not subscribed: %s",
                self._transport.address,
                self.destination,
                exc,
            )
            self._session.connection.report(exc)
        else:
            self._transport.quiet = False

    def _on_frame(self, headers: dict[str, str], body: bytes) -> None:
        """stomp.py's receiver thread (for what waited in a temporary queue's inbox, the
        thread making the consumer): decode, count, filter, push to the sink."""
        connection = self._session.connection
        if self._closed:
            if self.inbox is not None:
                # It came as the consumer closed: it waits for the next one.
                self.inbox.on_frame(headers, body, returned_by=self._on_frame)
                return
            # Sent before the broker saw UNSUBSCRIBE; it goes back unseen, uncounted.
            connection.counts.arrived_unseen(
                self.count_scope + (headers.get(ID_HEADER) or headers.get("message-id", ""))
            )
            return
        message = self.decode(headers, body)
        # No ack id: a delivery the broker needs no acknowledgement for (RabbitMQ's own
        # subscription to a temporary queue); acknowledging it would be an error.
        implicit = self.inbox is not None
        ack_id = "" if implicit else headers.get("ack") or headers.get("message-id", "")
        key = self.count_scope + (headers.get(ID_HEADER) or headers.get("message-id", ""))
        count = connection.count_delivery(key, headers)
        message.jms_redelivered = count > 1
        set_provider_property(message, DELIVERY_COUNT, count)
        token = _Token(self, ack_id, key, headers, body)
        if self._filter is not None and not self._filter.matches(message_lookup(message)):
            # Only where the subscription's queue holds only what its consumers want
            # (topics on RabbitMQ, shared subscriptions on Artemis): a message this
            # subscriber does not want is simply acknowledged.
            if ack_id:
                self._transport.frame("ACK", {"id": ack_id}, confirm=False)
            connection.forget(key)
            return
        self.unfinished[id(token)] = token
        self._sink(message, token)

    def close(self, delivered: Sequence[Any], undelivered: Sequence[Any]) -> None:
        """Hand back what this subscription holds, in order (ORD-10), then unsubscribe.

        Classic and Artemis hand back every unacknowledged message on UNSUBSCRIBE; RabbitMQ
        only when a connection closes, so there the consumer's own connection is closed
        (see ``detach``). In a transaction the UNSUBSCRIBE waits for its end.
        """
        self._closed = True
        if not self.claim.waiting or not self._waiting:
            self._session.connection.active_durables.discard(self._durable_name or "")
        if not self._subscribed:
            self._session.connection.strict.detach(self.claim)
            return
        counts = self._session.connection.counts
        for token in undelivered:
            counts.returned_unseen(token.key)
        if self.inbox is not None:
            # The broker took these back from nobody (it needs no acknowledgement): they
            # wait in the inbox for the queue's next consumer. In a transaction, what the
            # application saw waits for the rollback (``release``) or the commit.
            self.inbox.detach(self._on_frame)
            held = [*undelivered] if self._session.transacted else [*delivered, *undelivered]
            self.inbox.put_back([(token.headers, token.body) for token in held])
            self._session.connection.strict.detach(self.claim)
            return
        for token in undelivered:
            self.unfinished.pop(id(token), None)
        if self._session.transacted and self.unfinished and not self._session.transport.lost:
            # Its messages belong to the transaction now (ORD-10): an UNSUBSCRIBE would
            # hand them to other consumers before the commit could consume them. (With
            # none of its messages in the transaction it goes at once: a partition handed
            # over after its last commit must not wait for a commit that may never come.
            # Nor when the session's connection is lost for good: its transaction can
            # never end, and a consumer with a connection of its own (RabbitMQ) kept
            # that connection, and so its partition's single active consumer, as long
            # as the process lived: tests/integration/test_partitions_lost_connection.py.)
            self._session.zombies.append(self)
            return
        self.detach([*delivered, *undelivered])

    @property
    def transport(self) -> StompTransport:
        """Where this consumer's acknowledgements go."""
        return self._transport

    def revoke_stale(self) -> None:
        """After a reconnect: what this consumer buffered from the lost connection is
        dropped (the broker delivers it again, redelivered, in order: ORD-11)."""
        generation = self._transport.generation
        # What the application holds from the lost connection can no longer be finished
        # here: the broker hands it out again.
        self.unfinished = {
            key: token for key, token in self.unfinished.items() if token.generation == generation
        }
        if self.revoke is None:
            return
        for token in self.revoke(
            lambda token: isinstance(token, _Token) and token.generation != generation
        ):
            self._session.connection.counts.returned_unseen(token.key)

    def detach(self, held: Sequence[Any]) -> None:
        """Give back what this subscription holds and unsubscribe; then a standby of a
        strictly ordered destination may take over (ORD-18)."""
        try:
            self._give_back(held)
        finally:
            self._session.connection.strict.detach(self.claim)

    def _give_back(self, held: Sequence[Any]) -> None:
        if self.own_connection:
            self._settle_before_close()
            self._session.connection.close_transport(self._transport)
            return
        if self.dialect.release_by_nack:
            for token in reversed(held):
                if token.ack_id:
                    self._transport.frame("NACK", {"id": token.ack_id}, confirm=False)
        if self.inbox is not None:
            return  # detached from the inbox when it closed
        self._barrier()
        self._transport.unsubscribe(self.sub_id)

    def _settle_before_close(self) -> None:
        """RabbitMQ, single-active-consumer queues (partitions, strict queues): before the
        consumer's own connection closes, a second subscription to the queue, made and
        ended again, its RECEIPT waited for. RabbitMQ answers an ACK's RECEIPT before
        the queue has taken the ACKs written before it, and a connection closed right
        after handed back what they acknowledged: a consumer of a partition that
        acknowledged its 40 messages (acknowledge() returned, its RECEIPT came) and
        closed at once had its last 6-7 come again, flagged redelivered, in 5 of 6 runs.
        The second subscription's UNSUBSCRIBE is answered after the queue took them; it
        gets nothing meanwhile, since the queue serves only its active consumer. Not an
        UNSUBSCRIBE of this subscription: the queue would hand its next messages to a
        standby in another process before the close gives back what this one still
        holds (ORD-11)."""
        transport = self._transport
        connection = self._session.connection
        if (
            not transport.connected
            or transport.lost
            or self.destination.name not in connection.exclusive_queues
        ):
            return
        probe = f"{self.sub_id}-settled"
        transport.quiet = True  # closed next: a refused probe (a deleted queue) is no news
        try:
            transport.subscribe(probe, dict(self._headers), lambda _headers, _body: None)
            transport.unsubscribe(probe)
        except JMSException as exc:
            log.debug("STOMP %s: a probe before the close: %s", transport.address, exc)

    def _barrier(self) -> None:
        """Where ``TCP_NODELAY`` is set, one round trip before the UNSUBSCRIBE, so that the
        broker has finished sending what an acknowledgement just before it let through
        (closing an AUTO consumer acknowledges its last message first). Sent over the
        wire, that message comes back here and is counted as returned unseen; an
        UNSUBSCRIBE that overtakes its dispatch may have the broker flag it redelivered
        (ActiveMQ Classic did, which is why Classic keeps Nagle: ``Dialect.tcp_no_delay``).
        With Nagle on, the UNSUBSCRIBE waits for the TCP acknowledgement of the ACK
        anyway. Not while the connection is down: the UNSUBSCRIBE after it waits for a
        reconnect once, which is enough."""
        if not self._transport.no_delay or not self._transport.connected:
            return
        name = f"jmslike-barrier-{self.sub_id}"
        try:
            self._transport.frame("BEGIN", {"transaction": name}, confirm=True)
            self._transport.frame("ABORT", {"transaction": name}, confirm=False)
        except JMSException as exc:  # the UNSUBSCRIBE after it reports the connection
            log.debug("STOMP close barrier of %s: %s", self.sub_id, exc)
