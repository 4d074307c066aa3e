"""The ordering engine: group names, group binding on send, group holding on delivery.

Messages that share a group name are processed one after another, in the order they
reached their destination (docs/ordering.md). This module holds the rules that do not depend on
a broker, so every provider uses the same code:

* naming (ORD-1, ORD-2) and the producer-side binding that stamps ``JMSXGroupID`` and
  ``JMSXGroupSeq`` on each message (ORD-4..ORD-8a);
* the group holding table (ORD-9, ORD-10): which session holds unfinished messages of a
  group, and what waits behind it. The embedded broker dispatches with it; providers whose
  broker ignores groups gate deliveries with it on the client (ORD-16).

Every operation is O(1) per message: a dict from group to its state, and a deque of what
waits in that group. Nothing here scans a queue.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from jmslike.errors import IllegalStateError, InvalidOrderingGroupError
from jmslike.message import _NO_PROPERTIES, GROUP_ID, GROUP_SEQ, Message

__all__ = [
    "MAX_GROUP_NAME",
    "ClientGroupGate",
    "GroupBinding",
    "GroupState",
    "GroupTable",
    "Returned",
    "StripedGroupGate",
    "acquire_client_gate",
    "generate_group_name",
    "release_client_gate",
    "returned_of",
    "validate_group_name",
]

MAX_GROUP_NAME = 255

T = TypeVar("T")


def validate_group_name(name: object, *, what: str = "ordering group name") -> str:
    """Return ``name`` if it is a legal group name (ORD-1), else raise.

    A legal name is a non-empty ``str`` of at most 255 characters. The error names the
    bad value, and is raised at the call that got it, before anything is sent.
    """
    if not isinstance(name, str):
        raise InvalidOrderingGroupError(
            f"invalid {what} {name!r:.80}: need a str, not {type(name).__name__} (ORD-1)"
        )
    if not name:
        raise InvalidOrderingGroupError(f"invalid {what} '': must not be empty (ORD-1)")
    if len(name) > MAX_GROUP_NAME:
        raise InvalidOrderingGroupError(
            f"invalid {what} {name[:40]!r}...: {len(name)} characters, at most "
            f"{MAX_GROUP_NAME} allowed (ORD-1)"
        )
    return name


_last_ms = 0
_counter = 0


def generate_group_name() -> str:
    """A time-based, statistically unique group name (ORD-2).

    The name starts with the hex millisecond clock, so generated groups sort by creation
    time in broker consoles; 64 random bits and a process-local counter follow, so two
    processes (or two calls in the same millisecond) never collide in practice.
    """
    global _last_ms, _counter
    now = time.time_ns() // 1_000_000
    if now == _last_ms:
        _counter += 1
    else:
        _last_ms, _counter = now, 0
    return f"g-{now:011x}-{secrets.token_hex(8)}-{os.getpid() & 0xFFFF:04x}{_counter:x}"


class GroupBinding:
    """A producer's binding to one group: the name and the producer's sequence count.

    The count starts at 1 each time the producer binds (ORD-8a) and rises with every
    message stamped, so a receiver can read a message's place in its producer's run
    (ORD-4, ORD-20).
    """

    __slots__ = ("_last_expiration", "_next_seq", "lock", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._next_seq = 1
        self._last_expiration = 0
        self.lock = threading.RLock()
        """Held by a send from stamping to handing the message to the provider, so that
        threads sharing the producer send in sequence order; re-entrant for an
        interceptor that sends through the same producer."""

    def stamp(self, message: Message) -> None:
        """Put the group and the next sequence number on ``message`` (ORD-4, ORD-7).

        Writes the property dict directly: the names are known-good, and a bound producer
        must overwrite a group the application put on the message itself (ORD-7).
        """
        props = message._properties
        if props is _NO_PROPERTIES:  # a stored copy's shared empty table: take its own
            props = message._own_properties()
        props[GROUP_ID] = self.name
        seq = self._next_seq
        props[GROUP_SEQ] = seq
        self._next_seq = seq + 1
        message._group_prev_expiration = self._last_expiration  # 0 for a binding's first
        self._last_expiration = message.jms_expiration
        if message._prop_types:
            message._prop_types.pop(GROUP_ID, None)
            message._prop_types.pop(GROUP_SEQ, None)


def check_message_group(message: Message) -> None:
    """Validate a group the application set on the message itself (ORD-7, ORD-1)."""
    value = message._properties.get(GROUP_ID)
    if value is not None:
        validate_group_name(value, what="JMSXGroupID property")


class GroupState(Generic[T]):
    """One group on one destination: who holds it, how much, and what waits behind it."""

    __slots__ = ("holder", "unfinished", "waiting")

    def __init__(self) -> None:
        self.holder: Hashable | None = None
        self.unfinished = 0
        self.waiting: deque[T] = deque()

    def __repr__(self) -> str:
        return (
            f"<GroupState holder={self.holder!r} unfinished={self.unfinished} "
            f"waiting={len(self.waiting)}>"
        )


class GroupTable(Generic[T]):
    """Who holds which group (ORD-9): at most one holder with unfinished messages.

    ``T`` is what waits in a group: broker entries for the embedded broker, parked
    deliveries for a client-side gate. The table forgets a group as soon as it is free
    and empty, so millions of short-lived groups cost nothing once done.
    """

    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: dict[str, GroupState[T]] = {}

    def __len__(self) -> int:
        return len(self._groups)

    def get(self, group: str) -> GroupState[T] | None:
        return self._groups.get(group)

    def state(self, group: str) -> GroupState[T]:
        state = self._groups.get(group)
        if state is None:
            state = self._groups[group] = GroupState()
        return state

    @staticmethod
    def may_take(state: GroupState[T], holder: Hashable) -> bool:
        """True when ``holder`` may get the group's next message now (ORD-9)."""
        return state.holder is None or state.holder == holder

    @staticmethod
    def take(state: GroupState[T], holder: Hashable) -> None:
        state.holder = holder
        state.unfinished += 1

    def finish(self, group: str, state: GroupState[T], count: int = 1) -> bool:
        """``count`` of the holder's messages finished (ORD-10); True if the group is free."""
        state.unfinished -= count
        if state.unfinished > 0:
            return False
        state.unfinished = 0
        state.holder = None
        if not state.waiting:
            self._groups.pop(group, None)
        return True

    def discard_if_idle(self, group: str, state: GroupState[T]) -> None:
        if state.holder is None and not state.waiting:
            self._groups.pop(group, None)

    def states(self) -> list[GroupState[T]]:
        """Every group's state (for browsing and diagnostics; O(groups))."""
        return list(self._groups.values())

    def holders(self) -> dict[str, Hashable]:
        """Group -> holder for every held group (for invariant checks in tests)."""
        return {name: st.holder for name, st in self._groups.items() if st.holder is not None}


# --------------------------------------------------------------------------- client gate

GroupKey = tuple[str, str]
"""(destination key, group name): a group's scope is one destination (ORD-3)."""


Returned = tuple[str, str | None, str | None, int | None]
"""A message given back to the broker, as the client gate needs it (``_gate_returned``):
(gate scope, group, message id, JMSXGroupSeq)."""


def returned_of(scope: str, message: Message) -> Returned:
    sequence = message._properties.get(GROUP_SEQ)
    return (
        scope,
        message.ordering_group,
        message.jms_message_id,
        sequence if isinstance(sequence, int) else None,
    )


IN_PROCESS_REACH = 1024
"""How far back before a grouped message the gate looks for earlier ones that a feed of
this process holds (``ClientGroupGate.expect``); for others, 16."""

RECENT_ARRIVALS = 10_000
"""Message ids the gate remembers having seen arrive (``_note_arrival``): enough for the
copies that come in the seconds around a reconnect, about 2 MB at most."""

RECENT_PRODUCERS = 100_000
"""(group, producer) pairs whose last JMSXGroupSeq the gate remembers (``_note_sequence``)."""

GATE_STRIPES = 16
"""How many gates side by side make the process's client gate for one broker
(``StripedGroupGate``)."""


def _place_among_returned(line: deque[_Slot[Any]], sequence: int | None) -> int:
    """Where an arriving message of JMSXGroupSeq ``sequence`` waits in a group's line:
    ahead of the messages given back at its front that come after it in send order (a
    copy that beat its own in-doubt commit's answer, say), else at the end; without a
    sequence, at the end (arrival order)."""
    if sequence is not None:
        for place, slot in enumerate(line):
            if slot.returned_seq is None:
                break
            if slot.returned_seq > sequence:
                return place
    return len(line)


class _Slot(Generic[T]):
    """A place in a group's line at the client gate: a parked delivery, or a hole kept
    for a message that went back to the broker and is expected again (ORD-10/11)."""

    __slots__ = ("deadline", "holder", "item", "message_id", "returned_seq")

    def __init__(
        self, holder: Hashable | None, item: T | None, message_id: str | None, deadline: float
    ) -> None:
        self.holder = holder
        self.item = item
        self.message_id = message_id
        self.deadline = deadline
        self.returned_seq: int | None = None
        """For a message given back: its JMSXGroupSeq, where known (``give_back``)."""


class ClientGroupGate(Generic[T]):
    """ORD-16 within a process: group holding on the client, for brokers that ignore groups.

    Such a broker spreads a group's messages over whatever consumers ask. Each delivery
    passes through ``arrive``: it goes on to its consumer at once when its group is free
    (or already held by the consumer's session) and nothing of the group waits ahead of
    it; otherwise it is parked in the group's line. When the holding session finishes
    everything it holds (``finish``), the line moves: the next parked delivery goes to its
    consumer, whose session now holds the group, and so on.

    Messages given back to the broker (a consumer or session closed with messages in
    hand) will come again, maybe to another consumer; ``give_back`` leaves a hole for each
    at the front of the line, so nothing later overtakes them. A hole is filled when its
    message (same ``JMSMessageID``) arrives, and dropped after ``wait_for_return`` seconds
    (the broker may have dead-lettered it, or another process taken it).

    One gate serves every connection of the process to one broker, so ORD-9 holds across
    sessions and connections. ``deliver(item)`` hands a released item to its consumer. It
    is called outside the gate's lock, in the order the lock's holders released the items
    (``_hand_out``): called under it, a reader thread that found the consumer's own lock
    taken slept holding the gate's, and every other reader and session queued behind it.
    The lock was the one contended lock of a process with four grouped listener sessions
    on RabbitMQ (taken at 24-44% of its acquisitions); what relieved it most was
    ``StripedGroupGate``, below.
    """

    def __init__(
        self,
        deliver: Callable[[T], None],
        wait_for_return: float = 30.0,
        wait_for_predecessor: float = 0.25,
        share: int = 1,
    ) -> None:
        """``share``: this gate is one of that many stripes (``StripedGroupGate``), so it
        remembers that much less (``RECENT_ARRIVALS``, ``RECENT_PRODUCERS``)."""
        self._deliver = deliver
        self.wait_for_return = wait_for_return
        self.wait_for_predecessor = wait_for_predecessor
        self._recent_arrivals = max(RECENT_ARRIVALS // share, 1)
        self._recent_producers = max(RECENT_PRODUCERS // share, 1)
        self._lock = threading.Lock()
        self._table: GroupTable[_Slot[T]] = GroupTable()
        self._holes: dict[tuple[GroupKey, str], _Slot[T]] = {}
        self._last_seq: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._arrivals: OrderedDict[tuple[GroupKey, str], int] = OrderedDict()
        """How often each recent message id arrived: an in-doubt commit's message whose
        copy already came needs no place kept for it (``give_back(in_doubt=True)``)."""
        self._outgoing: deque[T] = deque()
        """Items released under the lock, to be delivered after it in this order."""
        self._delivering = threading.Lock()
        """Held by the one thread delivering ``_outgoing``."""
        self._in_process: dict[tuple[GroupKey, str], int] = {}
        """Hole ids (``_seq_id``) of grouped messages a listener container's feed of this
        process has read and not yet handed to a session (``expect``): a hole for one
        waits for it however long that takes, not ``wait_for_predecessor``."""

    def __len__(self) -> int:
        return len(self._table)

    def arrive(
        self,
        key: GroupKey,
        holder: Hashable,
        message_id: str | None,
        item: T,
        sequence: int | None = None,
        predecessor_expiration: int = 0,
    ) -> bool:
        """A delivery of group ``key`` for ``holder``'s session came from the broker.
        Returns True if it went straight through (delivered when this returns, or by the
        thread delivering now), False if it waits in its group's line, or may.

        With ``sequence`` (the message's JMSXGroupSeq; the provider passes it where its
        consumers read from several sockets, so that arrival order need not be the
        broker's order), a message whose producer's earlier messages of the group have not
        arrived yet waits up to ``wait_for_predecessor`` seconds for them (ORD-9, ORD-16),
        except for the message just before it once that one's ``predecessor_expiration``
        (epoch ms, 0: never) has passed: the broker drops it unseen (ORD-13). One that a
        listener container's feed of this process holds (``expect``) is waited for as
        long as it takes.
        """
        expect_later = through = False
        with self._lock:
            state = self._table.state(_flat(key))
            holes = self._holes
            hole = None
            if sequence is not None and message_id:
                hole_id = _seq_id(message_id, sequence)
                if self._in_process:
                    self._arrived((key, hole_id))
                expect_later = self._expect_predecessors(
                    key, state, message_id, sequence, predecessor_expiration
                )
                if holes:
                    hole = holes.pop((key, message_id), None) or holes.pop((key, hole_id), None)
            elif message_id and holes:
                hole = holes.pop((key, message_id), None)
            if message_id:
                self._note_arrival(key, message_id)
            if hole is not None:
                hole.holder, hole.item = holder, item
                self._release(key, state)
            elif not state.waiting and self._table.may_take(state, holder):
                self._table.take(state, holder)
                self._outgoing.append(item)
                through = True
            else:
                place = _place_among_returned(state.waiting, sequence)
                state.waiting.insert(place, _Slot(holder, item, message_id, 0.0))
                if place == 0:
                    self._release(key, state)
        self._hand_out()
        if expect_later:
            self._expire_later(key, self.wait_for_predecessor)
        return through

    def _expect_predecessors(
        self,
        key: GroupKey,
        state: GroupState[_Slot[T]],
        message_id: str,
        sequence: int,
        predecessor_expiration: int,
    ) -> bool:
        """Leave holes for the producer's earlier messages of the group that have not
        arrived (at most 16; the first message seen of a producer counts back from its
        number). Returns True if it left any. Under the lock."""
        last = self._note_sequence(key, message_id, sequence)
        if last is not None and sequence <= last + 1:
            # The next of its producer (the usual case: nothing missing), a redelivery, or
            # the producer bound the group again (ORD-8a).
            return False
        # Further back than 16 only for messages a feed of this process holds (``expect``).
        reach = IN_PROCESS_REACH if last is not None and self._in_process else 16
        first_missing = max((last or 0) + 1, sequence - reach, 1)
        deadline = time.monotonic() + self.wait_for_predecessor
        end = sequence
        if 0 < predecessor_expiration <= time.time() * 1000:
            end -= 1  # the one before expired: it will not come
        left = False
        for missing in range(first_missing, end):
            hole_id = _seq_id(message_id, missing)
            if (key, hole_id) in self._holes:
                continue
            held_here = (key, hole_id) in self._in_process
            if not held_here and missing < sequence - 16:
                continue
            hole = _Slot[T](None, None, hole_id, math.inf if held_here else deadline)
            self._holes[(key, hole_id)] = hole
            state.waiting.append(hole)
            left = True
        return left

    def expect(self, key: GroupKey, message_id: str, sequence: int) -> None:
        """A listener container's feed of this process read this grouped message and holds
        it until one of its sessions asks (``_feed.py``). A later message of its producer
        that another feed hands out first waits for it at the gate (ORD-8), however long
        the sessions of the first feed take, instead of ``wait_for_predecessor``: it is
        known to be on its way. Two containers on one queue of a broker that keeps no
        groups processed every group out of order without this."""
        hole_key = (key, _seq_id(message_id, sequence))
        with self._lock:
            self._in_process[hole_key] = self._in_process.get(hole_key, 0) + 1
            hole = self._holes.get(hole_key)
            if hole is not None and hole.item is None:
                hole.deadline = math.inf

    def unexpect(self, key: GroupKey, message_id: str, sequence: int) -> None:
        """The feed gave the message back to the broker, or lost it with its connection,
        without handing it out: a hole for it waits ``wait_for_return`` from now (the
        broker delivers it again, maybe to another process)."""
        hole_key = (key, _seq_id(message_id, sequence))
        with self._lock:
            if not self._arrived(hole_key):
                return
            hole = self._holes.get(hole_key)
            if hole is None or hole.deadline != math.inf:
                return
            hole.deadline = time.monotonic() + self.wait_for_return
        self._expire_later(key)

    def _arrived(self, hole_key: tuple[GroupKey, str]) -> bool:
        """Under the lock: one copy of an expected message is no longer in a feed; True
        if none is left there."""
        count = self._in_process.pop(hole_key, 0)
        if count > 1:
            self._in_process[hole_key] = count - 1
            return False
        return count == 1

    def _note_sequence(self, key: GroupKey, message_id: str, sequence: int) -> int | None:
        """Remember the highest sequence seen of the message's producer in the group;
        returns the one seen before (under the lock)."""
        seen_key = (_flat(key), message_id.rpartition(":")[0])
        last = self._last_seq.get(seen_key)
        if last is not None and sequence <= last:
            return last
        self._last_seq[seen_key] = sequence
        self._last_seq.move_to_end(seen_key)
        if len(self._last_seq) > self._recent_producers:
            self._last_seq.popitem(last=False)
        return last

    def _note_arrival(self, key: GroupKey, message_id: str) -> None:
        """Under the lock."""
        seen = (key, message_id)
        self._arrivals[seen] = self._arrivals.get(seen, 0) + 1
        self._arrivals.move_to_end(seen)
        if len(self._arrivals) > self._recent_arrivals:
            self._arrivals.popitem(last=False)

    def finish(self, key: GroupKey, holder: Hashable, count: int = 1) -> None:
        """``holder`` finished ``count`` messages of the group (ORD-10)."""
        with self._lock:
            state = self._table.get(_flat(key))
            if state is None or state.holder != holder:
                return
            if self._table.finish(_flat(key), state, count):
                self._release(key, state)
        self._hand_out()

    def give_back(
        self,
        key: GroupKey,
        holder: Hashable,
        message_ids: list[str | None],
        sequences: list[int | None] | None = None,
        *,
        in_doubt: bool = False,
    ) -> None:
        """Messages ``holder`` had went back to the broker, in this order: keep their place.

        They go to the front of the line, except behind messages given back earlier with
        a lower JMSXGroupSeq (``sequences``, where the messages carry one): a transacted
        session whose commit was in doubt gives back the message it held, and later, at
        the reconnect, the later messages it had buffered. One that the broker already
        delivered again (to a consumer on another socket, before this call) is parked
        further back in the line: it moves up into its place. With ``in_doubt`` (a commit
        whose outcome is unknown), a message whose copy already arrived again keeps no
        place: that copy is already in the line or handed out.
        """
        deadline = time.monotonic() + self.wait_for_return
        with self._lock:
            state = self._table.state(_flat(key))
            wanted = set(message_ids)
            early = {
                slot.message_id: slot
                for slot in state.waiting
                if slot.item is not None and slot.message_id in wanted
            }
            front: list[_Slot[T]] = []
            holes = []
            for number, mid in enumerate(message_ids):
                if not mid:
                    continue
                slot = early.pop(mid, None)
                if slot is not None:
                    state.waiting.remove(slot)
                elif in_doubt and self._arrivals.get((key, mid), 0) > 1:
                    self._arrivals[(key, mid)] = 1  # that copy may be given back in turn
                    continue
                else:
                    slot = _Slot[T](None, None, mid, deadline)
                    self._holes[(key, mid)] = slot
                    holes.append(slot)
                slot.returned_seq = sequences[number] if sequences else None
                front.append(slot)
            place = 0
            first = front[0].returned_seq if front else None
            if first is not None:
                for slot in state.waiting:
                    if slot.returned_seq is None or slot.returned_seq >= first:
                        break
                    place += 1
            for offset, slot in enumerate(front):
                state.waiting.insert(place + offset, slot)
            if state.holder == holder:
                self._table.finish(_flat(key), state, len(message_ids))
            self._release(key, state)
        self._hand_out()
        if holes:
            self._expire_later(key)

    def withdraw(
        self, holder: Hashable, belongs: Callable[[T], bool], *, holes: bool = True
    ) -> list[tuple[GroupKey, T]]:
        """Take back the parked deliveries ``belongs`` picks (their consumer is closing).

        Each leaves a hole in its line, since the broker will deliver it again; with
        ``holes=False`` it simply leaves the line (a feed hands it out again itself).
        """
        taken: list[tuple[GroupKey, T]] = []
        deadline = time.monotonic() + self.wait_for_return
        with self._lock:
            for flat, state in list(self._table._groups.items()):
                key = _unflat(flat)
                for slot in list(state.waiting):
                    if slot.item is not None and belongs(slot.item):
                        taken.append((key, slot.item))
                        if not holes:
                            state.waiting.remove(slot)
                            continue
                        slot.holder, slot.item, slot.deadline = None, None, deadline
                        if slot.message_id:
                            self._holes[(key, slot.message_id)] = slot
                self._release(key, state)
        # Waited for: what was released to this consumer before is in its buffer (or,
        # closed, among its late ones) when its close goes on.
        self._hand_out(wait=True)
        if holes:
            for key in dict.fromkeys(key for key, _item in taken):
                self._expire_later(key)
        return taken

    def let_go(self, holder: Hashable) -> None:
        """``holder``'s connection is lost: the groups it held are free. What it held can
        never be acknowledged, and the broker delivers it again (to a consumer of a new
        connection of this process, say, which must not wait behind the dead one)."""
        with self._lock:
            for flat, state in list(self._table._groups.items()):
                if state.holder == holder:
                    self._table.finish(flat, state, state.unfinished)
                    self._release(_unflat(flat), state)
        self._hand_out(wait=True)

    def _expire_later(self, key: GroupKey, after: float | None = None) -> None:
        """Look at the group again once its holes may have timed out."""
        delay = (self.wait_for_return if after is None else after) + 0.01
        timer = threading.Timer(delay, self.expire_holes, args=(key,))
        timer.daemon = True
        timer.start()

    def expire_holes(self, key: GroupKey) -> None:
        with self._lock:
            state = self._table.get(_flat(key))
            if state is not None:
                self._release(key, state)
        self._hand_out()

    def _hand_out(self, *, wait: bool = False) -> None:
        """Outside the lock: deliver the released items, oldest first, one thread at a
        time. A thread that finds another delivering leaves its items to it (that one
        looks at ``_outgoing`` again after letting go), unless ``wait``: then it returns
        only once everything released before the call is delivered."""
        outgoing = self._outgoing
        if wait:  # taken even with nothing left: a thread may be delivering the last one
            with self._delivering:
                while outgoing:
                    self._deliver(outgoing.popleft())
        while outgoing:
            if not self._delivering.acquire(blocking=False):
                return
            try:
                while outgoing:
                    self._deliver(outgoing.popleft())
            finally:
                self._delivering.release()

    def _release(self, key: GroupKey, state: GroupState[_Slot[T]]) -> None:
        """Hand out the line's head while its session may take it (under the lock)."""
        now = time.monotonic()
        while state.waiting:
            slot = state.waiting[0]
            if slot.item is None:
                if slot.deadline > now:
                    break
                state.waiting.popleft()  # the message never came back: stop waiting for it
                self._holes.pop((key, slot.message_id), None)  # type: ignore[arg-type]
                continue
            if not self._table.may_take(state, slot.holder):
                break
            state.waiting.popleft()
            self._table.take(state, slot.holder)
            self._outgoing.append(slot.item)
        self._table.discard_if_idle(_flat(key), state)

    def holders(self) -> dict[str, Hashable]:
        """Group -> holder, for invariant checks in tests."""
        with self._lock:
            return self._table.holders()


def _seq_id(message_id: str, sequence: int) -> str:
    """The hole id of a producer's ``sequence``-th group message: the producer is what its
    JMSMessageIDs share before the last ':' (jmslike ids are ``ID:<producer>:<count>``)."""
    return f"{message_id.rpartition(':')[0]}#seq{sequence}"


def _flat(key: GroupKey) -> str:
    return f"{key[0]}\0{key[1]}"


def _unflat(flat: str) -> GroupKey:
    destination, _, group = flat.partition("\0")
    return destination, group


class StripedGroupGate(Generic[T]):
    """The process's client gate for one broker: ``GATE_STRIPES`` client gates
    side by side, each group always in the same one (by the hash of its key, which only
    needs to agree within the process).

    Every reader thread and every session of the process takes the gate's lock once or
    twice a message. Under the interpreter lock a thread that holds it can be made to
    give up the interpreter between two bytecodes; with one lock every other thread then
    queued behind it until it ran again, and four listener sessions on RabbitMQ processed
    grouped messages at about 0.4 of ungrouped ones (medians; runs changed between 0.3
    and 0.8); with 16 stripes (and the hand-out after the lock) about 0.8, a run now and
    then still low (docs/performance.md). A group's order (ORD-8) and holder (ORD-9)
    live in its stripe alone; what spans groups (a consumer closing, a connection lost)
    visits every stripe. One consumer may get messages of two groups in the other order
    than they arrived when two threads deliver them at once: no rule orders groups.
    """

    def __init__(
        self,
        deliver: Callable[[T], None],
        wait_for_return: float = 30.0,
        wait_for_predecessor: float = 0.25,
        stripes: int = GATE_STRIPES,
    ) -> None:
        self._stripes = [
            ClientGroupGate(deliver, wait_for_return, wait_for_predecessor, share=stripes)
            for _ in range(stripes)
        ]
        self.wait_for_return = wait_for_return

    def stripe(self, key: GroupKey) -> ClientGroupGate[T]:
        """The gate that keeps group ``key``."""
        stripes = self._stripes
        return stripes[hash(key) % len(stripes)]

    def __len__(self) -> int:
        return sum(len(stripe) for stripe in self._stripes)

    def arrive(
        self, key: GroupKey, holder: Hashable, message_id: str | None, item: T, *more: Any
    ) -> bool:
        """``ClientGroupGate.arrive`` (``more``: its sequence and predecessor expiration)."""
        return self.stripe(key).arrive(key, holder, message_id, item, *more)

    def expect(self, key: GroupKey, message_id: str, sequence: int) -> None:
        self.stripe(key).expect(key, message_id, sequence)

    def unexpect(self, key: GroupKey, message_id: str, sequence: int) -> None:
        self.stripe(key).unexpect(key, message_id, sequence)

    def finish(self, key: GroupKey, holder: Hashable, count: int = 1) -> None:
        self.stripe(key).finish(key, holder, count)

    def give_back(self, key: GroupKey, holder: Hashable, *more: Any, **options: Any) -> None:
        """``ClientGroupGate.give_back``."""
        self.stripe(key).give_back(key, holder, *more, **options)

    def withdraw(
        self, holder: Hashable, belongs: Callable[[T], bool], *, holes: bool = True
    ) -> list[tuple[GroupKey, T]]:
        """``ClientGroupGate.withdraw`` on every stripe."""
        taken: list[tuple[GroupKey, T]] = []
        for stripe in self._stripes:
            taken += stripe.withdraw(holder, belongs, holes=holes)
        return taken

    def let_go(self, holder: Hashable) -> None:
        for stripe in self._stripes:
            stripe.let_go(holder)

    def expire_holes(self, key: GroupKey) -> None:
        self.stripe(key).expire_holes(key)

    def holders(self) -> dict[str, Hashable]:
        """Group -> holder, for invariant checks in tests."""
        held: dict[str, Hashable] = {}
        for stripe in self._stripes:
            held.update(stripe.holders())
        return held


_gates: dict[str, tuple[StripedGroupGate[Any], int]] = {}
_gates_lock = threading.Lock()


def acquire_client_gate(
    scope: str, deliver: Callable[[Any], None], wait_for_return: float
) -> StripedGroupGate[Any]:
    """The process's gate for one broker (``scope`` names it, e.g. ``stomp://host:61613``),
    counted per connection; each ``acquire`` needs a ``release_client_gate``."""
    with _gates_lock:
        gate, users = _gates.get(scope, (None, 0))
        if gate is None:
            gate = StripedGroupGate(deliver, wait_for_return)
        _gates[scope] = (gate, users + 1)
        return gate


def release_client_gate(scope: str) -> None:
    """A connection closed; the last one out forgets an idle gate."""
    with _gates_lock:
        gate, users = _gates.get(scope, (None, 0))
        if gate is None:
            return
        if users > 1 or len(gate):
            _gates[scope] = (gate, max(users - 1, 0))
        else:
            del _gates[scope]


def refuse_strict_consumer(
    what: str, *, declared: bool, exclusive: bool, standby: bool, attached: int
) -> None:
    """ORD-18's refusals, for every provider that keeps strictly ordered destinations.

    ``what`` names the queue or subscription; ``declared``: it is strictly ordered
    already; ``exclusive``: this consumer declares it; ``attached``: how many consumers
    are attached now (for a declared one: whether one is active). A declaration is
    refused while undeclared consumers are attached, so that every consumer of a strictly
    ordered destination was created knowing it and nothing changes under a live one.
    """
    if standby and not (exclusive or declared):
        raise IllegalStateError(
            f"standby=True on {what}: it is not declared strictly ordered (ORD-18), so "
            "there is no single active consumer to wait for; declare it with "
            "strictly_ordered=True or the factory's strictly_ordered setting"
        )
    if not (exclusive or declared) or not attached:
        return
    if not declared:
        raise IllegalStateError(
            f"cannot declare {what} strictly ordered (ORD-18): it already has {attached} "
            f"consumer{'s' if attached > 1 else ''} attached without the declaration; "
            "close them first, or declare it before any consumer attaches"
        )
    if not standby:
        raise IllegalStateError(
            f"{what} is strictly ordered (ORD-18) and already has an active consumer; "
            "close that one first, or pass standby=True to create_consumer to wait "
            "and take over when it closes"
        )
