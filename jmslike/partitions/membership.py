"""Who is alive in a consumer group: heart-beats on a broker topic.

Each process that consumes a partitioned queue sends a small message to the group's
topic every ``partition_heartbeat`` seconds (non-persistent, with a time to live, so a
late one is never delivered) and listens to the others' on the same topic. A member
that stays silent for ``partition_timeout`` seconds is gone: killed, frozen, or cut
off. One that closes its last consumer says goodbye, so the others move its
partitions at once rather than after the timeout.

The topic is an ordinary one on the same broker, so this needs nothing the broker does
not already do, and works the same over every protocol. The heart-beats carry the
partition count each process was configured with, and the version of the assignment
rule it runs (``assignment.RULE``); a process that disagrees on either is left out of
the assignment and reported: two counts would route one group to two partitions, and
two rules would each leave some partition to the other's process, where it would wait.

Threads: the others' heart-beats arrive through a message listener, on the dispatcher
thread of the membership's own session (a listener keeps its credit, where a
``receive()`` with a timeout would withdraw it every time); one thread,
``jmslike-partitions-<group>``, sends this process's heart-beats, drops the silent and
calls ``on_change`` with each new view. Neither runs user code.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jmslike.errors import ConfigurationError, JMSException
from jmslike.message import DeliveryMode, Message
from jmslike.partitions.assignment import RULE

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.partitions.layout import PartitionSpec

__all__ = ["Member", "Membership", "View"]

log = logging.getLogger("jmslike.partitions")

_MEMBER = "jmslikeMember"
_CAPACITY = "jmslikeCapacity"
_PARTITIONS = "jmslikePartitions"
_PROCESS = "jmslikeProcess"
_LEAVING = "jmslikeLeaving"
_RULE = "jmslikeAssignmentRule"


@dataclass(frozen=True, slots=True)
class Member:
    """One process of the group as its last heart-beat described it."""

    id: str
    capacity: int
    process: str


View = dict[str, Member]
"""The live members, by id (this process's own member included)."""


class Membership:
    """This process's member of one consumer group, and its view of the others."""

    def __init__(
        self,
        connect: Callable[[], Connection],
        spec: PartitionSpec,
        *,
        interval: float,
        timeout: float,
        on_change: Callable[[View], None],
        on_conflict: Callable[[JMSException], None],
    ) -> None:
        self.spec = spec
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.process = f"{socket.gethostname()}:{os.getpid()}"
        self.capacity = 1
        self._interval = interval
        self._timeout = timeout
        self._on_change = on_change
        self._on_conflict = on_conflict
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, Member]] = {}
        self._conflicts: dict[str, JMSException] = {}
        """Members left out, and why (the error each was reported with)."""
        self._view: View = {}
        self._stop = threading.Event()
        self._beat_now = threading.Event()
        self._settled = threading.Event()
        self._connection = connect()
        try:
            session = self._connection.create_session()
            self._producer = session.create_producer(spec.heartbeat_topic)
            self._producer.delivery_mode = DeliveryMode.NON_PERSISTENT
            self._producer.time_to_live = timeout
            self._session = session
            self._consumer = self._connection.create_session().create_consumer(spec.heartbeat_topic)
            self._consumer.set_message_listener(self._on_heartbeat)
            self._connection.start()
        except BaseException:
            self._connection.close()
            raise
        self._thread = threading.Thread(
            target=self._run, name=f"jmslike-partitions-{spec.consumer_group}", daemon=True
        )
        self._thread.start()

    # ----------------------------------------------------------------- public
    def wait_settled(self) -> None:
        """Block until one heart-beat round has been heard (the first view), and raise
        ConfigurationError if a member disagrees on the partition count or the
        assignment rule."""
        self._settled.wait(self._timeout + 2 * self._interval)
        if self._conflicts:
            raise next(iter(self._conflicts.values()))

    def set_capacity(self, capacity: int) -> None:
        """How many consumers this process has on the queue; told to the others at once."""
        if capacity != self.capacity:
            self.capacity = capacity
            self._beat_now.set()

    def close(self) -> None:
        """Say goodbye (the others move this process's partitions at once) and stop."""
        self._stop.set()
        self._beat_now.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(self._timeout + 5.0)
        try:
            self._beat(leaving=True)
        except JMSException as exc:
            log.debug("goodbye of %s not sent: %s", self.id, exc)
        finally:
            self._connection.close()

    # ----------------------------------------------------------------- thread
    def _run(self) -> None:
        settle_at = time.monotonic() + 1.5 * self._interval
        next_beat = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_beat or self._beat_now.is_set():
                self._beat_now.clear()
                try:
                    self._beat()
                except JMSException as exc:
                    log.warning("heart-beat of %s for %s failed: %s", self.id, self.spec, exc)
                next_beat = now + self._interval
            if now >= settle_at:
                self._update()
                self._settled.set()
            wake = next_beat if self._settled.is_set() else min(next_beat, settle_at)
            self._beat_now.wait(max(0.0, min(wake - time.monotonic(), self._interval / 4)))

    def _on_heartbeat(self, message: Message) -> None:
        """The membership session's dispatcher thread: another member's heart-beat."""
        self._heard(message.get_object_property)

    def _beat(self, *, leaving: bool = False) -> None:
        message = self._session.create_message()
        message.set_string_property(_MEMBER, self.id)
        message.set_int_property(_CAPACITY, self.capacity)
        message.set_int_property(_PARTITIONS, self.spec.count)
        message.set_int_property(_RULE, RULE)
        message.set_string_property(_PROCESS, self.process)
        message.set_boolean_property(_LEAVING, leaving)
        self._producer.send(message)

    def _heard(self, prop: Callable[[str], object]) -> None:
        member = prop(_MEMBER)
        if not isinstance(member, str) or member == self.id:
            return
        if prop(_LEAVING) is True:
            with self._lock:
                self._seen.pop(member, None)
            self._beat_now.set()  # look again now, not at the next beat
            return
        count, rule = prop(_PARTITIONS), prop(_RULE)
        if count != self.spec.count or rule != RULE:
            if member not in self._conflicts:
                if count != self.spec.count:
                    error = self._conflict_error(member, count if isinstance(count, int) else -1)
                else:
                    error = self._rule_error(member, rule)
                self._conflicts[member] = error
                log.error("%s", error)
                if self._settled.is_set():
                    self._on_conflict(error)
            return
        capacity = prop(_CAPACITY)
        process = prop(_PROCESS)
        with self._lock:
            self._seen[member] = (
                time.monotonic(),
                Member(member, capacity if isinstance(capacity, int) else 1, str(process)),
            )

    def _update(self) -> None:
        """Drop the silent, and tell ``on_change`` if the live set or a capacity changed."""
        cutoff = time.monotonic() - self._timeout
        with self._lock:
            for member, (seen_at, _m) in list(self._seen.items()):
                if seen_at < cutoff:
                    log.info("member %s of %s is silent: counted as gone", member, self.spec)
                    del self._seen[member]
            view: View = {m.id: m for _t, m in self._seen.values()}
        view[self.id] = Member(self.id, self.capacity, self.process)
        if view != self._view:
            self._view = view
            self._on_change(dict(view))

    def _rule_error(self, member: str, rule: object) -> ConfigurationError:
        told = f"rule {rule}" if isinstance(rule, int) else "an older rule (before rule 2)"
        return ConfigurationError(
            f"member {member} of consumer group {self.spec.consumer_group!r} on "
            f"{self.spec.destination} assigns partitions by {told}, this process by rule "
            f"{RULE}: the two would disagree on who owns which partition. Run one jmslike "
            "version in every process of a consumer group (across a change of the rule, "
            "stop the old processes before starting new ones); that process is left out "
            "until they agree"
        )

    def _conflict_error(self, member: str, count: int) -> ConfigurationError:
        return ConfigurationError(
            f"{self.spec.destination} has partitions = {self.spec.count} in this process "
            f"but {count} in another process of consumer group {self.spec.consumer_group!r} "
            f"(member {member}): every process must declare the same count "
            f'([destinations."{self.spec.destination.key}"] partitions in jmslike.toml, or '
            "partitioned_destinations); that process is left out until they agree"
        )
