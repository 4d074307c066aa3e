"""RabbitMQ's "inequivalent arg" refusal, read (jmslike.spi.diagnose): the AMQP provider
decides from it whether to use a queue as it exists (jmslike_amqp.durability), and both
providers turn it into one line that says what to do."""

from __future__ import annotations

import pytest

from jmslike.spi.diagnose import Inequivalent, inequivalent, inequivalent_note

DURABLE = (
    "amqp:precondition-failed: PRECONDITION_FAILED - inequivalent arg 'durable' for queue "
    "'orders' in vhost '/': received 'true' but current is 'false'"
)
ARGUMENT = (
    "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'orders' in vhost "
    "'/': received none but current is the value '1000' of type 'long'"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (DURABLE, Inequivalent("durable", "orders", "true", "false")),
        (ARGUMENT, Inequivalent("x-max-length", "orders", "none", "1000")),
        ("amqp:not-found: NOT_FOUND - no queue 'orders' in vhost '/'", None),
    ],
)
def test_the_refusal_is_read_in_both_of_its_forms(text: str, expected: Inequivalent | None) -> None:
    assert inequivalent(text) == expected


def test_the_note_names_the_queue_the_values_and_the_way_out() -> None:
    note = inequivalent_note(DURABLE)
    assert "queue 'orders' exists with durable=false" in note
    assert "declares it with durable=true" in note
    assert "rabbitmqctl delete_queue orders" in note and "/amq/queue/" in note
    assert inequivalent_note("something else") == ""
