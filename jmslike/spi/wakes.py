"""Dispatcher wake-ups a provider's I/O thread holds back over a pass through its events.

A delivery for a listener wakes its session's dispatcher thread (``jmslike/_dispatch.py``).
A provider whose I/O thread hands out several deliveries in one pass calls
``hold_wakes`` before the pass and ``release_wakes`` as it goes to wait for its socket;
the wake-ups made in between (on that thread only) happen then, in the order asked.
The AMQP provider does (``jmslike_amqp/driver.py``).
"""

from __future__ import annotations

import threading

__all__ = ["HELD", "hold_wakes", "release_wakes"]

HELD = threading.local()
"""``wakes``: on a provider's I/O thread between ``hold_wakes`` and ``release_wakes``, the
dispatcher wake-ups held back (elsewhere absent or None)."""


def hold_wakes() -> None:
    """Hold back the dispatcher wake-ups this thread makes until ``release_wakes``.

    A provider's I/O thread holds them over a pass through its events. A dispatcher
    woken at once competes for the interpreter lock with the rest of the pass, and where
    the pass calls into C code that gives the lock up on every call (Proton's cffi
    binding), each of those calls can hand the lock to a woken session and wait to get
    it back: eight listener sessions on one AMQP connection made about nine context
    switches a message. Held back, they are woken together as the thread goes to wait
    for its socket."""
    if getattr(HELD, "wakes", None) is None:
        HELD.wakes = []


def release_wakes() -> None:
    """Wake what ``hold_wakes`` held back, in the order asked."""
    wakes = getattr(HELD, "wakes", None)
    if wakes is None:
        return
    HELD.wakes = None
    for put, target in wakes:
        put(target)
