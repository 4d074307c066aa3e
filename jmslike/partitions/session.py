"""The partitioning layer between a session and its provider.

A session of a factory that declares partitioned queues talks to its provider through a
:class:`PartitionedSession`, a ``ProviderSession`` that passes every call on and changes
three things:

* a send to a partitioned queue goes to the group's partition (:mod:`.layout`), or, for
  a message in no group, to the next partition in turn;
* a consumer of a partitioned queue is a :class:`.consumer.PartitionedConsumer`;
* whatever finishes deliveries (acknowledge, commit, dead-letter, release) also tells
  the partitioned consumers, which give a partition away once all of it is finished.

The API layer above sees one queue and one consumer, and the provider below sees
ordinary queues and strictly ordered consumers, so neither knows partitions exist.
Sessions of factories without partitioned queues are not wrapped, and pay nothing.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jmslike.destination import Destination, Queue
from jmslike.errors import ConfigurationError, IllegalStateError, JMSException
from jmslike.message import Message
from jmslike.partitions.consumer import PartitionedConsumer
from jmslike.partitions.coordinator import coordinator_for
from jmslike.spi.provider import (
    ConsumerSpec,
    DeliverySink,
    ProviderConnection,
    ProviderConsumer,
    ProviderSession,
)

if TYPE_CHECKING:
    from jmslike.config import FactorySettings
    from jmslike.connection import Connection
    from jmslike.partitions.layout import PartitionSpec

__all__ = ["PartitionedSession", "refuse_stranded", "require_broker_exclusivity"]

_prepared: set[tuple[str, str]] = set()
_checked: set[tuple[str, str, int]] = set()
_prepared_lock = threading.Lock()


class PartitionedSession(ProviderSession):
    """A provider session with partitioned queues routed and consumed (see module doc)."""

    def __init__(
        self,
        inner: ProviderSession,
        connection: Connection,
        settings: FactorySettings,
        report: Callable[[JMSException], None],
    ) -> None:
        self.inner = inner
        self._connection = connection
        self._provider_connection: ProviderConnection = connection._provider
        self._settings = settings
        self._report = report
        self._scope = str(connection._factory.url)
        self._consumers: list[PartitionedConsumer] = []
        self.calls = threading.RLock()
        """Held around every call on the provider session, from the application's thread
        and from the coordinator's hand-overs alike: a provider session takes one call at
        a time (seen: a hand-over closing a partition's consumer while the session
        committed made Artemis close the connection, "Transaction not found")."""
        self._turns: dict[str, itertools.count[int]] = {}
        self._targets: dict[str, list[Queue]] = {}

    # ------------------------------------------------------------------ send
    def send(self, destination: Destination, message: Message) -> None:
        spec = self._settings.partitions_for(destination) if not destination.is_topic else None
        if spec is None:
            with self.calls:
                self.inner.send(destination, message)
            return
        targets = self._targets.get(spec.destination.key)
        if targets is None:
            targets = self._targets[spec.destination.key] = self._prepare(spec)
        group = message.ordering_group
        if isinstance(group, str):
            index = spec.partition_for_group(group)
        else:  # no order to keep: spread in turn
            turn = self._turns.setdefault(spec.destination.key, itertools.count())
            index = next(turn) % spec.count
        with self.calls:
            self.inner.send(targets[index], message)

    def _prepare(self, spec: PartitionSpec) -> list[Queue]:
        """The partition queues, declared single-active at the broker once per process
        (where the broker needs that before the first send, as RabbitMQ does)."""
        queues = [spec.partition(i) for i in range(spec.count)]
        declare = getattr(self._provider_connection, "declare_exclusive_queue", None)
        if declare is not None:
            for queue in queues:
                key = (self._scope, queue.key)
                with _prepared_lock:
                    if key in _prepared:
                        continue
                declare(queue)
                with _prepared_lock:
                    _prepared.add(key)
        return queues

    # --------------------------------------------------------------- consume
    def create_consumer(self, spec: ConsumerSpec, sink: DeliverySink) -> ProviderConsumer:
        destination = spec.destination
        partitions = (
            self._settings.partitions_for(destination) if not destination.is_topic else None
        )
        if partitions is None:
            with self.calls:
                return self.inner.create_consumer(spec, sink)
        if spec.exclusive or spec.standby:
            raise IllegalStateError(
                f"{destination} is partitioned: each of its partitions is already held to "
                "one consumer at a time; do not also declare it strictly ordered"
            )
        require_broker_exclusivity(self._provider_connection, destination)
        self._prepare(partitions)
        self._check_leftovers(partitions)
        factory = self._connection._factory
        coordinator = coordinator_for(
            self._scope,
            partitions,
            factory._internal_connection,
            self._settings.partition_heartbeat,
            self._settings.partition_timeout,
        )
        consumer = PartitionedConsumer(
            self.inner,
            self.calls,
            partitions,
            sink,
            selector=spec.selector,
            window=self._settings.prefetch,
            coordinator=coordinator,
            report=self._report,
        )
        self._consumers.append(consumer)
        return consumer

    def _check_leftovers(self, spec: PartitionSpec) -> None:
        """Once per process and queue: :func:`refuse_stranded`."""
        key = (self._scope, spec.destination.key, spec.count)
        with _prepared_lock:
            if key in _checked:
                return
        refuse_stranded(self._provider_connection, spec)
        with _prepared_lock:
            _checked.add(key)

    # ---------------------------------------------------------- finishing
    def _finished(self, tokens: Sequence[Any]) -> None:
        if not tokens or not self._consumers:
            return
        for consumer in self._consumers:
            consumer.finished(tokens)
        if any(c.closed for c in self._consumers):
            self._consumers = [c for c in self._consumers if not c.closed]

    def acknowledge(self, tokens: Sequence[Any]) -> None:
        with self.calls:
            self.inner.acknowledge(tokens)
            self._finished(tokens)

    def acknowledge_and_flow(
        self, tokens: Sequence[Any], consumer: ProviderConsumer, credit: int
    ) -> None:
        with self.calls:
            if isinstance(consumer, PartitionedConsumer):
                if tokens:
                    self.acknowledge(tokens)
                consumer.flow(credit)
                return
            self.inner.acknowledge_and_flow(tokens, consumer, credit)
            self._finished(tokens)

    def commit(self, tokens: Sequence[Any]) -> None:
        with self.calls:
            self.inner.commit(tokens)
            self._finished(tokens)

    def release(self, tokens: Sequence[Any]) -> None:
        with self.calls:
            self.inner.release(tokens)
            self._finished(tokens)

    def return_unseen(self, tokens: Sequence[Any]) -> None:
        with self.calls:
            self.inner.return_unseen(tokens)
            self._finished(tokens)

    def dead_letter(self, token: Any, reason: str) -> None:
        with self.calls:
            self.inner.dead_letter(token, reason)
            self._finished([token])

    def redeliver(self, token: Any) -> Message:
        with self.calls:
            return self.inner.redeliver(token)

    def rollback(self) -> None:
        with self.calls:
            self.inner.rollback()

    def close(self) -> None:
        with self.calls:
            self._consumers.clear()
            self.inner.close()

    def browse(self, destination: Destination, selector: str | None) -> Sequence[Message]:
        """A partitioned queue's messages, partition after partition: each group's in the
        order they will be delivered (ORD-20), since a group lives in one partition."""
        spec = self._settings.partitions_for(destination) if not destination.is_topic else None
        with self.calls:
            if spec is None:
                return self.inner.browse(destination, selector)
            found: list[Message] = []
            for index in range(spec.count):
                found.extend(self.inner.browse(spec.partition(index), selector))
            return found

    def unsubscribe(self, name: str) -> None:
        with self.calls:
            self.inner.unsubscribe(name)


def refuse_stranded(provider: ProviderConnection, spec: PartitionSpec) -> None:
    """Partitions beyond the count that still hold messages were left by a larger count;
    nothing would ever consume them, so refuse, naming them, rather than strand them
    silently. (Where the broker cannot be asked, as ActiveMQ Classic over STOMP and AMQP,
    this check is not made.)"""
    base = spec.destination.name + ".p"
    depths = provider.queue_depths(base) or {}
    stranded = {
        name: count
        for name, count in depths.items()
        if count and name[len(base) :].isdigit() and int(name[len(base) :]) >= spec.count
    }
    if stranded:
        listed = ", ".join(f"{name} ({count})" for name, count in sorted(stranded.items()))
        raise ConfigurationError(
            f"{spec.destination} is declared with partitions = {spec.count}, but "
            f"partitions beyond that still hold messages: {listed}. They were sent with "
            "a larger count and nothing would consume them now: consume them with the "
            "old count first (partitions = the old number, in every process), then "
            "change it; nothing was taken"
        )


def require_broker_exclusivity(provider: ProviderConnection, destination: Destination) -> None:
    """A partition needs the broker to hold it to one consumer across processes:
    ConfigurationError, with the setting that would help, where it cannot."""
    capabilities = provider.capabilities
    if not capabilities.exclusive_consumers or capabilities.exclusive_scope != "broker":
        raise ConfigurationError(
            f"{destination} is partitioned, but {capabilities.provider} "
            f"({capabilities.broker}) cannot hold a partition to one consumer across "
            f"processes (capability exclusive_scope={capabilities.exclusive_scope!r}); "
            + str(capabilities.extra.get("exclusive_hint") or "see docs/partitions.md")
        )
