"""Which temporary destinations this process has seen deleted, for both providers.

JMS says a send to a deleted temporary queue fails; ActiveMQ Classic and RabbitMQ would
quietly create a new one, so a provider remembers the names of those whose connection
closed (or that were deleted) and refuses sends to them. A request/reply server makes
one per request, so the memory is bounded: the oldest names are forgotten first, and a
send to one forgotten that long ago is no longer caught (the broker's behaviour then).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from jmslike.errors import JMSException

__all__ = ["TEMPORARY_TOPIC_PREFIX", "DeletedTemporaries", "delete_made_up", "is_made_up_topic"]

log = logging.getLogger("jmslike.spi")

LIMIT = 10_000

TEMPORARY_TOPIC_PREFIX = "jmslike-temp-topic-"
"""How the name of a temporary topic that jmslike makes up starts, where the broker has
none of its own for the protocol (every broker over STOMP, RabbitMQ over AMQP 1.0): an
ordinary topic of a name nobody else uses, which only its connection consumes from. A
receiver reads a destination so named as a temporary topic."""


def is_made_up_topic(name: str) -> bool:
    """Whether the broker's name ``name`` (``/topic/...`` or bare) is such a topic."""
    return name.rpartition("/")[2].startswith(TEMPORARY_TOPIC_PREFIX)


class DeletedTemporaries:
    """A bounded, thread-safe set of destination names, oldest forgotten first."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._names: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __len__(self) -> int:
        return len(self._names)

    def add(self, name: str) -> None:
        self.update((name,))

    def update(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                self._names[name] = None
                self._names.move_to_end(name)
            while len(self._names) > self._limit:
                self._names.popitem(last=False)


def delete_made_up(names: Iterable[str], delete: Callable[[str], object] | None) -> None:
    """Delete, through the broker's management API (``delete``; None: none known), the
    ordinary queues that stand for temporary queues where the broker has none of its own
    (Artemis over STOMP, RabbitMQ over AMQP 1.0). A failure is logged, not raised: the
    application is done with them either way, and the broker only keeps a queue too many."""
    for name in names:
        if delete is None:
            log.warning("temporary queue %s left on the broker: no management API", name)
            continue
        try:
            delete(name)
        except JMSException as exc:
            log.warning("temporary queue %s left on the broker: %s", name, exc)
