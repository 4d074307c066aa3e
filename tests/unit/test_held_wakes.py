"""``jmslike.spi.wakes``: the dispatcher wake-ups a provider's I/O thread holds back over a
pass through its events (the AMQP provider's loop does) reach the dispatchers when the
pass ends, all of them, in the order asked; another thread's wake-ups are never held."""

from __future__ import annotations

import threading
import time

from jmslike._dispatch import SessionDispatcher
from jmslike.spi.wakes import hold_wakes, release_wakes


class _Target:
    def __init__(self, name: str, seen: list[str], done: threading.Event) -> None:
        self.name, self.seen, self.done = name, seen, done

    def _dispatch_one(self) -> None:
        self.seen.append(self.name)
        self.done.set()


def test_held_wakes_arrive_at_release_in_order() -> None:
    dispatcher = SessionDispatcher("held-order")
    seen: list[str] = []
    done = threading.Event()
    try:
        hold_wakes()
        hold_wakes()  # a second hold (the loop's next turn before it waited): no-op
        for name in ("a", "b", "c"):
            dispatcher.wake(_Target(name, seen, done))
        time.sleep(0.1)
        assert seen == []  # nothing woken while held
    finally:
        release_wakes()
    assert dispatcher.wait_idle(5.0)
    deadline = time.monotonic() + 5.0
    while len(seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == ["a", "b", "c"]
    release_wakes()  # nothing held: nothing happens
    dispatcher.stop(5.0)


def test_another_threads_wakes_are_not_held() -> None:
    dispatcher = SessionDispatcher("held-other")
    seen: list[str] = []
    done = threading.Event()
    hold_wakes()
    try:
        other = threading.Thread(target=lambda: dispatcher.wake(_Target("x", seen, done)))
        other.start()
        other.join(5.0)
        assert done.wait(5.0) and seen == ["x"]
    finally:
        release_wakes()
        dispatcher.stop(5.0)
