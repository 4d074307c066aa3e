"""A consumer of a partitioned queue: one broker consumer per partition it owns.

To the API layer this is one ``ProviderConsumer`` like any other: one sink, one credit
count, one ``close``. Underneath it holds a broker consumer for each partition the
coordinator gave it, each declared strictly ordered with ``standby=True`` (ORD-18): the
broker lets one consumer at a time take a partition's messages, in every process. That
is the safety net that keeps a partition in one process even while two processes
disagree about who owns it (a rebalance in progress).

Giving a partition away follows one rule: finish everything taken from it first. A
partition that leaves gets no more credit; what arrives from it after that, or still
waits here unseen, is kept aside; once the application has finished (acknowledged,
committed, dead-lettered) every message of the partition it was handed, the broker
consumer closes and gives the kept-aside messages back in order. Only then can the new
owner's standby become active, and it starts where this one stopped. A leaving partition
stays in ``_parts`` until its broker consumer has closed: a delivery can still arrive
while it closes, and it must land in the kept-aside list the close hands back (the
embedded broker gives back only what it is handed; a message dropped here stayed in
flight to a closed consumer and stalled the partition for good).

Credit: each partition's broker consumer keeps ``window`` messages in flight, and what
the API layer has not asked for yet waits here in a surplus queue per partition, handed
out one partition after another (``_Surplus``). So the API layer's credit accounting
stays exact however many partitions feed it, and no partition waits for another's round
trip or backlog.

Threads: deliveries arrive on provider threads (``_arrive``); ``flow``, ``close`` and
``finished`` come from the session's thread; ``assign`` from the coordinator's. One lock
guards the state. It is never held while calling into the provider (whose locks a
delivery may already hold), only while handing a message to the API layer's sink, which
serialises the sink as the SPI requires.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jmslike.errors import ConfigurationError, JMSException
from jmslike.message import Message
from jmslike.spi.provider import ConsumerSpec, DeliverySink, ProviderConsumer, ProviderSession

if TYPE_CHECKING:
    from jmslike.partitions.coordinator import Coordinator
    from jmslike.partitions.layout import PartitionSpec

__all__ = ["PartitionedConsumer"]

log = logging.getLogger("jmslike.partitions")

_ids = itertools.count(1)


class _Surplus:
    """What arrived before the API layer asked for it, a queue per partition, handed out
    one partition after another. Over STOMP a session that may hold many messages
    (CLIENT_ACKNOWLEDGE, transacted) subscribes with no window, and RabbitMQ pushed a
    partition's whole backlog at once; in one queue, the first message of a partition
    taken over later waited behind all of it (a SIGKILLed process's partitions moved in
    2 s and started 0.6 to 3.4 s later, benchmarks/partitions.py). A partition's own
    order is kept; partitions hold different groups, so their order among each other is
    nobody's promise."""

    __slots__ = ("_queues", "_turns")

    def __init__(self) -> None:
        self._queues: dict[int, deque[tuple[Message, Any]]] = {}
        self._turns: deque[int] = deque()

    def __bool__(self) -> bool:
        return bool(self._turns)

    def append(self, index: int, message: Message, token: Any) -> None:
        queue = self._queues.get(index)
        if queue is None:
            queue = self._queues[index] = deque()
            self._turns.append(index)
        queue.append((message, token))

    def popleft(self) -> tuple[int, Message, Any]:
        index = self._turns.popleft()
        queue = self._queues[index]
        message, token = queue.popleft()
        if queue:
            self._turns.append(index)
        else:
            del self._queues[index]
        return index, message, token

    def take(self, index: int, which: Callable[[Any], bool] | None = None) -> list[Any]:
        """Remove partition ``index``'s deliveries (those ``which`` picks), returning
        their tokens in arrival order."""
        queue = self._queues.get(index)
        if not queue:
            return []
        taken = [token for _m, token in queue if which is None or which(token)]
        if which is None or len(taken) == len(queue):
            del self._queues[index]
            self._turns.remove(index)
        else:
            chosen = {id(token) for token in taken}
            self._queues[index] = deque(e for e in queue if id(e[1]) not in chosen)
        return taken

    def tokens(self) -> list[tuple[int, Any]]:
        return [(index, token) for index, queue in self._queues.items() for _m, token in queue]

    def clear(self) -> None:
        self._queues.clear()
        self._turns.clear()


@dataclass(eq=False)
class _Part:
    """One owned partition."""

    index: int
    consumer: ProviderConsumer | None = None
    """None until the broker consumer exists (``assign`` makes it outside the lock)."""
    leaving: bool = False
    outstanding: int = 0
    """Messages handed to the API layer and not finished yet."""
    owed: int = 0
    """Credit to give back to the broker consumer (one per message passed on)."""
    granted: bool = False
    kept: list[Any] = field(default_factory=list)
    """Tokens of a leaving partition's messages the application never saw, in order.
    The close is handed this very list, so a delivery appended while the close runs is
    given back too (the embedded broker reads it under the lock its deliveries hold)."""
    giving: bool = False
    """Its give-away has begun (exactly one caller closes it)."""
    calls: threading.Lock = field(default_factory=threading.Lock)
    """Held around every call on ``consumer``: credit comes from the session's thread,
    the close from the coordinator's, and a provider consumer takes one call at a time
    (a close racing a STOMP subscription left the subscription behind, taking messages
    that nobody would ever acknowledge)."""
    closed: bool = False


class PartitionedConsumer(ProviderConsumer):
    """The API consumer's provider consumer on a partitioned queue."""

    def __init__(
        self,
        inner: ProviderSession,
        calls: threading.RLock,
        spec: PartitionSpec,
        sink: DeliverySink,
        *,
        selector: str | None,
        window: int,
        coordinator: Coordinator,
        report: Callable[[JMSException], None],
    ) -> None:
        self.id = f"{next(_ids):08d}"
        self.spec = spec
        self._inner = inner
        self._calls = calls
        """The session's call lock (PartitionedSession.calls): held around every call on
        the provider session and its consumers made from the coordinator's thread."""
        self._sink = sink
        self._selector = selector
        self._window = max(1, window)
        self._coordinator = coordinator
        self._lock = threading.RLock()
        self._parts: dict[int, _Part] = {}
        self._wanted: frozenset[int] = frozenset()
        self._surplus = _Surplus()
        self._tokens: dict[int, tuple[int, Any]] = {}
        """id(token) -> (partition, token) for what the API layer holds or buffers."""
        self._credit = 0
        self._asked = False
        self._closed = False
        self._misrouted_seen = False
        self._partitions = {i: spec.partition(i) for i in range(spec.count)}
        try:
            coordinator.register(self, report)
        except BaseException:
            # Refused (a process disagrees on the partition count): the coordinator's
            # thread may have attached partitions to it meanwhile, each a broker consumer
            # (on RabbitMQ with a connection of its own), which outlived the
            # application's connection when nobody closed them.
            self.close([], [])
            raise

    def __repr__(self) -> str:
        return f"<PartitionedConsumer {self.spec.destination} owns={sorted(self._parts)}>"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def owned(self) -> list[int]:
        """The partitions this consumer takes messages from now (leaving ones excluded)."""
        with self._lock:
            return sorted(i for i, p in self._parts.items() if not p.leaving)

    # ------------------------------------------------------------ deliveries
    def _arrive(self, index: int, message: Message, token: Any) -> None:
        """A provider thread: one delivery from partition ``index``."""
        misrouted: str | None = None
        with self._lock:
            part = self._parts.get(index)
            if part is None or part.leaving or self._closed:
                if part is not None:
                    part.kept.append(token)
                else:
                    # Its broker consumer has closed: the broker gives it back with the
                    # subscription (it is neither acknowledged nor seen).
                    log.debug("late delivery from %s ignored", self._partitions[index])
                return
            message.jms_destination = self.spec.destination
            group = message.ordering_group
            if (
                not self._misrouted_seen
                and isinstance(group, str)
                and self.spec.partition_for_group(group) != index
            ):
                self._misrouted_seen = True
                misrouted = group
            if self._credit > 0:
                self._pass_on(part, message, token)
            else:
                self._surplus.append(index, message, token)
        if misrouted is not None:
            self._coordinator.report(self._misrouted_error(misrouted, index))

    def _misrouted_error(self, group: str, index: int) -> ConfigurationError:
        """A group found on a partition that is not its own: the count changed while
        messages were queued, or a producer hashes differently. Its order against the
        group's messages on its own partition cannot be kept."""
        right = self.spec.partition_for_group(group)
        return ConfigurationError(
            f"group {group!r} arrived on {self._partitions[index]}, but with partitions = "
            f"{self.spec.count} it belongs on {self._partitions[right]}: a producer uses "
            "another partition count or hash, or the count changed while messages were "
            f"queued; the group's order across the two cannot be kept. Every producer and "
            f"consumer must declare {self.spec.destination} with the same count "
            "(docs/partitions.md)"
        )

    def _pass_on(self, part: _Part, message: Message, token: Any) -> None:
        """With the lock held: hand one message to the API layer."""
        self._credit -= 1
        part.outstanding += 1
        part.owed += 1
        self._tokens[id(token)] = (part.index, token)
        self._sink(message, token)

    def flow(self, credit: int) -> None:
        grants: list[tuple[_Part, int]] = []
        with self._lock:
            if self._closed:
                return
            if credit <= 0:
                # Nothing here can be taken by another session: a partition is this
                # consumer's alone. Only the API layer's unused credit goes.
                self._credit = 0
                return
            self._credit += credit
            self._asked = True
            while self._credit > 0 and self._surplus:
                index, message, token = self._surplus.popleft()
                self._pass_on(self._parts[index], message, token)
            grants = self._grants()
        for part, amount in grants:
            self._flow(part, amount)

    def _grants(self) -> list[tuple[_Part, int]]:
        """With the lock held: credit the broker consumers are owed."""
        grants = []
        for part in self._parts.values():
            if part.consumer is None or part.leaving:
                continue
            if not part.granted:
                part.granted = True
                part.owed = 0
                grants.append((part, self._window))
            elif part.owed:
                grants.append((part, part.owed))
                part.owed = 0
        return grants

    @staticmethod
    def _flow(part: _Part, amount: int) -> None:
        """Credit for one partition's broker consumer, unless it closed meanwhile."""
        with part.calls:
            if not part.closed and part.consumer is not None:
                part.consumer.flow(amount)

    def _close_part(
        self, part: _Part, delivered: Sequence[Any], undelivered: Sequence[Any]
    ) -> None:
        with self._calls, part.calls:
            if part.closed or part.consumer is None:
                return
            part.closed = True
            part.consumer.close(delivered, undelivered)

    def finished(self, tokens: Sequence[Any]) -> None:
        """The session finished (or gave back) these deliveries: a leaving partition
        whose last one this was is given away now."""
        done: list[_Part] = []
        with self._lock:
            for token in tokens:
                entry = self._tokens.pop(id(token), None)
                if entry is None:
                    continue
                part = self._parts.get(entry[0])
                if part is None:
                    continue
                part.outstanding -= 1
                if part.leaving and part.outstanding <= 0 and not part.giving:
                    part.giving = True
                    done.append(part)
        for part in done:
            self._give_away(part)

    def _holds(self, index: int) -> bool:
        """Whether the application holds unfinished messages of partition ``index`` (a
        partition is given away only once it holds none)."""
        with self._lock:
            return any(entry[0] == index for entry in self._tokens.values())

    # ------------------------------------------------------------ ownership
    def assign(self, partitions: Sequence[int]) -> None:
        """The coordinator's thread: own exactly ``partitions`` from now on."""
        wanted = frozenset(partitions)
        with self._lock:
            if self._closed:
                return
            self._wanted = wanted
            adds = sorted(wanted - set(self._parts))
            for index in adds:
                self._parts[index] = _Part(index)
            leaving = [p for i, p in self._parts.items() if i not in wanted and not p.leaving]
            ready = [p for p in leaving if self._leave(p)]
        for part in ready:
            self._give_away(part)
        for index in adds:
            self._attach(index)

    def _leave(self, part: _Part) -> bool:
        """With the lock held: stop taking from ``part``; True if it can go at once."""
        part.leaving = True
        kept = self._surplus.take(part.index)
        if kept:
            part.kept[:0] = kept
        if part.outstanding <= 0:
            part.giving = True
            return True
        return False

    def _attach(self, index: int) -> None:
        """Make the broker consumer of partition ``index``: strictly ordered, standby, so
        the broker holds it back while another consumer (in any process) is active."""
        try:
            with self._calls:
                spec = ConsumerSpec(
                    self._partitions[index], selector=self._selector, exclusive=True, standby=True
                )
                consumer = self._inner.create_consumer(
                    spec, lambda message, token: self._arrive(index, message, token)
                )
        except JMSException as exc:
            with self._lock:
                self._parts.pop(index, None)
                closed = self._closed
            if not closed:  # else the session closed under the hand-over: nothing lost
                self._coordinator.report(exc)
            return
        consumer.revoke = lambda stale: self._revoke(index, stale)
        log.debug("%s attached %s", self, self._partitions[index])
        grant = 0
        with self._lock:
            part = self._parts.get(index)
            if part is None or part.leaving or self._closed:
                part = None
            else:
                part.consumer = consumer
                if self._asked:
                    part.granted = True
                    grant = self._window
        if part is None:  # given up while it was being made
            with self._calls:
                consumer.close([], [])
            return
        if grant:
            self._flow(part, grant)

    def _give_away(self, part: _Part) -> None:
        """Everything handed out from ``part`` is finished: close its broker consumer,
        giving back what was kept aside, in order; take it again if wanted meanwhile."""
        try:
            self._close_part(part, [], part.kept)
        except JMSException as exc:
            if not self._closed:
                self._coordinator.report(exc)
        log.debug("partition %s given away", self._partitions[part.index])
        with self._lock:
            if self._parts.get(part.index) is part:
                del self._parts[part.index]
            again = part.index in self._wanted and not self._closed
            if again:
                self._parts[part.index] = _Part(part.index)
        if again:
            self._attach(part.index)

    def _revoke(self, index: int, stale: Callable[[Any], bool]) -> list[Any]:
        """A partition's broker consumer lost its deliveries (a reconnect): drop them
        here and in the API layer's buffer; the broker hands them out again."""
        with self._lock:
            dropped = self._surplus.take(index, stale)
            part = self._parts.get(index)
            if part is not None:
                dropped += [t for t in part.kept if stale(t)]
                part.kept = [t for t in part.kept if not stale(t)]
        api = (
            self.revoke(
                lambda token: self._tokens.get(id(token), (-1,))[0] == index and stale(token)
            )
            if self.revoke is not None
            else []
        )
        with self._lock:
            for token in api:
                self._tokens.pop(id(token), None)
                if part is not None:
                    part.outstanding -= 1
                    part.owed += 1
        return dropped + api

    # ------------------------------------------------------------------ close
    def lost(self) -> None:
        """The connection is lost for good: this consumer can take nothing more, so it
        leaves, and its partitions go to the live processes. Its own heart-beats come
        from another connection, which may well be alive: without this, they would keep
        its share.

        Its partitions' broker consumers are closed first, on a thread of their own
        (closing waits for the broker; this may run on a provider's thread). Where the
        broker gave back what they held when the connection dropped, that is all there
        is to it. But a partition's consumer may have a connection of its own (RabbitMQ
        over AMQP 1.0, jmslike_amqp/consumer.py), which outlives the lost one: left
        open, it kept the partition's single active consumer in this process, and the
        new owner's standby waited until the process closed its connection (1,836 of
        2,000 processed after 150 s, test_groups_kept_when_a_process_freezes, where a
        process woke from a freeze to a local idle timeout on its main connection)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            parts = list(self._parts.values())
            self._parts.clear()
            self._surplus.clear()
            self._tokens.clear()
        threading.Thread(
            target=self._let_go,
            args=(parts,),
            name=f"jmslike-partitions-lost-{self.id}",
            daemon=True,
        ).start()

    def _let_go(self, parts: list[_Part]) -> None:
        """After :meth:`lost`: close what the partitions still hold (what they had not
        finished comes again, flagged redelivered), then leave the group."""
        try:
            for part in parts:
                try:
                    self._close_part(part, [], [])
                except JMSException as exc:
                    log.debug("partition %s of a lost consumer: %s", part.index, exc)
        finally:
            self._coordinator.unregister(self)

    def close(self, delivered: Sequence[Any], undelivered: Sequence[Any]) -> None:
        with self._lock:
            self._closed = True  # from now on every delivery is kept aside (_arrive)
            parts = dict(self._parts)
            per_part: dict[int, tuple[list[Any], list[Any]]] = {i: ([], []) for i in parts}
            for tokens, slot in ((delivered, 0), (undelivered, 1)):
                for token in tokens:
                    entry = self._tokens.pop(id(token), None)
                    if entry is not None and entry[0] in per_part:
                        per_part[entry[0]][slot].append(token)
            for index, token in self._surplus.tokens():
                if index in per_part:
                    per_part[index][1].append(token)
            self._surplus.clear()
            for index, part in parts.items():
                part.kept[:0] = per_part[index][1]  # unseen ones first: arrival order
        try:
            for index, part in parts.items():
                self._close_part(part, per_part[index][0], part.kept)
        finally:
            with self._lock:
                self._parts.clear()
            self._coordinator.unregister(self)
