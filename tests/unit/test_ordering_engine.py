"""The ordering engine's broker-independent parts: names, binding, holding table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike import InvalidOrderingGroupError, TextMessage
from jmslike.ordering import (
    MAX_GROUP_NAME,
    GroupBinding,
    GroupTable,
    check_message_group,
    generate_group_name,
    validate_group_name,
)


@pytest.mark.parametrize("bad", ["", b"joe", 5, None, "x" * (MAX_GROUP_NAME + 1), ["joe"]])
def test_ord1_bad_names_are_refused_naming_the_value(bad: object) -> None:
    """ORD-1: only a non-empty str of at most 255 characters names a group."""
    with pytest.raises(InvalidOrderingGroupError) as info:
        validate_group_name(bad)
    assert "ORD-1" in str(info.value)
    shown = repr(bad)[:20] if not isinstance(bad, str) or bad else "''"
    assert shown[:10] in str(info.value)


@given(st.text(min_size=1, max_size=MAX_GROUP_NAME))
def test_ord1_any_nonempty_str_up_to_255_is_a_name(name: str) -> None:
    assert validate_group_name(name) == name


def test_ord2_generated_names_are_unique_and_time_ordered() -> None:
    """ORD-2: time-based and statistically unique."""
    names = [generate_group_name() for _ in range(10_000)]
    assert len(set(names)) == len(names)
    clocks = [name.split("-")[1] for name in names]
    assert clocks == sorted(clocks)
    assert all(len(name) <= MAX_GROUP_NAME for name in names)


def test_ord4_binding_stamps_group_and_sequence_from_one() -> None:
    """ORD-4 / ORD-8a: JMSXGroupID plus a sequence counted from 1 per binding."""
    binding = GroupBinding("joe")
    messages = [TextMessage(str(i)) for i in range(3)]
    for message in messages:
        binding.stamp(message)
    assert [m.ordering_group for m in messages] == ["joe"] * 3
    assert [m.get_int_property("JMSXGroupSeq") for m in messages] == [1, 2, 3]
    rebound = GroupBinding("joe")
    again = TextMessage("x")
    rebound.stamp(again)
    assert again.group_sequence == 1


def test_ord7_binding_overwrites_an_application_group() -> None:
    message = TextMessage("x")
    message.set_string_property("JMSXGroupID", "mine")
    GroupBinding("bound").stamp(message)
    assert message.ordering_group == "bound"


def test_ord7_application_group_is_validated() -> None:
    message = TextMessage("x")
    message.set_string_property("JMSXGroupID", "")
    with pytest.raises(InvalidOrderingGroupError):
        check_message_group(message)


def test_ord9_one_holder_at_a_time_and_release_when_all_finished() -> None:
    table: GroupTable[int] = GroupTable()
    state = table.state("g")
    assert table.may_take(state, "A")
    table.take(state, "A")
    table.take(state, "A")
    assert table.may_take(state, "A")
    assert not table.may_take(state, "B")
    assert table.holders() == {"g": "A"}
    assert not table.finish("g", state)
    assert not table.may_take(state, "B")
    assert table.finish("g", state)
    assert table.may_take(state, "B")
    assert len(table) == 0, "a free, empty group is forgotten"


def test_groups_with_waiting_items_are_kept_until_drained() -> None:
    table: GroupTable[int] = GroupTable()
    state = table.state("g")
    state.waiting.append(1)
    table.take(state, "A")
    assert table.finish("g", state)
    assert table.get("g") is state
    state.waiting.clear()
    table.discard_if_idle("g", state)
    assert table.get("g") is None
