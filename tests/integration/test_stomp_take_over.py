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

import re
import time
import uuid
from typing import Any

import pytest
from brokerenv import broker_url
from faultproxy import Relay

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


def _subscription(prefix: str) -> tuple[RabbitManagement, str, str, str]:
    """The management API, a new topic and subscription name, and the queue RabbitMQ
    keeps the subscription in."""
    management = RabbitManagement(
        broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10
    )
    topic, name = f"topic://take-over-{uuid.uuid4().hex[:8]}", f"{prefix}-{uuid.uuid4().hex[:8]}"
    return management, topic, name, f"jmslike-shared-{name}"


def test_the_subscription_queue_outlives_a_hand_over_and_then_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jmslike_stomp.connection, "STRICT_SHARED_EXPIRES_MS", 1000)
    management, topic, name, queue = _subscription("s")
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


def test_a_durable_strict_subscription_is_a_single_active_consumer_queue_until_unsubscribed() -> (
    None
):
    """A strictly ordered *durable* shared subscription was declared by the SUBSCRIBE,
    as an ordinary queue: a consumer in another process was a second active consumer.
    Now it is declared as the non-durable one is, without the expiry (it keeps its
    messages while nobody consumes), and ``unsubscribe`` deletes it through the
    management API (the SUBSCRIBE-then-UNSUBSCRIBE that deletes RabbitMQ's other durable
    subscriptions names ``/amq/queue/...`` here, which declares and deletes nothing)."""
    management, topic, name, queue = _subscription("d")
    connection, heard = _connect(topic)
    try:
        session = connection.create_session()
        consumer = session.create_shared_durable_consumer(topic, name)
        declared = management.queue("/", queue)
        assert declared is not None
        assert (declared["auto_delete"], declared["durable"], declared["arguments"]) == (
            False,
            True,
            {"x-queue-type": "quorum", "x-single-active-consumer": True},
        )
        consumer.close()
        session.create_producer(topic).send(session.create_text_message("kept"))
        consumer = session.create_shared_durable_consumer(topic, name)
        connection.start()
        message = consumer.receive(5.0)
        assert message is not None and message.text == "kept"
        consumer.close()
        session.unsubscribe(name)
        assert management.queue("/", queue) is None, "unsubscribe left the queue"
        with pytest.raises(jmslike.InvalidDestinationError):
            session.unsubscribe(name)  # gone, and said so
    finally:
        connection.close()
        management.delete_queue("/", queue)
    assert heard == []


def test_a_reconnect_declares_an_expired_subscription_queue_again() -> None:
    """A ``failover:`` reconnect subscribes again with the headers it had, naming
    ``/amq/queue/...``; after more than ``STRICT_SHARED_EXPIRES_MS`` away the queue has
    expired, RabbitMQ refuses that SUBSCRIBE with ``not_found`` and drops the connection,
    and every further attempt met the same: the consumer never received again. The
    expiry is made real by deleting the queue while the connection is down (RabbitMQ
    checks a quorum queue's expiry 10 to 20 s late); the reconnect must declare it anew,
    bound to the topic, and the consumer must get what is sent after it."""
    management, topic, name, queue = _subscription("r")
    direct = broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL")
    match = re.fullmatch(r"stomp://([^@/]*@)?127\.0\.0\.1:(\d+)", direct)
    assert match is not None, direct
    relay = Relay(("127.0.0.1", int(match.group(2))))
    failover = (
        f"failover:(stomp://{match.group(1) or ''}127.0.0.1:{relay.port})"
        "?initialReconnectDelay=1.5&reconnectDelay=0.2"
    )
    factory = ConnectionFactory(
        failover,
        strictly_ordered=topic,
        managementUrl=broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"),
    )
    heard: list[BaseException] = []
    try:
        with (
            factory.create_connection() as connection,
            ConnectionFactory(direct).create_connection() as sending,
        ):
            connection.exception_listener = heard.append
            consumer = connection.create_session().create_shared_consumer(topic, name)
            connection.start()
            sender = sending.create_session()
            producer = sender.create_producer(topic)
            producer.send(sender.create_text_message("before"))
            message = consumer.receive(5.0)
            assert message is not None and message.text == "before"
            accepted = relay.accepted
            relay.cut()
            time.sleep(0.3)  # RabbitMQ closes the cut connections
            management.delete_queue("/", queue)  # it expired while the connection was down
            assert _wait_for(lambda: relay.accepted >= accepted + 2, 15.0), "no reconnect"
            assert _wait_for(lambda: management.queue("/", queue) is not None, 5.0), (
                "the reconnect did not declare the subscription's queue again"
            )
            time.sleep(0.5)  # the SUBSCRIBE follows the declaration
            producer.send(sender.create_text_message("after"))
            message = consumer.receive(10.0)
            assert message is not None and message.text == "after"
    finally:
        relay.close()
        management.delete_queue("/", queue)
    assert heard == []
