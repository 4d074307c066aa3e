"""A transaction's sends kept by jmslike, made at its commit (brokers without a
transaction coordinator: RabbitMQ).

They are made all at once and their outcomes waited for together, so a commit costs one
round trip and one write of the broker's store for the lot. Made one at a time, each
waiting for its outcome, they cost both per message: on RabbitMQ a commit of 100 sends
ran at 1,623-2,023 msg/s, no faster than a commit of each (7,039-7,398 made at once;
2026-12-06, docs/performance.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from jmslike.errors import (
    JMSException,
    SendInDoubtError,
    TransactionInDoubtError,
    TransactionRolledBackError,
)
from jmslike.spi.provider import SendDone

__all__ = ["KeptCommit", "Make", "send_kept"]


class _Outcomes:
    """The answers of the sends made so far, told on the connection's thread."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self.accepted = 0
        self.refused: list[BaseException] = []
        """Sends the broker refused: not stored."""
        self.doubtful: list[BaseException] = []
        """Sends written whose outcome was lost with the connection: stored or not."""

    def tell(self, error: BaseException | None) -> None:
        with self._lock:
            if error is None:
                self.accepted += 1
            elif isinstance(error, SendInDoubtError):
                self.doubtful.append(error)
            else:
                self.refused.append(error)
            self._lock.notify_all()

    def snapshot(self) -> tuple[int, list[BaseException], list[BaseException]]:
        """(accepted, refused, doubtful) now: late answers may still come."""
        with self._lock:
            return self.accepted, list(self.refused), list(self.doubtful)

    def wait(self, made: int, timeout: float) -> bool:
        """True once all ``made`` sends are answered, False if ``timeout`` came first."""
        with self._lock:
            return self._lock.wait_for(
                lambda: self.accepted + len(self.refused) + len(self.doubtful) >= made,
                timeout,
            )


class KeptCommit:
    """A commit's kept sends under way: all of them, in order, how many the connection's
    thread has made, and the outcomes of those. Kept by the session until the commit
    ends, so that a commit a Ctrl-C stopped is carried on by the next call, from the
    first send not made: none made twice, none dropped. Before, the sends were taken off
    the session first, and an interrupt before they were made lost them."""

    def __init__(self, sends: list[Any]) -> None:
        self.sends = sends
        self.made = 0
        """Sends made: counted by the connection's thread, which no Ctrl-C stops."""
        self.tried = False
        """A call began: one that follows waits for the connection's thread first."""
        self.outcomes = _Outcomes()

    def one_made(self) -> None:
        self.made += 1


Make = Callable[[Any, SendDone, Callable[[], None]], None]
"""Makes one kept send: ``make(send, done, made)``; ``done`` hears its outcome, ``made``
is called on the connection's thread once the transfer is made; raises if it was not
(no credit in time, the connection gone)."""


def send_kept(
    commit: KeptCommit,
    make: Make,
    barrier: Callable[[Callable[[], None]], object],
    timeout: float,
) -> None:
    """Make every send of ``commit`` not made yet, then wait up to ``timeout`` seconds
    for all their outcomes. A call after one a Ctrl-C stopped first runs ``barrier``
    (the connection's thread runs what was queued before it), so that a send that call
    queued counts as made and is not made again.

    Raises :class:`TransactionInDoubtError` when the outcome of a send that was made is
    unknown (lost with the connection, or not come in time), else
    :class:`TransactionRolledBackError` when a send was refused or could not be made.
    Either names how many of the transaction's sends the broker has: those stay (a
    transaction kept by jmslike is not atomic at the broker)."""
    if commit.tried:
        barrier(lambda: None)
    commit.tried = True
    outcomes = commit.outcomes
    transfers = commit.sends
    stopped: JMSException | None = None
    made = commit.made  # (each is made on the connection's thread, after make returns)
    while made < len(transfers):
        try:
            make(transfers[made], outcomes.tell, commit.one_made)
        except JMSException as exc:
            stopped = exc
            break
        made += 1
    answered = outcomes.wait(made, timeout)
    accepted, refused, doubtful = outcomes.snapshot()
    if stopped is None and answered and not refused and not doubtful:
        return
    unknown = made - accepted - len(refused)  # lost with the connection, or no answer yet
    counts = (
        f"of the transaction's {len(transfers)} sends {accepted} were confirmed stored "
        f"(they stay), {len(refused)} refused, {unknown} in doubt, "
        f"{len(transfers) - made} not made"
    )
    if unknown:
        cause = doubtful[0] if doubtful else None
        raise TransactionInDoubtError(
            f"commit: the outcome of {unknown} send(s) is unknown "
            f"({cause or f'no answer within {timeout} s'}); they may or may not be "
            f"stored; {counts}"
        ) from cause
    cause = refused[0] if refused else stopped
    raise TransactionRolledBackError(f"commit failed ({cause}); {counts}") from cause
