"""SessionDispatcher.call_later: the timers a listener's grown request is checked with
(docs/threading.md#flow-control) run on the dispatcher thread, in time order, and never
stop the thread that runs the session's listeners."""

from __future__ import annotations

import threading
import time

from jmslike._dispatch import SessionDispatcher


def test_timers_run_in_order_on_the_dispatcher_thread() -> None:
    dispatcher = SessionDispatcher("timers-order")
    ran: list[tuple[str, bool]] = []
    done = threading.Event()
    try:
        for name, delay in (("c", 0.06), ("a", 0.02), ("b", 0.04)):
            dispatcher.call_later(
                delay, lambda name=name: ran.append((name, dispatcher.in_dispatcher()))
            )
        dispatcher.call_later(0.08, done.set)
        assert done.wait(2.0)
        assert ran == [("a", True), ("b", True), ("c", True)]
    finally:
        dispatcher.stop(2.0)


def test_many_short_timers_among_calls_keep_the_thread_alive() -> None:
    """Timers falling due between two looks at the clock (a negative wait once killed
    the dispatcher thread, and with it every listener of the session)."""
    dispatcher = SessionDispatcher("timers-many")
    count = 0
    lock = threading.Lock()

    def tick() -> None:
        nonlocal count
        with lock:
            count += 1

    try:
        for n in range(3000):
            dispatcher.call_later(0.00001 * (n % 7), tick)
            dispatcher.call(tick)
        finished = threading.Event()
        dispatcher.call_later(0.05, finished.set)
        assert finished.wait(10.0), "the dispatcher thread stopped"
        deadline = time.monotonic() + 2.0
        while count < 6000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert count == 6000
    finally:
        dispatcher.stop(2.0)


def test_a_timer_falling_due_while_the_clock_is_read(monkeypatch) -> None:
    """A clock that moves on between two readings (as a busy machine's does): a timer that
    was not due at the first reading is past due at the second. The dispatcher must then
    run it, not wait a negative time (which raised and ended the thread)."""
    import jmslike._dispatch as dispatch

    class SteppingClock:
        def __init__(self) -> None:
            self.now = 1000.0
            self.lock = threading.Lock()

        def monotonic(self) -> float:
            with self.lock:
                self.now += 0.001
                return self.now

    clock = SteppingClock()
    monkeypatch.setattr(dispatch, "time", clock)
    dispatcher = SessionDispatcher("timers-clock")
    fired = threading.Event()
    try:
        for _ in range(50):
            fired.clear()
            dispatcher.call_later(0.0015, fired.set)
            assert fired.wait(2.0), "the timer never ran"
    finally:
        dispatcher.stop(2.0)
