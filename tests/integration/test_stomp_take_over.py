"""A standby's take-over of a strictly ordered shared subscription on RabbitMQ (ORD-18).

When the active consumer of a non-durable shared subscription closes, RabbitMQ deletes
the subscription's queue with it, a moment after the consumer's own connection closed.
The standby subscribes at once, on the closing thread. Seen in CI (about one full run in
twelve, in ``test_ord18_topic_is_strict_per_subscription[rabbitmq-stomp]``): the
SUBSCRIBE came while the queue was half deleted, RabbitMQ answered ``ERROR
message:not_found`` and dropped the standby's connection, and the error came out of the
*closing* call, then reached the exception listener a second time as a lost connection.

The race itself takes a loaded machine to hit, so these cases make RabbitMQ refuse for
real in the same way: the standby's first SUBSCRIBE names a queue that does not exist
(``/amq/queue/...``), which gets the same ``not_found`` and the same dropped connection.
What they check:

* the standby subscribes again on a new connection and receives what is sent next;
* the close that handed over returns normally, and nothing reaches the exception
  listener;
* when every attempt is refused, the close still returns, and the exception listener
  hears once why the standby has no subscription.

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_take_over.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import ConnectionFactory

pytestmark = [pytest.mark.stomp, pytest.mark.rabbitmq]


def _refuse_first(standby: Any, refusals: int) -> list[str]:
    """Make the standby's next ``refusals`` SUBSCRIBEs name a missing queue; returns the
    destinations each SUBSCRIBE named."""
    provider = standby._provider
    real = dict(provider._headers)
    missing = f"/amq/queue/jmslike-missing-{uuid.uuid4().hex[:8]}"
    named: list[str] = []
    subscribe = type(provider).subscribe

    def refusing(self: Any) -> None:
        self._headers = dict(real, destination=missing) if len(named) < refusals else real
        named.append(self._headers["destination"])
        subscribe(self)

    provider.subscribe = refusing.__get__(provider)
    return named


def _setup(refusals: int) -> tuple[Any, Any, Any, Any, list[str], list[BaseException]]:
    topic = f"topic://take-over-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(
        broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL"), strictly_ordered=topic
    )
    connection = factory.create_connection()
    heard: list[BaseException] = []
    connection.exception_listener = heard.append
    active = connection.create_session().create_shared_consumer(topic, "s")
    standby = connection.create_session().create_shared_consumer(topic, "s", standby=True)
    connection.start()
    assert standby.receive(0.05) is None  # asked for messages: it subscribes once promoted
    named = _refuse_first(standby, refusals)
    return connection, topic, active, standby, named, heard


def test_standby_subscribes_again_after_a_refusal() -> None:
    connection, topic, active, standby, named, heard = _setup(refusals=2)
    try:
        active.close()  # returns: the refusals are the standby's business
        assert len(named) == 3
        assert named[0] == named[1] != named[2]
        session = connection.create_session()
        session.create_producer(session.create_topic(topic.removeprefix("topic://"))).send(
            session.create_text_message("after")
        )
        message = standby.receive(5.0)
        assert message is not None and message.text == "after"
        assert heard == []
    finally:
        connection.close()


def test_a_standby_refused_for_good_is_reported_not_raised_by_the_close() -> None:
    connection, _topic, active, _standby, named, heard = _setup(refusals=100)
    try:
        active.close()
        assert len(named) == 5
        deadline = time.monotonic() + 5.0
        while not heard and time.monotonic() < deadline:  # a notifier thread tells it
            time.sleep(0.01)
        time.sleep(0.2)  # and only once
        assert len(heard) == 1, heard
        assert isinstance(heard[0], jmslike.InvalidDestinationError)
        assert "not_found" in str(heard[0]) or "NOT_FOUND" in str(heard[0]), heard[0]
    finally:
        connection.close()
