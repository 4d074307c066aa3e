"""Which CPUs jmslike's own threads may run on: the ``thread_cpus`` setting.

Why it exists: a listener container's message passes between threads (the connection's
I/O thread, then the session thread that runs the listener, then back for the
acknowledgement), and each hand-off passes the interpreter lock. When the OS puts those
threads on different cores, every hand-off wakes a thread on the other core; on the
project's 2-core machines that kernel work was almost half of a container's CPU over
AMQP at concurrency 8, and holding jmslike's threads to one core gave the container
6-21% more messages a second (docs/performance.md, "The container with the client's
threads on one core"). So a service whose listeners are Python-bound may ask for it.

Why it is not the default: a listener that does its work in C and lets the interpreter
lock go (compression, numpy, a database driver) would lose the other cores, and on a
large host the one core chosen may be busy with other work.

Only the threads jmslike starts for a connection are placed: its I/O threads (the
AMQP connection's; stomp.py's receiver thread and the heart-beat thread that one
starts), the sessions' listener threads and the asynchronous-send completion threads.
The application's own threads stay where the OS puts them.

Linux is the only platform with a per-thread affinity (``os.sched_setaffinity(0, ...)``
sets the calling thread's); elsewhere any value but the empty one is refused when the
factory is made.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from jmslike.errors import ConfigurationError

__all__ = ["FREE", "ONE", "Placement", "parse_thread_cpus", "placement_of"]

log = logging.getLogger("jmslike.placement")

ONE = "one"
"""``thread_cpus = "one"``: one CPU of those the process may use, the same for every
thread of the process, chosen by process id so that the processes of one service spread
over the host's cores."""


def _allowed() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))


def parse_thread_cpus(value: str, source: str = "settings") -> frozenset[int] | None:
    """The CPUs a ``thread_cpus`` value names (``None``: leave threads where the OS puts
    them). Accepts ``""``, ``"one"`` or a Linux CPU list (``"0"``, ``"0,2"``, ``"4-7"``);
    anything else, a CPU the process may not use, or a platform without per-thread
    affinity raises ConfigurationError naming the value."""
    text = value.strip().lower()
    if not text:
        return None
    if not hasattr(os, "sched_setaffinity"):
        raise ConfigurationError(
            f"thread_cpus={value!r} in {source}: this platform has no per-thread CPU "
            "affinity (Linux only); leave thread_cpus empty"
        )
    allowed = _allowed()
    if text == ONE:
        ordered = sorted(allowed)
        return frozenset({ordered[os.getpid() % len(ordered)]})
    cpus: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            raise ConfigurationError(
                f"thread_cpus={value!r} in {source}: {part.strip()!r} is not a CPU number "
                "or range; write 'one' or a CPU list such as '0', '0,2' or '4-7'"
            ) from None
        if low < 0 or high < low:
            raise ConfigurationError(
                f"thread_cpus={value!r} in {source}: {part.strip()!r} is not a CPU range "
                "(write low-high, low <= high, from 0)"
            )
        cpus.update(range(low, high + 1))
    refused = sorted(cpus - allowed)
    if refused:
        raise ConfigurationError(
            f"thread_cpus={value!r} in {source}: CPU {', '.join(map(str, refused))} is not "
            f"one this process may use ({', '.join(map(str, sorted(allowed)))}); "
            "write 'one' to let jmslike choose"
        )
    return frozenset(cpus)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the threads of one connection run; ``cpus is None`` leaves them free."""

    cpus: frozenset[int] | None = None

    def apply(self) -> None:
        """Hold the calling thread to the CPUs. Called first thing on a thread jmslike
        started; a refusal (a container's CPU set shrank since the factory was made) is
        logged and the thread runs where it is: placement is about speed, never a reason
        to stop delivering."""
        if self.cpus is None:
            return
        try:
            os.sched_setaffinity(0, self.cpus)
        except OSError as exc:
            log.warning(
                "thread %s left unplaced: CPUs %s refused (%s)",
                threading.current_thread().name,
                sorted(self.cpus),
                exc,
            )

    def wrap(self, target: Callable[[], object]) -> Callable[[], object]:
        """``target`` run on a thread held to the CPUs (itself when nothing is placed)."""
        if self.cpus is None:
            return target

        def placed() -> object:
            self.apply()
            return target()

        return placed

    def thread(self, target: Callable[[], object], name: str) -> threading.Thread:
        """A daemon thread (not started) that holds itself to the CPUs before ``target``."""
        return threading.Thread(target=self.wrap(target), name=name, daemon=True)


FREE = Placement()
"""Threads where the OS puts them (``thread_cpus`` empty, the default)."""


def placement_of(thread_cpus: str) -> Placement:
    """The placement a (validated) ``thread_cpus`` value asks for."""
    cpus = parse_thread_cpus(thread_cpus)
    return FREE if cpus is None else Placement(cpus)
