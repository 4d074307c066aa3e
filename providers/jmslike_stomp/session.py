"""``StompSession``: sends, subscriptions, acknowledgements and transactions over STOMP.

Dead-lettering is a send to the factory's dead-letter queue with the reason, then an
acknowledgement, in one STOMP transaction where the broker allows it: NACK means
"discard" on Artemis and "to ActiveMQ.DLQ" on Classic, neither what jmslike promises.
A transaction is a STOMP transaction; an ACK joins it only where the broker honours that
(``Dialect.transactional_ack``) and is otherwise sent once the COMMIT is confirmed.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jmslike.destination import Destination, Queue
from jmslike.errors import (
    AcknowledgeInDoubtError,
    ConnectionFailedError,
    IllegalStateError,
    InvalidDestinationError,
    JMSException,
    SendInDoubtError,
    TransactionInDoubtError,
    TransactionRolledBackError,
)
from jmslike.message import DELIVERY_COUNT, DeliveryMode, Message
from jmslike.selector import Selector, parse_selector
from jmslike.spi.counts import count_scope
from jmslike.spi.diagnose import note_capped_browse
from jmslike.spi.messages import DLQ_REASON, mark_read_only, set_provider_property
from jmslike.spi.names import refuse_artemis_wildcards
from jmslike.spi.nolocal import MessageFilter, NoLocalFilter
from jmslike.spi.provider import (
    AT_ONCE,
    ConsumerSpec,
    DeliverySink,
    ProviderConsumer,
    ProviderSession,
    SendDone,
)
from jmslike.spi.strict import Promotion
from jmslike_stomp.codec import decode, encode
from jmslike_stomp.consumer import StompConsumer
from jmslike_stomp.dialect import _broker_selector
from jmslike_stomp.options import ACK_BATCH, CLIENT_WINDOW
from jmslike_stomp.temporary import _DELETED_TEMPORARY, _TemporaryInbox
from jmslike_stomp.transport import Receipted, StompTransport, UnconfirmedError
from jmslike_stomp.wire import FEED_ACK_DELAY

log = logging.getLogger("jmslike.stomp")

if TYPE_CHECKING:
    from jmslike_stomp.connection import StompConnection

__all__ = ["CLIENT_ACKNOWLEDGE", "StompSession"]

CLIENT_ACKNOWLEDGE = 2


class _Commit:
    """A ``commit()`` under way: which transaction, the deliveries it finishes (their
    transactional ACKs are undone if it is rolled back instead), its COMMIT frame
    (``Receipted``: queued or not, and the waiter for its RECEIPT), and the SENDs whose
    RECEIPTs it waits for once committed. Kept until the commit has done everything, so
    a call that Ctrl-C stopped is carried on by the next one, from where it was."""

    __slots__ = ("mark", "receipts", "tokens", "tx")

    def __init__(self, tx: str, tokens: Sequence[Any]) -> None:
        self.tx = tx
        self.tokens = tokens
        self.mark = Receipted()
        self.receipts: list[tuple[str, Any]] | None = None


class StompSession(ProviderSession):
    def __init__(
        self, connection: StompConnection, transacted: bool, acknowledge_mode: int
    ) -> None:
        self.connection = connection
        self.transport = connection.transport
        self.transacted = transacted
        self._tx_lost = False
        self._commit: _Commit | None = None
        """The commit a Ctrl-C stopped, carried on by the next ``commit()``."""
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
        self.ack_batch = (
            min(int(settings.extra.get("ackBatch", ACK_BATCH)), self.window // 4)
            if not holds_many and not self.transport.reconnects
            else 0
        )
        """How many ACKs may be written together (``acknowledge_soon``): ``ackBatch``, at
        most a quarter of the window, so that the broker always has most of it to fill; none
        under a failover URL, where an ACK lost with the connection must leave the
        delivery's count behind (``acknowledge``)."""
        self._tx: str | None = None
        self._tx_receipts: list[tuple[str, Any]] = []
        """The open transaction's SENDs whose RECEIPTs its commit waits for, on RabbitMQ:
        those to quorum queues, and persistent ones (``_send``)."""
        if transacted:
            self._begin()
        self._postable: Destination | None = None
        """The destination this session last sent to, unless its non-persistent sends wait
        for a RECEIPT (a RabbitMQ quorum queue) (:meth:`sends_at_once`)."""

    def transaction_lost(self) -> None:
        """Called after a reconnect: the open transaction died with the old connection."""
        if self._tx is not None:
            self._tx_lost = True
            self._begin()

    def _begin(self) -> None:
        """BEGIN the next transaction. Its id becomes the session's once the BEGIN is
        queued (or failed with the connection): a Ctrl-C before that leaves the last one
        in place, and no SEND goes in a transaction the broker never heard of."""
        if self._tx_receipts:  # of a transaction that ended without its commit's wait
            self.transport.forget_receipts(self._tx_receipts)
            self._tx_receipts = []
        tx = f"tx-{uuid.uuid4().hex[:12]}"
        try:
            self.transport.frame("BEGIN", {"transaction": tx}, confirm=False)
        except JMSException:
            self._tx = tx
            raise
        self._tx = tx

    def send(self, destination: Destination, message: Message) -> None:
        self._send(destination, message)

    def sends_at_once(self, destination: Destination, delivery_mode: int) -> bool:
        """A non-persistent send outside a transaction, to the destination this session
        last sent to, while the connection posts (``StompTransport.posts``):
        made under ``AT_ONCE`` it is queued for the connection's writer thread instead of
        written on the caller's (``Wire.post``). Not a send that waits for a RECEIPT
        (persistent, or to a RabbitMQ quorum queue), a first send to a destination
        (naming it may ask the broker), one under a ``failover:`` URL, or one while the
        writer is behind."""
        return (
            delivery_mode != DeliveryMode.PERSISTENT
            and self._tx is None
            and destination == self._postable
            and self.transport.posts()
        )

    def send_async(
        self,
        destination: Destination,
        message: Message,
        done: SendDone,
    ) -> None:
        def answered(error: BaseException | None) -> None:
            done(_in_doubt(destination, error) if isinstance(error, UnconfirmedError) else error)

        self._send(destination, message, answered)

    def _send(
        self,
        destination: Destination,
        message: Message,
        done: SendDone | None = None,
    ) -> None:
        if destination.is_temporary and destination.name in _DELETED_TEMPORARY:
            raise InvalidDestinationError(
                f"{destination} was deleted with the connection that created it"
            )
        dialect = self.connection.dialect
        if dialect.wildcard_addresses:
            refuse_artemis_wildcards(destination, self.transport.address)
        self.connection.published.note(destination, message)
        headers, body = encode(message, destination, dialect)
        headers["destination"] = self.connection.wire_name(destination)
        if self._tx is not None:
            if self._commit is not None:
                self._check_no_commit_sent("a send")
            headers["transaction"] = self._tx
        persistent = message.jms_delivery_mode == DeliveryMode.PERSISTENT
        # A persistent send returns only once the broker has it (no silent loss); inside
        # a transaction the COMMIT's receipt confirms all of them at once. RabbitMQ's
        # quorum queues (partitions, strict queues) drop non-persistent sends still on
        # their way when the connection closes (24 of 100,000 here): those ask for a
        # receipt that the close waits for. And RabbitMQ answers a COMMIT before the
        # quorum queues have its sends (a transaction's last 50 of 50,000 sends were
        # gone when the connection closed right after): there each SEND asks for a
        # receipt, which RabbitMQ sends once the queue has it, and the commit waits.
        # The same answer comes before a classic queue has stored a persistent send
        # (``Dialect.commit_before_stored``): those are held too.
        unwaited = not persistent and self._tx is None
        quorum = headers["destination"].startswith("/amq/queue/")
        held = quorum or (persistent and dialect.commit_before_stored)
        self._postable = None if quorum else destination
        if (
            unwaited
            and not quorum
            and done is None
            and AT_ONCE.get()
            and self.transport.post("SEND", headers, body)
        ):
            return  # made on an event loop: the writer thread writes it (sends_at_once)
        try:
            self.transport.frame(
                "SEND",
                headers,
                body,
                confirm=persistent and self._tx is None,
                done=done,
                later=unwaited and quorum,
                hold=self._tx_receipts if held and self._tx is not None else None,
            )
        except UnconfirmedError as exc:
            raise _in_doubt(destination, exc) from exc

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
        client_filter: MessageFilter | None = None
        if spec.selector:
            client_filter = self._selector_headers(destination, spec.selector, headers)
        # Artemis puts its no-local condition after the selector in brackets, which
        # breaks the `convert_string_expressions:` prefix jmslike's selector starts with
        # there ("Invalid filter", seen on 2.x): with a selector, jmslike keeps it.
        broker_no_local = dialect.name == "activemq" or (
            dialect.name == "artemis" and not spec.selector
        )
        if spec.no_local and broker_no_local:
            headers["activemq.noLocal" if dialect.name == "activemq" else "no-local"] = "true"
        if shared:
            connection.shared_headers(destination, subscription or "", durable, headers)
            if durable:
                connection.active_durables.add(subscription or "")
            if spec.selector and dialect.shared_subscription == "artemis":
                # Artemis makes the queue of a `topic::queue` SUBSCRIBE without a filter
                # and, the address being multicast, ignores the consumer's selector too:
                # every message came (k1, k2, k1, k2 for "k = 2", seen on 2.56). A shared
                # subscription has one selector for all its consumers, so dropping here
                # what it does not match is what a filtered queue would have done.
                client_filter = parse_selector(spec.selector)
        elif durable:
            sub_id = connection.durable_headers(
                destination, subscription or "", headers, spec.selector
            )
            connection.active_durables.add(subscription or "")
        if spec.no_local and not broker_no_local:
            # RabbitMQ ignores the header (and Artemis cannot take it beside a selector):
            # jmslike drops the connection's own messages (jmslike.spi.nolocal).
            connection.published.keep()
            client_filter = NoLocalFilter(connection.published, client_filter)
        if dialect.cumulative_ack and self.ack_batch >= 2 and not window and client_filter is None:
            # Cumulative ACKs where this consumer finishes in order and holds its ACKs
            # (AUTO or DUPS_OK, a window of 8 or more, no failover URL). Not for a
            # container's feed (``window``), whose sessions finish its messages in any
            # order, nor where the consumer filters (its reading thread acknowledges what
            # it drops, ahead of what the application has not finished).
            headers["ack"] = "client"
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
        prepare = None
        if claim.strict:
            # One active consumer: it takes one message at a time unless its session must
            # hold many (ORD-18), and the broker keeps other processes' consumers out too.
            if not (destination.is_topic or destination.is_temporary):
                connection.declare_exclusive_queue(destination, required=False)
                headers["destination"] = connection.wire_name(destination)
            elif destination.is_topic:
                connection.exclusivity.hold_topic(
                    connection.exclusive_queues, destination.name, shared=shared
                )
            if not self.holds_many:
                headers.update(dialect.prefetch_headers(1))
            if shared:
                prepare = connection.strict_shared_headers(destination, durable, headers)
            if dialect.exclusive_header:
                headers[dialect.exclusive_header] = "true"
        try:
            scope = count_scope(spec, connection.client_id)
            consumer = StompConsumer(
                self, destination, sink, headers, client_filter, sub_id, claim, scope
            )
        except BaseException:
            connection.strict.detach(claim)
            raise
        promote.bind(consumer.promote)
        if window and not claim.strict:
            # A container's feed: its sessions' ACKs go together too, a quarter of the
            # feed's window at most, whatever the factory's prefetch (docs/performance.md).
            consumer.ack_batch = (
                min(int(connection.settings.extra.get("ackBatch", ACK_BATCH)), window // 4)
                if not consumer.transport.reconnects
                else 0
            )
            consumer.ack_delay = FEED_ACK_DELAY
        else:
            consumer.ack_batch = self.ack_batch
        consumer._durable_name = subscription if durable else None
        consumer.prepare = prepare
        if destination.is_topic or destination.is_temporary:
            # A topic keeps nothing for a subscriber that is not there yet, and RabbitMQ
            # delivers a temporary queue's messages to whoever subscribed when they came:
            # subscribe now, as JMS says a consumer exists from its creation (a queue
            # consumer waits for demand, so it never holds a group it did not ask for).
            consumer.subscribe()
            if durable and not shared:
                connection.mark_selector(subscription or "", destination, spec.selector)
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
        """ACK each. With CLIENT_ACKNOWLEDGE, under a failover URL, a connection lost
        since (or during the call) is told after the others are acknowledged:
        AcknowledgeInDoubtError if an ACK of this call was written to it (the broker may
        have taken it before the connection went: those messages may never come again),
        else ConnectionFailedError (none reached the broker: it delivers them again,
        flagged redelivered, so the application must not take them as done). Without
        failover the first loss raises at once, the same two ways."""
        if len(tokens) == 1 and not self.confirm_acks:
            self._acknowledge_one(tokens[0])  # AUTO's one at a time, without the lists
            return
        lost = [token for token in tokens if getattr(token, "lost", False)]
        by_transport: dict[StompTransport, list[Any]] = {}
        for token in tokens:
            token.consumer.unfinished.pop(id(token), None)
            if token.ack_id:
                by_transport.setdefault(token.consumer.transport, []).append(token)
        back: list[Any] = []
        """Never written: the broker delivers them again."""
        doubt: list[Any] = []
        """Written to a connection lost before it confirmed them: taken, or delivered again."""
        for transport, acked in by_transport.items():
            written: list[Any] = []
            for number, token in enumerate(acked, 1):
                ack_id = token.ack_id  # "" once the connection it came over is gone
                if not ack_id:
                    back.append(token)
                    continue
                if token.queued:  # by a call Ctrl-C stopped: not again (_acknowledge_one)
                    transport.write_queued()
                    written.append(token)
                    continue
                confirm = self.confirm_acks and number == len(acked)
                try:
                    transport.frame("ACK", {"id": ack_id}, confirm=confirm, mark=token)
                except UnconfirmedError as exc:
                    if not transport.reconnects:
                        raise self._ack_in_doubt([*written, token], transport) from exc
                    doubt += [*written, token]
                    written = []
                    continue
                except ConnectionFailedError as exc:
                    if not transport.reconnects:
                        if written:
                            raise self._ack_in_doubt(written, transport) from exc
                        raise
                    back.append(token)
                    continue
                written.append(token)
            # An ACK nobody waited for (all but the last) may have gone to a connection
            # lost since (frame() drops it quietly under failover): in doubt.
            doubt += [token for token in written if token.lost]
        kept = {id(token) for token in back + doubt}
        for token in tokens:
            if id(token) not in kept:
                self.connection.forget(token.key)
        if not self.confirm_acks:
            return
        if doubt:
            raise self._ack_in_doubt(doubt, self.transport, len(lost) + len(back))
        if lost or back:
            raise ConnectionFailedError(
                f"acknowledge(): {len(lost) + len(back)} message(s) came over a STOMP "
                f"connection to {self.transport.address} that was lost since (failover "
                "reconnected): the broker delivers them again, flagged redelivered, so "
                "their work may be done twice"
            )

    def _acknowledge_one(self, token: Any) -> None:
        """``acknowledge([token])`` where nobody waits for the RECEIPT, as the general
        case does it: a token whose ACK failed, or went to a connection lost since, is
        kept (its copy comes flagged). A token whose ACK a call stopped by Ctrl-C queued
        already (the API layer asks again: ``ProviderSession.acknowledge``) gets no
        second ACK: what is queued is written now."""
        token.consumer.unfinished.pop(id(token), None)
        ack_id = token.ack_id
        if ack_id:
            transport = token.consumer.transport
            try:
                if token.queued:
                    transport.write_queued()
                else:
                    transport.frame("ACK", {"id": ack_id}, confirm=False, mark=token)
            except ConnectionFailedError:
                if not transport.reconnects:
                    raise
                return
            if token.lost:
                return
        self.connection.forget(token.key)

    @staticmethod
    def _ack_in_doubt(
        doubt: Sequence[Any], transport: StompTransport, again: int = 0
    ) -> AcknowledgeInDoubtError:
        more = f"; {again} other(s) never reached it and come again" if again else ""
        return AcknowledgeInDoubtError(
            f"acknowledge(): the ACK of {len(doubt)} message(s) was written to STOMP broker "
            f"{transport.address} and not confirmed (the connection was lost, or "
            "request_timeout passed): the broker may have taken it (they never come again) "
            f"or not (they come again, flagged redelivered){more}"
        )

    def acknowledge_soon(
        self, tokens: Sequence[Any], written: Callable[[bool], None] | None = None
    ) -> None:
        """AUTO/DUPS_OK with more messages buffered: the ACKs may wait a moment in the
        outbox and go several to one write (``Wire.hold``); ``written`` is called once
        they went."""
        if any(token.consumer.ack_batch < 2 for token in tokens):
            super().acknowledge_soon(tokens, written)
            return
        last = len(tokens) - 1
        for number, token in enumerate(tokens):
            consumer = token.consumer
            consumer.unfinished.pop(id(token), None)
            ack_id = token.ack_id
            after = written if number == last else None
            if ack_id and token.queued:  # queued by a call Ctrl-C stopped: not again
                consumer.transport.write_queued()  # (its own ``written`` is told)
            elif ack_id:
                consumer.transport.hold_ack(
                    ack_id,
                    consumer.ack_batch,
                    after,
                    cumulative=consumer.cumulative_sub,
                    delay=consumer.ack_delay,
                    mark=token,
                )
            elif after is not None:
                after(True)  # nothing to write for it (RabbitMQ's auto ack)
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

    def return_unseen(self, tokens: Sequence[Any]) -> None:
        counts = self.connection.counts
        for token in tokens:
            counts.returned_unseen(token.key)
        self.release(tokens)

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
        """Commit ``tokens`` and the open transaction's SENDs. Where Ctrl-C stopped the
        last call (``self._commit`` is left), this one carries it on instead of starting
        over: a COMMIT that went is waited for, not sent again; and where the next
        transaction had begun, the interrupted commit's work is ended first, then that
        transaction committed (see ``_Commit``)."""
        tx = self._tx
        if tx is None:
            raise JMSException("commit on a session that is not transacted")
        if self._tx_lost:
            self._tx_lost = False
            self._commit = None
            raise TransactionRolledBackError(
                f"the connection to STOMP broker {self.transport.address} was lost and "
                "reconnected during this transaction: it was rolled back"
            )
        # An ACK joins the transaction only where the broker allows it and the delivery
        # came over this connection; the others (Artemis ignores the transaction on ACK;
        # RabbitMQ consumers have connections of their own) are acknowledged once the
        # COMMIT is confirmed.
        joined = self.connection.dialect.transactional_ack
        pending = self._commit
        if pending is not None and pending.tx != tx:
            # It took effect, and this transaction began, before a Ctrl-C: end that one's
            # work, then commit this one with what it has.
            self._after_commit(pending, pending.tokens, joined)
            ended = {id(token) for token in pending.tokens}
            tokens = [token for token in tokens if id(token) not in ended]
            pending = None
        if pending is None or not pending.mark.queued:
            pending = self._commit = _Commit(tx, tokens)
        try:
            if pending.mark.queued:  # before a Ctrl-C: its answer is this commit's
                self.transport.await_answer(pending.mark, "COMMIT")
            else:
                self._write_commit(tx, tokens, joined, pending.mark)
        except UnconfirmedError as exc:
            self._commit = None
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
            self._commit = None
            self._next_transaction()
            raise TransactionRolledBackError(f"STOMP COMMIT failed: {exc}") from exc
        self._after_commit(pending, tokens, joined)

    def _after_commit(self, pending: _Commit, tokens: Sequence[Any], joined: bool) -> None:
        """What follows a confirmed COMMIT: its held SENDs' RECEIPTs, the next
        transaction, the ACKs that did not join it. Each step may run again for a commit
        that Ctrl-C stopped (``_Commit``)."""
        # What fails from here on does not undo the commit: a process frozen while it
        # waited for the RECEIPT found the connection gone when it woke, and the next
        # BEGIN's failure had been reported as this commit's rollback (a processed
        # message counted as given back, and never seen again).
        later = [t for t in tokens if not joined or t.consumer.transport is not self.transport]
        if pending.receipts is None:
            pending.receipts, self._tx_receipts = self._tx_receipts, []
        held = pending.receipts
        unheld: JMSException | None = None
        try:
            self.transport.await_receipts(held)
        except JMSException as exc:
            unheld = exc
        if self._tx == pending.tx:
            self._next_transaction()
        for token in tokens:
            token.consumer.unfinished.pop(id(token), None)
            self.connection.forget(token.key)
        try:
            self.acknowledge(later)
        except JMSException as exc:
            self._commit = None
            raise TransactionInDoubtError(
                f"STOMP COMMIT to {self.transport.address} took effect, but the "
                f"acknowledgement of {len(later)} received message(s) failed: they come "
                f"again, flagged redelivered ({exc})"
            ) from exc
        self._detach_zombies()
        self._commit = None
        if unheld is not None:
            raise TransactionInDoubtError(
                f"STOMP COMMIT to {self.transport.address} took effect, but the broker did "
                f"not confirm that its queues hold all {len(held)} message(s) it waits "
                f"for (persistent ones, and all sent to quorum queues): some may be lost "
                f"({unheld})"
            ) from unheld

    def _write_commit(self, tx: str, tokens: Sequence[Any], joined: bool, mark: Receipted) -> None:
        """The transaction's ACKs (where they join it), then its COMMIT, waited for. An
        ACK queued by a call Ctrl-C stopped is not written again (``Queued``)."""
        transport = self.transport
        for token in tokens:
            ack_id = token.ack_id
            if joined and token.consumer.transport is transport and ack_id and not token.queued:
                transport.frame("ACK", {"id": ack_id, "transaction": tx}, confirm=False, mark=token)
        transport.frame("COMMIT", {"transaction": tx}, confirm=True, mark=mark)

    def _check_no_commit_sent(self, what: str) -> None:
        """Refuse ``what`` in a transaction whose COMMIT went before a Ctrl-C stopped
        the ``commit()`` that sent it: the broker has committed it, or is doing so, and
        refuses anything more in it (Artemis closes the connection)."""
        pending = self._commit
        if pending is not None and pending.mark.queued and pending.tx == self._tx:
            raise IllegalStateError(
                f"{what} after a commit() that was interrupted once its COMMIT had gone to "
                f"STOMP broker {self.transport.address}: call commit() again first, to "
                "finish it and learn its outcome"
            )

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
        self._check_no_commit_sent("rollback()")
        self._tx_lost = False
        pending, self._commit = self._commit, None
        if pending is not None:  # stopped before its COMMIT went: the ABORT undoes its ACKs
            for token in pending.tokens:
                token.queued = False
        try:
            self.transport.frame("ABORT", {"transaction": self._tx}, confirm=True)
        finally:
            self._begin()
        if not self.connection.dialect.release_by_nack:  # else release() follows
            self._detach_zombies()

    def close(self) -> None:
        if self._tx_receipts:
            self.transport.forget_receipts(self._tx_receipts)
            self._tx_receipts = []
        pending = self._commit
        if pending is not None and pending.mark.queued and pending.tx == self._tx:
            self._tx = None  # committed, or its COMMIT is on its way: nothing to abort
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
        timeout = self.connection.settings.request_timeout
        try:
            ended = done.wait(timeout)
        finally:
            self.transport.unsubscribe(sub_id)
        if not ended:  # what came may be any part of the queue: not a listing
            raise JMSException(
                f"STOMP broker {self.transport.address} did not end a browse of "
                f"{destination} within {timeout} s (setting request_timeout); "
                f"{len(found)} messages had come"
            )
        note_capped_browse(log, self.transport.address, destination.key, len(found))
        return found

    def unsubscribe(self, name: str) -> None:
        self.connection.delete_durable(name)


def _in_doubt(destination: Destination, unconfirmed: UnconfirmedError) -> SendInDoubtError:
    return SendInDoubtError(
        f"STOMP SEND to {destination} was written and not confirmed: the broker may have "
        f"stored it ({unconfirmed})"
    )
