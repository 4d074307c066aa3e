"""The embedded broker's file store: persistent messages and durable subscriptions in SQLite.

What it promises, and how:

* A persistent send that returned, or a commit that returned, survives ``kill -9`` of the
  process at any moment: each is one SQLite transaction, committed before the call
  returns. The database runs in WAL mode; ``synchronous=NORMAL`` (the default) survives a
  process crash, ``sync="full"`` also survives losing the machine's power, at the price
  of an fsync per commit.
* Nothing comes back twice except deliveries that were in flight: an acknowledgement
  deletes its row before it returns, and each delivery records its count first, so a
  message that was handed out and not acknowledged is redelivered after a restart,
  flagged, with its count.
* Messages come back in their original order, groups included: rows are numbered in
  arrival order and replayed in that order into fresh channels.
* One process at a time: an exclusive ``flock`` on ``<file>.lock``. A second process gets
  a clear error instead of two brokers writing one file.

Non-persistent messages, temporary destinations and non-durable subscriptions never touch
the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from jmslike.embedded.codec import decode, encode
from jmslike.errors import IllegalStateError, JMSException
from jmslike.message import Message

__all__ = ["FileStore", "StoredMessage", "StoredSubscription"]

log = logging.getLogger("jmslike.embedded.store")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    meta TEXT NOT NULL,
    body BLOB NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS subscriptions (
    channel TEXT PRIMARY KEY,
    topic TEXT NOT NULL,
    selector TEXT,
    client_id TEXT,
    name TEXT NOT NULL,
    shared INTEGER NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    row: int
    channel: str
    message: Message
    delivered: int


@dataclass(frozen=True, slots=True)
class StoredSubscription:
    channel: str
    topic: str
    selector: str | None
    client_id: str | None
    name: str
    shared: bool


class FileStore:
    """One SQLite file owned by one broker in one process.

    Every call comes with the broker's lock held, so the store needs no lock of its own;
    ``transaction`` only has to tell a nested write from a top-level one.
    """

    def __init__(self, path: str | os.PathLike[str], sync: str = "normal") -> None:
        self.path = Path(path).resolve()
        self.sync = sync
        if sync not in ("normal", "full"):
            raise JMSException(f"store sync {sync!r}: use 'normal' or 'full'")
        self._lock_file = self._take_file_lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={sync.upper()}")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            self._release_file_lock()
            raise JMSException(f"cannot open embedded broker store {self.path}: {exc}") from exc
        self._in_transaction = False

    def __repr__(self) -> str:
        return f"<FileStore {self.path}>"

    # ---------------------------------------------------------------- locking
    def _take_file_lock(self) -> IO[str]:
        lock_path = self.path.with_name(self.path.name + ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held until close
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise IllegalStateError(
                f"embedded broker store {self.path} is in use by {owner}; one process at a "
                "time may open it (close the other, or use another file)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()}")
        handle.flush()
        return handle

    def _release_file_lock(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()

    def close(self) -> None:
        self._db.close()
        self._release_file_lock()

    # ------------------------------------------------------------ transactions
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Group the writes inside into one commit (a JMS transaction, a dead-lettering).

        The broker changes its memory as it writes, so only a failed write rolls the
        file back. A KeyboardInterrupt (Ctrl-C) or SystemExit inside, or as the block
        ends, commits what was written: the memory keeps those changes too. Before, it
        rolled back (a commit's sends were gone from the file, though delivered from
        memory), or, landing just before the COMMIT, left SQLite inside the transaction,
        and every later write failed ("cannot start a transaction within a
        transaction"). BEGIN and COMMIT are called on the connection directly: no Python
        call between them and the flag, where CPython raises an interrupt."""
        if self._in_transaction:
            yield
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._in_transaction = True
            yield
        except Exception as exc:
            if self._in_transaction:
                self._in_transaction = False
                self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):  # the BEGIN's (_run converts the others)
                raise self._error(exc) from exc
            raise
        finally:
            if self._in_transaction:  # ran through, or interrupted: keep what was written
                self._in_transaction = False
                try:
                    self._db.execute("COMMIT")
                except sqlite3.Error as exc:
                    raise self._error(exc) from exc

    def _run(self, sql: str, args: tuple[object, ...]) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _error(self, exc: sqlite3.Error) -> JMSException:
        return JMSException(f"embedded broker store {self.path}: {exc}")

    # ---------------------------------------------------------------- messages
    def add(self, channel: str, message: Message) -> int:
        """Store a message; returns its row (the store's arrival order)."""
        meta, body = encode(message)
        cursor = self._run(
            "INSERT INTO messages (channel, meta, body) VALUES (?, ?, ?)", (channel, meta, body)
        )
        row = cursor.lastrowid
        assert row is not None
        return row

    def remove(self, rows: Iterable[int]) -> None:
        for row in rows:
            self._run("DELETE FROM messages WHERE id = ?", (row,))

    def set_delivered(self, row: int, count: int) -> None:
        self._run("UPDATE messages SET delivered = ? WHERE id = ?", (count, row))

    def load(self) -> Iterator[StoredMessage]:
        """Every stored message, in arrival order."""
        rows = self._db.execute(
            "SELECT id, channel, meta, body, delivered FROM messages ORDER BY id"
        ).fetchall()
        for row, channel, meta, body, delivered in rows:
            yield StoredMessage(row, channel, decode(meta, body), delivered)

    # ----------------------------------------------------------- subscriptions
    def save_subscription(self, sub: StoredSubscription) -> None:
        self._run(
            "INSERT OR REPLACE INTO subscriptions (channel, topic, selector, client_id, name, "
            "shared) VALUES (?, ?, ?, ?, ?, ?)",
            (sub.channel, sub.topic, sub.selector, sub.client_id, sub.name, int(sub.shared)),
        )

    def drop_subscription(self, channel: str) -> None:
        with self.transaction():
            self._run("DELETE FROM subscriptions WHERE channel = ?", (channel,))
            self._run("DELETE FROM messages WHERE channel = ?", (channel,))

    def subscriptions(self) -> list[StoredSubscription]:
        rows = self._db.execute(
            "SELECT channel, topic, selector, client_id, name, shared FROM subscriptions"
        ).fetchall()
        return [
            StoredSubscription(channel, topic, selector, client_id, name, bool(shared))
            for channel, topic, selector, client_id, name, shared in rows
        ]
