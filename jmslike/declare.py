"""Queues made when an application is deployed, not by its first message.

A broker makes a queue when a client first uses it, and the moment of that first use is a
poor time for it:

* RabbitMQ 3.10 was seen to lose a durable queue, with the persistent messages it had
  confirmed into it, when it was killed within about a second of creating the queue
  (docs/reliability.md); a queue made at deploy time is long on disk when traffic comes.
* The partitions of a partitioned queue and a strictly ordered queue must be made
  single-active-consumer (RabbitMQ) or exclusive (Artemis) before anything else uses the
  name. RabbitMQ over AMQP 1.0 drops, without an error, what a Java producer sends to
  ``/amq/queue/<partition>`` before the queue exists; a producer that makes the queue
  first makes an ordinary one, which RabbitMQ cannot change afterwards
  (docs/partitions.md).
* A partition count lowered on a queue whose higher partitions still hold messages is
  better refused by a deploy step than by the first consumer in production.

:func:`declare_queue` (``Connection.declare_queue``, ``jmslike declare``) does for one
queue what its first use would do, reading the factory's settings as every other call
does, so ``partitions`` and ``strictly_ordered`` from a config file take effect here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from jmslike.config import FactorySettings
from jmslike.destination import Destination, parse_destination
from jmslike.errors import InvalidDestinationError
from jmslike.partitions.session import refuse_stranded, require_broker_exclusivity
from jmslike.spi.provider import ProviderConnection

__all__ = ["QueueDeclaration", "declare_queue"]

FIRST_USE = "made by the broker at its first use and kept: nothing to declare"
HELD = (
    "held by the broker to one active consumer across processes (declared through its "
    "management API where it needs that: single-active-consumer on RabbitMQ, exclusive on "
    "Artemis)"
)


@dataclass(frozen=True)
class QueueDeclaration:
    """What :func:`declare_queue` did for one queue."""

    queue: str
    """The queue as the application names it (``queue://orders``)."""
    kind: str
    """``"plain"``, ``"partitioned"`` or ``"strictly ordered"`` (ORD-18), from the settings."""
    broker_queues: tuple[str, ...]
    """The queues at the broker: the queue itself, or its partitions (``orders.p0``...)."""
    how: str
    """How the broker got them, in a few words (the provider's answer)."""

    def __str__(self) -> str:
        queues = ", ".join(self.broker_queues)
        return f"{self.queue} ({self.kind}: {queues}): {self.how}"


def declare_queue(
    provider: ProviderConnection, settings: FactorySettings, queue: Destination | str
) -> QueueDeclaration:
    """Make ``queue`` ready at the broker as its first use would: its partitions or
    itself held to one consumer across processes where the settings say so, else a
    durable queue. Bad input (a topic, a temporary queue) is refused before anything is
    asked of the broker."""
    destination = parse_destination(queue)
    if destination.is_topic or destination.is_temporary:
        raise InvalidDestinationError(
            f"cannot declare {destination}: only named queues are declared (a topic's "
            "subscriptions are made by its consumers, a temporary queue by "
            "create_temporary_queue)"
        )
    hold = getattr(provider, "declare_exclusive_queue", None)
    spec = settings.partitions_for(destination)
    if spec is not None:
        require_broker_exclusivity(provider, destination)
        refuse_stranded(provider, spec)
        partitions = [spec.partition(index) for index in range(spec.count)]
        if hold is not None:
            for partition in partitions:
                hold(partition)
        how = HELD if hold is not None else FIRST_USE
        names = tuple(p.name for p in partitions)
        return QueueDeclaration(str(destination), "partitioned", names, how)
    strict = settings.is_strictly_ordered(destination)
    if strict and hold is not None:
        how = HELD
        if not hold(destination):
            hint = provider.capabilities.extra.get("exclusive_hint") or ""
            how = f"held to one consumer within each process only: {hint}".rstrip(": ")
        return QueueDeclaration(str(destination), "strictly ordered", (destination.name,), how)
    how = provider.declare_queue(destination) or FIRST_USE
    kind = "strictly ordered" if strict else "plain"
    return QueueDeclaration(str(destination), kind, (destination.name,), how)
