"""The ordering engine: group names, group binding on send, group holding on delivery.

Messages that share a group name are processed one after another, in the order they
reached their destination (ORDERING.md). This module holds the rules that do not depend on
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

import os
import secrets
import time
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from jmslike.errors import InvalidOrderingGroupError
from jmslike.message import GROUP_ID, GROUP_SEQ, Message

__all__ = [
    "MAX_GROUP_NAME",
    "GroupBinding",
    "GroupState",
    "GroupTable",
    "generate_group_name",
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

    __slots__ = ("_next_seq", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._next_seq = 1

    def stamp(self, message: Message) -> None:
        """Put the group and the next sequence number on ``message`` (ORD-4, ORD-7).

        Writes the property dict directly: the names are known-good, and a bound producer
        must overwrite a group the application put on the message itself (ORD-7).
        """
        props = message._properties
        props[GROUP_ID] = self.name
        props[GROUP_SEQ] = self._next_seq
        if message._prop_types:
            message._prop_types.pop(GROUP_ID, None)
            message._prop_types.pop(GROUP_SEQ, None)
        self._next_seq += 1


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

    def held_by(self, holder: Hashable) -> list[str]:
        """Groups ``holder`` holds (for diagnostics and tests; O(groups))."""
        return [name for name, st in self._groups.items() if st.holder == holder]

    def holders(self) -> dict[str, Hashable]:
        """Group -> holder for every held group (for invariant checks in tests)."""
        return {name: st.holder for name, st in self._groups.items() if st.holder is not None}
