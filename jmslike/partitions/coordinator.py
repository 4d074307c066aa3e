"""One process's part in a consumer group: which partitions it owns, and which of its
consumers takes each.

There is one coordinator per process, broker and partitioned queue, shared by every
consumer of that queue the process creates (a listener container's sessions, plain
consumers). It keeps the group's membership (heart-beats, :mod:`.membership`), works out
this process's partitions from the live members (:func:`.assignment.assign`, weighted by
how many consumers each process has), and spreads them over its own consumers
(:func:`.assignment.spread`), so a process with N consumers works up to N partitions at
once. Whenever the members or the local consumers change, it works it out again and
tells each consumer what to own; the consumers do the hand-overs.

The first consumer of a process waits one heart-beat round before it takes anything,
so that it knows the other members (and whether they agree on the partition count)
rather than grabbing every partition for a moment.

Threads: the hand-overs (attaching and closing broker consumers, which wait for the
broker) run on a thread of the coordinator's own, ``jmslike-partitions-<group>-assign``,
so that the membership thread never stops sending heart-beats while a broker is slow to
answer: a process busy with a hand-over must not look dead to the others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from jmslike.errors import ConfigurationError, JMSException
from jmslike.partitions.assignment import assign, spread
from jmslike.partitions.membership import Membership, View

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.partitions.consumer import PartitionedConsumer
    from jmslike.partitions.layout import PartitionSpec

__all__ = ["Coordinator", "coordinator_for"]

log = logging.getLogger("jmslike.partitions")


class Coordinator:
    """The partitions of one queue in this process."""

    def __init__(
        self,
        key: tuple[str, str, str],
        spec: PartitionSpec,
        connect: Callable[[], Connection],
        interval: float,
        timeout: float,
    ) -> None:
        self.key = key
        self.spec = spec
        self._connect = connect
        self._interval = interval
        self._timeout = timeout
        self._lock = threading.RLock()
        self._consumers: list[PartitionedConsumer] = []
        self._membership: Membership | None = None
        self._view: View = {}
        self._reporters: dict[PartitionedConsumer, Callable[[JMSException], None]] = {}
        self._dirty = threading.Event()
        self._worker: threading.Thread | None = None

    def register(
        self, consumer: PartitionedConsumer, report: Callable[[JMSException], None] | None = None
    ) -> None:
        """A new local consumer of the queue; the first one joins the group. Returns once
        the group's members have been heard from, raising ConfigurationError if one
        disagrees on the partition count."""
        with self._lock:
            if self._membership is None:
                self._membership = Membership(
                    self._connect,
                    self.spec,
                    interval=self._interval,
                    timeout=self._timeout,
                    on_change=self._changed,
                    on_conflict=self.report,
                )
            membership = self._membership
            self._consumers.append(consumer)
            if report is not None:
                self._reporters[consumer] = report
            membership.set_capacity(len(self._consumers))
        try:
            membership.wait_settled()  # outside the lock: the first view arrives through it
        except JMSException:
            self.unregister(consumer)
            raise
        self._kick()

    def set_reporter(
        self, consumer: PartitionedConsumer, report: Callable[[JMSException], None]
    ) -> None:
        with self._lock:
            self._reporters[consumer] = report

    def unregister(self, consumer: PartitionedConsumer) -> None:
        """A local consumer closed (its partitions are given back); the last one leaves
        the group, so the other processes take its partitions at once."""
        with self._lock:
            if consumer in self._consumers:
                self._consumers.remove(consumer)
            self._reporters.pop(consumer, None)
            if self._consumers:
                if self._membership is not None:
                    self._membership.set_capacity(len(self._consumers))
                self._kick()
                return
            leaving = self._leave()
        if leaving is not None:
            leaving.close()  # outside the lock: its thread may be waiting for it

    def _leave(self) -> Membership | None:
        """With the lock held: no consumer is left; the caller closes what is returned."""
        membership, self._membership = self._membership, None
        self._view = {}
        _forget(self)
        self._dirty.set()  # the worker sees no membership and ends
        return membership

    def report(self, error: JMSException) -> None:
        """An error no call returns (a member that disagrees, a partition that could not
        be attached): to the exception listeners of the local consumers' connections."""
        with self._lock:
            reporters = list(self._reporters.values())
        if not reporters:
            log.error("%s", error)
        for report in reporters:
            report(error)

    def _changed(self, view: View) -> None:
        """The membership thread: a new view; the hand-overs happen on the worker."""
        with self._lock:
            if self._membership is None:
                return
            self._view = view
        self._kick()

    def _kick(self) -> None:
        """Have the worker thread work the assignment out again (starting it if needed)."""
        with self._lock:
            if self._membership is None:
                return
            self._dirty.set()
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._work,
                    name=f"jmslike-partitions-{self.spec.consumer_group}-assign",
                    daemon=True,
                )
                self._worker.start()

    def _work(self) -> None:
        while True:
            self._dirty.wait()
            with self._lock:
                self._dirty.clear()
                membership = self._membership
                if membership is None:
                    return
                consumers = list(self._consumers)
                members = {m: v.capacity for m, v in self._view.items()}
                members[membership.id] = len(consumers)
            mine = assign(self.spec.count, members).get(membership.id, [])
            local = spread(mine, [c.id for c in consumers])
            log.debug("%s: %d members, this process owns %s", self.spec, len(members), mine)
            for consumer in consumers:
                try:
                    consumer.assign(local.get(consumer.id, []))
                except JMSException as exc:
                    if not consumer.closed:  # else its session closed under the hand-over
                        self.report(exc)
                except Exception:  # the thread must go on: a hand-over left is a stall
                    log.exception("%s: hand-over for %r failed", self.spec, consumer)


_registry: dict[tuple[str, str, str], Coordinator] = {}
_registry_lock = threading.Lock()


def coordinator_for(
    scope: str,
    spec: PartitionSpec,
    connect: Callable[[], Connection],
    interval: float,
    timeout: float,
) -> Coordinator:
    """The process's coordinator of ``spec`` on the broker ``scope`` (made on first use;
    forgotten when its last consumer leaves)."""
    key = (scope, spec.destination.key, spec.consumer_group)
    with _registry_lock:
        found = _registry.get(key)
        if found is None:
            found = _registry[key] = Coordinator(key, spec, connect, interval, timeout)
        elif found.spec.count != spec.count:
            raise ConfigurationError(
                f"{spec.destination} has partitions = {spec.count} in one factory and "
                f"{found.spec.count} in another of this process: every factory must "
                "declare the same count (partitioned_destinations)"
            )
        return found


def _forget(coordinator: Coordinator) -> None:
    with _registry_lock:
        if _registry.get(coordinator.key) is coordinator:
            del _registry[coordinator.key]
