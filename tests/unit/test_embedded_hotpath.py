"""The embedded hot path's shortcuts (issue 17) keep their promises: shared empty property
tables are never written through, and a KeyQueue pops keys smallest first however they
were pushed."""

from __future__ import annotations

import random

from jmslike.embedded.channel import KeyQueue
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
