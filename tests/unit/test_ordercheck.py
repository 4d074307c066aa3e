"""jmslike.testing.ordercheck: the checker the cross-process tests and benchmarks trust
must itself catch each way of breaking the promise (ORD-2, ORD-4, ORD-11)."""

from __future__ import annotations

from typing import Any

from jmslike.testing.ordercheck import problems


def record(text: str, start: float, end: float, **extra: Any) -> dict[str, Any]:
    return {
        "pid": 1,
        "text": text,
        "redelivered": False,
        "start": start,
        "end": end,
        "ok": True,
        **extra,
    }


SENT = ["a:1", "a:2", "b:1"]


def test_a_clean_run_has_no_problems() -> None:
    records = [record("a:1", 0, 1), record("b:1", 0.5, 1.5), record("a:2", 1, 2)]
    assert problems(records, SENT) == []


def test_lost_out_of_order_and_overlap_are_named() -> None:
    assert problems([record("a:1", 0, 1), record("b:1", 0, 1)], SENT) == ["lost 1: ['a:2']"]
    found = problems([record("a:2", 0, 1), record("a:1", 2, 3), record("b:1", 0, 1)], SENT)
    assert found == ["group a out of order: ['a:2', 'a:1']"]
    found = problems([record("a:1", 0, 2), record("a:2", 1, 3), record("b:1", 0, 1)], SENT)
    assert found == ["group a: a:1 (pid 1) and a:2 (pid 1) in progress at once"]


def test_a_second_copy_must_be_flagged_redelivered() -> None:
    records = [record("a:1", 0, 1), record("a:1", 1, 2), record("a:2", 2, 3), record("b:1", 0, 1)]
    assert problems(records, SENT) == ["a:1 processed 2 times, a later copy not redelivered"]
    records[1]["redelivered"] = True
    assert problems(records, SENT) == []


def test_a_failed_acknowledgement_is_not_an_effect() -> None:
    records = [record("a:1", 0, 1, ok=False), record("a:2", 1, 2), record("b:1", 0, 1)]
    assert problems(records, SENT) == ["lost 1: ['a:1']"]


def test_a_commit_in_doubt_counts_unless_the_message_came_again() -> None:
    doubtful = record("a:1", 0, 1, ok=False, in_doubt=True)
    assert problems([doubtful, record("a:2", 1, 2), record("b:1", 0, 1)], SENT) == []
    again = record("a:1", 1, 2, redelivered=True)
    records = [doubtful, again, record("a:2", 2, 3), record("b:1", 0, 1)]
    assert problems(records, SENT) == []


def test_an_attempt_logged_before_and_after_its_acknowledgement_counts_once() -> None:
    pending = record("a:1", 0, 1, ok=False, in_doubt=True)
    failed = record("a:1", 0, 1, ok=False, in_doubt=False)
    rest = [record("a:2", 2, 3), record("b:1", 0, 1)]
    # Killed between the two records: in doubt, and the message never came again.
    assert problems([pending, *rest], SENT) == []
    # The acknowledgement failed: the message must come again, or it is lost.
    assert problems([pending, failed, *rest], SENT) == ["lost 1: ['a:1']"]
