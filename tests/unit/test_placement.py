"""``thread_cpus``: its values, its errors, and where it may be written.

That the threads really run there, on every provider, is tests/contract/
test_thread_placement.py."""

from __future__ import annotations

import os
import threading

import pytest

from jmslike import ConfigurationError, ConnectionFactory
from jmslike.placement import Placement, parse_thread_cpus, placement_of

ALLOWED = frozenset(os.sched_getaffinity(0))


def test_empty_leaves_threads_free() -> None:
    assert parse_thread_cpus("") is None
    assert parse_thread_cpus("  ") is None
    assert placement_of("").cpus is None


def test_one_is_one_allowed_cpu_the_same_every_time() -> None:
    one = parse_thread_cpus("one")
    assert one is not None and len(one) == 1 and one <= ALLOWED
    assert parse_thread_cpus("ONE") == one


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (str(min(ALLOWED)), {min(ALLOWED)}),
        (f"{min(ALLOWED)}-{max(ALLOWED)}", set(range(min(ALLOWED), max(ALLOWED) + 1))),
        (",".join(map(str, sorted(ALLOWED))), set(ALLOWED)),
    ],
)
def test_cpu_lists(text: str, expected: set[int]) -> None:
    assert parse_thread_cpus(text) == (expected & ALLOWED)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("first", "'first' is not a CPU number or range"),
        ("0,,1", "'' is not a CPU number or range"),
        ("3-1", "'3-1' is not a CPU range"),
        ("-1", "'-1' is not a CPU number or range"),
        ("4096", "CPU 4096 is not one this process may use"),
    ],
)
def test_bad_values_name_the_setting_and_value(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_thread_cpus(text, "URL query")
    assert f"thread_cpus={text!r} in URL query" in str(caught.value)
    assert says in str(caught.value)


def test_a_bad_value_is_refused_when_the_factory_is_made() -> None:
    """Before anything is sent: the factory refuses it, from the URL as from code."""
    with pytest.raises(ConfigurationError, match="thread_cpus='4096' in the query of URL"):
        ConnectionFactory("embedded://?threadCpus=4096")
    with pytest.raises(ConfigurationError, match="thread_cpus='x'"):
        ConnectionFactory("embedded://", thread_cpus="x")


def test_every_spelling_reaches_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = str(min(ALLOWED))
    assert ConnectionFactory(f"embedded://?threadCpus={cpu}").settings.thread_cpus == cpu
    assert ConnectionFactory("embedded://", threadCpus=cpu).settings.thread_cpus == cpu
    monkeypatch.setenv("JMSLIKE_THREAD_CPUS", "one")
    assert ConnectionFactory("embedded://").settings.thread_cpus == "one"


def test_a_placed_thread_runs_on_its_cpus_and_its_target_runs() -> None:
    cpu = max(ALLOWED)
    seen: list[frozenset[int]] = []
    thread = Placement(frozenset({cpu})).thread(
        lambda: seen.append(frozenset(os.sched_getaffinity(0))), "placed"
    )
    assert thread.daemon and thread.name == "placed"
    thread.start()
    thread.join(5.0)
    assert seen == [frozenset({cpu})]
    assert frozenset(os.sched_getaffinity(0)) == ALLOWED


def test_a_refused_placement_is_logged_and_the_thread_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A CPU set that is no longer the process's (a container shrunk) never stops
    delivery: the thread runs where it is, and says so."""
    ran = threading.Event()
    thread = Placement(frozenset({4096})).thread(ran.set, "refused")
    with caplog.at_level("WARNING", logger="jmslike.placement"):
        thread.start()
        thread.join(5.0)
    assert ran.is_set()
    assert "thread refused left unplaced: CPUs [4096] refused" in caplog.text
