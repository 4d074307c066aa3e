"""Temporary queues over STOMP: what jmslike keeps for them in this process.

No broker refuses a send to a temporary queue whose connection closed, which JMS says
fails (``_DELETED_TEMPORARY``), and RabbitMQ delivers a temporary queue's messages to the
creating connection whether a consumer exists or not (``_TemporaryInbox`` keeps them for
the next one). The probe that has RabbitMQ create such a queue is
``StompConnection._declare`` (jmslike_stomp.connection).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence

from jmslike.spi.temporary import DeletedTemporaries
from jmslike_stomp.transport import FrameHandler

__all__ = ["_DELETED_TEMPORARY", "_TemporaryInbox"]

_DELETED_TEMPORARY = DeletedTemporaries()
"""Temporary queues whose connection (in this process) closed. Classic and RabbitMQ would
quietly create a new one on a send; JMS says such a send fails."""


class _TemporaryInbox:
    """A temporary queue that the broker delivers to its creator by itself (RabbitMQ).

    RabbitMQ pushes such a queue's messages to the creating connection as they arrive,
    acknowledged already, whether a consumer exists or not. JMS says they wait in the queue
    until a consumer takes them, so they wait here: from ``create_temporary_queue()`` on,
    every frame goes to the attached consumer, or into ``waiting`` while there is none.
    A consumer that closes puts back, in order, what it held or buffered unfinished.
    """

    __slots__ = ("_handler", "_lock", "_waiting")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: deque[tuple[dict[str, str], bytes]] = deque()
        self._handler: FrameHandler | None = None

    def on_frame(
        self, headers: dict[str, str], body: bytes, returned_by: FrameHandler | None = None
    ) -> None:
        """stomp.py's receiver thread: to the consumer, or wait for one. A consumer that
        got the frame as it closed (``returned_by``) hands it back here."""
        with self._lock:
            handler = self._handler
            if handler is None or handler == returned_by:
                self._waiting.append((headers, body))
                return
        handler(headers, body)

    def attach(self, handler: FrameHandler) -> None:
        """A consumer of the queue: it gets what waits first, in order, then what comes."""
        with self._lock:
            while self._waiting:
                headers, body = self._waiting.popleft()
                handler(headers, body)
            self._handler = handler

    def detach(self, handler: FrameHandler) -> None:
        with self._lock:
            if self._handler == handler:
                self._handler = None

    def put_back(self, frames: Sequence[tuple[dict[str, str], bytes]]) -> None:
        """Frames a closed consumer did not finish: ahead of the others, in order."""
        with self._lock:
            self._waiting.extendleft(reversed(frames))
