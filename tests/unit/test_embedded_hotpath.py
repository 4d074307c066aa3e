"""The embedded hot path's shortcuts (issue 17) keep their promises: shared empty property
tables are never written through, a KeyQueue pops keys smallest first however they
were pushed, and a group's next message that ``Channel.hand_out`` leaves unplaced is
found by its holder and by no one else (ORD-9)."""

from __future__ import annotations

import random

from jmslike.embedded.channel import Channel, ConsumerSlot, KeyQueue
from jmslike.message import TextMessage
from jmslike.spi.messages import (
    copy_message,
    declare_property_type,
    set_provider_property,
    update_provider_properties,
)


def test_stored_copies_share_nothing_they_write() -> None:
    original = TextMessage("body")
    first, second = original._copy(stored=True), original._copy(stored=True)
    assert first._properties is second._properties  # the shared empty table...
    set_provider_property(first, "JMSXDeliveryCount", 2)
    first.set_long_property("n", 1)
    update_provider_properties(second, {"x": "y"})
    assert first.properties == {"JMSXDeliveryCount": 2, "n": 1}  # ...taken on first write
    assert second.properties == {"x": "y"}
    assert original._copy(stored=True).properties == {}
    assert TextMessage("other")._copy(stored=True).properties == {}


def test_copies_share_no_type_table_they_write() -> None:
    first, second = copy_message(TextMessage("a")), copy_message(TextMessage("b"))
    declare_property_type(first, "small", "byte")
    first._properties["small"] = 3
    second.set_object_property("big", 1)
    assert first.property_type("small") == "byte"
    assert second.property_type("big") == "int"
    assert copy_message(TextMessage("c"))._prop_types == {}
    second.set_long_property("big", 1)
    assert second.property_type("big") == "long"
    assert copy_message(TextMessage("d"))._prop_types == {}


def test_key_queue_pops_smallest_first() -> None:
    rng = random.Random(17)
    queue = KeyQueue()
    pushed = []
    for step in range(2000):
        # Mostly increasing keys (new messages), some smaller ones (heads, priorities).
        key = step * 4 if rng.random() < 0.8 else rng.randrange(step * 4 + 1)
        queue.push(key)
        pushed.append(key)
        if rng.random() < 0.3:
            smallest = min(pushed)
            assert queue.top() == smallest
            assert queue.pop() == smallest
            pushed.remove(smallest)
    assert len(queue) == len(pushed) and sorted(queue) == sorted(pushed)
    assert [queue.pop() for _ in range(len(pushed))] == sorted(pushed)
    assert not queue
    assert KeyQueue([5, 1, 3]).pop() == 1


def _channel_with(*groups: str | None) -> Channel:
    channel = Channel("queue://q", on_delay=lambda _channel, _due: None)
    for index, group in enumerate(groups):
        message = TextMessage(f"{group}{index}")
        if group is not None:
            message.set_string_property("JMSXGroupID", group)
        channel.enqueue(message, origin="p", now=0.0)
    return channel


def _slot(channel: Channel, session: str) -> ConsumerSlot:
    slot = ConsumerSlot(channel, session, session, lambda *_: None, None, False)
    channel.attach(slot)
    return slot


def _take(channel: Channel, slot: ConsumerSlot) -> str | None:
    delivery = channel.hand_out(slot, 1.0)
    return None if delivery is None else delivery[0].text


def test_an_unplaced_head_goes_to_its_holder_only() -> None:
    """ORD-9: a session that asks again before finishing gets its group's next message;
    another session never does while the group is held, and does once it is free."""
    channel = _channel_with("A", "B", "A", None)
    mine, other = _slot(channel, "s1"), _slot(channel, "s2")
    first = channel.hand_out(mine, 1.0)
    assert first is not None and first[0].text == "A0"
    assert _take(channel, other) == "B1"  # not A2: s1 holds A
    assert _take(channel, other) == "None3"
    assert _take(channel, other) is None
    assert _take(channel, mine) == "A2"  # s1 asks again before finishing A0
    assert _take(channel, mine) is None


def test_a_head_left_unplaced_survives_a_give_back_and_a_finish() -> None:
    """The group's first message given back comes before the one hand_out left unplaced,
    to whichever session asks; after a finish the next goes to everyone (ORD-10), also
    once its holder's session has closed."""
    channel = _channel_with("A", "A", "A")
    mine, other = _slot(channel, "s1"), _slot(channel, "s2")
    taken = channel.hand_out(mine, 1.0)
    assert taken is not None
    channel.give_back([taken[1]], delivered=True, now=1.0)
    again = channel.hand_out(other, 1.0)
    assert again is not None and again[0].text == "A0" and again[0].jms_redelivered
    assert _take(channel, mine) is None  # s2 holds A now
    channel.finish(again[1], 1.0)
    second = channel.hand_out(mine, 1.0)
    assert second is not None and second[0].text == "A1"
    channel.forget_holder("s1")  # s1's keys go, with the head hand_out left unplaced
    assert _take(channel, other) is None  # A1 unfinished: A is still s1's
    channel.finish(second[1], 1.0)
    assert _take(channel, other) == "A2"
