"""Streaming read: micro-batches whose offsets and rows jmslike keeps on disk.

Process model: Spark keeps one Python process on the driver for a streaming source
(``latestOffset``, ``partitions``, ``commit`` and ``stop`` all run there), and runs
``read`` in executor workers. So the broker session lives on the driver: ``latestOffset``
ends a batch of messages received on a CLIENT_ACKNOWLEDGE session (up to
``maxMessagesPerBatch``) and keeps it in the state directory (``stateDir``, fsync'd, one
file per batch, named by the batch's end offset). ``partitions`` hands the batch's
rows to the executors inside the partition, read back from that file, so a batch Spark
replays after a failure is the same rows (``read`` gives them to Spark as Arrow record
batches), and ``commit(end)`` deletes the files up to ``end``. When the broker
hears of a batch depends on the ``acknowledge`` option:

* ``stored`` (the default), a write-ahead log: one session and consumer serve every
  batch, on a thread that receives the next batch while Spark runs the current one
  (``_spooler.py``); every ``drainAckEvery`` messages are appended to
  ``spool-<start>.jsonl`` and fsync'd, and only then acknowledged; the spool renamed
  ``batch-<end>.jsonl`` is the batch. A batch Spark fails
  is served again from its file (the broker has forgotten it); a process that dies
  mid-batch leaves its spools, which the next reader turns into batches, and a copy the
  broker sends again because the last acknowledgement was lost is recognised by message
  id and only acknowledged.
  Batches can be large (ActiveMQ Classic pages in only 200 messages at a time and sends
  no more while they are unacknowledged, so holding a batch until Spark commits it keeps
  it small), and no empty batches are needed: Spark's fixed cost per micro-batch (about
  half a second) is paid for thousands of rows, not a hundred. The state directory is
  then the only copy of what Spark has not processed yet: keep it on a durable disk,
  with the query's ``checkpointLocation``.
* ``commit``: each ``latestOffset`` opens a session of its own and keeps it open,
  unacknowledged, until Spark commits that batch; ``commit(end)`` acknowledges the
  sessions of every batch up to ``end``. A batch that fails is never committed: its
  messages go back to the broker when the query stops, and the restarted query serves
  the batch again from the file (the redelivered copies are recognised by message id
  and only acknowledged, not read twice). The broker keeps every message until Spark is
  done with it.

Group order: a batch's rows of one group are in delivery order in one input partition
(ORD-9; the batch is split by group into ``numPartitions`` partitions, ``_rows.py``), and
Spark runs micro-batches one after another. With ``stored`` one consumer takes every batch, so
a group's messages come in send order across batches. With ``commit`` a batch's session
holds its groups until Spark commits it, so another session cannot get a later message
of those groups first (ORD-9, ORD-10).

Spark commits batch N only when it plans batch N+1. With ``commit``, if a fresh session
gets nothing while batch N is uncommitted (every waiting message may belong to groups
batch N holds, or the broker offers them only to batch N's consumer, as ActiveMQ does),
``latestOffset`` answers an empty batch: the offset's ``tick`` moves, ``seq`` does not.
Spark plans it, commits batch N on the way (its session is acknowledged and closed, its
groups are free) and runs the empty batch; the next ``latestOffset`` gets the messages
on a fresh session. So a session only ever holds one batch, acknowledged exactly when
Spark commits that batch, and the last batch of a run is committed by the empty batch
after it, without waiting for more data. An idle stream makes at most one empty batch:
with nothing pending, an empty receive leaves the offset as it was.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from jmslike.connection import Connection
from jmslike.consumer import MessageConsumer
from jmslike.errors import ConfigurationError
from jmslike.session import Session
from jmslike.spark._mapping import arrow_batches, message_row
from jmslike.spark._options import SparkOptions
from jmslike.spark._rows import COLUMN, decode, encode, split_lines, split_rows
from jmslike.spark._spooler import Spooler

__all__ = ["JmsStreamReader"]

log = logging.getLogger("jmslike.spark")

_MESSAGE_ID = COLUMN["message_id"]


@dataclass
class _Pending:
    """An unacknowledged batch session; acknowledged once Spark commits ``ack_at``."""

    session: Session
    ack_at: int


class _RowsPartition(InputPartition):
    """A micro-batch's rows (or its share of them, ``_rows.py``) travel inside its
    partition: executors need no state dir.

    As the JSON text of the encoded rows, which the batch files hold already: one string
    pickles and unpickles in a few milliseconds where 10,000 tuples took 38 ms, and the
    executor, not the driver's single Python process, decodes them."""

    def __init__(self, start: int, index: int, encoded: str) -> None:
        super().__init__((start, index))
        self.encoded = encoded
        """A JSON array of the rows, encoded as in the batch files (``_rows.encode``)."""

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        return [decode(row) for row in json.loads(self.encoded)]


class _StateDir:
    """``committed.json`` (the committed offset, ``{"seq": n, "tick": t}``) plus a file
    per uncommitted batch: ``batch-<end>.jsonl``, a spool renamed (a row a line), or
    ``batch-<end>.json``, written whole (``acknowledge=commit``, a recovered spool, and
    state dirs from before 2026-12-06)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def _write(self, name: str, data: dict[str, Any]) -> None:
        tmp = self.path / f".{name}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump(data, out)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(self.path / name)
        self._sync_dir()

    def _sync_dir(self) -> None:
        """A new or renamed file survives a crash only once its directory is synced."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def committed(self) -> dict[str, int]:
        file = self.path / "committed.json"
        if not file.exists():
            return {"seq": 0, "tick": 0}
        data = json.loads(file.read_text(encoding="utf-8"))
        return {"seq": int(data["seq"]), "tick": int(data.get("tick", 0))}

    def set_committed(self, offset: dict[str, int]) -> None:
        self._write("committed.json", offset)

    def _batch_files(self, after: int, upto: int | None) -> list[tuple[int, Path]]:
        """(end offset, file) of the batches whose end is in (``after``, ``upto``], in
        order: the file name says the end, so no other file is read."""
        found = []
        for file in [*self.path.glob("batch-*.json"), *self.path.glob("batch-*.jsonl")]:
            end = int(file.stem.removeprefix("batch-"))
            if after < end and (upto is None or end <= upto):
                found.append((end, file))
        return sorted(found)

    def batches(self) -> dict[int, dict[str, Any]]:
        found: dict[int, dict[str, Any]] = {}
        for end, file in self._batch_files(-1, None):
            text = file.read_text(encoding="utf-8")
            if file.suffix == ".json":
                found[end] = json.loads(text)
            else:
                rows = [json.loads(line) for line in text.splitlines()]
                found[end] = {"start": end - len(rows), "end": end, "rows": rows}
        return found

    def encoded_rows(self, after: int, upto: int, count: int = 1) -> list[str]:
        """The rows of the batches ending in (``after``, ``upto``], split into ``count``
        parts by group (``_rows.py``), each a JSON array of encoded rows put together
        from the files' text without decoding a row (a spool renamed holds a row a
        line)."""
        parts: list[list[str]] = [[] for _ in range(count)]
        for _end, file in self._batch_files(after, upto):
            text = file.read_text(encoding="utf-8")
            if file.suffix == ".json":
                split = split_rows(json.loads(text)["rows"], count)
                lines = [[json.dumps(row) for row in rows] for rows in split]
            else:
                lines = split_lines(text.splitlines(), count)
            for part, more in zip(parts, lines, strict=True):
                part.extend(more)
        return ["[" + ",".join(part) + "]" for part in parts]

    def add_batch(self, start: int, end: int, rows: list[tuple[Any, ...]]) -> None:
        self._write(
            f"batch-{end}.json",
            {"start": start, "end": end, "rows": [encode(r) for r in rows]},
        )

    def write_batch(self, start: int, end: int, encoded: list[list[Any]]) -> None:
        """A batch from rows already encoded for JSON (a spool's)."""
        self._write(f"batch-{end}.json", {"start": start, "end": end, "rows": encoded})

    def spool(self, start: int, rows: list[tuple[Any, ...]]) -> None:
        """Append ``rows`` to the spool of the batch starting after ``start``, on disk
        (fsync'd) when this returns: only then may they be acknowledged."""
        path = self.path / f"spool-{start}.jsonl"
        new = not path.exists()
        with open(path, "a", encoding="utf-8") as out:
            out.writelines(json.dumps(encode(row)) + "\n" for row in rows)
            out.flush()
            os.fsync(out.fileno())
        if new:
            self._sync_dir()

    def spools(self) -> dict[int, list[list[Any]]]:
        """Spools a reader left mid-batch: start offset -> encoded rows. A last line cut
        short by a crash was never acknowledged (the fsync did not return): dropped."""
        found: dict[int, list[list[Any]]] = {}
        for file in self.path.glob("spool-*.jsonl"):
            rows = []
            for line in file.read_text(encoding="utf-8").splitlines():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    break
            found[int(file.stem.removeprefix("spool-"))] = rows
        return found

    def promote_spool(self, start: int, end: int) -> None:
        """The spool of the batch starting after ``start`` becomes that batch, renamed
        (its rows are not encoded again on ``latestOffset``'s path): a crash leaves the
        spool, which the next reader makes a batch, or the batch, never both."""
        os.replace(self.path / f"spool-{start}.jsonl", self.path / f"batch-{end}.jsonl")
        self._sync_dir()

    def drop_spool(self, start: int) -> None:
        (self.path / f"spool-{start}.jsonl").unlink(missing_ok=True)

    def drop_batches(self, upto: int) -> None:
        """The file name says a batch's end: no need to read the rows to drop it."""
        for _end, file in self._batch_files(-1, upto):
            file.unlink(missing_ok=True)


class JmsStreamReader(DataSourceStreamReader):
    """See the module docstring. ``latestOffset`` takes no arguments: the signature
    every PySpark 4.x accepts (4.2 added ``latestOffset(start, limit)`` as an option)."""

    def __init__(self, options: SparkOptions) -> None:
        if options.state_dir is None:
            raise ConfigurationError(
                "option stateDir is missing: a streaming read keeps its offsets there, e.g. "
                '.option("stateDir", "/var/lib/app/orders-offsets") (keep it with the '
                "query's checkpointLocation)"
            )
        self.options = options
        self._state = _StateDir(options.state_dir)
        self._split: int | None = None
        """Input partitions a batch is split into by group (``_rows.py``); found on the
        first ``partitions`` (driver-side: the readers Spark makes for ``read`` need no
        factory)."""
        self._connection: Connection | None = None
        self._pending: list[_Pending] = []
        self._spooler: Spooler | None = None
        """``acknowledge=stored``: the one session and consumer of every batch, on their
        own thread."""
        self._known: dict[str, int] = {}
        """Message id -> end offset of the spooled batch it is in (after a restart)."""
        self._committed = {"seq": 0, "tick": 0}
        """The committed offset, as in committed.json (read once, kept by ``commit``)."""
        self._seq = self._tick = 0
        """``_tick`` counts the empty batches that let Spark commit a pending one (module
        docstring)."""
        self._recovered = False

    def _recover(self) -> None:
        """Read the state dir, on the first call of a driver-side method: not in
        ``__init__``, because Spark also makes a reader wherever it plans a batch's read
        (only ``read`` is used there), and that one must not turn the spool that the
        driver's reader is writing at that moment into a batch."""
        if self._recovered:
            return
        self._recovered = True
        spooled = self._state.batches()
        self._finish_spools(spooled)
        for end, data in spooled.items():
            for row in data["rows"]:
                if row[_MESSAGE_ID] is not None:
                    self._known[row[_MESSAGE_ID]] = end
        self._committed = self._state.committed()
        self._seq = max([self._committed["seq"], *spooled])
        self._tick = self._committed["tick"]

    def _finish_spools(self, spooled: dict[int, dict[str, Any]]) -> None:
        """A reader that died mid-batch acknowledged what it spooled: those rows exist
        only on disk now, so they become a batch of their own, served like any other
        (and added to ``spooled``, the batches found, so no file is read twice)."""
        starts = {data["start"] for data in spooled.values()}
        for start, rows in sorted(self._state.spools().items()):
            if rows and start not in starts:
                end = start + len(rows)
                self._state.write_batch(start, end, rows)
                spooled[end] = {"start": start, "end": end, "rows": rows}
            self._state.drop_spool(start)

    def _open(self) -> Connection:
        if self._connection is None:
            self._connection = self.options.factory().create_connection()
            self._connection.start()
        return self._connection

    def initialOffset(self) -> dict[str, int]:  # noqa: N802
        self._recover()
        return dict(self._committed)

    # No (start, limit) arguments: PySpark 4.0 and 4.1 call it so, 4.2+ still do for a
    # reader that declares none (then maxMessagesPerBatch is the read limit).
    def latestOffset(self) -> dict[str, int]:  # type: ignore[override]  # noqa: N802
        self._recover()
        if self.options.acknowledge == "stored":
            return self._latest_stored()
        connection = self._open()
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(self.options.destination)
        start = self._seq
        # With a batch pending, a fresh session often gets nothing (module docstring):
        # ask it only briefly, then let Spark commit the pending batch first.
        first_wait = min(self.options.receive_timeout, 0.1) if self._pending else None
        rows, ack_at = self._receive(consumer, start, first_wait)
        if ack_at == 0:
            session.close()
            if self._pending:
                self._tick += 1  # an empty batch, so that Spark commits the pending one
        elif ack_at <= self._committed["seq"]:
            session.acknowledge()  # only copies of batches Spark already committed
            session.close()
        else:
            self._pending.append(_Pending(session, ack_at))
        if rows:
            self._seq = start + len(rows)
            self._state.add_batch(start, self._seq, rows)
        return {"seq": self._seq, "tick": self._tick}

    def _latest_stored(self) -> dict[str, int]:
        """``acknowledge=stored``: the next batch, received and spooled ahead of Spark by
        the reader's receiver thread (``_spooler.py``)."""
        if self._spooler is None:
            session = self._open().create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = session.create_consumer(self.options.destination)
            self._spooler = Spooler(
                session, consumer, self._state, self.options, self._known, self._seq
            )
        self._seq = self._spooler.cut(self.options.receive_timeout)
        return {"seq": self._seq, "tick": self._tick}

    def _receive(
        self, consumer: MessageConsumer, start: int, first_wait: float | None = None
    ) -> tuple[list[tuple[Any, ...]], int]:
        """Up to maxMessagesPerBatch rows, and the offset whose commit may acknowledge them."""
        rows: list[tuple[Any, ...]] = []
        ack_at = 0
        timeout = self.options.receive_timeout if first_wait is None else first_wait
        while len(rows) < self.options.max_messages_per_batch:
            message = consumer.receive(timeout)
            if message is None:
                break
            timeout = min(timeout, 0.05)
            known = self._known.pop(message.jms_message_id or "", None)
            if known is not None:  # redelivered after a restart: already in a spooled batch
                ack_at = max(ack_at, known)
                continue
            rows.append(message_row(message, start + len(rows) + 1))
            ack_at = max(ack_at, start + len(rows))
        return rows, ack_at

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        """One input partition per part of the split (``_rows.py``), empty ones too, so
        that Spark's partition id is the part's index (a destination partition's)."""
        first, last = int(start["seq"]), int(end["seq"])
        if self._split is None:
            self._split = self.options.input_partitions()
        parts = self._state.encoded_rows(first, last, self._split)
        return [_RowsPartition(first, index, text) for index, text in enumerate(parts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, _RowsPartition)
        return arrow_batches(partition.rows)

    def commit(self, end: dict[str, int]) -> None:
        self._recover()
        upto = int(end["seq"])
        keep: list[_Pending] = []
        for pending in self._pending:
            if pending.ack_at <= upto:
                pending.session.acknowledge()
                pending.session.close()
            else:
                keep.append(pending)
        self._pending = keep
        self._committed = {"seq": upto, "tick": int(end.get("tick", 0))}
        self._state.set_committed(self._committed)
        self._state.drop_batches(upto)

    def stop(self) -> None:
        """Close without acknowledging: what Spark did not commit goes back (ORD-11)."""
        if self._spooler is not None:
            self._spooler.stop()
            self._spooler = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None
