"""The connections of this process, at its exit and across ``os.fork()``.

**Exit.** A script that sent and ended without closing its connection lost its last
non-persistent messages: of 2,000, over AMQP 1.0 all on Artemis and RabbitMQ and 1,999
on ActiveMQ Classic (a lone send too on Artemis and Classic), over STOMP to ActiveMQ
Classic 15. They were
still in the connection's outgoing buffer, or written to a socket the process's end
reset, and a non-persistent send returns before the broker has the message. Closing says
goodbye to the broker the way ``close()`` does (STOMP's DISCONNECT and its receipt, AMQP's
close), which the broker answers only once it has read everything before it. Only
connections the application made are tracked (not the internal ones jmslike opens for
partitions and the like: their owner closes them). The close runs on a thread of its own
and is waited for at most ``EXIT_CLOSE_WAIT`` seconds in all, so a listener that never
returns (``close()`` waits for the one in progress) cannot hold the exit.

**Fork.** A child made by ``os.fork()`` (multiprocessing's default start method on
Linux, gunicorn's workers of a preloaded app) inherits the parent's connections without
their threads: a send there waited for ever (AMQP; over STOMP it waited after writing on
the parent's socket), and on an in-memory embedded broker it went to the child's copy of
the broker, lost. In the child each inherited connection is marked lost with an error
that says to connect after the fork, so sends and receives raise it at once, and
``close()`` there lets go of the connection without a word to the broker (the socket is
the parent's, which goes on using it). Nor does the child's exit close them.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jmslike.connection import Connection

__all__ = ["EXIT_CLOSE_WAIT", "close_left_open", "track"]

log = logging.getLogger("jmslike.connection")

EXIT_CLOSE_WAIT = 5.0
"""Seconds the interpreter's exit waits, in all, for the connections left open to close."""

_open: weakref.WeakSet[Connection] = weakref.WeakSet()
_lock = threading.Lock()
_registered = False


def track(connection: Connection) -> None:
    """Close ``connection`` at the interpreter's exit if it is still open then."""
    global _registered
    with _lock:
        _open.add(connection)
        if not _registered:
            atexit.register(close_left_open)
            _registered = True


def close_left_open(wait: float | None = None) -> list[Connection]:
    """Close every tracked connection still open, waiting at most ``wait`` seconds
    (``EXIT_CLOSE_WAIT``); returns the ones found open."""
    wait = EXIT_CLOSE_WAIT if wait is None else wait
    with _lock:
        left = [connection for connection in _open if not connection.closed]
    if not left:
        return left
    remote = [str(c.url) for c in left if c.url.scheme != "embedded"]
    if remote:
        log.warning(
            "%d connection(s) still open at exit (%s): closing them, so that what they "
            "sent reaches the broker; close each connection yourself (with connection: "
            "...), or non-persistent messages may be lost",
            len(left),
            ", ".join(sorted(set(remote))),
        )

    def close_all() -> None:
        for connection in left:
            try:
                connection.close()
            except Exception as exc:  # the others are still closed
                log.warning("closing %s at exit failed: %r", connection.url, exc)

    try:
        closer = threading.Thread(target=close_all, name="jmslike-exit-close", daemon=True)
        closer.start()
    except RuntimeError:  # a Python that starts no thread at exit: close here, unbounded
        close_all()
        return left
    closer.join(wait)
    if closer.is_alive():
        log.warning("gave up closing connections at exit after %s s", wait)
    return left


def _after_fork_in_child() -> None:
    """Runs in the child of ``os.fork()``: the parent's connections are not the child's."""
    global _lock
    _lock = threading.Lock()  # held by another thread of the parent, maybe: not here
    inherited = list(_open)
    _open.clear()
    for connection in inherited:
        connection._inherited_by_fork(os.getpid())


os.register_at_fork(after_in_child=_after_fork_in_child)
