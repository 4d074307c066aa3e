"""The SPI binding of the embedded broker: ``embedded://`` and ``embedded://<name>``.

A thin adapter: each call takes the broker's lock once. Messages are copied on send (the
sender may reuse its object) and on each delivery (the receiver may clear and change
its copy), so nothing the application holds is shared with the broker.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from typing import Any

from jmslike.config import ConfigurationError, FactorySettings, ParsedURL, parse_flag
from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic
from jmslike.embedded.broker import Broker, Routed, Subscription, get_broker, release_broker
from jmslike.embedded.channel import ConsumerSlot, Entry, StrictChannel
from jmslike.errors import JMSException, TransactionInProgressError
from jmslike.message import DeliveryMode, Message
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

__all__ = ["EmbeddedProvider"]

_connection_ids = itertools.count(1)


class EmbeddedConsumer(ProviderConsumer):
    adaptive_credit = True  # flow(0) clears the slot's credit under the broker's lock
    takes_directly = True  # the broker is in this process: a receive() takes, no push

    def __init__(self, broker: Broker, slot: ConsumerSlot, sub: Subscription | None) -> None:
        self._broker = broker
        self._slot = slot
        self._sub = sub
        # Declared by this consumer, by an earlier one (sticky), or not at all (ORD-18).
        self.exclusive = isinstance(slot.channel, StrictChannel)

    def flow(self, credit: int) -> None:
        self._broker.flow(self._slot, credit)

    def close(self, delivered: Sequence[Any], undelivered: Sequence[Any]) -> None:
        self._broker.detach(self._slot, self._sub, delivered, undelivered)


class EmbeddedSession(ProviderSession):
    def __init__(self, connection: EmbeddedConnection, transacted: bool) -> None:
        self._connection = connection
        self._broker = connection.broker
        self._transacted = transacted
        self._pending: deque[tuple[Destination, Message, Routed]] = deque()
        """The transaction's sends, each with its routing record (``Broker._enqueue``);
        the broker takes each off as it routes it."""
        self._dlq = Queue(connection.settings.dead_letter_queue)

    def send(self, destination: Destination, message: Message) -> None:
        snapshot = message._copy(stored=True)  # the broker copies it for each delivery
        if self._transacted:
            self._pending.append((destination, snapshot, Routed()))
        else:
            self._broker.send(destination, snapshot, self._connection.key)

    def sends_at_once(self, destination: Destination, delivery_mode: int) -> bool:
        """In memory, unless a persistent message goes to the file store (disk)."""
        return self._broker.store is None or delivery_mode != DeliveryMode.PERSISTENT

    def create_consumer(self, spec: ConsumerSpec, sink: DeliverySink) -> ProviderConsumer:
        slot, sub = self._broker.attach(
            spec.destination,
            holder=self,
            origin=self._connection.key,
            client_id=self._connection.client_id,
            sink=sink,
            selector=spec.selector,
            no_local=spec.no_local,
            subscription=spec.subscription,
            durable=spec.durable,
            shared=spec.shared,
            exclusive=spec.exclusive,
            standby=spec.standby,
        )
        return EmbeddedConsumer(self._broker, slot, sub)

    def acknowledge(self, tokens: Sequence[Any]) -> None:
        self._broker.acknowledge(tokens)

    def acknowledge_and_flow(
        self, tokens: Sequence[Any], consumer: ProviderConsumer, credit: int
    ) -> None:
        if isinstance(consumer, EmbeddedConsumer):
            self._broker.acknowledge_and_flow(tokens, consumer._slot, credit)
        else:  # pragma: no cover - a foreign consumer cannot reach this broker
            super().acknowledge_and_flow(tokens, consumer, credit)

    def acknowledge_and_take(
        self, tokens: Sequence[Any], consumer: ProviderConsumer
    ) -> tuple[Message, Any] | None:
        if isinstance(consumer, EmbeddedConsumer):
            return self._broker.acknowledge_and_take(tokens, consumer._slot)
        return super().acknowledge_and_take(tokens, consumer)  # pragma: no cover

    def redeliver(self, token: Any) -> Message:
        entry: Entry = token
        return self._broker.redeliver(entry)

    def release(self, tokens: Sequence[Any]) -> None:
        self._broker.release(tokens)

    def return_unseen(self, tokens: Sequence[Any]) -> None:
        self._broker.release(tokens, delivered=False)

    def dead_letter(self, token: Any, reason: str) -> None:
        self._broker.dead_letter(token, reason, self._dlq)

    def commit(self, tokens: Sequence[Any]) -> None:
        if not self._transacted:
            raise TransactionInProgressError("commit on a session that is not transacted")
        # The sends stay pending until routed: a commit Ctrl-C stopped half-way is
        # carried on by the next one (the API layer holds its deliveries again). Before,
        # they were taken first, and an interrupt inside the broker lost them.
        try:
            self._broker.commit(self._pending, tokens, self._connection.key)
        except JMSException:
            self._pending.clear()
            raise

    def rollback(self) -> None:
        self._pending.clear()

    def close(self) -> None:
        self._pending.clear()
        self._broker.forget_holder(self)

    def browse(self, destination: Destination, selector: str | None) -> Sequence[Message]:
        return self._broker.browse(destination, selector)

    def unsubscribe(self, name: str) -> None:
        self._broker.unsubscribe(self._connection.client_id, name)


class EmbeddedConnection(ProviderConnection):
    def __init__(self, broker: Broker, settings: FactorySettings) -> None:
        self.broker = broker
        self.settings = settings
        self.key = ("connection", next(_connection_ids))
        self.client_id: str | None = None
        self._temporary: list[Destination] = []
        native = broker.native_groups
        self.capabilities = Capabilities(
            provider="embedded",
            broker="jmslike-embedded",
            broker_version="1",
            ordering_mode=OrderingMode.BROKER if native else OrderingMode.CLIENT_GATE,
            native_groups=native,
            group_scope="session" if native else "none",
            priority=native,
            delivery_delay=native,
            persistent=broker.store is not None,
            selectors=True,
            transactions=True,
            time_to_live=True,
            durable_subscriptions=True,
            shared_subscriptions=True,
            temporary_destinations=True,
            no_local=True,
            browsers=True,
            exclusive_consumers=True,
            exclusive_scope="broker",
            delivery_count=True,
            dead_letter_queue=True,
            extra={"broker_name": broker.name, "gate_scope": f"embedded://{broker.name}"},
        )

    def create_session(self, transacted: bool, acknowledge_mode: int) -> ProviderSession:
        return EmbeddedSession(self, transacted)

    def queue_depths(self, prefix: str) -> dict[str, int]:
        return self.broker.queue_depths(prefix)

    def set_client_id(self, client_id: str) -> None:
        self.broker.claim_client_id(client_id)
        self.client_id = client_id

    def create_temporary_queue(self) -> TemporaryQueue:
        dest = self.broker.create_temporary(TemporaryQueue, self.key)
        self._temporary.append(dest)
        return dest  # type: ignore[return-value]

    def create_temporary_topic(self) -> TemporaryTopic:
        dest = self.broker.create_temporary(TemporaryTopic, self.key)
        self._temporary.append(dest)
        return dest  # type: ignore[return-value]

    def delete_temporary(self, destination: Destination) -> None:
        self.broker.delete_temporary(destination)
        if destination in self._temporary:
            self._temporary.remove(destination)

    def close(self) -> None:
        for dest in self._temporary:
            self.broker.delete_temporary(dest)
        self._temporary.clear()
        if self.client_id is not None:
            self.broker.release_client_id(self.client_id)
        release_broker(self.broker)


class EmbeddedProvider(Provider):
    """``embedded://`` (the default broker) and ``embedded://<name>`` (a separate one)."""

    name = "embedded"
    schemes = ("embedded",)
    setting_names = frozenset({"native_groups", "store_sync"})
    """``?nativeGroups=false``: a broker that ignores groups and priorities, like RabbitMQ,
    so the client-side group gate (ORD-16) can be tested without a server."""

    def check_settings(self, settings: FactorySettings) -> None:
        _native_groups(settings.extra.get("native_groups", "true"))
        sync = settings.extra.get("store_sync", "normal")
        if sync not in ("normal", "full"):
            raise ConfigurationError(
                f"setting storeSync={sync!r}: 'normal' survives a crash of the process, "
                "'full' also a loss of power"
            )

    def check_url(self, url: ParsedURL) -> None:
        if url.members:
            raise ConfigurationError("failover: makes no sense for the in-process embedded broker")
        if url.host and url.path not in ("", "/"):
            raise ConfigurationError(
                f"embedded URL {url}: give a broker name (embedded://name) or a file "
                "(embedded:///absolute/path.db), not both"
            )

    def connect(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> ProviderConnection:
        native = _native_groups(settings.extra.get("native_groups", "true"))
        path = url.path if url.path not in ("", "/") else None
        sync = settings.extra.get("store_sync", "normal")
        return EmbeddedConnection(get_broker(url.host or "", native, path, sync), settings)


def _native_groups(value: str) -> bool:
    """The ``nativeGroups`` setting as a bool; anything but true/false is an error."""
    return parse_flag("nativeGroups", value)
