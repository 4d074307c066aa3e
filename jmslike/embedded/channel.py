"""One message channel of the embedded broker: a queue, or one topic subscription.

A channel decides which message each consumer gets next. Ordering groups are kept here
natively and strictly, pinned to a *session* (ORD-9): a group's next message may go only
to the session that holds its unfinished messages, or to anyone once it holds none.

Data layout (O(log n) or better per message; no scans except for selectors):

* ``entries``: arrival number -> entry, for every message not yet finished.
* ``ready``: the keys of deliverable messages (a :class:`KeyQueue`, smallest first): those
  in no group, and the head of every group no session holds. A key is
  ``(9 - priority) << 44 | arrival``, so the smallest is the highest priority first and,
  within a priority, the oldest (ORD-12: priority orders across groups; within a group
  only the head is ever queued).
* ``held[session]``: a :class:`KeyQueue` of the keys of the heads of groups ``session``
  holds.
* ``groups``: the ordering engine's GroupTable; a group's messages wait in its FIFO.
* ``delayed``: heap of (due time, arrival) for messages, or group heads, whose delivery
  delay still runs; a delayed head blocks its group (ORD-12).

Key queues and heaps hold plain ints and are cleaned lazily: a popped key is used only if
its entry is still pending and still where it was placed. Plain ints keep the garbage
collector's work per stored message to two objects (the message and its entry), which is
most of what a 100,000-message backlog costs in CPython. The stored message is never
handed out: each delivery, browse and dead-letter copy is made from it.

The broker's one lock guards every channel; sinks are called under it, so each
consumer's deliveries are pushed strictly in order.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from jmslike.message import DELIVERY_COUNT, GROUP_ID, Message

if TYPE_CHECKING:
    from jmslike.embedded.store import FileStore
from jmslike.ordering import GroupState, GroupTable
from jmslike.selector import Selector, message_lookup

__all__ = [
    "DONE",
    "INFLIGHT",
    "PENDING",
    "Channel",
    "ConsumerSlot",
    "Entry",
    "KeyQueue",
    "StrictChannel",
    "make_strict",
]

PENDING, INFLIGHT, DONE = 0, 1, 2

_SEQ_BITS = 44
_SEQ_MASK = (1 << _SEQ_BITS) - 1


class KeyQueue:
    """Heap keys, smallest first: a FIFO for the keys that come in increasing order, and a
    heap for the others.

    Every new message of a priority has a larger key than the one before it, so a backlog
    is a FIFO: pushing and popping it is O(1), where a heap of 100,000 keys sifts through
    17 levels on every pop (the largest single cost of a delivery from a backlog, by the
    profile). A key smaller than the FIFO's last (a group's next head, a higher priority,
    a returned message) goes to the heap; the smaller of the two fronts comes first.
    """

    __slots__ = ("fifo", "heap")

    def __init__(self, keys: Iterable[int] = ()) -> None:
        self.fifo: deque[int] = deque(sorted(keys))
        self.heap: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.fifo or self.heap)

    def __len__(self) -> int:
        return len(self.fifo) + len(self.heap)

    def __iter__(self) -> Iterator[int]:
        """Every key, in no particular order."""
        yield from self.fifo
        yield from self.heap

    def push(self, key: int) -> None:
        fifo = self.fifo
        if not fifo or key > fifo[-1]:
            fifo.append(key)
        else:
            heapq.heappush(self.heap, key)

    def top(self) -> int:
        """The smallest key (the queue must not be empty)."""
        fifo, heap = self.fifo, self.heap
        if heap and (not fifo or heap[0] < fifo[0]):
            return heap[0]
        return fifo[0]

    def pop(self) -> int:
        """Remove and return the smallest key (the queue must not be empty)."""
        fifo, heap = self.fifo, self.heap
        if heap and (not fifo or heap[0] < fifo[0]):
            return heapq.heappop(heap)
        return fifo.popleft()


class Entry:
    """A stored message and its delivery state; also the token given to consumers."""

    __slots__ = (
        "channel",
        "count",
        "due",
        "expires",
        "group",
        "key",
        "message",
        "origin",
        "row",
        "seq",
        "state",
    )

    def __init__(
        self,
        channel: Channel,
        seq: int,
        message: Message,
        origin: Hashable,
        row: int | None = None,
    ) -> None:
        self.channel = channel
        self.seq = seq
        self.message = message
        if channel.group_blind:  # behave like a broker without groups or priorities
            self.key = 5 << _SEQ_BITS | seq
            self.group: str | None = None
        else:
            self.key = (9 - message.jms_priority) << _SEQ_BITS | seq
            group = message._properties.get(GROUP_ID)  # Message.ordering_group, inlined
            self.group = group if isinstance(group, str) else None
        self.due = message.jms_delivery_time / 1000.0
        self.expires = message.jms_expiration / 1000.0
        self.count = 0
        self.state = PENDING
        self.origin = origin
        self.row = row
        """The file store's row of a persistent message, else None."""

    def delivered_copy(self) -> Message:
        """The message as a consumer sees it this time: redelivered flag and count set.

        Always a fresh copy: the stored message is never handed out, so nothing a
        receiver does to its message can change what the broker redelivers, browses,
        matches or dead-letters.
        """
        msg = self.message._copy()
        msg.jms_redelivered = self.count > 1
        msg._properties[DELIVERY_COUNT] = self.count
        return msg

    def __repr__(self) -> str:
        return f"<Entry #{self.seq} group={self.group!r} state={self.state} count={self.count}>"


class ConsumerSlot:
    """A consumer attached to a channel: its session (the group holder), credit and sink."""

    __slots__ = (
        "channel",
        "closed",
        "credit",
        "holder",
        "no_local",
        "origin",
        "selector",
        "sink",
        "standby",
    )

    def __init__(
        self,
        channel: Channel,
        holder: Hashable,
        origin: Hashable,
        sink: Callable[[Message, Any], None],
        selector: Selector | None,
        no_local: bool,
    ) -> None:
        self.channel = channel
        self.holder = holder
        self.origin = origin
        self.sink = sink
        self.selector = selector
        self.no_local = no_local
        self.credit = 0
        self.closed = False
        self.standby = False
        """On a strictly ordered channel (ORD-18): attached, but nothing is served to it
        until the active consumer leaves; credit it is given is kept for then."""


class Channel:
    """Messages of one queue or subscription, and the consumers competing for them."""

    def __init__(
        self, name: str, on_delay: Callable[[Channel, float], None], group_blind: bool = False
    ) -> None:
        self.name = name
        self.group_blind = group_blind
        """Ignore JMSXGroupID and priority, as RabbitMQ does (for testing ORD-16)."""
        self.entries: dict[int, Entry] = {}
        self.ready = KeyQueue()
        self.held: dict[Hashable, KeyQueue] = {}
        self.delayed: list[tuple[int, int]] = []
        self.groups: GroupTable[Entry] = GroupTable()
        self.slots: list[ConsumerSlot] = []
        self.waiting: list[ConsumerSlot] = []
        self.pending = 0
        self.inflight = 0
        self.expired = 0
        self._on_delay = on_delay
        self._seq = 0
        self._unplaced: GroupState[Entry] | None = None
        """A held group whose next head is not yet in its holder's keys (see ``hand_out``);
        ``_place_unplaced`` puts it there before anything reads them."""
        self.store: FileStore | None = None
        """Set for a queue or durable subscription of a broker with a file store: each
        delivery count and each finished message is written there before it counts."""

    def __repr__(self) -> str:
        return f"<Channel {self.name} pending={self.pending} inflight={self.inflight}>"

    # ----------------------------------------------------------------- enqueue
    def enqueue(
        self, message: Message, origin: Hashable, now: float, row: int | None = None
    ) -> Entry:
        self._seq += 1
        entry = Entry(self, self._seq, message, origin, row)
        self.entries[entry.seq] = entry
        self.pending += 1
        if entry.group is None:
            if entry.due > now:  # _place_single, inlined
                self._delay(entry)
            else:
                fifo = self.ready.fifo  # KeyQueue.push, inlined
                if not fifo or entry.key > fifo[-1]:
                    fifo.append(entry.key)
                else:
                    self.ready.push(entry.key)
        else:
            groups = self.groups._groups  # GroupTable.state, inlined on the hot path
            state = groups.get(entry.group)
            if state is None:
                state = groups[entry.group] = GroupState()
            state.waiting.append(entry)
            if len(state.waiting) == 1:
                self._place_head(state, now)
        return entry

    def _place_single(self, entry: Entry, now: float) -> None:
        if entry.due > now:
            self._delay(entry)
        else:
            self.ready.push(entry.key)

    def _delay(self, entry: Entry) -> None:
        heapq.heappush(self.delayed, (int(entry.due * 1e6), entry.seq))
        self._on_delay(self, entry.due)

    def _place_head(self, state: GroupState[Entry], now: float) -> None:
        """Put a group's head where it can be found: delayed, ready, or its holder's heap."""
        if not state.waiting:
            return
        head = state.waiting[0]
        if head.due > now:
            self._delay(head)
        elif state.holder is None:
            fifo = self.ready.fifo  # KeyQueue.push, inlined
            if not fifo or head.key > fifo[-1]:
                fifo.append(head.key)
            else:
                heapq.heappush(self.ready.heap, head.key)
        else:
            self._hold(state.holder, head.key)

    def _hold(self, holder: Hashable, key: int) -> None:
        """Put ``key`` in ``holder``'s keys (a head of a group that session holds)."""
        mine = self.held.get(holder)
        if mine is None:
            mine = self.held[holder] = KeyQueue()
        mine.push(key)

    def _place_unplaced(self) -> None:
        """Put the head ``hand_out`` left unplaced in its holder's keys, if the group is
        still held and has one (not delayed: ``hand_out`` checked)."""
        state, self._unplaced = self._unplaced, None
        if state is not None and state.holder is not None and state.waiting:
            self._hold(state.holder, state.waiting[0].key)

    # ----------------------------------------------------------------- choose
    def _current(self, key: int, holder: Hashable | None) -> Entry | None:
        """The entry behind a heap key if it is still deliverable from that heap.

        ``holder`` None means "in the ready heap"; otherwise the holder's own heap.
        """
        entry = self.entries.get(key & _SEQ_MASK)
        if entry is None or entry.state != PENDING:
            return None
        if entry.group is None:
            return entry if holder is None else None
        state = self.groups.get(entry.group)
        if state is None or not state.waiting or state.waiting[0] is not entry:
            return None
        return entry if state.holder == holder else None

    def _expire(self, entry: Entry, now: float) -> None:
        """Drop an expired message; its group moves on to the next one (ORD-13)."""
        entry.state = DONE
        del self.entries[entry.seq]
        self.pending -= 1
        self.expired += 1
        if entry.row is not None and self.store is not None:
            self.store.remove((entry.row,))
        if entry.group is not None:
            state = self.groups.state(entry.group)
            state.waiting.popleft()
            self._place_head(state, now)
            self.groups.discard_if_idle(entry.group, state)

    def _peek(self, keys: KeyQueue, holder: Hashable | None, now: float) -> Entry | None:
        """The deliverable entry at the top of ``keys`` (dropping stale keys), not popped.

        The hot path of every delivery: ``_current`` and ``KeyQueue.top`` inlined.
        """
        entries = self.entries
        groups = self.groups._groups
        fifo, heap = keys.fifo, keys.heap
        while fifo or heap:
            top = heap[0] if heap and (not fifo or heap[0] < fifo[0]) else fifo[0]
            entry = entries.get(top & _SEQ_MASK)
            if entry is not None and entry.state == PENDING:
                group = entry.group
                if group is None:
                    usable = holder is None
                else:
                    state = groups.get(group)
                    usable = (
                        state is not None
                        and state.holder == holder
                        and bool(state.waiting)
                        and state.waiting[0] is entry
                    )
                if usable:
                    if entry.expires and entry.expires <= now:
                        keys.pop()
                        self._expire(entry, now)
                        continue
                    return entry
            keys.pop()
        return None

    def next_for(self, slot: ConsumerSlot, now: float) -> Entry | None:
        """The best message ``slot`` may take now, or None (it stays queued)."""
        if self._unplaced is not None:
            self._place_unplaced()
        if slot.selector is not None or slot.no_local:
            return self._scan_for(slot, now)
        ready = self.ready
        fifo = ready.fifo
        best = None
        if fifo and not ready.heap:  # every ready key came in order: the FIFO's first is top
            # _peek's answer when every ready key came in order and the first is a live,
            # unexpired message in no group or the head of a group nobody holds (the
            # common cases, without the call).
            best = self.entries.get(fifo[0] & _SEQ_MASK)
            if best is None or best.state != PENDING or (best.expires and best.expires <= now):
                best = self._peek(ready, None, now)
            elif best.group is not None:
                state = self.groups._groups.get(best.group)
                if (
                    state is None
                    or state.holder is not None
                    or not state.waiting
                    or state.waiting[0] is not best
                ):
                    best = self._peek(ready, None, now)
        elif ready.heap:
            best = self._peek(ready, None, now)
        mine = self.held.get(slot.holder)
        if mine is not None and (mine.fifo or mine.heap):
            own = self._peek(mine, slot.holder, now)
            if own is not None and (best is None or own.key < best.key):
                mine.pop()
                return own
        if best is not None:  # KeyQueue.pop, inlined: best is the top
            heap = ready.heap
            if heap and (not fifo or heap[0] < fifo[0]):
                heapq.heappop(heap)
            else:
                fifo.popleft()
        return best

    def _scan_for(self, slot: ConsumerSlot, now: float) -> Entry | None:
        """Selector / no-local consumers: walk the candidates in delivery order.

        A group is only ever offered from its head, so a selector never skips a group's
        earlier message on this broker (the stronger form of ORD-14).
        """
        self._compact(slot.holder)
        mine = self.held.get(slot.holder)
        for key in sorted([*self.ready, *(mine or ())]):
            entry = self._current(key, None) or self._current(key, slot.holder)
            if entry is None:
                continue
            if entry.expires and entry.expires <= now:
                self._expire(entry, now)
                continue
            if slot.no_local and entry.origin == slot.origin:
                continue
            if slot.selector is not None and not slot.selector.matches(
                message_lookup(entry.message)
            ):
                continue
            return entry
        return None

    def _compact(self, holder: Hashable) -> None:
        """Drop stale keys: scans take from the middle of a heap and leave them behind."""
        live = [key for key in self.ready if self._current(key, None) is not None]
        if len(live) != len(self.ready):
            self.ready = KeyQueue(live)
        mine = self.held.get(holder)
        if mine:
            live = [key for key in mine if self._current(key, holder) is not None]
            if len(live) != len(mine):
                self.held[holder] = KeyQueue(live)

    # ---------------------------------------------------------------- deliver
    def _serve(self, slot: ConsumerSlot, now: float) -> bool:
        """Give ``slot`` one message if it may take one; False if there is none for it."""
        delivery = self.hand_out(slot, now)
        if delivery is None:
            return False
        slot.credit -= 1
        try:
            slot.sink(*delivery)
        except BaseException as exc:
            # An interrupt (Ctrl-C) in this thread before the consumer took the delivery
            # (its sink marks the ones after): back to the queue, not in flight to nobody.
            if not getattr(exc, "_jmslike_taken", False):
                slot.credit += 1
                self.give_back([delivery[1]], delivered=False, now=now)
            raise
        return True

    def hand_out(self, slot: ConsumerSlot, now: float) -> tuple[Message, Entry] | None:
        """Deliver to ``slot`` the next message it may take: the copy it gets and its
        entry, or None. Whether the slot has credit is the caller's business: ``_serve``
        pushes to the slot's sink, a ``receive()`` that has nothing buffered takes the
        delivery directly (``Broker.acknowledge_and_take``).

        Marks the entry delivered (written to the file store first, if it has a row) and
        makes the slot's session the group's holder. The hot path of every delivery:
        ``delivered_copy`` and the group bookkeeping inlined.
        """
        entry = self.next_for(slot, now)
        if entry is None:
            return None
        count = entry.count + 1
        try:
            # Copied and stored before anything changes: an interrupt here (Ctrl-C in
            # the thread that asked) leaves the entry pending, not in flight to nobody.
            msg = entry.message._copy()
            if entry.row is not None and self.store is not None:
                self.store.set_delivered(entry.row, count)  # before anyone can see it
        except BaseException:
            self._put_back(entry, now)
            raise
        entry.state = INFLIGHT
        entry.count = count
        self.pending -= 1
        self.inflight += 1
        group = entry.group
        if group is not None:  # the group is now held by the slot's session (ORD-9)
            holder = slot.holder
            state = self.groups._groups[group]
            state.holder = holder
            state.unfinished += 1
            waiting = state.waiting
            waiting.popleft()
            if waiting:
                if waiting[0].due > now:
                    self._delay(waiting[0])
                else:
                    # The next head belongs in the holder's keys, but a holder that
                    # finishes this message before asking again (AUTO_ACKNOWLEDGE's
                    # receive loop) frees the group first, and the head goes to the
                    # ready keys instead: placed when next needed, it is placed once.
                    self._unplaced = state
        msg.jms_redelivered = count > 1
        msg._properties[DELIVERY_COUNT] = count
        return msg, entry

    def _put_back(self, entry: Entry, now: float) -> None:
        """Place again the key ``next_for`` took off for ``entry``, which stays pending."""
        if entry.group is None:
            self._place_single(entry, now)
        else:
            self._place_head(self.groups._groups[entry.group], now)

    def dispatch(self, now: float) -> None:
        """Give waiting consumers what they may take, one message per consumer per round."""
        waiting = self.waiting
        while waiting:
            progress = False
            for slot in tuple(waiting):
                if self._serve(slot, now):
                    progress = True
                    if slot.credit <= 0:
                        waiting.remove(slot)
            if not progress:
                return
            if len(waiting) > 1:  # rotate so the next round starts elsewhere
                waiting.append(waiting.pop(0))

    def flow(self, slot: ConsumerSlot, credit: int, now: float) -> None:
        """Credit for one consumer: serve it directly, then leave it waiting if unused."""
        if slot.closed:
            return
        if credit <= 0:
            slot.credit = 0
            if slot in self.waiting:
                self.waiting.remove(slot)
            return
        slot.credit += credit
        if slot in self.waiting:
            self.dispatch(now)
            return
        while slot.credit > 0:
            if not self._serve(slot, now):
                self.waiting.append(slot)
                return

    # ---------------------------------------------------------------- finish
    def finish(self, entry: Entry, now: float) -> None:
        """The holder finished ``entry`` (acknowledged, committed, dead-lettered)."""
        if entry.state != INFLIGHT:
            return
        entry.state = DONE
        del self.entries[entry.seq]
        self.inflight -= 1
        if entry.row is not None and self.store is not None:
            self.store.remove((entry.row,))
        group = entry.group
        if group is None:
            return
        state = self.groups._groups[group]
        left = state.unfinished - 1  # GroupTable.finish, inlined on the hot path
        if left > 0:
            state.unfinished = left
            return
        state.unfinished = 0
        holder, state.holder = state.holder, None
        waiting = state.waiting
        if not waiting:
            del self.groups._groups[group]
            return
        head = waiting[0]
        if self._unplaced is state:  # hand_out left the head unplaced: nothing to undo
            self._unplaced = None
        else:
            # The head is in the holder's keys; free now, it goes to the ready keys, and
            # the holder's copy would only be skipped (one lookup per delivery, on the
            # profile of a grouped backlog).
            mine = self.held.get(holder)
            if mine is not None and mine.fifo and mine.fifo[-1] == head.key:
                mine.fifo.pop()
        if head.due > now:  # _place_head for a free group, inlined
            self._delay(head)
        else:
            fifo = self.ready.fifo
            if not fifo or head.key > fifo[-1]:
                fifo.append(head.key)
            else:
                heapq.heappush(self.ready.heap, head.key)

    def give_back(self, entries: Iterable[Entry], delivered: bool, now: float) -> None:
        """Return in-flight entries, in their original order, ahead of later messages of
        their groups (ORD-10, ORD-11). ``delivered`` False undoes the delivery count."""
        if self._unplaced is not None:
            self._place_unplaced()
        by_group: dict[str, list[Entry]] = {}
        for entry in sorted(entries, key=lambda e: e.seq):
            if entry.state != INFLIGHT:
                continue
            entry.state = PENDING
            self.inflight -= 1
            self.pending += 1
            if not delivered:
                entry.count -= 1
                if entry.row is not None and self.store is not None:
                    self.store.set_delivered(entry.row, entry.count)
            if entry.group is None:
                self._place_single(entry, now)
            else:
                by_group.setdefault(entry.group, []).append(entry)
        for group, returned in by_group.items():
            state = self.groups.state(group)
            state.waiting.extendleft(reversed(returned))
            self.groups.finish(group, state, len(returned))
            self._place_head(state, now)

    def promote_due(self, now: float) -> None:
        """Move delayed messages whose time has come to where they can be delivered."""
        limit = int(now * 1e6)
        while self.delayed and self.delayed[0][0] <= limit:
            _due, seq = heapq.heappop(self.delayed)
            entry = self.entries.get(seq)
            if entry is None or entry.state != PENDING:
                continue
            if entry.group is None:
                self.ready.push(entry.key)
                continue
            state = self.groups.get(entry.group)
            if state is not None and state.waiting and state.waiting[0] is entry:
                self._place_head(state, now)

    # ------------------------------------------------------------- consumers
    def attach(self, slot: ConsumerSlot) -> None:
        self.slots.append(slot)

    def detach(self, slot: ConsumerSlot) -> None:
        slot.closed = True
        slot.credit = 0
        if slot in self.slots:
            self.slots.remove(slot)
        if slot in self.waiting:
            self.waiting.remove(slot)

    def forget_holder(self, holder: Hashable) -> None:
        """A session closed: its heap of held heads is no longer needed."""
        if self._unplaced is not None:
            self._place_unplaced()
        self.held.pop(holder, None)

    # --------------------------------------------------------------- browse
    def browse_order(self, now: float) -> Iterator[Entry]:
        """Pending entries in the order one consumer would get them (ORD-20).

        Simulates dispatch: each group is one stream in FIFO order, ranked by its current
        head like a message in no group; messages still delayed come last, by due time,
        since nothing can take them before then. Expired messages are left out.
        """
        streams: list[tuple[tuple[float, int], int, list[Entry]]] = []
        for entry in self.entries.values():
            if entry.group is None and entry.state == PENDING:
                streams.append((self._browse_rank(entry, now), len(streams), [entry]))
        for state in self.groups.states():
            members = [e for e in state.waiting if e.state == PENDING]
            if members:
                members.reverse()
                streams.append((self._browse_rank(members[-1], now), len(streams), members))
        heapq.heapify(streams)
        while streams:
            _rank, idx, members = heapq.heappop(streams)
            entry = members.pop()
            if not entry.expires or entry.expires > now:
                yield entry
            if members:
                heapq.heappush(streams, (self._browse_rank(members[-1], now), idx, members))

    @staticmethod
    def _browse_rank(entry: Entry, now: float) -> tuple[float, int]:
        return (entry.due if entry.due > now else 0.0, entry.key)


_EARLIER = object()
"""Owner of messages in flight when a channel was declared strictly ordered: the
consumer that took them is unknown, so they count as another consumer's."""


class StrictChannel(Channel):
    """A strictly ordered queue or subscription (ORD-18): one active consumer at a time.

    ``slots`` keeps attach order; the first is the active consumer and the others are
    standbys, promoted in that order when it detaches. The active consumer is served
    only while every message in flight on the channel is its own: messages a previous
    consumer left unfinished (a transaction that closed its consumer and has not yet
    committed or rolled back, IBM's "partially consumed messages") block it until they
    are finished or given back, so a takeover never overtakes them.

    A plain ``Channel`` becomes one through :func:`make_strict` (the declaration is
    sticky). Being a subclass keeps every check out of the plain channel's per-message
    path: only strictly ordered channels pay for the bookkeeping below.
    """

    def __init__(
        self, name: str, on_delay: Callable[[Channel, float], None], group_blind: bool = False
    ) -> None:
        super().__init__(name, on_delay, group_blind)
        self.owners: dict[int, object] = {}
        """Arrival number -> the slot (or ``_EARLIER``) that took each in-flight entry."""
        self.owned: dict[object, int] = {}
        """How many in-flight entries each owner has; more than one key blocks delivery."""

    def _blocked_for(self, slot: ConsumerSlot) -> bool:
        owned = self.owned
        return bool(owned) and (len(owned) > 1 or slot not in owned)

    def hand_out(self, slot: ConsumerSlot, now: float) -> tuple[Message, Entry] | None:
        if slot.standby or self._blocked_for(slot):
            return None
        delivery = super().hand_out(slot, now)
        if delivery is not None:
            self.owners[delivery[1].seq] = slot
            self.owned[slot] = self.owned.get(slot, 0) + 1
        return delivery

    def _disown(self, entry: Entry) -> None:
        owner = self.owners.pop(entry.seq, None)
        if owner is None:
            return
        left = self.owned[owner] - 1
        if left:
            self.owned[owner] = left
        else:
            del self.owned[owner]

    def finish(self, entry: Entry, now: float) -> None:
        if entry.state == INFLIGHT:
            self._disown(entry)
        super().finish(entry, now)

    def give_back(self, entries: Iterable[Entry], delivered: bool, now: float) -> None:
        returned = list(entries)
        for entry in returned:
            if entry.state == INFLIGHT:
                self._disown(entry)
        super().give_back(returned, delivered, now)

    def attach(self, slot: ConsumerSlot) -> None:
        slot.standby = bool(self.slots)
        super().attach(slot)

    def detach(self, slot: ConsumerSlot) -> None:
        """Detach; if ``slot`` was active, the oldest standby takes over. The broker then
        gives back what ``slot`` left unfinished, so the new active consumer starts with
        those messages, in their order (ORD-15's take-over, ORD-10)."""
        super().detach(slot)
        slot.standby = False
        if self.slots:
            self.slots[0].standby = False


def make_strict(channel: Channel) -> StrictChannel:
    """Declare ``channel`` strictly ordered, in place (sticky for the channel's life).

    The channel keeps its identity, because every stored entry and attached slot refers
    to it; only its class changes, so the strict rules apply from now on. Messages
    already in flight (taken by consumers since closed, whose transactions are still
    open) count as another consumer's until they are finished or given back. No slot may
    be attached (the broker checks), so every consumer of a strict channel is one that
    was created knowing it.
    """
    if isinstance(channel, StrictChannel):
        return channel
    channel.__class__ = StrictChannel
    strict = cast(StrictChannel, channel)
    strict.owners = {e.seq: _EARLIER for e in channel.entries.values() if e.state == INFLIGHT}
    strict.owned = {_EARLIER: len(strict.owners)} if strict.owners else {}
    return strict
