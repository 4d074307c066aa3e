"""Session: the unit of work, acknowledgement and ordering-group holding.

A session is where ORD-10 and ORD-11 live: it remembers every message it has handed to
the application and not yet finished, finishes them by acknowledge mode, and on
``recover``/``rollback`` redelivers them itself, in their original order, marked
redelivered (the broker keeps them as held by this session meanwhile, so no other session
can get their groups' later messages). Doing redelivery here rather than in each broker
is what makes ORD-11 hold on brokers whose own rollback does not redeliver (ActiveMQ's
STOMP ABORT, see docs/providers.md) and lets one redelivery policy (limit, delay, back-off,
dead-letter queue) apply everywhere.
"""

from __future__ import annotations

import logging
import operator
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jmslike._dispatch import SessionDispatcher
from jmslike.completion import Completions
from jmslike.config import UNIT_OF_ORDER_SESSION
from jmslike.consumer import Buffered, MessageConsumer, MessageListener, QueueBrowser
from jmslike.destination import (
    Destination,
    Queue,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
    name_for,
    parse_destination,
)
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidDestinationError,
    JMSException,
    ListenerError,
    TransactionInDoubtError,
    TransactionInProgressError,
    TransactionRolledBackError,
)
from jmslike.message import (
    DELIVERY_COUNT,
    GROUP_ID,
    GROUP_SEQ,
    BytesMessage,
    MapMessage,
    MapValue,
    Message,
    TextMessage,
)
from jmslike.middleware import DeliveryContext, notify_dead_letter
from jmslike.ordering import GroupKey, Returned, StripedGroupGate, generate_group_name
from jmslike.producer import MessageProducer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from jmslike._feed import Feed
    from jmslike.connection import Connection
    from jmslike.spi.provider import ProviderConsumer, ProviderSession

__all__ = ["Session"]

log = logging.getLogger("jmslike.session")

_TOKEN = operator.attrgetter("token")
"""A held delivery's provider token."""


class _Held:
    """One delivery the application has and has not finished (ORD-10).

    It keeps the message's property dict as handed out (a received message's dict is
    never changed in place: ``clear_properties`` replaces it) and its id and expiration,
    so whatever the application does to its copy, the redelivery policy and the client
    gate see the message as it was delivered.
    """

    __slots__ = ("acked", "consumer", "expiration", "message", "message_id", "props", "token")

    def __init__(self, consumer: MessageConsumer, message: Message, token: Any) -> None:
        self.acked = False
        """The provider took its acknowledgement (``Session._unfinished_last``)."""
        self.consumer = consumer
        self.message = message
        self.token = token
        self.props = message._properties
        self.message_id = message.jms_message_id
        self.expiration = message.jms_expiration

    @property
    def count(self) -> int:
        count = self.props.get(DELIVERY_COUNT)
        return count if isinstance(count, int) else 1

    @property
    def sequence(self) -> int | None:
        """JMSXGroupSeq as delivered, where the message has one."""
        sequence = self.props.get(GROUP_SEQ)
        return sequence if isinstance(sequence, int) else None

    @property
    def group(self) -> str | None:
        group = self.props.get(GROUP_ID)
        return group if isinstance(group, str) else None

    def returned(self) -> Returned:
        return (self.consumer._gate_scope, self.group, self.message_id, self.sequence)


def _not_transacted_flag(value: object) -> str:
    """The error for a ``transacted`` that is not a bool; a session mode there is JMS
    2.0's ``createSession(sessionMode)`` ported as it reads, so say how to write it."""
    mode = Session._MODE_NAMES.get(value) if isinstance(value, int) else None
    hint = (
        f": JMS 2.0's createSession(sessionMode) is create_session(acknowledge_mode="
        f"Session.{mode}) here, the first argument being transacted"
        if mode is not None
        else ""
    )
    return f"transacted must be a bool, not {value!r}{hint}"


class Session:
    """A single-threaded context for producing and consuming (JMS Session)."""

    SESSION_TRANSACTED = 0
    AUTO_ACKNOWLEDGE = 1
    CLIENT_ACKNOWLEDGE = 2
    DUPS_OK_ACKNOWLEDGE = 3

    _MODE_NAMES = {
        0: "SESSION_TRANSACTED",
        1: "AUTO_ACKNOWLEDGE",
        2: "CLIENT_ACKNOWLEDGE",
        3: "DUPS_OK_ACKNOWLEDGE",
    }

    def __init__(self, connection: Connection, transacted: bool, acknowledge_mode: int) -> None:
        if isinstance(acknowledge_mode, bool) or acknowledge_mode not in self._MODE_NAMES:
            raise InvalidArgumentError(
                f"unknown acknowledge mode {acknowledge_mode!r}: use Session.AUTO_ACKNOWLEDGE, "
                "CLIENT_ACKNOWLEDGE, DUPS_OK_ACKNOWLEDGE or SESSION_TRANSACTED"
            )
        if not isinstance(transacted, bool):
            raise InvalidArgumentError(_not_transacted_flag(transacted))
        transacted = transacted or acknowledge_mode == self.SESSION_TRANSACTED
        self._connection = connection
        self.transacted = transacted
        self.acknowledge_mode = self.SESSION_TRANSACTED if transacted else acknowledge_mode
        self._auto = self.acknowledge_mode in (self.AUTO_ACKNOWLEDGE, self.DUPS_OK_ACKNOWLEDGE)
        self._settings = connection._settings
        provider = connection._provider.create_session(transacted, self.acknowledge_mode)
        if self._settings.partitioned_destinations:
            from jmslike.partitions.session import PartitionedSession

            provider = PartitionedSession(provider, connection, self._settings, connection._report)
        self._provider: ProviderSession = provider
        self._held: dict[_Held, None] = {}
        self._consumers: list[MessageConsumer] = []
        self._producers: weakref.WeakSet[MessageProducer] = weakref.WeakSet()
        """Open producers, weakly: closing the session closes them, and a producer the
        application dropped without closing (a JMS 2.0 ``JMSProducer`` has no ``close``, so
        ``context.create_producer().send(...)`` per message is the idiom) is not kept."""
        self._dispatcher: SessionDispatcher | None = None
        self._completions: Completions | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._group_name: str | None = None
        self._id = connection._next_id()
        self._gate: StripedGroupGate[Any] | None = connection._gate

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"held={len(self._held)}"
        return f"<Session {self._MODE_NAMES[self.acknowledge_mode]} {state}>"

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- factories
    def create_queue(self, name: str) -> Queue:
        """The queue of that name (``"orders"``; ``"queue://orders"`` names it too)."""
        self._check_open()
        return Queue(name_for("queue", name))

    def create_topic(self, name: str) -> Topic:
        """The topic of that name (``"prices"``; ``"topic://prices"`` names it too)."""
        self._check_open()
        return Topic(name_for("topic", name))

    def create_temporary_queue(self) -> TemporaryQueue:
        self._check_open()
        return self._connection._provider.create_temporary_queue()

    def create_temporary_topic(self) -> TemporaryTopic:
        self._check_open()
        return self._connection._provider.create_temporary_topic()

    def create_message(self) -> Message:
        self._check_open()
        return Message()

    def create_text_message(self, text: str | None = None) -> TextMessage:
        if self._closed or self._connection._closed:  # the check, without two calls
            self._check_open()
        return TextMessage(text)

    def create_bytes_message(self, data: bytes | None = None) -> BytesMessage:
        self._check_open()
        return BytesMessage(data)

    def create_map_message(self, mapping: Mapping[str, MapValue] | None = None) -> MapMessage:
        self._check_open()
        return MapMessage(mapping)

    def create_producer(self, destination: Destination | str | None = None) -> MessageProducer:
        """A producer for ``destination`` (None: name the destination on each send).

        With the factory's ``enable_ordering_group`` setting, the producer starts bound to
        the factory's group name or to this session's generated one (ORD-6).
        """
        self._check_open()
        dest = None if destination is None else parse_destination(destination)
        producer = MessageProducer(self, dest)
        unit = self._settings.unit_of_order_for(dest) if dest is not None else None
        if unit is not None:  # the destination's unit of order (WebLogic) wins over ORD-6
            producer._bind(self._session_group_name() if unit == UNIT_OF_ORDER_SESSION else unit)
        elif self._settings.enable_ordering_group:
            producer._bind(self._factory_group_name())
        with self._lock:
            self._producers.add(producer)
        return producer

    def _factory_group_name(self) -> str:
        """ORD-6 / ORD-2: the factory's name, or one generated once for this session."""
        if self._settings.default_ordering_group_name:
            return self._settings.default_ordering_group_name
        return self._session_group_name()

    def _session_group_name(self) -> str:
        """The name generated once for this session (ORD-2), shared by its producers."""
        if self._group_name is None:
            self._group_name = generate_group_name()
        return self._group_name

    def create_consumer(
        self,
        destination: Destination | str,
        message_selector: str | None = None,
        no_local: bool = False,
        *,
        standby: bool = False,
        strictly_ordered: bool = False,
    ) -> MessageConsumer:
        """A consumer of a queue, or a non-durable subscriber of a topic.

        ``strictly_ordered=True`` declares the destination strictly ordered (ORD-18), as
        the factory's ``strictly_ordered`` setting does: at most one consumer is active
        there at a time, so a second one raises IllegalStateError unless it passes
        ``standby=True``, in which case it gets nothing until the active one closes and
        then takes over, starting with what that one left unfinished.
        """
        return self._add_consumer(
            parse_destination(destination),
            message_selector,
            no_local,
            standby=standby,
            strictly_ordered=strictly_ordered,
        )

    def create_durable_subscriber(
        self,
        topic: Topic | str,
        name: str,
        message_selector: str | None = None,
        no_local: bool = False,
        *,
        standby: bool = False,
        strictly_ordered: bool = False,
    ) -> MessageConsumer:
        """A durable subscription ``name`` of this connection's client id (JMS 1.1 name).

        ``standby`` and ``strictly_ordered`` as for ``create_consumer`` (ORD-18).
        """
        return self._subscribe(
            topic, name, "durable subscriber", message_selector, no_local, durable=True,
            standby=standby, strictly_ordered=strictly_ordered,
        )  # fmt: skip

    create_durable_consumer = create_durable_subscriber

    def create_shared_consumer(
        self,
        topic: Topic | str,
        name: str,
        message_selector: str | None = None,
        *,
        standby: bool = False,
        strictly_ordered: bool = False,
    ) -> MessageConsumer:
        """A shared non-durable subscription: consumers with one name split the messages.

        With ``strictly_ordered`` (ORD-18) they do not split them: one is active and the
        others, created with ``standby=True``, wait to take over.
        """
        return self._subscribe(
            topic, name, "shared consumer", message_selector, shared=True,
            standby=standby, strictly_ordered=strictly_ordered,
        )  # fmt: skip

    def create_shared_durable_consumer(
        self,
        topic: Topic | str,
        name: str,
        message_selector: str | None = None,
        *,
        standby: bool = False,
        strictly_ordered: bool = False,
    ) -> MessageConsumer:
        """A shared durable subscription; ``standby`` and ``strictly_ordered`` as for
        ``create_shared_consumer`` (ORD-18)."""
        return self._subscribe(
            topic, name, "shared durable consumer", message_selector, durable=True,
            shared=True, standby=standby, strictly_ordered=strictly_ordered,
        )  # fmt: skip

    def _subscribe(
        self,
        topic: Topic | str,
        name: str,
        what: str,
        selector: str | None,
        no_local: bool = False,
        **kinds: bool,
    ) -> MessageConsumer:
        """The four subscriber factories: check the topic and name, then attach."""
        destination = self._require_topic(topic, what)
        self._check_subscription_name(name)
        if (
            kinds.get("durable")
            and not kinds.get("shared")
            and not kinds.get("standby")
            and not kinds.get("strictly_ordered")
            and not self._settings.is_strictly_ordered(destination)
        ):  # a strictly ordered one takes standbys, and refuses others itself (ORD-18)
            self._connection._check_durable_free(name, destination)
        return self._add_consumer(destination, selector, no_local, subscription=name, **kinds)

    def unsubscribe(self, name: str) -> None:
        """Delete a durable subscription (it must have no active consumer)."""
        self._check_open()
        self._check_subscription_name(name)
        self._provider.unsubscribe(name)

    def create_browser(
        self, queue: Destination | str, message_selector: str | None = None
    ) -> QueueBrowser:
        self._check_open()
        dest = parse_destination(queue)
        if dest.is_topic:
            raise InvalidDestinationError(f"cannot browse {dest}: browsers are for queues")
        self._parse_selector(message_selector)
        return QueueBrowser(self, dest, message_selector)

    def _require_topic(self, topic: Topic | str, what: str) -> Destination:
        self._check_open()
        dest = parse_destination(topic)
        if not dest.is_topic:
            raise InvalidDestinationError(f"a {what} needs a topic, not {dest}")
        return dest

    @staticmethod
    def _check_subscription_name(name: object) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"subscription name {name!r}: need a non-empty str")

    @staticmethod
    def _parse_selector(selector: str | None) -> None:
        from jmslike.selector import parse_selector

        if selector is not None and not isinstance(selector, str):
            raise InvalidArgumentError(f"message selector {selector!r} must be a str or None")
        parse_selector(selector)

    def _add_consumer(
        self,
        destination: Destination,
        selector: str | None,
        no_local: bool,
        *,
        subscription: str | None = None,
        durable: bool = False,
        shared: bool = False,
        standby: bool = False,
        strictly_ordered: bool = False,
    ) -> MessageConsumer:
        return self._attach_consumer(
            destination,
            selector,
            no_local,
            subscription=subscription,
            durable=durable,
            shared=shared,
            standby=standby,
            strictly_ordered=strictly_ordered,
        )

    def _attach_consumer(
        self,
        destination: Destination,
        selector: str | None,
        no_local: bool,
        *,
        subscription: str | None = None,
        durable: bool = False,
        shared: bool = False,
        standby: bool = False,
        strictly_ordered: bool = False,
        feed: Feed | None = None,
        container: bool = False,
    ) -> MessageConsumer:
        """A consumer; with ``feed``, one taking from a listener container's feed;
        ``container``: a listener container's session's, asking one message at a time."""
        self._check_open()
        self._parse_selector(selector)
        for name, value in (("standby", standby), ("strictly_ordered", strictly_ordered)):
            if not isinstance(value, bool):
                raise InvalidArgumentError(f"{name}={value!r}: need True or False")
        if selector is not None and not selector.strip():
            selector = None
        if no_local and not self._connection.capabilities.no_local:
            # Here, for every provider: one that cannot keep it and says nothing would
            # hand the consumer its own connection's messages (RabbitMQ over STOMP did).
            capabilities = self._connection.capabilities
            raise IllegalStateError(
                f"{capabilities.broker} over {capabilities.provider} has no no local "
                "(capability no_local): the connection's own messages would come all the same"
            )
        consumer = MessageConsumer(
            self,
            destination,
            selector=selector,
            no_local=no_local,
            subscription=subscription,
            durable=durable,
            shared=shared,
            # ORD-18: asked here or declared by the factory; looked up once, here.
            exclusive=strictly_ordered or self._settings.is_strictly_ordered(destination),
            standby=standby,
            feed=feed,
            container=container,
        )
        with self._lock:
            self._consumers.append(consumer)
        return consumer

    # ---------------------------------------------------------- delivery side
    def _past_redelivery_limit(
        self, consumer: MessageConsumer, message: Message, token: Any
    ) -> bool:
        """Dead-letter, instead of handing out, a message already delivered more often than
        the limit allows (ORD-13). Recover and rollback check this when they redeliver; this
        catches the rest, e.g. a message whose processing crashed the process each time,
        coming back from a file store with its count."""
        limit = self._settings.max_redeliveries
        count = message._properties.get(DELIVERY_COUNT)
        if limit < 0 or not isinstance(count, int) or count <= limit + 1:
            return False
        reason = f"delivered {count - 1} times before; redelivery limit {limit} reached"
        self._provider.dead_letter(token, reason)
        # It passed the client gate (or came from a feed) as this session's: finished.
        self._gate_finished([_Held(consumer, message, token)])
        self._dead_lettered(consumer, message, reason)
        return True

    def _dead_lettered(self, consumer: MessageConsumer, message: Message, reason: str) -> None:
        """Tell interceptors that watch dead-lettering (metrics, tracing)."""
        connection = self._connection
        if connection._dead_letter_observers:
            context = DeliveryContext(connection, self, consumer, consumer.destination, message)
            notify_dead_letter(
                connection._dead_letter_observers, context, reason, connection._report
            )

    def _deliver(self, consumer: MessageConsumer, message: Message, token: Any) -> Message:
        """Hand a message to the application and remember it until finished."""
        held = _Held(consumer, message, token)
        # Message._received, inlined: once per delivery on the receive hot path.
        message._read_only = True
        message._read_only_body = True
        message._ack = self
        self._held[held] = None
        if self._auto:
            consumer._last = held
        if not consumer._warned_groups and message.ordering_group is not None:
            consumer._warned_groups = True
            log.warning(
                "consumer on %s combines the selector %r with ordering groups: a group's "
                "messages arrive in order, but the broker cannot tell this consumer about "
                "earlier messages of the group that the selector hides (ORD-14, see "
                "docs/ordering.md)",
                consumer.destination,
                consumer.message_selector,
            )
        return message

    def _finish_last(
        self,
        consumer: MessageConsumer,
        provider_consumer: ProviderConsumer | None = None,
        credit: int = 0,
        *,
        more: bool = False,
    ) -> None:
        """AUTO/DUPS_OK: the previous message of ``consumer`` is done (ORD-10).

        With ``provider_consumer`` the acknowledgement and the next credit go to the
        provider in one call (one broker round instead of two on the receive hot path).
        ``more``: the consumer has more messages buffered (see ``_acknowledge_one``).
        """
        held = consumer._last
        consumer._last = None
        done = [held] if held is not None and self._held.pop(held, False) is None else []
        if provider_consumer is None:
            if done:
                try:
                    self._acknowledge_one(done[0], more=more)
                except (KeyboardInterrupt, SystemExit):
                    self._unfinished_last(done[0])
                    raise
            return
        # The acknowledgement first, then the gate: as in _acknowledge, the group's next
        # message must not be processed while this one could still come back.
        try:
            self._provider.acknowledge_and_flow(
                [done[0].token] if done else [], provider_consumer, credit
            )
        except ConnectionFailedError:
            if done and not (self._gate is None and consumer._feed is None):
                self._gate_in_doubt(done)
            raise
        except (KeyboardInterrupt, SystemExit):
            if done:
                self._unfinished_last(done[0])
            raise
        if done and not (self._gate is None and consumer._feed is None):
            self._gate_finished(done)

    def _unfinished_last(self, held: _Held) -> None:
        """Ctrl-C (or a signal handler's SystemExit) stopped the provider as it
        acknowledged ``held``, the message an AUTO/DUPS_OK ``receive()`` returned last:
        the acknowledgement went or not, so the consumer holds the message as before and
        its next ``receive()`` (or close) finishes it again. Providers give a delivery
        whose acknowledgement such a call queued no second one (``ProviderSession.
        acknowledge``): RabbitMQ closes the connection on an ACK it has seen. Before,
        the message was no longer tracked: over STOMP the next ``receive()`` waited for
        good (that ACK opens the subscription's window), over AMQP 1.0 it came again
        unflagged. (Not once the provider took it: what follows, the client gate's
        count, must not run twice.)"""
        if not held.acked:
            self._held[held] = None
            held.consumer._last = held

    def _finish_last_and_take(self, consumer: MessageConsumer) -> Buffered | None:
        """receive() with nothing buffered or asked for, on a provider that takes directly
        (``ProviderConsumer.takes_directly``; no client gate, no feed): the previous
        message, if AUTO/DUPS_OK left one, is done, and the next comes back from the same
        call, or None."""
        held = consumer._last
        consumer._last = None
        done = held is not None and self._held.pop(held, False) is None
        return self._take_next(consumer, [held.token] if done else ())

    def _take_next(self, consumer: MessageConsumer, tokens: Sequence[Any]) -> Buffered | None:
        """Acknowledge ``tokens`` and take ``consumer``'s next message, or None."""
        taken = self._provider.acknowledge_and_take(tokens, consumer._provider)
        return None if taken is None else (taken[0], taken[1], 0.0)

    def _redeliver_last(self, consumer: MessageConsumer) -> None:
        """AUTO/DUPS_OK: the message ``consumer`` returned last is not finished but given
        again, ahead of the rest (JMS 2.0 receiveBody with a body of the wrong type);
        the redelivery policy applies as for a listener that raised (ORD-11)."""
        held = consumer._last
        consumer._last = None
        if held is not None and self._held.pop(held, False) is None:
            self._redeliver([held])

    def _run_listener(
        self,
        consumer: MessageConsumer,
        listener: MessageListener,
        message: Message,
        token: Any,
    ) -> None:
        """Dispatcher thread: run the listener, then finish by acknowledge mode (ORD-10)."""
        self._deliver(consumer, message, token)
        held = consumer._last
        consumer._last = None
        chain = self._connection._delivery_chain
        try:
            if chain is None:
                listener(message)
            else:
                chain(
                    DeliveryContext(
                        self._connection, self, consumer, consumer.destination, message, listener
                    )
                )
        except Exception as exc:
            count = message.get_object_property(DELIVERY_COUNT)
            attempt = f", delivery {count}" if isinstance(count, int) and count > 1 else ""
            error = ListenerError(
                f"message listener on {consumer.destination} raised "
                f"{type(exc).__name__}: {exc} (message {message.jms_message_id}{attempt})"
            )
            error.__cause__ = exc
            self._connection._report(error)
            if self._auto and held is not None and held in self._held:
                # JMS 2.0 8.7: a listener that throws in AUTO/DUPS_OK gets the message again.
                del self._held[held]
                self._redeliver([held])
            return
        if self._auto and held is not None and self._held.pop(held, False) is None:
            if self._gate is None and consumer._feed is None:
                if consumer._takes:  # the buffer is empty: finish and take in one call
                    if consumer._take_after(held.token):
                        return
                elif consumer._ask_for_more(  # the buffer is empty: both in one call
                    lambda ask: self._provider.acknowledge_and_flow(
                        [held.token], consumer._provider, ask
                    )
                ):
                    return
            self._acknowledge_one(held, more=bool(consumer._buffer))

    def _acknowledge_one(self, held: _Held, *, more: bool) -> None:
        """AUTO/DUPS_OK: one message finished. ``more``: its consumer has more buffered,
        so the provider may write the acknowledgement with the next ones
        (``acknowledge_soon``). Where a client gate keeps the message's group, the gate
        frees the group only once the acknowledgement is written (``written``): another
        session may then take the group's next message, and its acknowledgement must
        not reach the broker first.

        A listener container's feed may always hold them: its window leaves the broker
        room for a quarter of it held, and its sessions' acknowledgements share one
        connection, so they reach the broker in the order written. The feed hears that
        the message is finished at once (another session may take the group's next
        message meanwhile: its acknowledgement goes after this one), behind a client
        gate once it is written, as the gate does."""
        feed = held.consumer._feed
        if not more and feed is None:
            self._acknowledge([held])
        elif self._gate is None or GROUP_ID not in held.props:
            try:
                self._provider.acknowledge_soon([held.token])
                held.acked = True
            finally:
                if feed is not None:
                    feed.finished([held.token])
        else:
            self._provider.acknowledge_soon([held.token], lambda ok: self._gate_written(held, ok))
            held.acked = True

    def _gate_written(self, held: _Held, ok: bool) -> None:
        """A held acknowledgement of a gated group went (``ok``) or was lost with the
        connection: the gate frees the group, or keeps its place until the broker
        delivers the message again (as ``_acknowledge`` does)."""
        if ok:
            self._gate_finished([held])
        else:
            self._gate_in_doubt([held])

    def _acknowledge_from(self, message: Message) -> None:
        """``message.acknowledge()``: in CLIENT mode, everything this session consumed."""
        if self.acknowledge_mode != self.CLIENT_ACKNOWLEDGE:
            return
        self.acknowledge()

    def acknowledge(self) -> None:
        """Acknowledge every message this session has consumed (CLIENT_ACKNOWLEDGE)."""
        self._check_open()
        if self.transacted:
            raise TransactionInProgressError("acknowledge() in a transacted session: use commit()")
        with self._lock:
            held, self._held = list(self._held), {}
        for h in held:
            if h.consumer._last is h:
                h.consumer._last = None
        try:
            self._acknowledge(held)
        except (KeyboardInterrupt, SystemExit):
            self._hold_again([h for h in held if not h.acked])
            raise

    def _hold_again(self, held: list[_Held]) -> None:
        """Ctrl-C (or a signal handler's SystemExit) stopped an ``acknowledge()`` or
        ``commit()`` before the provider was done with ``held``: the session holds them
        again, ahead of any received since, so that the next call (or the close)
        finishes them; the provider carries on from where it was.
        Before, they were no longer tracked: the next call had nothing to do, and over
        AMQP 1.0 they came again unflagged. A provider gives none of them a second
        acknowledgement (``ProviderSession.acknowledge``; ``_unfinished_last``)."""
        with self._lock:
            self._held = {**dict.fromkeys(held), **self._held}

    def _acknowledge(self, held: list[_Held]) -> None:
        """Finish ``held`` at the broker, then at the client gate if there is one (ORD-10)."""
        if len(held) == 1:  # the AUTO_ACKNOWLEDGE receive loop: no comprehension, no call
            one = held[0]
            try:
                self._provider.acknowledge([one.token])
            except ConnectionFailedError:
                self._gate_in_doubt(held)
                raise
            one.acked = True
            if self._gate is not None or one.consumer._feed is not None:
                self._gate_finished(held)
        elif held:
            try:
                self._provider.acknowledge([h.token for h in held])
            except ConnectionFailedError:
                # Some came over a connection lost since (failover): the broker delivers
                # them again, maybe to another session, so the client gate keeps their
                # place until they come back, as for a commit in doubt.
                self._gate_in_doubt(held)
                raise
            for h in held:
                h.acked = True
            self._gate_finished(held)

    def _gate_in_doubt(self, held: list[_Held]) -> None:
        """``held`` were in a commit whose outcome is unknown: finished for their feeds,
        given back (a hole each, in order) at the client gate."""
        if self._gate is None:
            self._gate_finished(held)
            return
        self._feeds_finished(held)
        self._gate_returned([h.returned() for h in held], in_doubt=True)

    def _gate_finished(self, held: list[_Held]) -> None:
        """``held`` are finished: the client gate and a listener container's feed, where
        they came through one, hear that this session no longer holds them."""
        gate = self._gate
        if len(held) == 1:  # a listener's message: no tables to build
            one = held[0]
            feed = one.consumer._feed
            if feed is not None:
                feed.finished([one.token])
            if gate is not None and one.group is not None:
                gate.finish((one.consumer._gate_scope, one.group), self, 1)
            return
        self._feeds_finished(held)
        if gate is None:
            return
        counts: dict[GroupKey, int] = {}
        for h in held:
            if h.group is not None:
                key = (h.consumer._gate_scope, h.group)
                counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            gate.finish(key, self, count)

    @staticmethod
    def _feeds_finished(held: list[_Held]) -> None:
        feeds: dict[Feed, list[Any]] = {}
        for h in held:
            feed = h.consumer._feed
            if feed is not None:
                feeds.setdefault(feed, []).append(h.token)
        for feed, tokens in feeds.items():
            feed.finished(tokens)

    def _gate_returned(self, returned: list[Returned], *, in_doubt: bool = False) -> None:
        """Messages of this session went back to the broker, in this order: (scope, group,
        message id, JMSXGroupSeq) each. The client gate keeps their place in their groups."""
        gate = self._gate
        if gate is None:
            return
        lines: dict[GroupKey, list[tuple[str | None, int | None]]] = {}
        for scope, group, message_id, sequence in returned:
            if group is not None:
                lines.setdefault((scope, group), []).append((message_id, sequence))
        for key, line in lines.items():
            gate.give_back(
                key, self, [m for m, _s in line], [s for _m, s in line], in_doubt=in_doubt
            )

    def _release(self, held: list[_Held]) -> None:
        """Give delivered messages back to the broker (their consumer is gone); those that
        came through a feed go back to the feed, which hands them out again."""
        fed = [h for h in held if h.consumer._feed is not None]
        if fed:
            held = [h for h in held if h.consumer._feed is None]
            self._give_back_to_feeds(fed)
        if held:
            self._provider.release([h.token for h in held])
            self._gate_returned([h.returned() for h in held])

    def _give_back_to_feeds(self, held: list[_Held]) -> None:
        """Back to the front of their feeds, in order, as redelivered copies; then the
        client gate, if any, hears that this session no longer holds them (after the
        feed has them, so that nothing later of their groups can pass them)."""
        feeds: dict[Feed, list[tuple[Message, Any, bool]]] = {}
        for h in held:
            feed = h.consumer._feed
            assert feed is not None
            feeds.setdefault(feed, []).append((self._provider.redeliver(h.token), h.token, True))
        for feed, items in feeds.items():
            feed.give_back(items)
        gate = self._gate
        if gate is not None:
            counts: dict[GroupKey, int] = {}
            for h in held:
                if h.group is not None:
                    key = (h.consumer._gate_scope, h.group)
                    counts[key] = counts.get(key, 0) + 1
            for key, count in counts.items():
                gate.finish(key, self, count)

    def recover(self) -> None:
        """Stop, and deliver again every unacknowledged message, in order (ORD-11)."""
        self._check_open()
        if self.transacted:
            raise TransactionInProgressError("recover() in a transacted session: use rollback()")
        self._redeliver(self._take_all_held())

    def commit(self) -> None:
        """Commit: sends reach their destinations, received messages are done (ORD-8, ORD-10)."""
        self._check_open()
        if not self.transacted:
            raise TransactionInProgressError("commit() on a session that is not transacted")
        self._await_sends("commit()")
        held = self._take_all_held()
        try:
            try:  # (tokens by map: a comprehension is a call, where Ctrl-C can land)
                self._provider.commit(list(map(_TOKEN, held)))
            except (KeyboardInterrupt, SystemExit):
                self._hold_again(held)
                raise
            self._gate_finished(held)
        except TransactionRolledBackError:
            self._redeliver(held)
            raise
        except TransactionInDoubtError:
            # Not given again here: if the commit took effect they are done, and if not
            # the broker delivers them again, flagged redelivered (ORD-11), maybe to
            # another session. So the client gate keeps their place until they come back
            # (or its wait_for_return passes): a group's later messages must not be
            # processed before them (issue 18: RabbitMQ restarted under a transacted
            # consumer, its in-doubt message came again after the next 26 of its group).
            self._gate_in_doubt(held)
            raise
        except JMSException as exc:
            self._redeliver(held)
            raise TransactionRolledBackError(f"commit failed and was rolled back: {exc}") from exc

    def rollback(self) -> None:
        """Discard sends; deliver received messages again, in order (ORD-11)."""
        self._check_open()
        if not self.transacted:
            raise TransactionInProgressError("rollback() on a session that is not transacted")
        self._await_sends("rollback()")
        self._provider.rollback()
        self._redeliver(self._take_all_held())

    def _completions_for(self) -> Completions:
        """The session's asynchronous sends (JMS 2.0), made at the first one."""
        completions = self._completions
        if completions is None:
            with self._lock:
                if self._completions is None:
                    self._completions = Completions(
                        f"jmslike-completions-{self._id}", self._connection._placement
                    )
                completions = self._completions
        return completions

    def _await_sends(self, what: str) -> None:
        """Before a commit, rollback or close: every asynchronous send answered (JMS 2.0)."""
        completions = self._completions
        if completions is not None:
            completions.wait_idle(self._settings.request_timeout, what)

    def _take_all_held(self) -> list[_Held]:
        with self._lock:
            held, self._held = list(self._held), {}
        for h in held:
            if h.consumer._last is h:
                h.consumer._last = None
        return held

    def _redeliver(self, held: list[_Held]) -> None:
        """Local redelivery with the factory's policy (ORD-11, ORD-12, ORD-13).

        Messages past the redelivery limit go to the dead-letter queue; the others go back
        to the front of their consumer's buffer, in order, due after the redelivery delay.
        The broker still counts them as held by this session, so their groups wait.
        """
        settings = self._settings
        per_consumer: dict[MessageConsumer, list[Buffered]] = {}
        orphans: list[_Held] = []
        expired: list[_Held] = []
        now_ms = time.time() * 1000
        for h in held:
            count = h.count
            if h.expiration and h.expiration <= now_ms:
                expired.append(h)  # expired while held: finished, never again (ORD-13)
                continue
            if 0 <= settings.max_redeliveries < count:
                reason = (
                    f"delivered {count} times; redelivery limit "
                    f"max_redeliveries={settings.max_redeliveries} reached"
                )
                self._provider.dead_letter(h.token, reason)
                self._gate_finished([h])
                self._dead_lettered(h.consumer, h.message, reason)
                continue
            if h.consumer._closed:
                orphans.append(h)
                continue
            fresh = self._provider.redeliver(h.token)
            delay = min(
                settings.redelivery_delay * settings.redelivery_backoff ** max(count - 1, 0),
                settings.max_redelivery_delay,
            )
            not_before = time.monotonic() + delay if delay > 0 else 0.0
            per_consumer.setdefault(h.consumer, []).append((fresh, h.token, not_before))
        self._acknowledge(expired)
        self._release(orphans)
        for consumer, items in per_consumer.items():
            consumer._requeue_front(items)

    # --------------------------------------------------------------- dispatch
    def _ensure_dispatcher(self) -> SessionDispatcher:
        with self._lock:
            if self._dispatcher is None:
                self._dispatcher = SessionDispatcher(
                    f"jmslike-session-{self._id}", self._connection._placement
                )
            return self._dispatcher

    def _wake(self, consumer: MessageConsumer) -> None:
        dispatcher = self._dispatcher
        if dispatcher is not None:
            dispatcher.wake(consumer)

    def _on_start(self) -> None:
        for consumer in list(self._consumers):
            if consumer._listener is not None:
                self._wake(consumer)
                consumer._pump()
            else:
                consumer._wake_waiters()

    def _run_on_dispatcher(self, fn: Callable[[], None]) -> None:
        self._ensure_dispatcher().call(fn)

    # ------------------------------------------------------------------ close
    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("session is closed")
        self._connection._check_open()

    def _close_consumer(self, consumer: MessageConsumer, *, finish_last: bool = True) -> None:
        """Close one consumer; its unacknowledged messages go back in order (ORD-10).

        ``finish_last=False``: an AUTO/DUPS_OK consumer's last received message goes back
        too instead of being finished, for a message the application never got (the
        asyncio API's receive that was cancelled as the message arrived)."""
        consumer._closing = True  # before its held messages are gathered, see below
        dispatcher = self._dispatcher
        if dispatcher is not None and not dispatcher.in_dispatcher():
            consumer._listener = None
            dispatcher.wait_idle()
        with self._lock:
            if consumer in self._consumers:
                self._consumers.remove(consumer)
            mine = [h for h in self._held if h.consumer is consumer]
            if self._auto and finish_last:
                finished = mine
                mine = []
            else:
                finished = []
            if not self.transacted:
                for h in mine:
                    del self._held[h]
            for h in finished:
                del self._held[h]
        consumer._last = None
        self._acknowledge(finished)
        consumer._shutdown([] if self.transacted else mine)

    def _unreturned(self, consumer: MessageConsumer, taken: Buffered) -> None:
        """Ctrl-C (KeyboardInterrupt) or ``sys.exit`` from a signal handler came between
        taking ``taken`` from the buffer and returning it: the application never had it,
        so it goes back to the front of the buffer, not held. Otherwise an AUTO/DUPS_OK
        close would acknowledge a message nobody saw, and a program that goes on after
        the interrupt (a notebook, a REPL) would get the next message in its place."""
        message = taken[0]
        last = consumer._last
        if last is not None and last.message is message:
            consumer._last = None
        with self._lock:
            for held in [h for h in self._held if h.message is message]:
                del self._held[held]
        consumer._buffer.appendleft(taken)

    def _handed_out_while_closing(
        self, consumer: MessageConsumer, message: Message
    ) -> Message | None:
        """A receive() on ``consumer`` handed ``message`` out while another thread closed
        the consumer. If the close saw it, the receive returns it where the close
        finished it (AUTO/DUPS_OK) or left it to the transaction, and None where the
        close gave it back (CLIENT_ACKNOWLEDGE). If the close did not see it, nobody
        would ever finish it or give it back, and its group would stay held for good: it
        goes back to the broker now, and the receive returns None, as a receive that a
        close cuts short does in JMS."""
        if self.transacted:
            return message
        with self._lock:
            held = next(
                (h for h in self._held if h.consumer is consumer and h.message is message), None
            )
            if held is None:
                return message if self._auto else None
            del self._held[held]
        if consumer._last is held:
            consumer._last = None
        self._release([held])
        return None

    def close(self) -> None:
        """Close the session: consumers give back what they held; a transaction rolls back."""
        if self._closed:
            return
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher.in_dispatcher():
            raise IllegalStateError("a session cannot be closed from its own message listener")
        self._await_sends("close()")
        if self._completions is not None:
            self._completions.close()
        if dispatcher is not None:
            for consumer in list(self._consumers):
                consumer._listener = None
            dispatcher.wait_idle()
        if self.transacted:
            try:
                self._provider.rollback()
            except ConnectionFailedError as exc:
                # The connection is gone, and with it the broker's transaction (a broker
                # discards what a lost connection never committed): closing still works.
                log.info("closing %r: its transaction ended with the connection: %s", self, exc)
        for consumer in list(self._consumers):
            # (A transacted session's held messages are still its own here: a consumer
            # that sees them in the transaction waits for the release below to give
            # them back, seen and counted, instead of dropping them unseen.)
            self._close_consumer(consumer)
        orphans = self._take_all_held() if self.transacted else []
        self._release(orphans)
        for producer in list(self._producers):
            producer._closed = True
            producer._binding = None
        self._closed = True
        self._provider.close()
        if dispatcher is not None:
            dispatcher.stop(5.0)
        self._connection._forget_session(self)

    def run_in_dispatcher(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on this session's dispatcher thread (after queued listener calls)."""
        self._check_open()
        self._run_on_dispatcher(fn)


def deliver_released(item: tuple[MessageConsumer, Message, Any]) -> None:
    """The client gate let a parked delivery through: into its consumer's buffer."""
    consumer, message, token = item
    consumer._accept(message, token)
