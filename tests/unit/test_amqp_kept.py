"""How a commit of sends kept by jmslike (AMQP 1.0 brokers without a transaction
coordinator: RabbitMQ) reads the outcomes it waits for: every send made before any
outcome is waited for, and an error that says which kind of failure it was and how
many of the sends the broker has. The real broker's side is in
tests/integration/test_rabbitmq_amqp_commit.py."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from jmslike import (
    ConnectionFailedError,
    SendInDoubtError,
    TransactionInDoubtError,
    TransactionRolledBackError,
)
from jmslike.errors import InvalidDestinationError, JMSException
from jmslike.spi.provider import SendDone
from jmslike_amqp.kept import KeptCommit, send_kept

Transfer = Callable[[SendDone], None]


def _send_kept(transfers: list[Transfer], timeout: float) -> None:
    """``send_kept`` with each transfer made at once (as if the connection's thread had
    run it before ``make`` returned)."""

    def make(transfer: Transfer, done: SendDone, made: Callable[[], None]) -> None:
        transfer(done)
        made()

    send_kept(KeptCommit(transfers), make, lambda call: call(), timeout)


def _answering(answers: list[BaseException | None], made: list[int]) -> list[Transfer]:
    """Transfers that each record being made, and answer later, from another thread
    (as the connection's thread does), once every send has been made."""
    told: list[tuple[SendDone, BaseException | None]] = []

    def transfer(index: int, done: SendDone) -> None:
        made.append(index)
        told.append((done, answers[index]))
        if len(told) == len(answers):
            threading.Timer(0.01, lambda: [d(a) for d, a in told]).start()

    return [lambda done, i=i: transfer(i, done) for i in range(len(answers))]


def test_all_accepted_returns_after_every_send_was_made() -> None:
    made: list[int] = []
    _send_kept(_answering([None] * 5, made), timeout=5.0)
    assert made == [0, 1, 2, 3, 4]


def test_a_refused_send_rolls_back_and_names_what_the_broker_has() -> None:
    refused = InvalidDestinationError("queue full")
    with pytest.raises(TransactionRolledBackError) as raised:
        _send_kept(_answering([None, None, refused, None], []), timeout=5.0)
    text = str(raised.value)
    assert "queue full" in text and "3 were confirmed stored" in text, text
    assert "1 refused" in text, text


def test_an_outcome_lost_with_the_connection_is_in_doubt() -> None:
    lost = SendInDoubtError("connection reset")
    with pytest.raises(TransactionInDoubtError) as raised:
        _send_kept(_answering([None, lost, lost], []), timeout=5.0)
    assert "2 in doubt" in str(raised.value) and "1 were confirmed" in str(raised.value)


def test_no_answer_in_time_is_in_doubt() -> None:
    def silent(done: SendDone) -> None:
        pass

    with pytest.raises(TransactionInDoubtError, match=r"no answer within 0\.1 s"):
        _send_kept([silent, silent], timeout=0.1)


def test_a_send_that_could_not_be_made_stops_the_rest() -> None:
    made: list[int] = []

    def accepted(done: SendDone) -> None:
        made.append(len(made))
        done(None)

    def no_credit(done: SendDone) -> None:
        raise ConnectionFailedError("no credit within 5 s; the message was not sent")

    with pytest.raises(TransactionRolledBackError) as raised:
        _send_kept([accepted, no_credit, accepted], timeout=5.0)
    assert made == [0]
    assert "2 not made" in str(raised.value) and "1 were confirmed" in str(raised.value)
    assert isinstance(raised.value, JMSException)


def test_a_commit_stopped_by_ctrl_c_is_carried_on_without_making_a_send_twice() -> None:
    """A KeyboardInterrupt after the third send was queued for the connection's thread
    (made there once that thread ran it) and before ``make`` returned: the next call
    waits for that thread first (the barrier), then makes only the last two."""
    made: list[int] = []
    queued: list[Callable[[], None]] = []
    barriers: list[int] = []

    def make(index: int, done: SendDone, mark_made: Callable[[], None]) -> None:
        def on_connection_thread() -> None:
            made.append(index)
            mark_made()
            done(None)

        queued.append(on_connection_thread)
        if index == 2 and not barriers:
            raise KeyboardInterrupt
        queued.pop()()

    def barrier(call: Callable[[], None]) -> None:
        barriers.append(1)
        while queued:
            queued.pop(0)()
        call()

    commit = KeptCommit(list(range(5)))
    with pytest.raises(KeyboardInterrupt):
        send_kept(commit, make, barrier, 5.0)
    assert made == [0, 1]
    send_kept(commit, make, barrier, 5.0)
    assert made == [0, 1, 2, 3, 4] and barriers == [1]
