"""``StompConnection``: one STOMP connection's sessions, subscriptions and temporary queues.

It learns the broker from the CONNECTED frame (its :class:`~jmslike_stomp.dialect.Dialect`)
and keeps what the broker does not: delivery counts and strictly ordered destinations per
broker address (jmslike.spi.counts, jmslike.spi.strict), RabbitMQ's durable subscriptions
made here, and its temporary queues, created by a probe (``_declare``). A reconnect rolls
back the sessions' open transactions and makes RabbitMQ's temporary queues again.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from jmslike.config import FactorySettings, ParsedURL
from jmslike.destination import Destination, TemporaryQueue, TemporaryTopic, Topic
from jmslike.errors import (
    ConfigurationError,
    ConnectionFailedError,
    IllegalStateError,
    InvalidClientIDError,
    InvalidDestinationError,
    JMSException,
    JMSSecurityError,
)
from jmslike.placement import placement_of
from jmslike.spi.clientids import CLIENT_IDS
from jmslike.spi.counts import counts_for
from jmslike.spi.exclusive import exclusive_queues_for, exclusivity_for
from jmslike.spi.nolocal import PublishedIds
from jmslike.spi.provider import ExceptionCallback, ProviderConnection, ProviderSession
from jmslike.spi.rabbit_subscriptions import (
    SHARED_EXPIRES_MS,
    STRICT_SHARED_EXPIRES_MS,
    RabbitSubscriptions,
    durable_queue,
    shared_queue,
)
from jmslike.spi.strict import registry_for
from jmslike.spi.temporary import TEMPORARY_TOPIC_PREFIX, delete_made_up, is_made_up_topic
from jmslike_stomp.capabilities import _capabilities
from jmslike_stomp.codec import destination_name, remember_wire_name
from jmslike_stomp.consumer import StompConsumer
from jmslike_stomp.dialect import Dialect, dialect_for
from jmslike_stomp.options import _options
from jmslike_stomp.session import StompSession
from jmslike_stomp.temporary import _DELETED_TEMPORARY, _TemporaryInbox
from jmslike_stomp.transport import StompTransport

__all__ = ["PROBE_HEADER", "StompConnection"]

log = logging.getLogger("jmslike.stomp")

PROBE_HEADER = "jmslikeTemporaryProbe"
"""Names the temporary queue a probe was sent for (see ``StompConnection._declare``)."""


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
        self._closed = False
        """Closed by the application: a consumer's connection of its own opened from now
        on (a partition attached by the coordinator's thread meanwhile) is closed again."""
        self.active_durables: set[str] = set()
        self.rabbit_durables: dict[str, dict[str, str]] = {}
        """RabbitMQ durable subscriptions made here: name -> their SUBSCRIBE headers."""
        self.sessions: weakref.WeakSet[StompSession] = weakref.WeakSet()
        self.consumers: weakref.WeakSet[StompConsumer] = weakref.WeakSet()
        self.transport = self._connect(None, self._reconnected, self._lost)
        self.counts = counts_for(self.transport.address)
        self.strict = registry_for(self.transport.address)
        self.dialect: Dialect = dialect_for(self.transport.server)
        if self.dialect.tcp_no_delay:
            self.transport.set_no_delay()
        self.transport.set_quick_ack(self.dialect.quick_ack)
        first = url.members[0] if url.members else url
        self.exclusivity = exclusivity_for(
            self.dialect.name,
            first.host or "127.0.0.1",
            settings,
            self._user,
            self._password,
            self.transport.vhost,
            port=None if len(url.members) > 1 else first.port or 61613,
        )
        self.rabbit_subscriptions = RabbitSubscriptions(self.exclusivity)
        self.published = PublishedIds()
        """Its topic messages' ids, for no-local consumers where the broker ignores
        ``no-local`` (jmslike.spi.nolocal)."""
        self.management = self.exclusivity.artemis
        self.exclusive_queues = exclusive_queues_for(self.transport.address)
        self.capabilities = _capabilities(
            self.dialect, self.transport, self.management, self.exclusivity
        )

    def queue_depths(self, prefix: str) -> dict[str, int] | None:
        depths = self.exclusivity.depths
        return depths(prefix) if depths is not None else None

    def declare_queue(self, queue: Destination) -> str | None:
        declare = self.exclusivity.declare_durable
        return declare(queue.name) if declare is not None else None

    def declare_exclusive_queue(self, queue: Destination, *, required: bool = True) -> bool:
        """Have the broker hold ``queue`` to one active consumer across processes (ORD-18,
        partitions), once per process; see jmslike.spi.exclusive. ``required=False``
        (ORD-18 declared late): a refusal is logged and False returned."""
        return self.exclusivity.hold_queue(self.exclusive_queues, queue.name, required=required)

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
            return "/amq/queue/" + destination.name.replace("/", "%2F")
        return destination_name(destination, self.dialect)

    def _connect(
        self,
        client_id: str | None,
        on_reconnect: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        *,
        no_delay: bool | None = None,
    ) -> StompTransport:
        """A transport; ``no_delay`` None: as the broker's dialect says, once it is known."""
        dialect: Dialect | None = getattr(self, "dialect", None)
        if no_delay is None:
            no_delay = dialect is not None and dialect.tcp_no_delay
        options = _options(self.url, self.settings)
        transport = StompTransport(
            self.url,
            self._user,
            self._password,
            client_id=client_id,
            heartbeats=options.heartbeats,
            timeout=self.settings.request_timeout,
            on_exception=self._failed,
            reconnect=options.reconnect,
            on_reconnect=on_reconnect,
            on_lost=on_lost,
            ssl_ca_file=options.tls.ca_file,
            no_delay=no_delay,
            send_batch=options.send_batch,
            placement=placement_of(self.settings.thread_cpus),
        )
        if dialect is not None:
            transport.set_quick_ack(dialect.quick_ack)
        return transport

    def _failed(self, exc: JMSException) -> None:
        """A transport's error, for the application. Once the connection's own transport
        is lost for good, nothing can be acknowledged or committed through it again, so
        the consumers' connections of their own (RabbitMQ) are closed too: closed, they
        give back at once what they hold, where they would otherwise hold it until the
        application closes the connection (a consumer closed inside a transaction keeps
        its connection for the commit, which can no longer come)."""
        main = getattr(self, "transport", None)
        if main is not None and main.lost and self._extra_transports:
            threading.Thread(
                target=self._close_extra, name="jmslike-stomp-let-go", daemon=True
            ).start()
        self._on_exception(exc)

    def report(self, exc: JMSException) -> None:
        """An error that no call of the application returns: for its exception listener."""
        self._failed(exc)

    def _close_extra(self) -> None:
        """Close the connections opened for consumers (close, or a loss for good)."""
        for transport in list(self._extra_transports):
            try:
                self.close_transport(transport)
            except JMSException as exc:
                log.debug("STOMP %s: a consumer's connection: %s", transport.address, exc)

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
        """Another connection to the same broker, for a consumer that needs its own
        (RabbitMQ's, closed to give back what it holds).

        It keeps Nagle's algorithm on. Closing an AUTO consumer acknowledges its last
        message and then closes the connection; RabbitMQ sends the next message at once
        when the acknowledgement frees the window, and if the close overtakes it, it
        comes back flagged redelivered to a consumer that never saw it. With Nagle on,
        the DISCONNECT waits for the broker's TCP acknowledgement of that ACK, which
        comes with the message when there is one; with TCP_NODELAY it failed 10 closes
        in 10, and a round trip before the DISCONNECT still left 3 in 20. A connection
        that only acknowledges what it receives rarely meets the Nagle stall anyway: the
        broker's next message carries the TCP acknowledgement."""
        transport = self._connect(self.client_id, on_reconnect, on_reconnect, no_delay=False)
        self._extra_transports.add(transport)
        if self._closed:  # set before close() looked at the set: it may not have seen this
            self.close_transport(transport)
            raise IllegalStateError(f"STOMP connection to {transport.address} is closed")
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

    def durable_headers(
        self,
        topic: Destination,
        name: str,
        headers: dict[str, str],
        selector: str | None = None,
    ) -> str:
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
            self._renew_artemis_if_changed(
                f"{self.client_id}.{name}", topic, headers.get("selector") or ""
            )
        elif style == "rabbitmq":
            # Named by jmslike, not by RabbitMQ (a hash of the destination and the
            # subscription id), so that any connection can find it to unsubscribe.
            headers["durable"] = "true"
            headers["auto-delete"] = "false"
            headers["x-queue-name"] = durable_queue(self.client_id or "", name)
            self.rabbit_subscriptions.renew_if_moved(
                headers["x-queue-name"], topic.name, selector or ""
            )
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
        queue = self._shared_name(name)
        if self.dialect.shared_subscription == "artemis":
            if durable:
                # Its filter is jmslike's (on the client): only the topic is compared.
                self._renew_artemis_if_changed(queue, topic, None)
            else:
                # Queue names are global on Artemis: without the topic in it, a shared
                # subscription of the same name on another topic would be this queue.
                queue = f"nonDurable.{queue}.{topic.name}"
            headers["destination"] = f"{topic.name}::{queue}"
            return
        # RabbitMQ: a durable queue bound to the topic; every consumer's connection
        # names it. Unless the subscription is durable, RabbitMQ deletes it once unused
        # for SHARED_EXPIRES_MS: declared auto-delete, it went with one connection's
        # last consumer between another's declaration and its consume, and the broker
        # closed that connection (NOT_FOUND; jmslike.spi.rabbit_subscriptions).
        headers["durable"] = "true"
        headers["auto-delete"] = "false"
        if not durable:
            headers["x-expires"] = str(SHARED_EXPIRES_MS)
        headers["x-queue-name"] = shared_queue(self.client_id, name)
        if durable:
            self.rabbit_subscriptions.renew_if_moved(headers["x-queue-name"], topic.name)
            self.rabbit_durables[name] = dict(headers)

    def _renew_artemis_if_changed(
        self, queue: str, topic: Destination, selector: str | None
    ) -> None:
        """JMS: a durable subscription made again with another topic or selector is a
        new one. Artemis' STOMP SUBSCRIBE attaches to the existing queue as it is: made
        again on topic B, the subscriber kept getting topic A's messages (and with a
        new selector, the old one's), seen on 2.56. Through ``managementUrl`` jmslike
        compares the queue's address and filter (``selector`` as the broker reads it,
        "" for none; None: the topic only), and deletes it first if either changed (an
        error while it has consumers); without it, nothing is checked."""
        management = self.management
        if management is None:
            return
        try:
            found = management.subscription_queue(queue)
        except (ConnectionFailedError, JMSSecurityError) as exc:
            log.debug("durable subscription %s not checked for a change: %s", queue, exc)
            return
        if found is None:
            return
        address, existing, consumers = found
        if address == topic.name and (selector is None or (existing or "") == selector):
            return
        if consumers:
            raise IllegalStateError(
                f"durable subscription {queue!r} is on {address} with filter {existing!r}, "
                "and has an active consumer: close it before changing its topic or selector"
            )
        log.info("durable subscription %s changed topic or selector: made anew", queue)
        management.delete_subscription_queue(queue)

    def mark_selector(self, name: str, topic: Destination, selector: str | None) -> None:
        """Record the selector of RabbitMQ durable subscription ``name``, subscribed just
        now (jmslike.spi.rabbit_subscriptions)."""
        made = self.rabbit_durables.get(name)
        if made is not None and "x-queue-name" in made:
            self.rabbit_subscriptions.mark_selector(
                name, made["x-queue-name"], topic.name, selector
            )

    def _shared_name(self, name: str) -> str:
        """The shared subscription ``name`` as the brokers' JMS clients name its queue."""
        return f"{self.client_id}.{name}" if self.client_id else name

    def strict_shared_headers(
        self, topic: Destination, durable: bool, headers: dict[str, str]
    ) -> Callable[[], None] | None:
        """A strictly ordered shared subscription (ORD-18): one active consumer across
        processes, and a queue that outlives the hand-over to a standby. Returns the
        call that declares the queue, for a reconnect to make it again (None: nothing
        was declared).

        RabbitMQ makes the subscription a queue bound to the topic, declared by the
        SUBSCRIBE. Declared auto-delete, as other non-durable ones are, it went with the
        active consumer's connection and everything it held: the standby subscribed to a
        new, empty queue (8 of 10 messages lost, seen here). And a consumer of another
        process was a second active consumer, durable subscription or not. RabbitMQ's
        STOMP plugin takes neither ``x-single-active-consumer`` nor a binding from a
        SUBSCRIBE, so the queue is declared through the management API: single active
        consumer, bound to the topic, and, unless durable, deleted once nobody has used
        it for ``STRICT_SHARED_EXPIRES_MS``; consumers address it as
        ``/amq/queue/<name>``. It is declared for every consumer, not once per process
        as queues are, since it may have expired since; and again after a reconnect, for
        the same reason (a SUBSCRIBE to a queue gone is refused with the connection). A
        queue that exists otherwise is left alone, with a warning (strictly ordered
        within this process only)."""
        declare = self.exclusivity.declare_subscription
        queue = headers.get("x-queue-name")
        if declare is None or queue is None:
            return None
        expires_ms = None if durable else STRICT_SHARED_EXPIRES_MS

        def declare_queue() -> None:
            declare(queue, topic.name, expires_ms)

        try:
            declare_queue()
        except ConfigurationError as exc:
            log.warning(
                "%s; jmslike keeps %s strictly ordered within this process only (ORD-18)",
                exc,
                topic,
            )
            return None
        for header in ("x-queue-name", "durable", "auto-delete", "x-expires"):
            headers.pop(header, None)
        headers["destination"] = "/amq/queue/" + queue.replace("/", "%2F")
        # Not made by a SUBSCRIBE: only the management API can delete it (unsubscribe).
        for name, made in list(self.rabbit_durables.items()):
            if made["x-queue-name"] == queue:
                self.rabbit_durables.pop(name, None)
        return declare_queue

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
            if not self.client_id:
                # Shared (an unshared one needs a client id), kept as the queue ``name``;
                # Artemis' UNSUBSCRIBE finds a subscription only by client id and name.
                self.exclusivity.unsubscribe([name], name, self.dialect.name)
                return
            if self.management is not None and not self.management.has_subscription_queue(
                self.client_id, name
            ):
                raise InvalidDestinationError(
                    f"no durable subscription {name!r} for client id {self.client_id!r} on "
                    f"{self.dialect.name}"
                )
            self.transport.frame(
                "UNSUBSCRIBE", {"id": sub_id, "durable-subscription-name": name}, confirm=True
            )
        elif style == "rabbitmq":
            self._delete_rabbit_durable(name, sub_id)
        else:
            raise IllegalStateError(f"{self.dialect.name} has no durable subscriptions")

    def _delete_rabbit_durable(self, name: str, sub_id: str) -> None:
        """RabbitMQ's STOMP plugin deletes a durable subscription only on an UNSUBSCRIBE
        of a subscription of the same connection, so it cannot find one by name; its
        management API can, from any connection and process (after a restart, say), and
        refuses while a consumer of any process is on it. Each such queue has a name
        jmslike chose: ``jmslike-shared-[client id.]name`` or
        ``jmslike-durable-<client id>.name``. Without the management API, one this
        connection made is still deleted the STOMP way: subscribed again for a moment,
        then unsubscribed with its queue's name (the UNSUBSCRIBE would otherwise delete
        the queue RabbitMQ would have named itself, and leave this one)."""
        headers = self.rabbit_durables.pop(name, None)
        try:
            self.rabbit_subscriptions.unsubscribe(name, self.client_id)
            return
        except (ConnectionFailedError, JMSSecurityError) as exc:
            if headers is None:
                raise  # not made here, or strictly ordered: the management API only
            log.info("RabbitMQ management: %s; unsubscribing %r over STOMP", exc, name)
        self.transport.subscribe(sub_id, headers, lambda _headers, _body: None)
        try:
            self.transport.frame(
                "UNSUBSCRIBE",
                {"id": sub_id, "durable": "true", "x-queue-name": headers["x-queue-name"]},
                confirm=True,
            )
        finally:
            self.transport.unlisten(sub_id)

    def create_temporary_topic(self) -> TemporaryTopic:
        """Over STOMP jmslike makes its own temporary topics, alike on every broker: an
        ordinary topic of a name made up for it (jmslike.spi.temporary), which receivers
        read back as a temporary topic and only this connection may consume from.
        (Classic names a ``/temp-topic/`` differently for every other connection, as it
        does its ``/temp-queue/``s, which a sender given the topic itself cannot know.)
        Nothing to delete: the broker drops a subscriber's queue with its subscription,
        and Artemis an address it made once no queue is bound to it."""
        name = destination_name(Topic(TEMPORARY_TOPIC_PREFIX + uuid.uuid4().hex[:16]), self.dialect)
        self.temporary_names.add(name)
        return TemporaryTopic(name)

    def create_temporary_queue(self) -> TemporaryQueue:
        prefix = self.dialect.temp_queue_prefix
        if prefix is None:
            raise IllegalStateError(
                f"{self.dialect.name} has no temporary queues over STOMP "
                "(capability temporary_destinations)"
            )
        if self.dialect.temp_queue_named and self.management is None:
            raise IllegalStateError(
                f"{self.dialect.name} has no temporary queues over STOMP: jmslike makes "
                "them as queues it deletes through the broker's management API, which "
                "this connection has not found (set managementUrl; capability "
                "temporary_destinations)"
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
        keeps no handler or name per request, and refuses sends to it from now on. On
        Artemis, where it is an ordinary queue, the management API deletes it."""
        if destination.name not in self.temporary_names:
            raise InvalidDestinationError(f"{destination} was not created by this connection")
        self.temporary_names.discard(destination.name)
        _DELETED_TEMPORARY.add(destination.name)
        if self.temporary_inboxes.pop(destination.name, None) is not None:
            self.transport.unlisten(destination.name)
        self._delete_named_temporaries([destination.name])

    def _delete_named_temporaries(self, names: Iterable[str]) -> None:
        """Delete what stands for temporary queues where the broker has none
        (``Dialect.temp_queue_named``): the address with its queue."""
        if self.dialect.temp_queue_named and self.management is not None:
            queues = [name for name in names if not is_made_up_topic(name)]
            delete_made_up(queues, self.management.delete_address)

    def close(self) -> None:
        self._closed = True
        _DELETED_TEMPORARY.update(self.temporary_names)
        CLIENT_IDS.release(self.transport.address, self.client_id, self)
        self._close_extra()
        try:
            self.transport.close()
        finally:
            self._delete_named_temporaries(sorted(self.temporary_names))
