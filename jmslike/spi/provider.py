"""The provider boundary: what a broker binding implements, and what it declares.

A provider turns the JMS calls of the API layer into its protocol and pushes incoming
messages back up. The API layer owns everything users see (sessions' acknowledgement
bookkeeping, local redelivery for recover/rollback, the redelivery policy, listeners and
their threads, the ordering engine); a provider only moves messages and acknowledgements.
That split is what lets one ordering engine serve every broker.

Resource and thread contract, per class:

* ``ProviderConnection``: one per API connection. Its I/O (sockets, a reactor thread)
  belongs to it. It may call the exception callback from any thread.
* ``ProviderSession``: called by one thread at a time (a JMS session is single-threaded:
  the application's thread, or the session's dispatcher thread while listeners run),
  never with an API-level lock held.
* ``ProviderConsumer``: pushes deliveries through its ``sink`` from any thread (an I/O
  thread, or, for the embedded broker, whichever thread changed the broker's state). The
  sink only appends to a buffer; it never runs user code and never calls back down. The
  provider must call the sink of one consumer in delivery order, never concurrently.

Tokens are opaque to the API layer: whatever the provider needs to acknowledge, release
or dead-letter one delivery (a broker entry, an ack id, a Proton delivery).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from jmslike.config import FactorySettings, ParsedURL
from jmslike.destination import Destination, TemporaryQueue, TemporaryTopic
from jmslike.errors import ConnectionFailedError, IllegalStateError, JMSException
from jmslike.message import Message

__all__ = [
    "AT_ONCE",
    "Capabilities",
    "ConsumerSpec",
    "DeliverySink",
    "ExceptionCallback",
    "OrderingMode",
    "Provider",
    "ProviderConnection",
    "ProviderConsumer",
    "ProviderSession",
    "SendDone",
]

DeliverySink = Callable[[Message, Any], None]
"""``sink(message, token)``: one delivery, pushed up by the provider."""

ExceptionCallback = Callable[[JMSException], None]

SendDone = Callable[[BaseException | None], None]
"""``done(error)``: an asynchronous send's outcome, None when the broker has the message
(``ProviderSession.send_async``)."""


AT_ONCE: ContextVar[bool] = ContextVar("jmslike_at_once", default=False)
"""True while the asyncio API makes, on the event loop, a send that
``ProviderSession.sends_at_once`` allowed. A provider whose ordinary send may still wait
(a socket write) reads it to queue that send for a thread of its own instead (the STOMP
provider); one whose sends never wait ignores it."""


class OrderingMode:
    """How a connection keeps ORD-9..14 (ORD-16); told by ``connection.capabilities``."""

    BROKER = "broker"
    """The broker keeps groups (pins them to a session or consumer)."""
    CLIENT_GATE = "client-gate"
    """The broker ignores groups; jmslike gates delivery per group within the process."""
    PARTITIONED = "partitioned"
    """Groups are routed to single-active-consumer partitions across processes. Kept for
    the name: partitioning is declared per queue, so no connection reports it; see
    ``Capabilities.groups_across_processes``."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a broker does natively; the API layer asks this, never a broker's name.

    Today the API layer acts on ``ordering_mode`` (the client gate, ORD-16), on
    ``delivery_delay`` (a delayed send to a broker without it raises IllegalStateError
    naming the capability) and on ``exclusive_consumers`` (likewise for a strictly
    ordered consumer, ORD-18); the rest describe the broker for tests (which skip by
    capability name) and for providers, which fill gaps in themselves (a provider may
    count deliveries or evaluate selectors on the client and then declare them True).

    Every capability defaults to "not there" (False, the client gate, process scope): a
    provider names each one it has, so one it forgets fails closed (a clear refusal or
    the client gate) instead of promising what the broker does not do.
    """

    provider: str
    broker: str = "unknown"
    broker_version: str = ""
    ordering_mode: str = OrderingMode.CLIENT_GATE
    native_groups: bool = False
    group_scope: str = "none"
    """Who a broker-kept group is pinned to: "session" (embedded), "consumer" (Artemis,
    ActiveMQ), or "none" where the broker ignores groups and the holding session need
    not be the one that gets the group's next message (it waits at another consumer)."""
    selectors: bool = False
    transactions: bool = False
    delivery_delay: bool = False
    priority: bool = False
    time_to_live: bool = False
    durable_subscriptions: bool = False
    shared_subscriptions: bool = False
    temporary_destinations: bool = False
    no_local: bool = False
    """A topic consumer made with ``no_local=True`` gets no message of its own
    connection. Where False, such a consumer is refused with IllegalStateError (RabbitMQ
    over STOMP ignored the header and delivered them all the same)."""
    browsers: bool = False
    exclusive_consumers: bool = False
    """The provider keeps strictly ordered destinations (ORD-18): ``create_consumer``
    takes ``exclusive`` and ``standby``. Where False, a strictly ordered consumer is
    refused with IllegalStateError."""
    exclusive_scope: str = "process"
    """Where ``exclusive_consumers`` holds: "broker" (the broker itself keeps one
    consumer active, whatever process it is in: exclusive consumers, exclusive queues,
    single-active-consumer queues) or "process" (jmslike keeps it within this process
    only). Partitioned queues need "broker"; ``extra["exclusive_hint"]`` may say what
    setting would give it."""
    delivery_count: bool = False
    """The broker counts deliveries (else jmslike counts them on the client)."""
    dead_letter_queue: bool = False
    persistent: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def groups_across_processes(self) -> str:
        """How ordering groups hold when consumers of one queue run in several processes
        (ORD-16): "broker" (the broker pins groups), "partitions" (it does not, but holds
        each partition of a partitioned queue to one consumer: declare the queue
        partitioned), or "none" (groups hold within one process only)."""
        if self.ordering_mode == OrderingMode.BROKER:
            return "broker"
        if self.exclusive_consumers and self.exclusive_scope == "broker":
            return "partitions"
        return "none"

    def as_dict(self) -> dict[str, Any]:
        """All capabilities as a plain dict, for ``jmslike providers`` and logs."""
        names = [f for f in self.__dataclass_fields__ if f != "extra"]
        out = {name: getattr(self, name) for name in names}
        out["groups_across_processes"] = self.groups_across_processes
        out["extra"] = dict(self.extra)
        return out


class ProviderConsumer(abc.ABC):
    """One subscription on the broker, pushing deliveries to the API consumer's sink."""

    revoke: Callable[[Callable[[Any], bool]], list[Any]] | None = None
    """Set by the API layer once the consumer exists: ``revoke(stale)`` drops the buffered
    deliveries whose token ``stale`` picks and returns their tokens. For a provider that
    lost deliveries it had pushed (a reconnect: the broker hands them out again), so that
    the application never gets the old copies ahead of the redelivered ones (ORD-11)."""

    exclusive: bool = False
    """True when the broker holds this consumer to a strictly ordered destination
    (ORD-18): because it was asked to (``exclusive=True``) or because the destination was
    declared so before. The API layer then keeps the consumer's prefetch at 1, and a
    listener container at concurrency 1. Providers that know nothing of ORD-18 inherit
    False."""

    adaptive_credit: bool = False
    """True when ``flow(n)`` brings at most ``n`` deliveries and ``flow(0)`` reliably takes
    back what was not used. Only then does the API layer let a consumer ask
    for more than ``prefetch`` at once (``max_prefetch``): a larger request it could not
    take back would leave an idle consumer sitting on the next groups' messages (ORD-9).
    Providers that cannot (a STOMP window fixed at SUBSCRIBE, a broker that refuses a
    drain) inherit False."""

    fixed_window: bool = False
    """True when the consumer's window is fixed by its first ``flow(n)`` (STOMP's
    SUBSCRIBE) and freed by acknowledgements: a later ``flow(n)`` sends the broker
    nothing, so there is no answer to wait for. ``receive_no_wait()`` then waits for the
    broker only after the first request and after an acknowledgement, not on each call
    on an empty queue. Providers whose ``flow`` asks the broker inherit False."""

    takes_directly: bool = False
    """True when :meth:`ProviderSession.acknowledge_and_take` can hand this consumer its
    next message in the call (a broker in this process). A ``receive()`` loop with nothing
    buffered then takes each message that way instead of granting credit and waiting for
    the push: nothing waits in its buffer (ORD-9 at no cost), and a message costs one
    call where it cost a grant, a push and a hand-over. Providers that push inherit
    False."""

    @abc.abstractmethod
    def flow(self, credit: int) -> None:
        """Allow up to ``credit`` more deliveries beyond those already pushed.

        ``flow(0)`` withdraws what was granted and not yet used, so that a consumer that
        stopped asking never sits on a group's message another session could take (ORD-9).
        Deliveries may be pushed synchronously from inside this call.
        """

    @abc.abstractmethod
    def close(self, delivered: Sequence[Any], undelivered: Sequence[Any]) -> None:
        """Detach. ``delivered`` tokens went to the application unacknowledged and come
        back marked redelivered; ``undelivered`` ones were only buffered and come back as
        they were. Both go back in order, ahead of later messages of their groups (ORD-10).
        """


@dataclass(frozen=True)
class ConsumerSpec:
    """Everything a consumer asks of the broker, as one value.

    One object rather than a keyword per JMS feature, so that a feature added later (a
    new option here) does not change every provider's method signature: a provider that
    predates it sees a default it already handles. Built by the API layer after the input
    has been checked (selector parsed, names valid).
    """

    destination: Destination
    selector: str | None = None
    """A JMS message selector, already parsed once by the API layer (so valid)."""
    no_local: bool = False
    """Topics: skip messages this connection published."""
    subscription: str | None = None
    """The subscription name of a durable or shared topic subscription."""
    durable: bool = False
    shared: bool = False
    exclusive: bool = False
    """ORD-18: declare the destination strictly ordered (one active consumer)."""
    standby: bool = False
    """ORD-18: wait, attached, until the active consumer detaches."""
    window: int | None = None
    """A hint: how many messages the broker may push ahead of ``flow`` grants (a listener
    container's shared feed asks for one sized to its sessions). Providers may ignore it."""

    @property
    def named(self) -> bool:
        """A durable or shared subscription: kept under ``subscription``, not per consumer."""
        return self.durable or self.shared


class ProviderSession(abc.ABC):
    """A protocol session: sends, acknowledgements and transactions."""

    @abc.abstractmethod
    def send(self, destination: Destination, message: Message) -> None:
        """Send a message whose headers and group stamp the API layer has already set.

        In a transacted session the message reaches the destination at ``commit``
        (ORD-8). A persistent send returns only once the broker has it; a provider may
        pipeline non-persistent sends.
        """

    def sends_at_once(self, destination: Destination, delivery_mode: int) -> bool:
        """True when :meth:`send` to ``destination`` of a message with ``delivery_mode``
        (that of the send, not yet on the message) returns without waiting for anything:
        no broker round trip, no disk, no flow control, no reconnect. The asyncio API
        then makes such a send on the event loop instead of handing it to the session's
        thread and back (``jmslike.aio``). False unless the provider is sure: a broker
        in this process can be, and so can a provider that only queues the message for a
        thread of its own (the AMQP provider, for a non-persistent send on a link that
        has credit; the STOMP provider, which queues such a send, made under
        :data:`AT_ONCE`, for its connection's writer thread). Called on the event loop's
        thread while nothing runs on the session's own."""
        return False

    def wake_when_at_once(
        self, destination: Destination, delivery_mode: int, wake: Callable[[], None]
    ) -> bool:
        """:meth:`sends_at_once` says no only because earlier sends made at once still wait
        to be written (the provider holds a producer faster than the broker to the
        broker's pace): arrange for ``wake()``, called once from any thread, when fewer
        wait, and return True. Otherwise False, and the send goes to the session's
        thread, as it does when ``wake`` does not come within a short while (a
        connection lost meanwhile). Default: False."""
        return False

    def send_async(
        self,
        destination: Destination,
        message: Message,
        done: SendDone,
    ) -> None:
        """Send as :meth:`send`, but a provider may return before the broker answered and
        call ``done`` later, from any thread, with None (the broker has it) or the error
        (JMS 2.0 asynchronous send). Called for persistent sends outside a transaction
        only (the others have nothing to wait for). Raise what can be known before the
        message is written, and then never call ``done``. Sends of one session must still
        reach the broker in the order of the calls (ORD-1). Default: ``send``, then
        ``done(None)``."""
        self.send(destination, message)
        done(None)

    @abc.abstractmethod
    def create_consumer(self, spec: ConsumerSpec, sink: DeliverySink) -> ProviderConsumer:
        """Subscribe as ``spec`` says; deliveries go to ``sink`` once credit is granted
        with ``flow``.

        Check everything in ``spec`` the provider cannot honour first and raise
        IllegalStateError naming the capability, before anything reaches the broker.
        ``spec.exclusive`` and ``spec.standby`` serve strictly ordered destinations
        (ORD-18); the API layer sets them only where ``Capabilities.exclusive_consumers``
        is True:

        * ``exclusive`` declares the queue, or for a topic the subscription, strictly
          ordered, and the declaration sticks: from then on at most one consumer is active
          there at a time. If one already is, raise IllegalStateError naming the
          destination, before changing anything.
        * ``standby``: where the destination is strictly ordered (declared now or before)
          and a consumer is active, attach anyway but deliver nothing until the active one
          detaches; standbys take over in the order they attached, starting with what the
          active one left unfinished, in order (as in ORD-15). On a destination that is
          not strictly ordered, raise IllegalStateError.

        Set ``exclusive`` on the returned consumer when the destination turned out to be
        strictly ordered.
        """

    @abc.abstractmethod
    def acknowledge(self, tokens: Sequence[Any]) -> None:
        """The application finished these deliveries: remove them from the broker.

        A call stopped by KeyboardInterrupt (Ctrl-C in a ``receive()`` loop) or by a
        signal handler's SystemExit may have acknowledged a token or not; the API layer
        then acknowledges it again with the next ``receive()`` (this method,
        :meth:`acknowledge_soon` or :meth:`acknowledge_and_flow`). A token whose
        acknowledgement is already on its way must get no second one (RabbitMQ closes
        the connection on an ACK it has seen, Classic and Artemis answer with an
        error): mark it where the acknowledgement is queued, or make settling twice a
        no-op, as the STOMP and AMQP 1.0 providers do."""

    def acknowledge_soon(
        self, tokens: Sequence[Any], written: Callable[[bool], None] | None = None
    ) -> None:
        """As :meth:`acknowledge`, for an AUTO/DUPS_OK consumer (a ``receive()`` loop or a
        listener) whose buffer holds more messages: the provider may hold the
        acknowledgement back a moment and write it with the next ones (a write per
        message is a large part of a receive's cost). It must still reach the broker
        within milliseconds, and before any later frame of the same connection.

        ``written``, if given, is called once the acknowledgement has gone to the broker
        (True) or was lost with the connection (False), on a thread that holds none of
        jmslike's locks: the client gate frees a group only then, so another session's
        acknowledgement of the group's next message cannot overtake it (ORD-9, ORD-16).
        Default: at once, and ``written`` right after."""
        try:
            self.acknowledge(tokens)
        except ConnectionFailedError:
            if written is not None:
                written(False)
            raise
        if written is not None:
            written(True)

    def acknowledge_and_flow(
        self, tokens: Sequence[Any], consumer: ProviderConsumer, credit: int
    ) -> None:
        """Acknowledge ``tokens``, then grant ``consumer`` credit; providers may do both in
        one round trip (the AUTO_ACKNOWLEDGE receive loop calls this for every message)."""
        if tokens:
            self.acknowledge(tokens)
        consumer.flow(credit)

    def acknowledge_and_take(
        self, tokens: Sequence[Any], consumer: ProviderConsumer
    ) -> tuple[Message, Any] | None:
        """Acknowledge ``tokens``, then return ``consumer``'s next delivery (the message and
        its token) if it may have one now, else None; never waits, grants no credit.
        Called only for a consumer whose ``takes_directly`` is True, with no credit
        outstanding and nothing buffered. Default: acknowledge and return None (the API
        layer then grants credit as usual)."""
        if tokens:
            self.acknowledge(tokens)
        return None

    @abc.abstractmethod
    def redeliver(self, token: Any) -> Message:
        """A fresh copy of a held message for local redelivery (recover/rollback, ORD-11):
        ``jms_redelivered`` set and the delivery count raised. The broker keeps the
        message as delivered to this session, so its group stays held here."""

    @abc.abstractmethod
    def release(self, tokens: Sequence[Any]) -> None:
        """Give delivered messages back to the broker, marked redelivered, in order, ahead
        of later messages of their groups (used when their consumer is already closed)."""

    def return_unseen(self, tokens: Sequence[Any]) -> None:
        """Give back, in order, deliveries that reached a consumer after it closed and
        were never handed to the application: like ``undelivered`` in a consumer's
        ``close``, they do not count as delivered (ORD-11), so their next delivery keeps
        its number. Default: ``release`` (counted), for providers written before it."""
        self.release(tokens)

    @abc.abstractmethod
    def dead_letter(self, token: Any, reason: str) -> None:
        """Move a delivery to the dead-letter queue with ``reason`` (ORD-13)."""

    @abc.abstractmethod
    def commit(self, tokens: Sequence[Any]) -> None:
        """Commit the transaction: its sends reach their destinations and ``tokens`` are
        acknowledged, all at once. Raise TransactionRolledBackError if that failed.

        A call stopped by KeyboardInterrupt (Ctrl-C) or a signal handler's SystemExit is
        followed by another with the same tokens (and any received since), which must
        carry the first on, not start over: a COMMIT or discharge already sent is waited
        for, never sent twice (brokers refuse the second), and a send neither dropped
        nor made twice. Until then ``rollback`` may refuse with IllegalStateError."""

    @abc.abstractmethod
    def rollback(self) -> None:
        """Discard the transaction's sends (received messages are replayed by the API)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the session's resources; consumers were closed before this."""

    def browse(self, destination: Destination, selector: str | None) -> Sequence[Message]:
        """Messages waiting on a queue, in the order they will be delivered (ORD-20)."""
        raise JMSException(f"{type(self).__name__} cannot browse {destination}")

    def unsubscribe(self, name: str) -> None:
        """Delete a durable subscription of this connection's client id."""
        raise JMSException(f"{type(self).__name__} cannot unsubscribe {name!r}")


class ProviderConnection(abc.ABC):
    """A connection to one broker."""

    capabilities: Capabilities

    @abc.abstractmethod
    def create_session(self, transacted: bool, acknowledge_mode: int) -> ProviderSession:
        """Open a session; ``acknowledge_mode`` is one of the Session constants."""

    @abc.abstractmethod
    def set_client_id(self, client_id: str) -> None:
        """Claim a client id (before any session exists); InvalidClientIDError if taken."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close sessions' leftovers and the transport; temporary destinations vanish."""

    def start(self) -> None:  # noqa: B027 - optional hook
        """Delivery is starting (the API layer also gates delivery itself)."""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Delivery is pausing."""

    def queue_depths(self, prefix: str) -> dict[str, int] | None:
        """Messages on each queue whose name starts with ``prefix`` (waiting or
        unacknowledged), where the broker can be asked; None where it cannot. Used to
        find partitions left behind by a smaller partition count."""
        return None

    def declare_queue(self, queue: Destination) -> str | None:
        """Make ``queue`` exist at the broker now, durable, as its first use would
        (``Connection.declare_queue``, ``jmslike declare``: a deploy step, since a broker
        may lose a queue it made moments before a crash). Returns how, in a few words, or
        None where nothing is done because the broker makes the queue at its first use
        and keeps it (the default). A queue that exists already is left as it is."""
        return None

    def create_temporary_queue(self) -> TemporaryQueue:
        raise IllegalStateError(f"{type(self).__name__} has no temporary queues")

    def create_temporary_topic(self) -> TemporaryTopic:
        raise IllegalStateError(f"{type(self).__name__} has no temporary topics")

    def delete_temporary(self, destination: Destination) -> None:
        raise IllegalStateError(f"{type(self).__name__} has no temporary destinations")


class Provider(abc.ABC):
    """A broker binding, registered for one or more URL schemes."""

    name: str = "provider"
    schemes: tuple[str, ...] = ()
    setting_names: frozenset[str] = frozenset()
    """Provider-specific URL query / factory keys it accepts (kept in settings.extra)."""

    def check_url(self, url: ParsedURL) -> None:  # noqa: B027 - optional hook
        """Refuse a URL this provider cannot serve, when the factory is created (so the
        error comes before anything is sent). The default accepts any."""

    def check_settings(self, settings: FactorySettings) -> None:  # noqa: B027 - optional hook
        """Refuse provider-specific settings (``settings.extra``) when the factory is
        created. The default accepts any."""

    @abc.abstractmethod
    def connect(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> ProviderConnection:
        """Open a connection; raise ConnectionFailedError or JMSSecurityError on failure."""
