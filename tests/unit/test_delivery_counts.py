"""The client's delivery counts (jmslike/spi/counts.py): JMSXDeliveryCount where the broker
sends none, and what a delivery that was never shown does to it (ORD-10, ORD-11)."""

from __future__ import annotations

from jmslike import Destination, Queue, Topic
from jmslike.spi.counts import DeliveryCounts, count_scope
from jmslike.spi.provider import ConsumerSpec


def test_counts_rise_per_delivery_and_start_at_two_when_flagged() -> None:
    counts = DeliveryCounts()
    assert counts.count("a", False) == 1
    assert counts.count("a", True) == 2
    assert counts.count("b", True) == 2  # redelivered, first seen here (another process)


def test_a_delivery_returned_unseen_keeps_the_number() -> None:
    counts = DeliveryCounts()
    counts.count("a", False)
    counts.returned_unseen("a")  # buffered, never handed out
    assert counts.count("a", True) == 1


def test_a_late_arrival_never_counted_does_not_count() -> None:
    """Sent to a closing consumer before the broker read the close: the broker flags the
    next delivery redelivered, but the application never saw the message."""
    counts = DeliveryCounts()
    counts.arrived_unseen("a")
    assert counts.count("a", True) == 1


def test_a_late_arrival_of_a_message_seen_keeps_its_count() -> None:
    """Seen once, given back as its session closed, sent at once to the closing link again
    (ActiveMQ Classic over AMQP): its next delivery is its second, not its first (a CI run
    once saw it come back as ('a', redelivered False, count 1))."""
    counts = DeliveryCounts()
    assert counts.count("a", False) == 1
    counts.arrived_unseen("a")
    assert counts.count("a", False) == 2


def test_forget_starts_over() -> None:
    counts = DeliveryCounts()
    counts.count("a", False)
    counts.forget("a")
    assert counts.count("a", False) == 1


def test_count_scope_is_one_per_queue_and_one_per_topic_subscription() -> None:
    """A queue's consumers share a stream (a message given back comes to any of them,
    counted); each subscription of a topic is a stream of its own, since every one gets
    a copy under the same message id (tests/contract: first deliveries on every case)."""
    queue, topic = Queue("orders"), Topic("prices")

    def scope(
        destination: Destination, name: str | None = None, client_id: str | None = None, **kw: bool
    ) -> str:
        return count_scope(ConsumerSpec(destination, subscription=name, **kw), client_id)

    assert scope(queue) == scope(queue) != scope(Queue("other"))
    assert scope(topic) != scope(topic)  # plain consumers: one stream each
    named = {
        scope(topic, "s", "a", durable=True),
        scope(topic, "s", "b", durable=True),
        scope(topic, "s", "a", durable=True, shared=True),
        scope(topic, "s", shared=True),
        scope(topic, "t", "a", durable=True),
    }
    assert len(named) == 5
    assert scope(topic, "s", "a", durable=True) == scope(topic, "s", "a", durable=True)
    # a shared durable subscription is the same whatever the connection's client id
    assert scope(topic, "s", "a", durable=True, shared=True) == scope(
        topic, "s", "b", durable=True, shared=True
    )
