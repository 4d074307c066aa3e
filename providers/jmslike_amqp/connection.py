"""A JMS connection over AMQP 1.0: the broker it found, and what it can do.

The broker is told by the product in its open frame; what it lacks is in
``Capabilities`` (docs/providers.md has the matrix), and the node addresses are its own
(RabbitMQ's ``/queue/x``, Classic's announced prefixes, Artemis' plain names). Temporary
destinations are dynamic nodes, kept alive by a sender link each. The connection
remembers recent acknowledgements (``RECENT_ACKS``), which AMQP never confirms, so that
a message whose acknowledgement went with a lost connection comes again flagged; under
a reconnect policy it tells its sessions and consumers when it is lost and back.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from proton.reactor import LinkOption

from jmslike.config import FactorySettings, ParsedURL
from jmslike.destination import Destination, TemporaryQueue, TemporaryTopic
from jmslike.errors import (
    ConfigurationError,
    IllegalStateError,
    InvalidDestinationError,
    JMSException,
)
from jmslike.placement import placement_of
from jmslike.selector import ARTEMIS_AMQP_FILTER, JMS_SYNTAX, render_selector
from jmslike.spi.clientids import CLIENT_IDS
from jmslike.spi.counts import counts_for
from jmslike.spi.exclusive import exclusive_queues_for, exclusivity_for
from jmslike.spi.names import refuse_artemis_parameters
from jmslike.spi.nolocal import PublishedIds
from jmslike.spi.provider import (
    Capabilities,
    ExceptionCallback,
    OrderingMode,
    ProviderConnection,
    ProviderSession,
)
from jmslike.spi.rabbit_subscriptions import RabbitSubscriptions
from jmslike.spi.reconnect import reconnect_policy
from jmslike.spi.strict import registry_for
from jmslike.spi.temporary import TEMPORARY_TOPIC_PREFIX, DeletedTemporaries, delete_made_up
from jmslike.spi.tls import tls_options
from jmslike_amqp.codec import PRIORITY_PROPERTY, REPLY_TO_TYPE, SEQ_PROPERTY, destination_for
from jmslike_amqp.credit import Ring
from jmslike_amqp.driver import is_classic
from jmslike_amqp.durability import DECLARED, EXISTING, QueueDeclarations
from jmslike_amqp.links import Capability, DurableNode, LinkHandle
from jmslike_amqp.session import AmqpSession
from jmslike_amqp.subscriptions import SubscriptionNames, TemporaryTarget
from jmslike_amqp.transport import AmqpTransport

if TYPE_CHECKING:
    from jmslike_amqp.consumer import AmqpConsumer
    from jmslike_amqp.received import Incoming

__all__ = ["IDLE_TIMEOUT_MS", "RECENT_ACKS", "AmqpConnection", "idle_timeout_of"]

log = logging.getLogger("jmslike.amqp")

_DELETED_TEMPORARY = DeletedTemporaries()
"""Temporary destinations whose connection (in this process) closed or deleted them."""


CLASSIC_AMQP_SELECTORS = replace(JMS_SYNTAX, ascii_names=True)
"""ActiveMQ Classic reads JMS's names, of ASCII only (``SelectorDialect.ascii_names``)."""


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
        placement = placement_of(settings.thread_cpus)
        self._acked: deque[tuple[float, str]] = deque(maxlen=RECENT_ACKS)
        """(when, key) of recent acknowledgements, which AMQP never confirms: one still
        on its way when the connection is lost did not count, and that message comes
        again, to this connection once it reconnects (``_interrupted``) or to the
        application's next one (``_transport_lost``)."""
        self._ack_window = max(idle_timeout_of(settings), settings.request_timeout) + 1.0
        self.sessions: weakref.WeakSet[AmqpSession] = weakref.WeakSet()
        self.consumers: weakref.WeakSet[AmqpConsumer] = weakref.WeakSet()

        def connect(container_id: str | None, *, probe: bool = False) -> AmqpTransport:
            """A connection to the broker; a ``probe`` one is never made again and
            its loss is nobody's concern (jmslike_amqp.durability)."""
            cell: list[AmqpTransport] = []
            transport = AmqpTransport(
                first.host,
                first.port or 5672,
                user,
                password,
                timeout=settings.request_timeout,
                on_lost=(lambda _: None) if probe else lambda e: self._transport_lost(cell[0], e),
                ssl=first.scheme == "amqps",
                ssl_ca_file=tls.ca_file,
                ssl_verify_host=tls.verify_host,
                container_id=container_id,
                virtual_host=f"vhost:{vhost}" if vhost else None,
                idle_timeout=idle_timeout_of(settings),
                members=[(m.host, m.port or 5672) for m in members],
                reconnect=None if probe else reconnect,
                placement=placement,
                on_interrupted=None if probe else lambda: self._interrupted(cell[0]),
                on_restored=None if probe else lambda: self._restored(cell[0]),
            )
            cell.append(transport)
            return transport

        self._connect = connect
        self.transport = connect(None)
        self._extra_transports: set[AmqpTransport] = set()
        self._closed = False
        """Closed by the application: a consumer's connection of its own opened from now
        on (a partition attached by the coordinator's thread meanwhile) is closed again."""
        self._closing_transports: weakref.WeakSet[AmqpTransport] = weakref.WeakSet()
        """Consumers' own connections being closed: their loss is no news."""
        properties = self.transport.remote_properties()
        product = str((properties or {}).get("product", "")) if properties else ""
        lowered = product.lower()
        self.rabbitmq = "rabbitmq" in lowered
        self.classic = is_classic(product)
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
            (DECLARED, "/topic/")
            if self.rabbitmq
            else (
                str((properties or {}).get("queue-prefix") or ""),
                str((properties or {}).get("topic-prefix") or ""),
            )
        )
        self._declarations = QueueDeclarations(
            lambda: connect(None, probe=True), f"{self.transport.address}/{vhost}"
        )
        """RabbitMQ: which queues jmslike declares durable, which it uses as they are."""
        self.exclusivity = exclusivity_for(
            self.broker,
            first.host,
            settings,
            user,
            password,
            vhost or "/",
            port=None if len(members) > 1 else first.port or 5672,
        )
        self.exclusive_queues = exclusive_queues_for(self.transport.address)
        self.rabbit_subscriptions = RabbitSubscriptions(self.exclusivity)
        self.published = PublishedIds()
        """Its topic messages' ids, for its no-local consumers (jmslike.spi.nolocal)."""
        """RabbitMQ: durable and shared subscriptions, queues jmslike declares (its
        plugin keeps none: jmslike.spi.rabbit_subscriptions)."""
        native = not self.rabbitmq
        self.head_blocking = self.broker == "artemis"
        """The broker stops a queue's dispatch at a message whose group is pinned to a
        consumer without credit (credit.py); Classic skips such a message, RabbitMQ
        keeps no groups."""
        self.rings: weakref.WeakValueDictionary[str, Ring] = weakref.WeakValueDictionary()
        """Receivers competing for one node on this connection (credit.py), by node; a
        node's entry goes with its last receiver."""
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
            # refuses dynamic nodes ("amqp:not-implemented: Dynamic targets not
            # supported"): there a subscription is a queue jmslike declares through the
            # management API (jmslike.spi.rabbit_subscriptions).
            durable_subscriptions=True,
            # Classic 5.x has no JMS 2.0 shared subscriptions, over any protocol.
            shared_subscriptions=not self.classic,
            # RabbitMQ has no dynamic nodes: its temporary queues are queues jmslike
            # declares and deletes, its temporary topics topics of made-up names
            # (_create_rabbitmq_temporary).
            temporary_destinations=native or self.rabbitmq,
            browsers=native,
            # Kept by jmslike on every broker (jmslike.spi.nolocal).
            no_local=True,
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
                # The client gate serves every connection of the process to the broker,
                # each its own socket: arrival order is not the broker's order (issue
                # 18: after a kill -9, g:76 was read on one connection before g:75 on
                # another, and both were processed at once).
                "gate_by_sequence": not native,
            },
        )
        self._lock = threading.Lock()
        self.subscriptions = SubscriptionNames()
        self.counts = counts_for(self.transport.address)
        """jmslike's delivery counts for this broker (see ``count_delivery``)."""
        self.strict = registry_for(self.transport.address)
        self._temporary: dict[str, LinkHandle | None] = {}
        """Temporary destinations made here: name -> the dynamic sender link that keeps
        it alive (Artemis deletes it when the link or the connection closes), or None: a
        queue jmslike declared and deletes itself (RabbitMQ, ``_create_temporary``)."""

    def _interrupted(self, transport: AmqpTransport) -> None:
        """``transport`` lost its connection and makes it again (its thread). Messages
        acknowledged lately may not have been acknowledged at the broker: counted as
        delivered once more, so that if one comes again it comes flagged redelivered
        (Artemis sends a delivery count of 0 then)."""
        self._count_unconfirmed_acks()
        if transport is self.transport:
            for session in list(self.sessions):
                session.interrupted()
        for consumer in list(self.consumers):
            if consumer.transport is transport:
                consumer.interrupted()

    def _count_unconfirmed_acks(self) -> None:
        """The connection was lost: count the messages acknowledged lately as delivered
        once more, in the process-wide table, so that one whose acknowledgement never
        reached the broker comes again flagged redelivered, to whichever connection of
        this process takes it (Artemis sends such a copy with a delivery count of 0:
        tests/integration/test_failover.py)."""
        acked = self._acked
        horizon = time.monotonic() - self._ack_window
        while True:
            try:
                when, key = acked.popleft()
            except IndexError:  # all taken (two transports may be lost at once)
                return
            if when >= horizon:
                self.counts.count(key, False)

    def _restored(self, transport: AmqpTransport) -> None:
        """``transport`` is connected again, its links attached (its thread). The
        broker deleted this connection's temporary destinations with the old one."""
        for consumer in list(self.consumers):
            if consumer.transport is transport:
                consumer.restored()
        if transport is self.transport and self._temporary and not self.rabbitmq:
            log.warning(
                "AMQP %s: temporary destinations %s were deleted with the lost connection",
                transport.address,
                sorted(self._temporary),
            )

    def forget(self, key: str) -> None:
        """``key`` was acknowledged: it will not come again (unless the connection is
        lost before the broker read the acknowledgement: ``_interrupted``)."""
        self.counts.forget(key)
        if key:
            self._acked.append((time.monotonic(), key))

    def count_delivery(self, incoming: Incoming, key: str) -> int:
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
        if self.rabbitmq:
            return self._create_rabbitmq_temporary(kind)
        sender = self.transport.open_sender(None, options=TemporaryTarget(kind), restore=False)
        name = str(self.transport.remote_target(sender))
        self._temporary[name] = sender
        return name

    def _create_rabbitmq_temporary(self, kind: str) -> str:
        """RabbitMQ 3.10's plugin refuses dynamic nodes ("Dynamic targets not supported"),
        so a temporary queue is an ordinary queue, ``jmslike-temp-<random>``: declared now
        (non-durable) by a sender link to ``/queue/<name>`` that is closed again, so that
        a reply sent before a consumer exists waits in it; used as it is through
        ``/amq/queue/<name>``, which is the temporary queue's name; deleted through the
        management API when the application deletes it or the connection closes (RabbitMQ
        deletes a non-durable queue when it restarts, too). A temporary topic is a topic
        of a name made up for it, ``/topic/jmslike-temp-topic-<random>`` (RabbitMQ routes
        a topic by name through ``amq.topic``, and a subscriber's queue goes with its
        link): nothing to declare or delete, and only this connection may consume
        from it (``check_temporary``), as JMS says."""
        if kind != "temporary-queue":
            address = f"/topic/{TEMPORARY_TOPIC_PREFIX}{uuid.uuid4().hex[:16]}"
            self._temporary[address] = None
            return address
        name = f"jmslike-temp-{uuid.uuid4().hex[:16]}"
        declare = self.transport.open_sender(
            DECLARED + name, options=[Capability("queue")], restore=False
        )
        self.transport.close_link(declare)
        address = EXISTING + name
        self._temporary[address] = None
        return address

    def create_temporary_queue(self) -> TemporaryQueue:
        return TemporaryQueue(self._create_temporary("temporary-queue"))

    def create_temporary_topic(self) -> TemporaryTopic:
        return TemporaryTopic(self._create_temporary("temporary-topic"))

    def delete_temporary(self, destination: Destination) -> None:
        if destination.name not in self._temporary:
            raise InvalidDestinationError(f"{destination} was not created by this connection")
        sender = self._temporary.pop(destination.name)
        _DELETED_TEMPORARY.add(destination.name)
        if sender is not None:
            self.transport.close_link(sender)
        else:
            self._delete_declared_temporaries([destination.name])

    def _delete_declared_temporaries(self, addresses: list[str]) -> None:
        """Delete the queues that stand for temporary queues on RabbitMQ (non-durable: one
        left behind goes when the broker restarts)."""
        delete = self.exclusivity.delete_queue
        addresses = [address for address in addresses if address.startswith(EXISTING)]
        delete_made_up(
            addresses,
            None if delete is None else lambda address: delete(address.removeprefix(EXISTING)),
        )

    def broker_selector(self, selector: str | None) -> str | None:
        """The selector written from its parsed tree as this broker must be given it (None:
        none). Artemis runs every AMQP selector through its SelectorTranslator, which
        renames header fields and rewrites every ``'PERSISTENT'`` literal, a property's
        included: it gets Core names already, and those literals guarded from it."""
        dialect = (
            ARTEMIS_AMQP_FILTER
            if self.broker == "artemis"
            else CLASSIC_AMQP_SELECTORS
            if self.classic
            else JMS_SYNTAX
        )
        # Where the header says 4 (or group-sequence is unset: Classic), jmslike's messages
        # carry the value in a property (codec.encode): `JMSPriority > 5` read the 4 and
        # selected nothing.
        carried = {} if self.capabilities.priority else {"JMSPriority": PRIORITY_PROPERTY}
        if self.classic:
            carried["JMSXGroupSeq"] = SEQ_PROPERTY
        elif self.broker == "artemis":
            # A Core client's sequence is the property _AMQ_GROUP_SEQUENCE, which Artemis'
            # filters do not read as JMSXGroupSeq (a Java producer's `JMSXGroupSeq = 2`
            # selected nothing); an AMQP sender's is the group-sequence field.
            carried["JMSXGroupSeq"] = "_AMQ_GROUP_SEQUENCE"
        return render_selector(selector, replace(dialect, carried=carried))

    def node_options(self, destination: Destination, address: str) -> list[LinkOption]:
        """What a link to ``destination`` announces: its kind, and on RabbitMQ, where the
        address declares the queue, a durable terminus (jmslike_amqp.durability: a
        non-durable queue loses its messages when the broker stops)."""
        options: list[LinkOption] = [Capability("topic" if destination.is_topic else "queue")]
        if self.rabbitmq and address.startswith(DECLARED):
            options.append(DurableNode())
        return options

    def address_of(self, destination: Destination) -> str:
        """The node address: RabbitMQ's AMQP 1.0 plugin wants ``/queue/x`` (a queue it
        declares), ``/amq/queue/x`` (one that exists: jmslike_amqp.durability says which)
        or ``/topic/x``; Classic announces ``queue://`` and ``topic://`` prefixes in its open
        frame (as Qpid JMS reads them: without one a name is a queue there); Artemis
        takes the name (with the ``queue``/``topic`` capability). A temporary
        destination's address is the broker's own."""
        if destination.is_temporary:
            return destination.name
        if self.rabbitmq:
            _rabbitmq_name(destination)
        elif self.broker == "artemis":
            refuse_artemis_parameters(destination)
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
            return EXISTING + destination.name
        if self.rabbitmq and not destination.is_topic:
            return self._declarations.address_of(destination.name, self.transport)
        queue_prefix, topic_prefix = self._prefixes
        return (topic_prefix if destination.is_topic else queue_prefix) + destination.name

    def queue_depths(self, prefix: str) -> dict[str, int] | None:
        depths = self.exclusivity.depths
        return depths(prefix) if depths is not None else None

    def open_transport(self) -> AmqpTransport:
        """Another connection to the same broker, for a consumer that needs its own."""
        transport = self._connect(None)
        with self._lock:
            closed = self._closed
            if not closed:
                self._extra_transports.add(transport)
        if closed:  # _close_extra has run: nobody would close this one
            transport.close()
            raise IllegalStateError(f"AMQP connection to {transport.address} is closed")
        return transport

    def close_transport(self, transport: AmqpTransport) -> None:
        self.closing_transport(transport)
        transport.close()

    def closing_transport(self, transport: AmqpTransport) -> None:
        """A consumer's own connection is about to close: its loss from now on is no
        news for the application (a probe before the close, refused because the queue
        was deleted, may end it)."""
        with self._lock:
            self._extra_transports.discard(transport)
            self._closing_transports.add(transport)

    def _transport_lost(self, transport: AmqpTransport, error: JMSException) -> None:
        """A transport is lost for good. When it is the connection's own, the consumers'
        connections of their own (RabbitMQ's strictly ordered and partitioned queues)
        are closed too: nothing can be acknowledged or committed through this connection
        again, and closed, they give back at once what they hold and let a standby of
        another process take over, where they would otherwise hold it until the
        application closed the connection (tests/integration/test_faults.py). Recent
        acknowledgements may not have reached the broker: counted first, before the
        application hears of the loss and connects again."""
        with self._lock:
            if transport in self._closing_transports:
                return  # a consumer's own, closing (closing_transport)
        self._count_unconfirmed_acks()
        if transport is self.transport and self._extra_transports:
            threading.Thread(
                target=self._close_extra, name="jmslike-amqp-let-go", daemon=True
            ).start()
        self._on_exception(error)

    def _close_extra(self) -> None:
        """Close the connections opened for consumers (close, or a loss for good)."""
        with self._lock:
            extra = list(self._extra_transports)
        for transport in extra:
            try:
                self.close_transport(transport)
            except JMSException as exc:
                log.debug("AMQP %s: a consumer's connection: %s", transport.address, exc)

    def declare_queue(self, queue: Destination) -> str | None:
        declare = self.exclusivity.declare_durable
        return declare(queue.name) if declare is not None else None

    def declare_exclusive_queue(self, queue: Destination, *, required: bool = True) -> bool:
        """Have the broker hold ``queue`` to one active consumer across processes (ORD-18,
        partitions), once per process; see jmslike.spi.exclusive. ``required=False``
        (ORD-18 declared late): a refusal is logged and False returned."""
        return self.exclusivity.hold_queue(self.exclusive_queues, queue.name, required=required)

    def reply_to_of(self, incoming: Incoming) -> Destination | None:
        """The JMSReplyTo of a received message, from ``reply-to`` and its kind."""
        address = incoming.reply_to
        if not address:
            return None
        annotations: dict[Any, Any] = incoming.annotations or {}
        kind = annotations.get(REPLY_TO_TYPE)
        queue_prefix, topic_prefix = self._prefixes
        if self.rabbitmq and address.startswith(EXISTING):
            if kind == 2:  # a temporary queue jmslike made there: its name is the address
                return destination_for(2, address)
            return destination_for(0, address[len(EXISTING) :])
        if self.rabbitmq and kind == 3:  # a temporary topic jmslike made there: the same
            return destination_for(3, address)
        for prefix, topic in ((queue_prefix, False), (topic_prefix, True)):
            if prefix and address.startswith(prefix):
                code = kind if isinstance(kind, int) else 1 if topic else 0
                return destination_for(code, address[len(prefix) :])
        return destination_for(kind if isinstance(kind, int) else None, address)

    def create_session(self, transacted: bool, acknowledge_mode: int) -> ProviderSession:
        return AmqpSession(self, transacted, acknowledge_mode)

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
        with self._lock:
            self._closed = True
        _DELETED_TEMPORARY.update(self._temporary)
        CLIENT_IDS.release(self.transport.address, self.client_id, self)
        self._close_extra()
        try:
            self.transport.close()
        finally:
            declared = sorted(name for name, sender in self._temporary.items() if sender is None)
            if declared:
                self._delete_declared_temporaries(declared)


RECENT_ACKS = 100_000
"""Acknowledgements remembered for a lost connection (``AmqpConnection._acked``), at most."""

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


def _rabbitmq_name(destination: Destination) -> None:
    """Refuse, before anything is sent, a name RabbitMQ's AMQP 1.0 plugin (3.10) cannot
    take: with a character beyond U+00FF an attach crashed the broker's session (badarg
    in ``re:split``, ``rabbit_routing_util:parse_endpoint``) and it dropped the whole
    connection; a ``/`` was refused ("invalid_destination") with the link's session
    ended, which ends the connection too. Over STOMP both travel (jmslike writes ``/``
    as ``%2F`` there)."""
    name = destination.name
    if "/" in name or max(name, default="\0") > "\xff":
        raise InvalidDestinationError(
            f"{destination}: RabbitMQ over AMQP 1.0 takes no '/' and no character beyond "
            "U+00FF in a queue or topic name (it drops the connection); rename it, or use "
            "STOMP"
        )
