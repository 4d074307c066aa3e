"""Which temporary destinations this process has seen deleted, for both providers.

JMS says a send to a deleted temporary queue fails; ActiveMQ Classic and RabbitMQ would
quietly create a new one, so a provider remembers the names of those whose connection
closed (or that were deleted) and refuses sends to them. A request/reply server makes
one per request, so the memory is bounded: the oldest names are forgotten first, and a
send to one forgotten that long ago is no longer caught (the broker's behaviour then).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

__all__ = ["DeletedTemporaries"]

LIMIT = 10_000


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
