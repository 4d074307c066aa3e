"""Delivery counts kept by the client, because STOMP brokers do not send them (nor does
RabbitMQ over AMQP 1.0: its ``delivery-count`` stays 0, only ``first-acquirer`` changes).

ActiveMQ Classic marks a redelivery only with ``redelivered:true``, Artemis likewise,
RabbitMQ classic queues the same (and a new ``message-id`` each time). JMSXDeliveryCount
and the redelivery policy need a number, so jmslike counts deliveries per message key
(jmslike's own message id header, else the broker's ``message-id``).

The table is per process and per broker address, not per connection: a message given
back by one connection is usually taken next by another connection of the same process
(a listener container, a consumer opened after a close). A key is the message id within
its stream (:func:`count_scope`), a queue or one subscription of a topic: every
subscription of a topic gets its own copy of a message, under the same id (counted by
the id alone, a second subscriber's copy came redelivered, count 2, on every broker).

A message that a consumer only buffered and gave back unseen comes back from the broker
flagged ``redelivered``, but for JMS it was never delivered;
:meth:`DeliveryCounts.returned_unseen` records that, so its next delivery keeps the
number it had. Across processes only the broker's flag is known: a redelivered message
seen first counts as 2.

Artemis over AMQP 1.0 counts, but only what comes back to it (one per MODIFIED outcome):
recover and rollback redeliver within the session, which the broker never hears of. So
jmslike counts there too, and each delivery takes the higher of its own number and the
broker's (``floor``): a message seen twice before its consumer closed comes back as 3.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict

from jmslike.spi.perbroker import PerBroker
from jmslike.spi.provider import ConsumerSpec

__all__ = ["DeliveryCounts", "count_scope", "counts_for"]

_LIMIT = 200_000
"""Keys remembered per broker; the oldest are forgotten first (a count is only needed
while its message is in flight, and acknowledged ones are forgotten at once)."""


class DeliveryCounts:
    """Deliveries seen per message key, thread-safe (stomp.py's receiver threads write)."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def count(
        self,
        key: str,
        redelivered: bool,
        broker_count: int | None = None,
        *,
        floor: int | None = None,
    ) -> int:
        """Number this delivery of ``key`` and remember it: ``broker_count`` deliveries
        before this one if the broker says so, else one more than this table saw, and at
        least ``floor`` (the broker's number, where it misses local redeliveries)."""
        with self._lock:
            if broker_count is not None:
                number = broker_count + 1
            else:
                seen = self._seen.pop(key, None)
                number = (2 if redelivered else 1) if seen is None else seen + 1
            if floor is not None:
                number = max(number, floor)
            self._seen[key] = number
            if len(self._seen) > _LIMIT:
                self._seen.popitem(last=False)
            return number

    def returned_unseen(self, key: str) -> None:
        """The last delivery of ``key`` never reached the application: undo its count."""
        with self._lock:
            seen = self._seen.pop(key, None)
            self._seen[key] = max(0, seen - 1) if seen is not None else 0

    def arrived_unseen(self, key: str) -> None:
        """A delivery of ``key`` reached a consumer already closing and went back without
        being counted or shown: the broker may flag the next delivery redelivered for it,
        so a key this table never saw is noted as seen 0 times. One it saw keeps its
        number (``returned_unseen`` would take back a count this delivery never added:
        a message given back seen, sent again to the closing link at once, then came
        back as a first delivery, seen on ActiveMQ Classic over AMQP)."""
        with self._lock:
            if key not in self._seen:
                self._seen[key] = 0
                if len(self._seen) > _LIMIT:
                    self._seen.popitem(last=False)

    def forget(self, key: str) -> None:
        """``key`` was acknowledged (or dead-lettered): it will not come again."""
        with self._lock:
            self._seen.pop(key, None)


counts_for = PerBroker(DeliveryCounts)
"""The process-wide table of one broker (``host:port``, or a failover list)."""


_OWN = itertools.count(1)
"""Numbers the plain topic consumers of the process: each is a subscription of its own."""


def count_scope(spec: ConsumerSpec, client_id: str | None = None) -> str:
    """The prefix of a consumer's keys: deliveries of one message id are counted per
    stream. A queue is one stream in the process (a message one consumer gave back may
    come to any other); each subscription of a topic is one (its name, whether it is
    durable and shared, and for a durable one that is not shared the connection's
    ``client_id``), and a plain topic consumer a stream of its own."""
    destination = spec.destination
    if not destination.is_topic:
        return destination.key + "\n"
    if not spec.named:
        return f"{destination.key}\n#{next(_OWN)}\n"
    kind = ("shared-" if spec.shared else "") + ("durable" if spec.durable else "own")
    owner = client_id or "" if spec.durable and not spec.shared else ""
    return f"{destination.key}\n{kind}:{owner}:{spec.subscription}\n"
