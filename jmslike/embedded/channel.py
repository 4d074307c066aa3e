"""One message channel of the embedded broker: a queue, or one topic subscription.

A channel decides which message each consumer gets next. Ordering groups are kept here
natively and strictly, pinned to a *session* (ORD-9): a group's next message may go only
to the session that holds its unfinished messages, or to anyone once it holds none.

Data layout (all O(log n) or better per message, no scans except for selectors):

* ``ready``: heap of deliverable items, ordered by (-priority, arrival): messages in no
  group, and the head of every group that no session holds.
* ``held[session]``: heap of the heads of groups that ``session`` holds.
* ``groups``: the ordering engine's GroupTable; each group's messages wait in FIFO order
  in its ``waiting`` deque, so priority never reorders a group (ORD-12).
* ``delayed``: heap by due time of messages with a delivery delay still to run, and of
  group heads waiting out one (a delayed head blocks its group, ORD-12).

Heaps use lazy deletion: an item carries the entry's generation at push time and is
discarded when popped if the entry was taken since, or is no longer where it was placed.
The broker's one lock guards every channel; sinks are called under it so that one
consumer's deliveries are pushed strictly in order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from jmslike.message import DELIVERY_COUNT, Message
from jmslike.ordering import GroupState, GroupTable
from jmslike.selector import Selector, message_lookup

__all__ = ["PENDING", "Channel", "ConsumerSlot", "Entry"]

PENDING, INFLIGHT, DONE = 0, 1, 2

HeapItem = tuple[int, int, int, "Entry"]


class Entry:
    """A stored message and its delivery state; also the token given to consumers."""

    __slots__ = (
        "channel",
        "count",
        "due",
        "expires",
        "gen",
        "group",
        "message",
        "neg_prio",
        "origin",
        "seq",
        "state",
    )

    def __init__(self, channel: Channel, seq: int, message: Message, origin: Hashable) -> None:
        self.channel = channel
        self.seq = seq
        self.message = message
        group = message._properties.get("JMSXGroupID")
        self.group: str | None = group if isinstance(group, str) else None
        self.neg_prio = -message.jms_priority
        self.due = message.jms_delivery_time / 1000.0
        self.expires = message.jms_expiration / 1000.0
        self.count = 0
        self.state = PENDING
        self.gen = 0
        self.origin = origin

    def delivered_copy(self) -> Message:
        """The message as a consumer sees it this time: redelivered flag and count set."""
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


class Channel:
    """Messages of one queue or subscription, and the consumers competing for them."""

    def __init__(self, name: str, on_change: Callable[[Channel, float], None]) -> None:
        self.name = name
        self.ready: list[HeapItem] = []
        self.held: dict[Hashable, list[HeapItem]] = {}
        self.delayed: list[HeapItem] = []
        self.groups: GroupTable[Entry] = GroupTable()
        self.slots: list[ConsumerSlot] = []
        self.waiting: list[ConsumerSlot] = []
        self.pending = 0
        self.inflight = 0
        self.expired = 0
        self._schedule = on_change
        self._seq = 0

    # ----------------------------------------------------------------- enqueue
    def enqueue(self, message: Message, origin: Hashable, now: float) -> Entry:
        self._seq += 1
        entry = Entry(self, self._seq, message, origin)
        self.pending += 1
        if entry.group is None:
            self._place_single(entry, now)
        else:
            state = self.groups.state(entry.group)
            state.waiting.append(entry)
            if len(state.waiting) == 1:
                self._place_head(state, now)
        return entry

    def _place_single(self, entry: Entry, now: float) -> None:
        if entry.due > now:
            heapq.heappush(self.delayed, (int(entry.due * 1e6), entry.seq, entry.gen, entry))
            self._schedule(self, entry.due)
        else:
            heapq.heappush(self.ready, (entry.neg_prio, entry.seq, entry.gen, entry))

    def _place_head(self, state: GroupState[Entry], now: float) -> None:
        """Put a group's head where it can be found: delayed, ready, or its holder's heap."""
        if not state.waiting:
            return
        head = state.waiting[0]
        item = (head.neg_prio, head.seq, head.gen, head)
        if head.due > now:
            heapq.heappush(self.delayed, (int(head.due * 1e6), head.seq, head.gen, head))
            self._schedule(self, head.due)
        elif state.holder is None:
            heapq.heappush(self.ready, item)
        else:
            heapq.heappush(self.held.setdefault(state.holder, []), item)

    # ----------------------------------------------------------------- choose
    def _valid(self, item: HeapItem, holder: Hashable | None) -> bool:
        """Is a heap item still current? ``holder`` None means "in the ready heap"."""
        entry = item[3]
        if entry.gen != item[2] or entry.state != PENDING:
            return False
        if entry.group is None:
            return holder is None
        state = self.groups.get(entry.group)
        return (
            state is not None
            and bool(state.waiting)
            and state.waiting[0] is entry
            and state.holder == holder
        )

    def _expire(self, entry: Entry, now: float) -> None:
        """Drop an expired message; its group moves on to the next one (ORD-13)."""
        entry.state = DONE
        entry.gen += 1
        self.pending -= 1
        self.expired += 1
        if entry.group is not None:
            state = self.groups.state(entry.group)
            state.waiting.popleft()
            self._place_head(state, now)
            self.groups.discard_if_idle(entry.group, state)

    def _pop_valid(self, heap: list[HeapItem], holder: Hashable | None, now: float) -> Entry | None:
        while heap:
            item = heap[0]
            if not self._valid(item, holder):
                heapq.heappop(heap)
                continue
            entry = item[3]
            if entry.expires and entry.expires <= now:
                heapq.heappop(heap)
                self._expire(entry, now)
                continue
            return entry
        return None

    def next_for(self, slot: ConsumerSlot, now: float) -> Entry | None:
        """The best message ``slot`` may take now, or None (it stays queued)."""
        if slot.selector is not None or slot.no_local:
            return self._scan_for(slot, now)
        mine = self.held.get(slot.holder)
        best = self._pop_valid(self.ready, None, now)
        if mine:
            own = self._pop_valid(mine, slot.holder, now)
            if own is not None and (best is None or (own.neg_prio, own.seq) < (best.neg_prio, best.seq)):
                heapq.heappop(mine)
                return own
            if not mine:
                del self.held[slot.holder]
        if best is not None:
            heapq.heappop(self.ready)
        return best

    def _scan_for(self, slot: ConsumerSlot, now: float) -> Entry | None:
        """Selector / no-local consumers: walk candidates in delivery order.

        A group is only ever offered from its head, so a selector never skips a group's
        earlier message on this broker (the stronger form of ORD-14).
        """
        self._compact(slot.holder)
        candidates = sorted(self.ready + self.held.get(slot.holder, []))
        for item in candidates:
            entry = item[3]
            holder = None if entry.group is None or self._group_free(entry) else slot.holder
            if not self._valid(item, holder):
                continue
            if entry.expires and entry.expires <= now:
                self._expire(entry, now)
                continue
            if slot.no_local and entry.origin == slot.origin:
                continue
            if slot.selector is not None and not slot.selector.matches(message_lookup(entry.message)):
                continue
            return entry
        return None

    def _compact(self, holder: Hashable) -> None:
        """Drop stale heap items; scans take from the middle and leave them behind."""
        live = [item for item in self.ready if self._valid(item, None)]
        if len(live) != len(self.ready):
            heapq.heapify(live)
            self.ready = live
        mine = self.held.get(holder)
        if mine:
            live = [item for item in mine if self._valid(item, holder)]
            if len(live) != len(mine):
                heapq.heapify(live)
                self.held[holder] = live

    def _group_free(self, entry: Entry) -> bool:
        state = self.groups.get(entry.group) if entry.group is not None else None
        return state is None or state.holder is None

    # ---------------------------------------------------------------- deliver
    def take(self, entry: Entry, holder: Hashable, now: float) -> None:
        """Mark ``entry`` delivered to ``holder``'s session; the group is now held there."""
        entry.state = INFLIGHT
        entry.gen += 1
        entry.count += 1
        self.pending -= 1
        self.inflight += 1
        if entry.group is not None:
            state = self.groups.state(entry.group)
            GroupTable.take(state, holder)
            state.waiting.popleft()
            self._place_head(state, now)

    def dispatch(self, now: float) -> None:
        """Give waiting consumers what they may take, one message per consumer per round."""
        while self.waiting:
            progress = False
            for slot in tuple(self.waiting):
                entry = self.next_for(slot, now)
                if entry is None:
                    continue
                self.take(entry, slot.holder, now)
                slot.credit -= 1
                if slot.credit <= 0:
                    self.waiting.remove(slot)
                slot.sink(entry.delivered_copy(), entry)
                progress = True
            if not progress:
                return
            if len(self.waiting) > 1:  # rotate so the next round starts elsewhere
                self.waiting.append(self.waiting.pop(0))

    # ---------------------------------------------------------------- finish
    def finish(self, entry: Entry, now: float) -> None:
        """The holder finished ``entry`` (acknowledged, committed, dead-lettered)."""
        if entry.state != INFLIGHT:
            return
        entry.state = DONE
        self.inflight -= 1
        if entry.group is not None:
            state = self.groups.state(entry.group)
            if self.groups.finish(entry.group, state):
                self._place_head(state, now)

    def give_back(self, entries: Iterable[Entry], delivered: bool, now: float) -> None:
        """Return in-flight entries, in their original order, ahead of later messages of
        their groups (ORD-10, ORD-11). ``delivered`` False undoes the delivery count."""
        by_group: dict[str, list[Entry]] = {}
        for entry in sorted(entries, key=lambda e: e.seq):
            if entry.state != INFLIGHT:
                continue
            entry.state = PENDING
            self.inflight -= 1
            self.pending += 1
            if not delivered:
                entry.count -= 1
            if entry.group is None:
                self._place_single(entry, now)
            else:
                by_group.setdefault(entry.group, []).append(entry)
        for group, returned in by_group.items():
            state = self.groups.state(group)
            state.waiting.extendleft(reversed(returned))
            self.groups.finish(group, state, len(returned))
            self._place_head(state, now)

    def promote_due(self, now: float) -> float | None:
        """Move delayed messages whose time has come; return the next due time, if any."""
        while self.delayed:
            due_us, _seq, gen, entry = self.delayed[0]
            if due_us > now * 1e6:
                return due_us / 1e6
            heapq.heappop(self.delayed)
            if entry.gen != gen or entry.state != PENDING:
                continue
            if entry.group is None:
                heapq.heappush(self.ready, (entry.neg_prio, entry.seq, entry.gen, entry))
            else:
                state = self.groups.get(entry.group)
                if state is not None and state.waiting and state.waiting[0] is entry:
                    self._place_head(state, now)
        return None

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
        self.held.pop(holder, None)

    def flow(self, slot: ConsumerSlot, credit: int, now: float) -> None:
        if slot.closed:
            return
        if credit <= 0:
            slot.credit = 0
            if slot in self.waiting:
                self.waiting.remove(slot)
            return
        slot.credit += credit
        if slot not in self.waiting:
            self.waiting.append(slot)
        self.dispatch(now)

    # --------------------------------------------------------------- browse
    def browse_order(self, now: float) -> Iterator[Entry]:
        """Pending entries in the order they will be delivered (ORD-20).

        Simulates dispatch: messages in no group by (priority, arrival); each group as one
        stream in FIFO order keyed by its head. Messages still delayed come last, by due
        time, since nothing can take them before then.
        """
        streams: list[tuple[tuple[float, int, int], int, list[Entry]]] = []
        singles = {id(item[3]): item[3] for item in self.ready + self.delayed if self._single_pending(item)}
        for entry in singles.values():
            streams.append((self._browse_key(entry, now), len(streams), [entry]))
        for state in list(self.groups._groups.values()):
            members = [e for e in state.waiting if e.state == PENDING]
            if members:
                streams.append((self._browse_key(members[0], now), len(streams), members[::-1]))
        heapq.heapify(streams)
        while streams:
            _key, idx, members = heapq.heappop(streams)
            entry = members.pop()
            if not entry.expires or entry.expires > now:
                yield entry
            if members:
                heapq.heappush(streams, (self._browse_key(members[-1], now), idx, members))

    @staticmethod
    def _browse_key(entry: Entry, now: float) -> tuple[float, int, int]:
        return (entry.due if entry.due > now else 0.0, entry.neg_prio, entry.seq)

    @staticmethod
    def _single_pending(item: HeapItem) -> bool:
        entry = item[3]
        return entry.group is None and entry.state == PENDING and entry.gen == item[2]

