"""The STOMP provider: jmslike's SPI over stomp.py, for ActiveMQ Classic, Artemis, RabbitMQ.

The API layer above keeps the JMS rules (acknowledgement modes, local redelivery for
recover and rollback, the redelivery policy, the ordering engine); this module maps each
SPI call onto STOMP frames the way the connected broker reads them (its
:class:`~jmslike_stomp.dialect.Dialect`).

* Subscriptions use ``ack:client-individual`` and subscribe lazily, on the first request
  for messages, with the broker's prefetch header set from the factory's ``prefetch``
  (1 by default: a consumer never holds a group's next message ahead of time, ORD-9).
* Delivery counts are kept here, per message, because the brokers do not send them
  (Classic sends only ``redelivered``; RabbitMQ not even a stable message id).
* Dead-lettering is a send to the factory's dead-letter queue with the reason, then an
  acknowledgement, in one STOMP transaction where the broker allows it: NACK means
  "discard" on Artemis and "to ActiveMQ.DLQ" on Classic, neither what jmslike promises.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jmslike.config import FactorySettings, ParsedURL
from jmslike.destination import Destination, Queue, TemporaryQueue
from jmslike.errors import (
    ConfigurationError,
    ConnectionFailedError,
    IllegalStateError,
    InvalidClientIDError,
    InvalidDestinationError,
    JMSException,
    TransactionInDoubtError,
    TransactionRolledBackError,
    map_provider_errors,
)
from jmslike.message import DELIVERY_COUNT, DeliveryMode, Message
from jmslike.selector import (
    ARTEMIS_FILTER,
    Selector,
    message_lookup,
    parse_selector,
    render_selector,
)
from jmslike.spi.clientids import CLIENT_IDS
from jmslike.spi.counts import counts_for
from jmslike.spi.exclusive import Exclusivity, exclusive_queues_for, exclusivity_for
from jmslike.spi.management import ArtemisManagement
from jmslike.spi.messages import DLQ_REASON, mark_read_only, set_provider_property
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
from jmslike.spi.reconnect import RECONNECT_SETTINGS, Reconnect, reconnect_policy
from jmslike.spi.strict import Claim, Promotion, registry_for
from jmslike.spi.temporary import DeletedTemporaries
from jmslike.spi.tls import TLS_SETTINGS, TlsOptions, tls_options
from jmslike_stomp.codec import ID_HEADER, decode, destination_name, encode, remember_wire_name
from jmslike_stomp.dialect import Dialect, dialect_for
from jmslike_stomp.transport import FrameHandler, StompTransport, UnconfirmedError

__all__ = ["StompProvider"]

log = logging.getLogger("jmslike.stomp")

CLIENT_WINDOW = 1000
"""Broker window of CLIENT_ACKNOWLEDGE and transacted consumers (setting ``clientWindow``):
how many unacknowledged messages such a session may hold before receive() waits."""
CLIENT_ACKNOWLEDGE = 2

_DELETED_TEMPORARY = DeletedTemporaries()
"""Temporary queues whose connection (in this process) closed. Classic and RabbitMQ would
quietly create a new one on a send; JMS says such a send fails."""

PROBE_HEADER = "jmslikeTemporaryProbe"
"""Names the temporary queue a probe was sent for (see ``StompConnection._declare``)."""


class _TemporaryInbox:
    """A temporary queue that the broker delivers to its creator by itself (RabbitMQ).

    RabbitMQ pushes such a queue's messages to the creating connection as they arrive,
    acknowledged already, whether a consumer exists or not. JMS says they wait in the queue
    until a consumer takes them, so they wait here: from ``create_temporary_queue()`` on,
    every frame goes to the attached consumer, or into ``waiting`` while there is none.
    A consumer that closes puts back, in order, what it held or buffered unfinished.
    """

    __slots__ = ("_handler", "_lock", "_waiting")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: deque[tuple[dict[str, str], bytes]] = deque()
        self._handler: FrameHandler | None = None

    def on_frame(
        self, headers: dict[str, str], body: bytes, returned_by: FrameHandler | None = None
    ) -> None:
        """stomp.py's receiver thread: to the consumer, or wait for one. A consumer that
        got the frame as it closed (``returned_by``) hands it back here."""
        with self._lock:
            handler = self._handler
            if handler is None or handler == returned_by:
                self._waiting.append((headers, body))
                return
        handler(headers, body)

    def attach(self, handler: FrameHandler) -> None:
        """A consumer of the queue: it gets what waits first, in order, then what comes."""
        with self._lock:
            while self._waiting:
                headers, body = self._waiting.popleft()
                handler(headers, body)
            self._handler = handler

    def detach(self, handler: FrameHandler) -> None:
        with self._lock:
            if self._handler == handler:
                self._handler = None

    def put_back(self, frames: Sequence[tuple[dict[str, str], bytes]]) -> None:
        """Frames a closed consumer did not finish: ahead of the others, in order."""
        with self._lock:
            self._waiting.extendleft(reversed(frames))


class _Token:
    """One delivery: what acknowledging, redelivering or dead-lettering it needs.

    It keeps the frame, not the decoded message: the application may change the message
    it was given, and a redelivery or a dead-lettered copy must carry what was sent."""

    __slots__ = ("_ack_id", "body", "consumer", "generation", "headers", "key")

    def __init__(
        self, consumer: StompConsumer, ack_id: str, key: str, headers: dict[str, str], body: bytes
    ) -> None:
        self.consumer = consumer
        self._ack_id = ack_id
        self.key = key
        self.headers = headers
        self.body = body
        self.generation = consumer.transport.generation

    @property
    def ack_id(self) -> str:
        """The id to ACK or NACK with; "" when there is nothing to acknowledge: the broker
        needs no ACK, or the delivery came over a connection since lost (the broker hands
        the message out again, flagged redelivered)."""
        if self.generation != self.consumer.transport.generation:
            return ""
        return self._ack_id

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
        client_filter: Selector | None,
        sub_id: str,
        claim: Claim,
    ) -> None:
        self._session = session
        # RabbitMQ hands back what a subscription holds only when its connection closes
        # (UNSUBSCRIBE keeps them, and a NACK comes straight back to the same subscription):
        # there each consumer gets a connection of its own, closed to give back (ORD-10).
        # Not for temporary queues, which belong to the session's connection.
        self.own_connection = session.connection.dialect.consumer_connection and not (
            destination.is_temporary
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
            if destination.is_temporary and self.dialect.temp_queue_implicit
            else None
        )
        """RabbitMQ's temporary queue: its frames come through the connection's inbox."""
        self._sink = sink
        self._headers = headers
        self._filter = client_filter
        self.sub_id = sub_id
        self._durable_name: str | None = None
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
                self._transport.subscribe(self.sub_id, self._headers, self._on_frame)
            self._subscribed = True

    def promote(self) -> None:
        """The active consumer of the strictly ordered destination gave its messages back:
        this standby takes over (ORD-18), subscribing now if it was asked for messages."""
        with self._lock:
            self._waiting = False
            wanted = self._wanted and not self._closed
        if wanted:
            self.subscribe()

    def _on_frame(self, headers: dict[str, str], body: bytes) -> None:
        """stomp.py's receiver thread (for what waited in a temporary queue's inbox, the
        thread making the consumer): decode, count, filter, push to the sink."""
        connection = self._session.connection
        if self._closed:
            if self.inbox is not None:
                # It came as the consumer closed: it waits for the next one.
                self.inbox.on_frame(headers, body, returned_by=self._on_frame)
                return
            # Sent before the broker saw UNSUBSCRIBE; it goes back unseen.
            connection.counts.returned_unseen(
                headers.get(ID_HEADER) or headers.get("message-id", "")
            )
            return
        message = self.decode(headers, body)
        # No ack id: a delivery the broker needs no acknowledgement for (RabbitMQ's own
        # subscription to a temporary queue); acknowledging it would be an error.
        implicit = self.inbox is not None
        ack_id = "" if implicit else headers.get("ack") or headers.get("message-id", "")
        key = headers.get(ID_HEADER) or headers.get("message-id", "")
        count = connection.count_delivery(key, headers)
        message.jms_redelivered = count > 1
        set_provider_property(message, DELIVERY_COUNT, count)
        token = _Token(self, ack_id, key, headers, body)
        if self._filter is not None and not self._filter.matches(message_lookup(message)):
            # Only used where each subscriber has a queue of its own (topics on RabbitMQ):
            # a message this subscriber does not want is simply acknowledged.
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
        if self._session.transacted and self.unfinished:
            # Its messages belong to the transaction now (ORD-10): an UNSUBSCRIBE would
            # hand them to other consumers before the commit could consume them. (With
            # none of its messages in the transaction it goes at once: a partition handed
            # over after its last commit must not wait for a commit that may never come.)
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
            self._session.connection.close_transport(self._transport)
            return
        if self.dialect.release_by_nack:
            for token in reversed(held):
                if token.ack_id:
                    self._transport.frame("NACK", {"id": token.ack_id}, confirm=False)
        if self.inbox is not None:
            return  # detached from the inbox when it closed
        self._transport.unsubscribe(self.sub_id)


class StompSession(ProviderSession):
    def __init__(
        self, connection: StompConnection, transacted: bool, acknowledge_mode: int
    ) -> None:
        self.connection = connection
        self.transport = connection.transport
        self.transacted = transacted
        self._tx_lost = False
        self.zombies: list[StompConsumer] = []
        """Consumers closed inside the transaction, unsubscribed when it ends."""
        # STOMP brokers count a delivery against the subscription's window until it is
        # acknowledged, and STOMP has no other credit. A session that acknowledges as it
        # goes (AUTO, DUPS_OK) gets the factory's prefetch (1: ORD-9 at its strictest); one
        # that may hold many unacknowledged messages (CLIENT, transacted) needs a window
        # as large as what it may hold, or its receive() would wait for itself.
        holds_many = transacted or acknowledge_mode == CLIENT_ACKNOWLEDGE
        settings = connection.settings
        self.holds_many = holds_many
        self.confirm_acks = acknowledge_mode == CLIENT_ACKNOWLEDGE and not transacted
        """CLIENT_ACKNOWLEDGE: ``acknowledge()`` returns once the broker has the ACKs (a
        RECEIPT for the last one per connection). An ACK written and lost with the
        connection had returned OK, and its message came back unflagged."""
        self.window = (
            max(settings.prefetch, int(settings.extra.get("clientWindow", CLIENT_WINDOW)))
            if holds_many
            else settings.prefetch
        )
        self._tx: str | None = None
        if transacted:
            self._begin()

    def transaction_lost(self) -> None:
        """Called after a reconnect: the open transaction died with the old connection."""
        if self._tx is not None:
            self._tx_lost = True
            self._begin()

    def _begin(self) -> None:
        self._tx = f"tx-{uuid.uuid4().hex[:12]}"
        self.transport.frame("BEGIN", {"transaction": self._tx}, confirm=False)

    def send(self, destination: Destination, message: Message) -> None:
        if destination.is_temporary and destination.name in _DELETED_TEMPORARY:
            raise InvalidDestinationError(
                f"{destination} was deleted with the connection that created it"
            )
        dialect = self.connection.dialect
        headers, body = encode(message, destination, dialect)
        headers["destination"] = self.connection.wire_name(destination)
        if self._tx is not None:
            headers["transaction"] = self._tx
        persistent = message.jms_delivery_mode == DeliveryMode.PERSISTENT
        # A persistent send returns only once the broker has it (no silent loss); inside
        # a transaction the COMMIT's receipt confirms all of them at once. RabbitMQ's
        # quorum queues (partitions, strict queues) drop non-persistent sends still on
        # their way when the connection closes (24 of 100,000 here): those ask for a
        # receipt that the close waits for.
        self.transport.frame(
            "SEND",
            headers,
            body,
            confirm=persistent and self._tx is None,
            later=not persistent
            and self._tx is None
            and headers["destination"].startswith("/amq/queue/"),
        )

    def create_consumer(self, spec: ConsumerSpec, sink: DeliverySink) -> ProviderConsumer:
        """A subscription; ``spec.window`` (messages) overrides the session's own window (a
        listener container's feed asks for one sized to its sessions)."""
        connection = self.connection
        destination, subscription = spec.destination, spec.subscription
        durable, shared, window = spec.durable, spec.shared, spec.window
        dialect = connection.dialect
        if shared and dialect.shared_subscription == "none":
            raise IllegalStateError(
                f"{dialect.name} has no shared subscriptions over STOMP "
                "(capability shared_subscriptions)"
            )
        sub_id = f"sub-{uuid.uuid4().hex[:12]}"
        headers = {
            "destination": connection.wire_name(destination),
            "ack": "client-individual",
            **(dialect.window_headers(window) if window else dialect.prefetch_headers(self.window)),
        }
        if dialect.routing_type_headers:
            headers["subscription-type"] = "MULTICAST" if destination.is_topic else "ANYCAST"
        client_filter = None
        if spec.selector:
            client_filter = self._selector_headers(destination, spec.selector, headers)
        if spec.no_local:
            headers["activemq.noLocal" if dialect.name == "activemq" else "no-local"] = "true"
        if shared:
            connection.shared_headers(destination, subscription or "", durable, headers)
            if durable:
                connection.active_durables.add(subscription or "")
        elif durable:
            sub_id = connection.durable_headers(subscription or "", headers)
            connection.active_durables.add(subscription or "")
        if destination.is_temporary and destination.name not in connection.temporary_names:
            raise InvalidDestinationError(
                f"{destination} belongs to another connection: only the connection that "
                "created a temporary destination may consume from it"
            )
        # Per queue, and for a topic per subscription (a plain topic consumer is its own).
        named = spec.named
        place = (subscription or "") if named else sub_id if destination.is_topic else None
        what = str(destination) + (f" subscription {subscription!r}" if named else "")
        promote = Promotion()  # bound to the consumer once made

        claim = connection.strict.attach(
            destination.key,
            place,
            exclusive=spec.exclusive,
            standby=spec.standby,
            promote=promote,
            what=what,
        )
        if claim.strict:
            # One active consumer: it takes one message at a time unless its session must
            # hold many (ORD-18), and the broker keeps other processes' consumers out too.
            if not (destination.is_topic or destination.is_temporary):
                connection.declare_exclusive_queue(destination, required=False)
                headers["destination"] = connection.wire_name(destination)
            if not self.holds_many:
                headers.update(dialect.prefetch_headers(1))
            if dialect.exclusive_header:
                headers[dialect.exclusive_header] = "true"
        try:
            consumer = StompConsumer(self, destination, sink, headers, client_filter, sub_id, claim)
        except BaseException:
            connection.strict.detach(claim)
            raise
        promote.bind(consumer.promote)
        consumer._durable_name = subscription if durable else None
        if destination.is_topic or destination.is_temporary:
            # A topic keeps nothing for a subscriber that is not there yet, and RabbitMQ
            # delivers a temporary queue's messages to whoever subscribed when they came:
            # subscribe now, as JMS says a consumer exists from its creation (a queue
            # consumer waits for demand, so it never holds a group it did not ask for).
            consumer.subscribe()
        return consumer

    def _selector_headers(
        self, destination: Destination, selector: str, headers: dict[str, str]
    ) -> Selector | None:
        dialect = self.connection.dialect
        if dialect.selectors in ("broker", "core"):
            rendered = _broker_selector(dialect, selector)
            if rendered is not None:
                headers["selector"] = rendered
            return None
        if destination.is_topic:
            return parse_selector(selector)  # every subscriber has its own queue: filter here
        raise IllegalStateError(
            f"{dialect.name} cannot filter a queue with a selector, and filtering on the "
            "client would take messages from other consumers (capability selectors)"
        )

    def acknowledge(self, tokens: Sequence[Any]) -> None:
        by_transport: dict[StompTransport, list[Any]] = {}
        for token in tokens:
            token.consumer.unfinished.pop(id(token), None)
            if token.ack_id:
                by_transport.setdefault(token.consumer.transport, []).append(token)
        kept: set[int] = set()
        for transport, acked in by_transport.items():
            generation = transport.generation
            for number, token in enumerate(acked, 1):
                confirm = self.confirm_acks and number == len(acked)
                transport.frame("ACK", {"id": token.ack_id}, confirm=confirm)
            if transport.generation != generation:
                # Lost under a failover URL (the frame was dropped quietly): the broker
                # delivers these again, and jmslike's count must say it is not the first.
                kept.update(id(token) for token in acked)
        for token in tokens:
            if id(token) not in kept:
                self.connection.forget(token.key)

    def redeliver(self, token: Any) -> Message:
        message: Message = token.decode()
        count = self.connection.count_delivery(token.key, {"redelivered": "true"})
        message.jms_redelivered = True
        set_provider_property(message, DELIVERY_COUNT, count)
        return message

    def release(self, tokens: Sequence[Any]) -> None:
        """Their consumer is closed: Classic and Artemis hand them back on UNSUBSCRIBE;
        RabbitMQ needs a NACK first, while the subscription still exists; a RabbitMQ
        temporary queue's go back to its inbox."""
        inboxes: dict[_TemporaryInbox, list[tuple[dict[str, str], bytes]]] = {}
        for token in tokens:
            token.consumer.unfinished.pop(id(token), None)
            inbox = token.consumer.inbox
            if inbox is not None:
                inboxes.setdefault(inbox, []).append((token.headers, token.body))
        for inbox, frames in inboxes.items():
            inbox.put_back(frames)
        if self.connection.dialect.release_by_nack:
            for token in reversed(tokens):
                consumer = token.consumer
                if consumer in self.zombies and not consumer.own_connection and token.ack_id:
                    consumer.transport.frame("NACK", {"id": token.ack_id}, confirm=False)
        self._detach_zombies()

    def _detach_zombies(self) -> None:
        zombies, self.zombies = self.zombies, []
        for consumer in zombies:
            consumer.detach(())

    def dead_letter(self, token: Any, reason: str) -> None:
        token.consumer.unfinished.pop(id(token), None)
        message: Message = token.decode()
        set_provider_property(message, DLQ_REASON, reason)
        dialect = self.connection.dialect
        dlq = Queue(self.connection.settings.dead_letter_queue)
        headers, body = encode(message, dlq, dialect)
        headers["destination"] = self.connection.wire_name(dlq)
        headers["persistent"] = "true"
        tx = f"dlq-{uuid.uuid4().hex[:12]}"
        self.transport.frame("BEGIN", {"transaction": tx}, confirm=False)
        self.transport.frame("SEND", {**headers, "transaction": tx}, body, confirm=False)
        if dialect.transactional_ack and token.consumer.transport is self.transport:
            if token.ack_id:
                self.transport.frame("ACK", {"id": token.ack_id, "transaction": tx}, confirm=False)
            self.transport.frame("COMMIT", {"transaction": tx}, confirm=True)
        else:
            self.transport.frame("COMMIT", {"transaction": tx}, confirm=True)
            self.acknowledge([token])
        self.connection.forget(token.key)

    def commit(self, tokens: Sequence[Any]) -> None:
        tx = self._tx
        if tx is None:
            raise JMSException("commit on a session that is not transacted")
        if self._tx_lost:
            self._tx_lost = False
            raise TransactionRolledBackError(
                f"the connection to STOMP broker {self.transport.address} was lost and "
                "reconnected during this transaction: it was rolled back"
            )
        try:
            # An ACK joins the transaction only where the broker allows it and the
            # delivery came over this connection; the others (Artemis ignores the
            # transaction on ACK; RabbitMQ consumers have connections of their own) are
            # acknowledged once the COMMIT is confirmed.
            joined = self.connection.dialect.transactional_ack
            later = [t for t in tokens if not joined or t.consumer.transport is not self.transport]
            for token in tokens:
                ack_id = token.ack_id
                if joined and token.consumer.transport is self.transport and ack_id:
                    self.transport.frame("ACK", {"id": ack_id, "transaction": tx}, confirm=False)
            self.transport.frame("COMMIT", {"transaction": tx}, confirm=True)
        except UnconfirmedError as exc:
            self._next_transaction()
            for token in tokens:
                token.consumer.unfinished.pop(id(token), None)
            raise TransactionInDoubtError(
                f"STOMP COMMIT was sent to {self.transport.address} and not confirmed: "
                f"it may have taken effect ({exc})"
            ) from exc
        except JMSException as exc:
            # The broker's reason is what the caller needs, not the next BEGIN's failure
            # on a connection the broker closed after refusing the COMMIT.
            self._next_transaction()
            raise TransactionRolledBackError(f"STOMP COMMIT failed: {exc}") from exc
        # Committed. What fails from here on does not undo it: a process frozen while it
        # waited for the RECEIPT found the connection gone when it woke, and the next
        # BEGIN's failure had been reported as this commit's rollback (a processed
        # message counted as given back, and never seen again).
        self._next_transaction()
        for token in tokens:
            token.consumer.unfinished.pop(id(token), None)
            self.connection.forget(token.key)
        try:
            self.acknowledge(later)
        except JMSException as exc:
            raise TransactionInDoubtError(
                f"STOMP COMMIT to {self.transport.address} took effect, but the "
                f"acknowledgement of {len(later)} received message(s) failed: they come "
                f"again, flagged redelivered ({exc})"
            ) from exc
        self._detach_zombies()

    def _next_transaction(self) -> None:
        """Begin the next transaction; if the connection is gone, the next commit says so
        (rolled back) rather than the commit that just ended."""
        try:
            self._begin()
        except JMSException:
            self._tx_lost = True

    def rollback(self) -> None:
        if self._tx is None:
            return
        self._tx_lost = False
        try:
            self.transport.frame("ABORT", {"transaction": self._tx}, confirm=True)
        finally:
            self._begin()
        if not self.connection.dialect.release_by_nack:  # else release() follows
            self._detach_zombies()

    def close(self) -> None:
        if self._tx is not None and self.transport.connected:
            self.transport.frame("ABORT", {"transaction": self._tx}, confirm=False)
            self._tx = None
        if self.transport.connected:
            self._detach_zombies()

    def browse(self, destination: Destination, selector: str | None) -> Sequence[Message]:
        dialect = self.connection.dialect
        management = self.connection.management
        if management is not None:
            core = _broker_selector(dialect, selector)
            listed: list[Message] = []
            now = int(time.time() * 1000)
            for headers, body in management.browse(destination.name, core):
                message = decode(headers, body, dialect)
                if 0 < message.jms_expiration <= now:
                    continue  # expired, not yet reaped by the broker: never delivered
                mark_read_only(message)
                listed.append(message)
            return listed
        if not dialect.browse:
            raise IllegalStateError(
                f"{dialect.name} cannot browse over STOMP (capability browsers)"
            )
        done = threading.Event()
        found: list[Message] = []

        def collect(headers: dict[str, str], body: bytes) -> None:
            if headers.get("browser") == "end":
                done.set()
                return
            message = decode(headers, body, dialect)
            mark_read_only(message)
            found.append(message)

        sub_id = f"browse-{uuid.uuid4().hex[:12]}"
        headers = {
            "destination": self.connection.wire_name(destination),
            "browser": "true",
            "ack": "auto",
        }
        rendered = _broker_selector(dialect, selector)
        if rendered is not None:
            headers["selector"] = rendered
        self.transport.subscribe(sub_id, headers, collect)
        try:
            done.wait(self.connection.settings.request_timeout)
        finally:
            self.transport.unsubscribe(sub_id)
        return found

    def unsubscribe(self, name: str) -> None:
        self.connection.delete_durable(name)


class StompConnection(ProviderConnection):
    def __init__(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> None:
        self.url = url
        self.settings = settings
        # failover:(stomp://u:p@a,stomp://u:p@b): the members carry the credentials
        member = next((m for m in url.members if m.user), None)
        self._user = user if user or member is None else member.user
        self._password = password if user or member is None else member.password
        self._on_exception = on_exception
        self.client_id: str | None = None
        self.temporary_names: set[str] = set()
        self.temporary_inboxes: dict[str, _TemporaryInbox] = {}
        """RabbitMQ's temporary queues made here, by name (see ``_TemporaryInbox``)."""
        self._probe_lock = threading.Lock()
        self._probe_destination: str | None = None
        self._probes: dict[str, list[Any]] = {}
        """Temporary queue name -> [event, the broker's name for it], while its probe is out."""
        self._extra_transports: set[StompTransport] = set()
        self.active_durables: set[str] = set()
        self.rabbit_durables: dict[str, dict[str, str]] = {}
        """RabbitMQ durable subscriptions made here: name -> their SUBSCRIBE headers."""
        self.sessions: weakref.WeakSet[StompSession] = weakref.WeakSet()
        self.consumers: weakref.WeakSet[StompConsumer] = weakref.WeakSet()
        self.transport = self._connect(None, self._reconnected, self._lost)
        self.counts = counts_for(self.transport.address)
        self.strict = registry_for(self.transport.address)
        self.dialect: Dialect = dialect_for(self.transport.server)
        management_url = settings.extra.get("managementUrl")
        self.management = (
            ArtemisManagement(management_url, self._user, self._password, settings.request_timeout)
            if management_url and self.dialect.management == "artemis-jolokia"
            else None
        )
        first = url.members[0] if url.members else url
        self.exclusivity = exclusivity_for(
            self.dialect.name,
            first.host or "127.0.0.1",
            settings,
            self._user,
            self._password,
            self.transport.vhost,
        )
        self.exclusive_queues = exclusive_queues_for(self.transport.address)
        self.capabilities = _capabilities(
            self.dialect, self.transport, self.management, self.exclusivity
        )

    def queue_depths(self, prefix: str) -> dict[str, int] | None:
        depths = self.exclusivity.depths
        return depths(prefix) if depths is not None else None

    def declare_exclusive_queue(self, queue: Destination, *, required: bool = True) -> bool:
        """Have the broker hold ``queue`` to one active consumer across processes (ORD-18,
        partitions), once per process; see jmslike.spi.exclusive. ``required=False``
        (ORD-18 declared late): a refusal is logged and False returned."""
        declare = self.exclusivity.declare
        if declare is None:
            return self.exclusivity.scope == "broker"
        return self.exclusive_queues.declare(queue.name, declare, required=required)

    def wire_name(self, destination: Destination) -> str:
        """The STOMP ``destination`` header: RabbitMQ's single-active-consumer queues are
        addressed as ``/amq/queue/<name>``, since ``/queue/<name>`` would declare the
        queue again without the argument and be refused."""
        if (
            self.dialect.name == "rabbitmq"
            and not (destination.is_topic or destination.is_temporary)
            and (
                destination.name in self.exclusive_queues
                or (
                    self.settings.is_strictly_ordered(destination)
                    and self.declare_exclusive_queue(destination, required=False)
                )
            )
        ):
            return "/amq/queue/" + destination.name
        return destination_name(destination, self.dialect)

    def _connect(
        self,
        client_id: str | None,
        on_reconnect: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> StompTransport:
        options = _options(self.url, self.settings)
        return StompTransport(
            self.url,
            self._user,
            self._password,
            client_id=client_id,
            heartbeats=options.heartbeats,
            timeout=self.settings.request_timeout,
            on_exception=self._on_exception,
            reconnect=options.reconnect,
            on_reconnect=on_reconnect,
            on_lost=on_lost,
            ssl_ca_file=options.tls.ca_file,
        )

    def _lost(self) -> None:
        for consumer in list(self.consumers):
            consumer.revoke_stale()

    def _reconnected(self) -> None:
        """The broker forgot every transaction of the lost connection: the sessions' open
        transactions are rolled back (their next commit says so). RabbitMQ deleted the
        temporary queues with the connection: they are made again, under new names."""
        for session in list(self.sessions):
            session.transaction_lost()
        for consumer in list(self.consumers):
            consumer.revoke_stale()
        for name in list(self.temporary_inboxes):
            try:
                self._declare(name)
            except JMSException as exc:
                log.warning("temporary queue %s not made again after a reconnect: %s", name, exc)

    def open_transport(self, on_reconnect: Callable[[], None] | None = None) -> StompTransport:
        """Another connection to the same broker, for a consumer that needs its own."""
        transport = self._connect(self.client_id, on_reconnect, on_reconnect)
        self._extra_transports.add(transport)
        return transport

    def close_transport(self, transport: StompTransport) -> None:
        self._extra_transports.discard(transport)
        transport.close()

    def create_session(self, transacted: bool, acknowledge_mode: int) -> ProviderSession:
        self.transport.check_open()
        session = StompSession(self, transacted, acknowledge_mode)
        self.sessions.add(session)
        return session

    def set_client_id(self, client_id: str) -> None:
        """STOMP sends the client id with CONNECT, so connect again with it (JMS allows it
        only before the connection is used, so nothing is lost). Artemis and RabbitMQ do
        not refuse a client id in use, so jmslike refuses it within the process too."""
        address = self.transport.address
        CLIENT_IDS.claim(address, client_id, self)
        old = self.transport
        old.close()
        try:
            self.transport = self._connect(client_id, self._reconnected, self._lost)
        except JMSException as exc:
            self.transport = self._connect(self.client_id, self._reconnected, self._lost)
            CLIENT_IDS.release(address, client_id, self)
            if "client" in str(exc).lower() and "id" in str(exc).lower():
                raise InvalidClientIDError(str(exc)) from exc
            raise
        self.client_id = client_id

    def count_delivery(self, key: str, headers: dict[str, str]) -> int:
        """This delivery's number: counted by jmslike, since the brokers do not say (only
        RabbitMQ quorum queues send ``x-delivery-count``)."""
        broker_count = headers.get("x-delivery-count", "")
        return self.counts.count(
            key,
            headers.get("redelivered") == "true",
            int(broker_count) if broker_count.isdigit() else None,
        )

    def forget(self, key: str) -> None:
        self.counts.forget(key)

    def durable_headers(self, name: str, headers: dict[str, str]) -> str:
        """Add the broker's durable-subscription headers; returns the subscription id."""
        style = self.dialect.durable_subscription
        if not self.client_id and style != "none":
            raise IllegalStateError(
                f"durable subscription {name!r} needs a client id "
                "(connection.client_id or the factory's client_id), as in JMS"
            )
        if style == "activemq":
            headers["activemq.subscriptionName"] = name
        elif style == "artemis":
            headers["durable-subscription-name"] = name
        elif style == "rabbitmq":
            headers["durable"] = "true"
            headers["auto-delete"] = "false"
            self.rabbit_durables[name] = dict(headers)
            return f"durable-{name}"
        else:
            raise IllegalStateError(
                f"{self.dialect.name} has no durable subscriptions over STOMP "
                "(capability durable_subscriptions)"
            )
        return f"sub-{uuid.uuid4().hex[:12]}"

    def shared_headers(
        self, topic: Destination, name: str, durable: bool, headers: dict[str, str]
    ) -> None:
        """Make ``headers`` subscribe to the shared subscription ``name`` of ``topic``.

        The subscription is a queue named after the client id (if any) and ``name``, as
        the brokers' own JMS clients name it; consumers of that queue split its messages.
        """
        queue = f"{self.client_id}.{name}" if self.client_id else name
        if self.dialect.shared_subscription == "artemis":
            if not durable:
                # Queue names are global on Artemis: without the topic in it, a shared
                # subscription of the same name on another topic would be this queue.
                queue = f"nonDurable.{queue}.{topic.name}"
            headers["destination"] = f"{topic.name}::{queue}"
            return
        # RabbitMQ: a durable queue bound to the topic, deleted with its last consumer
        # unless the subscription is durable; every consumer's connection names it.
        headers["durable"] = "true"
        headers["auto-delete"] = "false" if durable else "true"
        headers["x-queue-name"] = f"jmslike-shared-{queue}"
        if durable:
            self.rabbit_durables[name] = dict(headers)

    def unsubscribe_headers(self, headers: dict[str, str], durable: bool) -> dict[str, str]:
        return {}

    def delete_durable(self, name: str) -> None:
        if name in self.active_durables:
            raise IllegalStateError(
                f"durable subscription {name!r} has an active consumer: close it first"
            )
        style = self.dialect.durable_subscription
        sub_id = f"delete-{uuid.uuid4().hex[:12]}"
        if style == "activemq":
            self.transport.frame(
                "UNSUBSCRIBE", {"id": sub_id, "activemq.subscriptionName": name}, confirm=True
            )
        elif style == "artemis":
            if self.management is not None and not self.management.has_subscription_queue(
                self.client_id or "", name
            ):
                raise InvalidDestinationError(
                    f"no durable subscription {name!r} for client id {self.client_id!r} on "
                    f"{self.dialect.name}"
                )
            self.transport.frame(
                "UNSUBSCRIBE", {"id": sub_id, "durable-subscription-name": name}, confirm=True
            )
        elif style == "rabbitmq":
            # RabbitMQ deletes a durable subscription only through an UNSUBSCRIBE on the
            # connection that holds it: subscribe again for a moment, then unsubscribe.
            headers = self.rabbit_durables.pop(name, None)
            if headers is None:
                raise InvalidDestinationError(
                    f"no durable subscription {name!r} made by this connection; RabbitMQ "
                    "cannot look one up by name"
                )
            sub_id = f"durable-{name}"
            self.transport.subscribe(sub_id, headers, lambda _headers, _body: None)
            try:
                self.transport.frame("UNSUBSCRIBE", {"id": sub_id, "durable": "true"}, confirm=True)
            finally:
                self.transport.unlisten(sub_id)
        else:
            raise IllegalStateError(f"{self.dialect.name} has no durable subscriptions")

    def create_temporary_queue(self) -> TemporaryQueue:
        prefix = self.dialect.temp_queue_prefix
        if prefix is None:
            raise IllegalStateError(
                f"{self.dialect.name} has no temporary queues over STOMP "
                "(capability temporary_destinations)"
            )
        queue = TemporaryQueue(f"{prefix}jmslike-{uuid.uuid4().hex[:16]}")
        if self.dialect.temp_queue_implicit:
            inbox = self.temporary_inboxes[queue.name] = _TemporaryInbox()
            self.transport.listen(queue.name, inbox.on_frame)
            try:
                self._declare(queue.name)
            except BaseException:
                del self.temporary_inboxes[queue.name]
                self.transport.unlisten(queue.name)
                raise
        self.temporary_names.add(queue.name)
        return queue

    def _declare(self, name: str) -> None:
        """Make RabbitMQ create the temporary queue ``name`` now, and learn its real name.

        RabbitMQ creates a ``/temp-queue/x`` only when a SEND names it in ``reply-to``, and
        refuses it as a SEND's or SUBSCRIBE's destination (even from its creator). So a
        probe goes to a topic this connection subscribes to, with ``reply-to`` naming the
        queue: RabbitMQ creates the queue (exclusive to this connection, deleted with it)
        and subscribes this connection to it at once, and the probe comes back with the
        name others reach it by (``/reply-queue/amq.gen-...``), which a send to it uses.
        """
        with self._probe_lock:
            destination = self._probe_destination
            if destination is None:
                probe_id = uuid.uuid4().hex[:12]
                destination = f"{self.dialect.topic_prefix}jmslike.temporary-probe.{probe_id}"
                self.transport.subscribe(
                    f"probe-{probe_id}", {"destination": destination, "ack": "auto"}, self._probed
                )
                self._probe_destination = destination
            slot: list[Any] = [threading.Event(), None]
            self._probes[name] = slot
        try:
            self.transport.frame(
                "SEND",
                {"destination": destination, "reply-to": name, PROBE_HEADER: name},
                confirm=True,
            )
            if not slot[0].wait(self.settings.request_timeout):
                raise ConnectionFailedError(
                    f"STOMP broker {self.transport.address} did not return the probe that "
                    f"creates temporary queue {name} within {self.settings.request_timeout} s"
                )
        finally:
            with self._probe_lock:
                self._probes.pop(name, None)
        remember_wire_name(name, slot[1])

    def _probed(self, headers: dict[str, str], body: bytes) -> None:
        """stomp.py's receiver thread: a probe came back with a temporary queue's name."""
        with self._probe_lock:
            slot = self._probes.get(headers.get(PROBE_HEADER, ""))
        if slot is not None and headers.get("reply-to"):
            slot[1] = headers["reply-to"]
            slot[0].set()

    def delete_temporary(self, destination: Destination) -> None:
        """STOMP cannot delete a temporary queue (the broker does, with the connection):
        jmslike forgets it here, so that a request/reply server making one per request
        keeps no handler or name per request, and refuses sends to it from now on."""
        if destination.name not in self.temporary_names:
            raise InvalidDestinationError(f"{destination} was not created by this connection")
        self.temporary_names.discard(destination.name)
        _DELETED_TEMPORARY.add(destination.name)
        if self.temporary_inboxes.pop(destination.name, None) is not None:
            self.transport.unlisten(destination.name)

    def close(self) -> None:
        _DELETED_TEMPORARY.update(self.temporary_names)
        CLIENT_IDS.release(self.transport.address, self.client_id, self)
        for transport in list(self._extra_transports):
            self.close_transport(transport)
        self.transport.close()


def _capabilities(
    dialect: Dialect,
    transport: StompTransport,
    management: ArtemisManagement | None,
    exclusivity: Exclusivity,
) -> Capabilities:
    native = dialect.native_groups
    return Capabilities(
        provider="stomp",
        broker=dialect.name,
        broker_version=transport.server,
        ordering_mode=OrderingMode.BROKER if native else OrderingMode.CLIENT_GATE,
        native_groups=native,
        group_scope="consumer" if native else "none",
        selectors=dialect.selectors != "topics-only",
        transactions=True,
        delivery_delay=dialect.delivery_delay_header is not None,
        priority=dialect.priority,
        durable_subscriptions=dialect.durable_subscription != "none",
        shared_subscriptions=dialect.shared_subscription != "none",
        temporary_destinations=dialect.temp_queue_prefix is not None,
        browsers=dialect.browse or management is not None,
        exclusive_consumers=True,
        exclusive_scope=exclusivity.scope,
        delivery_count=True,
        persistent=True,
        time_to_live=True,
        dead_letter_queue=True,
        extra={
            "exclusive_hint": exclusivity.hint,
            "gate_scope": f"stomp://{transport.address}",
            "counted_by": "jmslike",
            # Consumers on connections of their own: arrival order is not broker order.
            "gate_by_sequence": dialect.consumer_connection,
            # A listener container's sessions take from one subscription (jmslike/_feed.py).
            "container_feed": True,
        },
    )


def _broker_selector(dialect: Dialect, selector: str | None) -> str | None:
    """The selector as the broker reads it, written from the parsed tree (None: none).
    Artemis applies STOMP selectors (and its management API's browse filters)
    untranslated, in its Core syntax; ``convert_string_expressions:`` has it compare
    STOMP's string-valued headers with numbers as the numbers they spell."""
    if dialect.selectors != "core":
        return render_selector(selector)
    core = render_selector(selector, ARTEMIS_FILTER)
    return None if core is None else "convert_string_expressions:" + core


@dataclass(frozen=True, slots=True)
class _Options:
    heartbeats: tuple[int, int]
    """STOMP's heart-beat pair, ms: how often this client sends, how often it asks the
    broker to send."""
    reconnect: Reconnect
    tls: TlsOptions


def _options(url: ParsedURL, settings: FactorySettings) -> _Options:
    """The provider's own settings (URL query or factory keywords), checked.

    ``heartbeat`` (ms; ``1000,5000`` as in STOMP's header, client send then server send,
    one value for both; 0 turns a direction off), and for coming back after a
    lost connection the settings of jmslike.spi.reconnect (``reconnectAttempts``, -1 for
    ever, the default of ``failover:`` URLs; 0, the default of plain URLs, never;
    ``reconnectDelay`` and ``maxReconnectDelay``, seconds, the delay doubling after each
    failed attempt; Qpid JMS's ``failover.`` names too).
    """
    extra = settings.extra

    tls = tls_options(settings)
    if not tls.verify_host:
        # stomp.py checks a certificate's host name whenever it checks the certificate.
        raise ConfigurationError(
            f"sslVerifyHost=false for {url}: stomp.py cannot check a certificate without its "
            "host name (amqps:// can)"
        )
    return _Options(
        heartbeats=_heartbeats(url, extra.get("heartbeat", "10000")),
        reconnect=reconnect_policy(url, extra),
        tls=tls,
    )


def _heartbeats(url: ParsedURL, raw: object) -> tuple[int, int]:
    """``heartbeat=1000,5000`` (STOMP's own two-value form) or ``heartbeat=1000``."""
    parts = [part.strip() for part in str(raw).split(",")]
    if len(parts) not in (1, 2) or not all(part.isascii() and part.isdigit() for part in parts):
        raise ConfigurationError(
            f"heartbeat={raw!r} for {url}: must be an integer >= 0 (ms), or two separated by "
            "a comma: client send, server send"
        )
    return int(parts[0]), int(parts[-1])


class StompProvider(Provider):
    """``stomp://host:port`` and ``stomp+ssl://``; ``failover:(stomp://a,stomp://b)``."""

    name = "stomp"
    schemes = ("stomp", "stomp+ssl")
    setting_names = frozenset(
        {
            "heartbeat",
            "clientWindow",
            "managementUrl",
            *RECONNECT_SETTINGS,
            *TLS_SETTINGS,
        }
    )

    def check_settings(self, settings: FactorySettings) -> None:
        _options(ParsedURL(scheme="stomp"), settings)
        window = settings.extra.get("clientWindow", CLIENT_WINDOW)
        if isinstance(window, bool) or not str(window).strip().isdigit() or int(window) < 1:
            raise ConfigurationError(f"clientWindow={window!r}: must be an integer >= 1")

    def check_url(self, url: ParsedURL) -> None:
        for member in url.members or (url,):
            if not member.host:
                raise ConfigurationError(
                    f"STOMP URL {member} needs a host, e.g. stomp://127.0.0.1:61613"
                )

    def connect(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> ProviderConnection:
        with map_provider_errors(f"STOMP connection to {url.address} failed"):
            return StompConnection(url, settings, user, password, on_exception)
