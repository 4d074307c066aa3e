"""A feed: one broker subscription whose messages jmslike hands to several sessions.

A listener container's sessions compete for one queue. With a subscription (or link) of
their own each, they depend on how the broker spreads groups over them, and with one
message of credit each (ORD-9) that spread was poor wherever the broker keeps groups per
consumer or not at all:

* Artemis stops a queue's dispatch at a message whose group's consumer has no credit
  (``QueueImpl.deliver``, ARTEMIS-1999). Over STOMP, where the window is fixed when
  subscribing, the session busy with ``g:1`` held up every other session as soon as
  ``g:2`` was next: with groups queued one after another at most two were in progress,
  and at concurrency 8 the container was slower than at 1.
* RabbitMQ ignores groups and hands ``g:2`` to any session; the client gate parks it
  there until ``g:1`` is finished, and over STOMP the parked message fills that
  session's window of one message: it gets nothing else meanwhile.
* ActiveMQ Classic hands a group's next message to its consumer only some time after
  the acknowledgement of the previous one, so each session idled part of the time.

A feed subscribes once for all of them, with a window of a few messages per session,
and jmslike hands the messages out by the rules the embedded broker keeps (ORD-9,
ORD-17): a session holds a group while it has a message of it unfinished (handed to it
and not yet acknowledged, committed or given back); a message of a held group goes only
to its holder, when the holder asks for its next message; any other message goes to
whichever session asks. Each session takes the oldest message it may take, so one
session alone gets them in the broker's order. The broker sees one consumer, so it
pins groups to the feed, which keeps them out of other processes' hands, as before.

What a session gives back (a consumer or session closed with messages unfinished, a
rollback after its consumer was closed) goes back to the front of the feed, in order,
and is handed out again, flagged redelivered; the broker gets back what is left when the
feed closes with its last session. Local recover and rollback work as for any consumer
(the session keeps the group). Behind the client gate (RabbitMQ) every message still
passes the process's gate (ORD-16), as the session's that is handed it.

Locks: the feed's lock, then the client gate's, then a consumer's. Messages are handed to
the consumers under the feed's lock, so each gets them in the feed's order. Credit
(AMQP) and subscribing (STOMP) go to the provider outside it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jmslike.message import GROUP_ID, GROUP_SEQ, Message
from jmslike.spi.provider import ConsumerSpec, ProviderConsumer

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.consumer import MessageConsumer
    from jmslike.destination import Destination
    from jmslike.spi.provider import ProviderSession

__all__ = ["Feed", "Member"]

CLIENT_ACKNOWLEDGE = 2

_Item = tuple[Message, Any, bool]
"""(message, provider token, seen: a redelivered copy of one given back)."""

_Entry = tuple[int, int, Any]
"""(sequence, tie-breaker, what): heap entries, oldest first."""


def _group_of(item: _Item) -> str | None:
    group = item[0]._properties.get(GROUP_ID)
    return group if isinstance(group, str) else None


class Feed:
    """One provider consumer for the API consumers (``join``) of one destination and
    selector on one connection. ``window``: messages the broker may have out to the feed
    and not yet handed to a session."""

    def __init__(
        self,
        connection: Connection,
        destination: Destination,
        selector: str | None,
        window: int,
    ) -> None:
        self._connection = connection
        self.destination = destination
        self.selector = selector
        self.window = max(1, window)
        self._lock = threading.Lock()
        self._ties = itertools.count()
        self._next_seq = 0
        """The broker's order: the sequence of the next arrival."""
        self._front = 0
        """Messages given back go before everything: below the lowest sequence yet."""
        self._line: list[_Entry] = []
        """What any session may take: messages in no group, and a mark for each free
        group, at the sequence of its oldest message (stale marks are skipped)."""
        self._marks: dict[str, int] = {}
        """Free group -> the sequence of its live mark in the line."""
        self._pending: dict[str, list[_Entry]] = {}
        """A group's messages while no live session holds it (free, or held by the
        transaction of a consumer that closed)."""
        self._holders: dict[str, list[Any]] = {}
        """Group -> [member, handed and unfinished, waiting in the member's backlog]."""
        self._assigned: dict[Any, tuple[Member, str | None]] = {}
        """Token -> (member, group) of every message handed out and not finished."""
        self._members: list[Member] = []
        self._waiting: dict[Member, int] = {}
        """Members asking for messages (how many), in the order they asked."""
        self._owed = 0
        """Credit to give the broker again for messages handed out (AMQP)."""
        self._pay_at = max(1, self.window // 4)
        """Credit goes back to the broker this many at a time."""
        self._paid: set[Any] = set()
        """Tokens whose credit was given back already (handed out, not finished)."""
        self._flowing = False
        self._closed = False
        self._provider_session: ProviderSession | None = None
        self._provider: ProviderConsumer | None = None
        gate = connection._gate
        self._gate = (
            gate
            if gate is not None
            and not destination.is_topic
            and connection.capabilities.extra.get("gate_by_sequence")
            else None
        )
        """The process's client gate, told what this feed holds (``_tell_gate``): where
        the broker keeps no groups, another feed of the process (another container on the
        same queue) may hand out a group's later message first."""

    def __repr__(self) -> str:
        return f"<Feed {self.destination} members={len(self._members)}>"

    # ------------------------------------------------------------ membership
    def join(self, consumer: MessageConsumer) -> Member:
        """``consumer``'s provider consumer: the feed as it sees it."""
        if self._provider is None:
            self._open()
        member = Member(self, consumer)
        with self._lock:
            self._members.append(member)
        return member

    def _open(self) -> None:
        session = self._connection._provider.create_session(False, CLIENT_ACKNOWLEDGE)
        spec = ConsumerSpec(self.destination, selector=self.selector, window=self.window)
        try:
            provider = session.create_consumer(spec, self._arrive)
        except BaseException:
            session.close()
            raise
        provider.revoke = self._revoke
        self._provider_session, self._provider = session, provider

    @property
    def exclusive(self) -> bool:
        return self._provider is not None and self._provider.exclusive

    # ---------------------------------------------------------------- arrivals
    def _arrive(self, message: Message, token: Any) -> None:
        """The provider's sink (its I/O thread)."""
        with self._lock:
            if self._closed:
                return  # the subscription is closing: the broker gets it back with it
            seq = self._next_seq
            self._next_seq += 1
            if self._gate is not None:
                self._tell_gate(message, expected=True)
            self._place((message, token, False), seq)
            self._serve()
        self._pay()

    def _tell_gate(self, message: Message, *, expected: bool) -> None:
        """The gate hears that this feed holds ``message`` (read from the broker, not yet
        handed to a session), or no longer does without handing it out (given back to
        the broker, or lost with the connection)."""
        gate = self._gate
        group = message._properties.get(GROUP_ID)
        sequence = message._properties.get(GROUP_SEQ)
        message_id = message.jms_message_id
        if gate is None or not (message_id and isinstance(group, str)):
            return
        if not isinstance(sequence, int):
            return
        key = (self.destination.key, group)
        if expected:
            gate.expect(key, message_id, sequence)
        else:
            gate.unexpect(key, message_id, sequence)

    def _place(self, item: _Item, seq: int) -> None:
        """Under the lock: file ``item`` where the sessions that may take it look."""
        tie = next(self._ties)
        group = _group_of(item)
        if group is None:
            heapq.heappush(self._line, (seq, tie, item))
            return
        holder = self._holders.get(group)
        if holder is not None and not holder[0].gone:
            heapq.heappush(holder[0].backlog.setdefault(group, []), (seq, tie, item))
            holder[2] += 1
            return
        heapq.heappush(self._pending.setdefault(group, []), (seq, tie, item))
        if holder is None:
            self._mark(group)

    def _mark(self, group: str) -> None:
        """Under the lock: the free ``group`` is taken from the line at its oldest."""
        pending = self._pending.get(group)
        if not pending:
            return
        oldest = pending[0][0]
        mark = self._marks.get(group)
        if mark is None or oldest < mark:
            self._marks[group] = oldest
            heapq.heappush(self._line, (oldest, next(self._ties), group))

    def _serve(self) -> None:
        """Under the lock: each waiting member takes what it may, oldest first."""
        waiting = self._waiting
        progress = True
        while progress and waiting:
            progress = False
            for member in list(waiting):
                if member not in waiting or not (self._line or member.backlog):
                    continue  # (the usual case once the line is empty: nothing for it)
                taken = self._next_for(member)
                if taken is not None:
                    self._hand(member, *taken)
                    progress = True

    def _next_for(self, member: Member) -> tuple[_Item, str | None] | None:
        """Under the lock: the oldest message ``member`` may take, taken off its heap."""
        line, backlog = self._line, member.backlog
        while line and isinstance(line[0][2], str):
            seq, _tie, group = line[0]
            if self._marks.get(group) == seq and group not in self._holders:
                break
            heapq.heappop(line)  # a stale mark: the group was taken, or marked older
        if backlog:
            # The oldest head of the groups it holds (a session holds one or two).
            oldest, group = min((entries[0][0], group) for group, entries in backlog.items())
            if not line or oldest < line[0][0]:
                entries = backlog[group]
                _seq, _tie, item = heapq.heappop(entries)
                if not entries:
                    del backlog[group]
                self._holders[group][2] -= 1
                return item, group
        if not line:
            return None
        _seq, _tie, entry = heapq.heappop(line)
        if not isinstance(entry, str):
            return entry, None
        group = entry
        del self._marks[group]
        pending = self._pending.pop(group)
        _s, _t, first = heapq.heappop(pending)
        self._holders[group] = [member, 0, len(pending)]
        if pending:
            backlog[group] = pending
        return first, group

    def _hand(self, member: Member, item: _Item, group: str | None) -> None:
        """Under the lock: ``item`` goes to ``member``'s consumer."""
        message, token, _seen = item
        wanted = self._waiting.get(member, 0)
        if wanted <= 1:
            self._waiting.pop(member, None)
        else:
            self._waiting[member] = wanted - 1
        if group is not None:
            self._holders[group][1] += 1
        self._assigned[token] = (member, group)
        if token not in self._paid:
            self._paid.add(token)
            self._owed += 1
        member.consumer._sink(message, token)

    def _pay(self) -> None:
        """Give the broker back the credit of messages handed out, a few at a time
        (outside the lock)."""
        if self._owed < self._pay_at:  # read without the lock: most calls stop here
            return
        provider = self._provider
        with self._lock:
            owed = self._owed
            if provider is None or self._closed or not self._flowing or owed < self._pay_at:
                return
            self._owed = 0
        provider.flow(owed)

    # --------------------------------------------------------------- the members'
    def want(self, member: Member, credit: int) -> None:
        """``member`` asks for ``credit`` more messages."""
        first = False
        with self._lock:
            if self._closed or member.gone:
                return
            self._waiting[member] = self._waiting.get(member, 0) + credit
            if not self._flowing:
                self._flowing = first = True
            self._serve()
        if first and self._provider is not None:
            self._provider.flow(self.window)
        self._pay()

    def unwant(self, member: Member) -> None:
        with self._lock:
            self._waiting.pop(member, None)

    def finished(self, tokens: Sequence[Any]) -> None:
        """These messages are done (acknowledged, committed, dead-lettered)."""
        with self._lock:
            for token in tokens:
                self._release(token)
                self._paid.discard(token)
            self._serve()
        self._pay()

    def _release(self, token: Any) -> None:
        """Under the lock: ``token``'s session no longer has it unfinished."""
        assigned = self._assigned.pop(token, None)
        if assigned is None:
            return
        member, group = assigned
        holder = self._holders.get(group) if group is not None else None
        if holder is None or holder[0] is not member:
            return
        holder[1] -= 1
        if holder[1] <= 0:
            # Finished with all it was handed (ORD-9): the group is free, and its later
            # messages go back to the line from the holder's backlog. Kept there, a busy
            # session went on taking the groups it held and new ones from the line while
            # the others found nothing: with a window of 512, concurrency 8 ran at a
            # third of the speed of a window of 128.
            del self._holders[group]  # type: ignore[arg-type]
            if holder[2] > 0:
                self._unpin(member, group)  # type: ignore[arg-type]
            self._mark(group)  # type: ignore[arg-type]

    def _unpin(self, member: Member, group: str) -> None:
        """Under the lock: ``group``'s messages in ``member``'s backlog go back to the
        group's pending heap (their sequences keep their place in the broker's order)."""
        entries = member.backlog.pop(group, None)
        if not entries:
            return
        pending = self._pending.get(group)
        if pending is None:
            self._pending[group] = entries  # a heap already: moved whole, not re-sorted
            return
        for entry in entries:
            heapq.heappush(pending, entry)

    def _front_seqs(self, count: int) -> range:
        """Sequences below every one so far, for ``count`` messages given back in order
        (arrivals count up from 0, what is given back down from -1)."""
        self._front -= count
        return range(self._front, self._front + count)

    def give_back(self, items: Sequence[_Item]) -> None:
        """Messages a session had unfinished go back to the front of the feed, in order
        (each ``(message, token, seen)``: a seen one as its redelivered copy)."""
        if not items:
            return
        with self._lock:
            for _message, token, _seen in items:
                self._release(token)
            if self._closed:
                return
            for item, seq in zip(items, self._front_seqs(len(items)), strict=True):
                self._place(item, seq)
            self._serve()
        self._pay()

    def leave(self, member: Member, undelivered: Sequence[_Item]) -> None:
        """``member``'s consumer closed. ``undelivered``: what its session had of the
        feed and gives back, in order (held ones as redelivered copies); groups its
        session keeps in a transaction stay held (their later messages wait for it).
        The last member closes the subscription: the broker gets back what is left."""
        with self._lock:
            member.gone = True
            self._waiting.pop(member, None)
            if member in self._members:
                self._members.remove(member)
            backlog = [entry for entries in member.backlog.values() for entry in entries]
            member.backlog = {}
            for _seq, _tie, item in backlog:
                group = _group_of(item)
                if group is not None and group in self._holders:
                    self._holders[group][2] -= 1
            for _message, token, _seen in undelivered:
                self._release(token)
            last = not self._members
            if last:
                self._closed = True
                never_handed = self._drain_all(backlog)
                remaining = [*undelivered, *never_handed]
                self._paid.clear()
                for message, _token, _seen in never_handed:
                    self._tell_gate(message, expected=False)
            else:
                seqs = self._front_seqs(len(undelivered))
                for item, seq in zip(undelivered, seqs, strict=True):
                    self._place(item, seq)
                for seq, _tie, item in backlog:
                    self._place(item, seq)
                for group in [g for g, h in self._holders.items() if h[1] <= 0 and h[2] <= 0]:
                    del self._holders[group]
                    self._mark(group)
                self._serve()
        if not last:
            self._pay()
            return
        seen = [token for _message, token, was_seen in remaining if was_seen]
        self._close(seen, [token for _message, token, was_seen in remaining if not was_seen])

    def _drain_all(self, extra: Sequence[_Entry] = ()) -> list[_Item]:
        """Under the lock: every message not handed out, in the broker's order."""
        entries = [e for e in self._line if not isinstance(e[2], str)]
        for pending in self._pending.values():
            entries += pending
        for member in self._members:
            for waiting in member.backlog.values():
                entries += waiting
            member.backlog = {}
        entries += list(extra)
        self._line.clear()
        self._marks.clear()
        self._pending.clear()
        for holder in self._holders.values():
            holder[2] = 0
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        return [entry[2] for entry in entries]

    def _close(self, seen: list[Any], unseen: list[Any]) -> None:
        provider, session = self._provider, self._provider_session
        self._provider = self._provider_session = None
        try:
            if provider is not None:
                provider.close(seen, unseen)
        finally:
            if session is not None:
                session.close()

    def _revoke(self, stale: Callable[[Any], bool]) -> list[Any]:
        """The provider lost what it pushed (a reconnect): drop it everywhere."""
        with self._lock:
            drained = self._drain_all()
            kept = [item for item in drained if not stale(item[1])]
            for message, token, _seen in drained:
                if stale(token):
                    self._tell_gate(message, expected=False)
            members = list(self._members)
        dropped: list[Any] = []
        for member in members:
            revoke = member.revoke
            if revoke is not None:
                dropped += revoke(stale)
        with self._lock:
            for token in dropped:
                self._release(token)
                self._paid.discard(token)
            for group in [g for g, h in self._holders.items() if h[1] <= 0]:
                del self._holders[group]
            for item in kept:
                seq = self._next_seq
                self._next_seq += 1
                self._place(item, seq)
            self._serve()
        return dropped


class Member(ProviderConsumer):
    """The feed as one API consumer's provider consumer."""

    def __init__(self, feed: Feed, consumer: MessageConsumer) -> None:
        self.feed = feed
        self.consumer = consumer
        self.gone = False
        self.exclusive = feed.exclusive
        self.backlog: dict[str, list[_Entry]] = {}
        """Messages of the groups this member's session holds, not handed to it yet: a
        heap per group, so a group set free leaves with its heap, whole."""

    def flow(self, credit: int) -> None:
        if credit > 0:
            self.feed.want(self, credit)
        else:
            self.feed.unwant(self)

    def close(self, delivered: Sequence[Any], undelivered: Sequence[Any]) -> None:
        """Leave the feed. (A consumer leaves through ``MessageConsumer._leave_feed``,
        which gives its messages back to the feed in order; these the broker gets back
        when the feed closes.)"""
        self.feed.finished([*delivered, *undelivered])
        self.feed.leave(self, [])
