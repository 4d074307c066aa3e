"""The streaming read's receiver (``acknowledge=stored``): the next micro-batches are
received and spooled while Spark runs the current one.

Spark's own cost per micro-batch (offset log, planning, commit log: about half a second
on a 2-core machine) used to come on top of the time the batch took to receive, because
``latestOffset`` received it. Here one thread, on the driver's Python worker, receives
all the time: every ``drainAckEvery`` messages (or when none comes for ``_GAP`` seconds)
it appends them to the spool of the batch it is filling, fsync'd, and only then
acknowledges them, exactly as ``latestOffset`` did. A batch is full at
``maxMessagesPerBatch`` rows or ``maxBytesPerBatch`` of bodies; then the thread goes on
with the next batch, in a spool of its own, until ``maxBatchesAhead`` full batches wait
for Spark, and stops receiving until Spark takes one. ``cut`` makes the oldest full
batch Spark's next one at once; with none full, it cuts the batch being filled when the
destination went quiet, or when Spark has waited ``receiveTimeout`` (then with what is
there, maybe nothing). So batches adapt: while Spark is slower than the broker each
batch is full, and the first one, which Spark takes several seconds to start (about 5 s
in a fresh Spark session here), is cut after ``receiveTimeout`` at most while the next
ones are received meanwhile, several batches of them rather than one.

Each batch has its own spool file, named by its start offset, so the spools of a reader
that dies are contiguous batches for the next one (``_stream._finish_spools``).

Only this thread touches the session and consumer (JMS: a session is one thread's); the
lock guards what ``cut`` shares with it: the batches spooled and their start offsets.
Group order (ORD-9): one consumer still takes every batch in delivery order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from jmslike.consumer import MessageConsumer
from jmslike.message import Message
from jmslike.session import Session
from jmslike.spark._mapping import body_size, message_row
from jmslike.spark._options import SparkOptions

if TYPE_CHECKING:
    from jmslike.spark._stream import _StateDir

log = logging.getLogger("jmslike.spark")

_GAP = 0.05
"""Seconds without a message after which the destination counts as quiet (the old
reader's wait between two messages of one batch)."""


class Spooler:
    """Receives and spools ahead of Spark on a thread of its own (module docstring)."""

    def __init__(
        self,
        session: Session,
        consumer: MessageConsumer,
        state: _StateDir,
        options: SparkOptions,
        known: dict[str, int],
        start: int,
    ) -> None:
        self._session = session
        self._consumer = consumer
        self._state = state
        self._options = options
        self._known = known
        """Message id -> batch: copies of rows already on disk, acknowledged, not read."""
        self._cond = threading.Condition()
        self._ahead: deque[tuple[int, int]] = deque()
        """Full batches spooled and acknowledged, oldest first: (start offset, rows)."""
        self._start = start
        self._ready = 0
        """Rows spooled and acknowledged since ``_start``: the batch being filled (the
        rows themselves are on disk only)."""
        self._ready_bytes = 0
        self._quiet = False
        self._error: BaseException | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="jmslike-spark-spooler", daemon=True)
        self._thread.start()

    def cut(self, timeout: float) -> int:
        """The end offset of the next batch: the oldest full one at once, else the one
        being filled once the destination is quiet, or after ``timeout`` seconds with what
        is spooled then (nothing: the offset as it was)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._error is not None:
                    raise self._error
                left = deadline - time.monotonic()
                if self._ahead or (self._ready and self._quiet) or left <= 0:
                    break
                self._cond.wait(min(left, _GAP) if self._ready else left)
            if self._ahead:
                start, rows = self._ahead.popleft()
            else:
                start, rows = self._start, self._ready
                self._start = start + rows
                self._ready = self._ready_bytes = 0
            if rows:
                self._state.promote_spool(start, start + rows)
            self._cond.notify_all()
            return start + rows

    def stop(self) -> None:
        """Stop receiving; what was received and not spooled goes back with the session."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(self._options.receive_timeout + 5.0)

    def _full(self, rows: int, size: int) -> bool:
        """Would the batch being filled be full with ``rows`` more rows of ``size`` bytes
        of bodies?"""
        options = self._options
        return (
            self._ready + rows >= options.max_messages_per_batch
            or self._ready_bytes + size >= options.max_bytes_per_batch
        )

    def _run(self) -> None:
        try:
            self._receive()
        except BaseException as exc:  # told to the next cut, on Spark's thread
            log.debug("streaming read's receiver stopped", exc_info=True)
            with self._cond:
                self._error = exc
                self._cond.notify_all()

    def _receive(self) -> None:
        every = self._options.drain_ack_every
        held: list[Message] = []
        held_bytes = unacknowledged = 0
        while True:
            with self._cond:
                while not self._stopping and len(self._ahead) >= self._options.max_batches_ahead:
                    self._cond.wait()
                if self._stopping:
                    return
            message = self._consumer.receive(_GAP)
            if message is not None:
                unacknowledged += 1
                if self._known.pop(message.jms_message_id or "", None) is None:
                    held.append(message)
                    held_bytes += body_size(message)
                # else: a copy of a row already on disk (its acknowledgement was lost)
                if unacknowledged < every and not self._full(len(held), held_bytes):
                    continue
            self._store(held, held_bytes, unacknowledged, quiet=message is None)
            held, held_bytes, unacknowledged = [], 0, 0

    def _store(self, held: list[Message], size: int, unacknowledged: int, *, quiet: bool) -> None:
        """Spool ``held`` (fsync'd), then acknowledge: the broker forgets only what is on
        disk."""
        with self._cond:
            if held:
                base = self._start + self._ready + 1
                rows = [message_row(message, base + i) for i, message in enumerate(held)]
                self._state.spool(self._start, rows)
                self._ready += len(rows)
                self._ready_bytes += size
                if self._full(0, 0):  # it waits for its cut; the next batch starts
                    self._ahead.append((self._start, self._ready))
                    self._start += self._ready
                    self._ready = self._ready_bytes = 0
            if unacknowledged:
                self._session.acknowledge()
            self._quiet = quiet
            self._cond.notify_all()
