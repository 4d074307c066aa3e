"""Durations a Java port may have given in milliseconds.

jmslike takes float seconds wherever Java JMS takes milliseconds (``receive``,
``time_to_live``, ``delivery_delay``). Code ported as it reads, ``consumer.receive(5000)``
or ``producer.delivery_delay = 30000``, is valid input that means something else: a
receive on an empty queue waits 83 minutes, a delayed message comes the next day. Nothing
fails, so nothing would tell the porter; this module logs one warning per kind of
duration and process when the value looks like Java's: an int that is a whole number of
thousands (``5000``, ``60_000``). Seconds as Python code writes them rarely are
(``3600``, ``86400``); a float (``5000.0``) says seconds were meant, and is never warned
about.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["MILLISECONDS_LOOK", "warn_if_milliseconds"]

log = logging.getLogger("jmslike.durations")

MILLISECONDS_LOOK = 1000
"""Ints that are multiples of this are taken for milliseconds: Java code waits and delays
in whole seconds written as thousands."""

_warned: set[str] = set()
_lock = threading.Lock()


def warn_if_milliseconds(what: str, value: object) -> None:
    """Log once per ``what`` when ``value`` looks like Java's milliseconds; cheap enough
    for the send path (one type check and one comparison when it does not)."""
    if type(value) is not int or value < MILLISECONDS_LOOK or value % MILLISECONDS_LOOK:
        return
    with _lock:
        if what in _warned:
            return
        _warned.add(what)
    log.warning(
        "%s %d is %s: jmslike takes seconds where Java JMS takes milliseconds "
        "(%d ms is %g s); write %d.0 if seconds are meant. Said once per process.",
        what,
        value,
        _spoken(value),
        value,
        value / 1000,
        value,
    )


def _spoken(seconds: int) -> str:
    """``1 h 23 min`` for 5000 s: how long the value means here."""
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [(days, "d"), (hours, "h"), (minutes, "min"), (secs, "s")]
    return " ".join(f"{n} {unit}" for n, unit in parts if n) or "0 s"
