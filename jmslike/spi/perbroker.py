"""State that every connection of the process to one broker shares.

jmslike keeps some rules for a whole process rather than per connection, where the broker
cannot keep them over the protocol (STOMP everywhere; AMQP 1.0 on RabbitMQ): how often a
message was delivered (counts.py) and which consumer is active on a strictly ordered
destination (strict.py). Both are looked up by the broker's address (``host:port``, or a
failover list), through one ``PerBroker``, which any provider may use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerBroker"]

T = TypeVar("T")


class PerBroker(Generic[T]):
    """``per_broker(address)`` is the process's one ``T`` for that broker."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._by_address: dict[str, T] = {}

    def __call__(self, address: str) -> T:
        with self._lock:
            found = self._by_address.get(address)
            if found is None:
                found = self._by_address[address] = self._make()
            return found
