"""A strictly ordered non-durable shared subscription on RabbitMQ over STOMP (ORD-18).

RabbitMQ makes a shared subscription a named queue bound to the topic, declared by the
SUBSCRIBE. Declared auto-delete, as a non-durable one was before, it went with the
active consumer's connection, and everything it held went with it: the standby
subscribed to a new, empty queue (the contract case
``test_ord18_standby_of_a_shared_subscription_takes_what_the_active_left`` got none of
m2..m6). A SUBSCRIBE that came while the broker was still deleting the queue got
``ERROR message:not_found``: RabbitMQ dropped the standby's connection, and the error
came out of the *closing* call, then reached the exception listener a second time as a
lost connection (about one full CI run in twelve, in
``test_ord18_topic_is_strict_per_subscription[rabbitmq-stomp]``). And a consumer of
another process was a second active consumer (``test_strict_processes.py``).

Now the queue is declared through the management API: a single-active-consumer queue
bound to the topic, with ``x-expires``, so that it outlives the hand-over and goes once
nobody has used it for a while. These cases check, on the real broker:

* how the queue is declared, that it outlives the active consumer, and that it goes away
  once its consumers have all closed (the test shortens the expiry from 10 s to 1 s), so
  an ended subscription does not collect messages for ever; and that the same process
  can subscribe again after that (a first version declared the queue once per process,
  and the new SUBSCRIBE got ``not_found``);
* that a take-over the broker refuses anyway does not make the handing-over ``close()``
  raise, and reaches the exception listener once. The refusal is made real: the
  standby's SUBSCRIBE names a queue that does not exist (``/amq/queue/...``), which gets
  the same ``not_found`` and the same dropped connection.

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
import jmslike_stomp.connection
from jmslike import ConnectionFactory
from jmslike.spi.management import RabbitManagement

pytestmark = [pytest.mark.stomp, pytest.mark.rabbitmq]


def _connect(topic: str) -> tuple[Any, list[BaseException]]:
    factory = ConnectionFactory(
        broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL"),
        strictly_ordered=topic,
        managementUrl=broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"),
    )
    connection = factory.create_connection()
    heard: list[BaseException] = []
    connection.exception_listener = heard.append
    return connection, heard


def _active_and_standby(connection: Any, topic: str, name: str) -> tuple[Any, Any]:
    """The active consumer of the subscription, and a standby asked for messages (so it
    subscribes once promoted)."""
    active = connection.create_session().create_shared_consumer(topic, name)
    standby = connection.create_session().create_shared_consumer(topic, name, standby=True)
    connection.start()
    assert standby.receive(0.05) is None
    return active, standby


def _wait_for(check: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_subscription_queue_outlives_a_hand_over_and_then_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jmslike_stomp.connection, "STRICT_SHARED_EXPIRES_MS", 1000)
    management = RabbitManagement(
        broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10
    )
    topic, name = f"topic://take-over-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    queue = f"jmslike-shared-{name}"
    connection, heard = _connect(topic)
    try:
        active, standby = _active_and_standby(connection, topic, name)
        declared = management.queue("/", queue)
        assert declared is not None
        assert (declared["auto_delete"], declared["arguments"]) == (
            False,
            {"x-expires": 1000, "x-queue-type": "quorum", "x-single-active-consumer": True},
        )
        active.close()
        assert standby.receive(0.05) is None
        assert management.queue("/", queue) is not None, "gone with the active consumer"
    finally:
        connection.close()
    # RabbitMQ checks a quorum queue's expiry late (10 to 20 s after a 5 s expiry here).
    assert _wait_for(lambda: management.queue("/", queue) is None, 30.0), (
        f"{queue} still there 30 s after its consumers closed"
    )
    assert heard == []
    # The same process subscribes again: the queue is declared anew, not taken as known.
    again, _heard = _connect(topic)
    try:
        consumer = again.create_session().create_shared_consumer(topic, name)
        again.start()
        session = again.create_session()
        session.create_producer(topic).send(session.create_text_message("again"))
        message = consumer.receive(5.0)
        assert message is not None and message.text == "again"
    finally:
        again.close()


def test_a_refused_take_over_is_reported_not_raised_by_the_close() -> None:
    topic = f"topic://take-over-{uuid.uuid4().hex[:8]}"
    name = f"s-{uuid.uuid4().hex[:8]}"
    connection, heard = _connect(topic)
    try:
        active, standby = _active_and_standby(connection, topic, name)
        headers = standby._provider._headers
        headers["destination"] = f"/amq/queue/jmslike-missing-{uuid.uuid4().hex[:8]}"
        active.close()  # returns: the refusal is the standby's
        assert _wait_for(lambda: bool(heard), 5.0), "the exception listener heard nothing"
        time.sleep(0.2)  # and hears it only once
        assert len(heard) == 1, heard
        assert isinstance(heard[0], jmslike.InvalidDestinationError)
        assert "not_found" in str(heard[0]), heard[0]
    finally:
        connection.close()
