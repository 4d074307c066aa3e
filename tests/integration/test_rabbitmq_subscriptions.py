"""Durable and shared subscriptions on RabbitMQ, on the broker's side and across protocols.

RabbitMQ keeps no JMS subscriptions, so jmslike keeps each as a queue it names from the
client id and the subscription name, the same over STOMP and AMQP 1.0
(jmslike.spi.rabbit_subscriptions): over STOMP the SUBSCRIBE declares it, over AMQP 1.0
(whose plugin drops a topic link's queue when the link detaches) the management API does.
The contract suite checks the JMS side on both; this checks what the broker holds, and
that a subscription made over one protocol is the same subscription over the other.

Run: ``.venv/bin/python -m pytest tests/integration/test_rabbitmq_subscriptions.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import threading
import time
import uuid
from urllib.parse import quote

import pytest
from brokerenv import broker_url
from test_failover import Setup

from jmslike import ConnectionFactory, InvalidDestinationError
from jmslike.spi.management import RabbitManagement
from jmslike.spi.rabbit_subscriptions import SHARED_EXPIRES_MS, durable_queue, shared_queue

pytestmark = [pytest.mark.rabbitmq, pytest.mark.amqp, pytest.mark.stomp]


def _management() -> str:
    return broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL")


def _factory(variable: str, client_id: str | None) -> ConnectionFactory:
    """The default vhost over both protocols, so that both meet the same queues."""
    url = f"{broker_url(variable)}?managementUrl={quote(_management(), safe='')}"
    return ConnectionFactory(url, client_id=client_id)


def _queue(name: str) -> dict[str, object] | None:
    return RabbitManagement(_management(), None, None, 10.0).queue("/", name)


AMQP, STOMP = "JMSLIKE_TEST_RABBITMQ_AMQP_URL", "JMSLIKE_TEST_RABBITMQ_STOMP_URL"


@pytest.mark.parametrize(
    ("made", "resumed"), [(AMQP, STOMP), (STOMP, AMQP)], ids=["amqp-then-stomp", "stomp-then-amqp"]
)
def test_durable_subscription_made_over_one_protocol_resumed_over_the_other(
    made: str, resumed: str
) -> None:
    """Made over one protocol and left; what is published meanwhile waits in its queue;
    resumed over the other with the same client id and name, it reads it in order; then
    unsubscribed from there, the queue is gone."""
    tag = uuid.uuid4().hex[:8]
    client, topic, name = f"client-{tag}", f"topic://audit-{tag}", "audit"
    with _factory(made, client).create_connection() as conn:
        conn.create_session().create_durable_subscriber(topic, name).close()
    queue = durable_queue(client, name)
    found = _queue(queue)
    assert found is not None and found["durable"] is True
    # Published over the protocol that reads it: RabbitMQ converts no AMQP 1.0 message to
    # STOMP or back (a text sent over one reads as bytes over the other).
    with _factory(resumed, None).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(topic)
        for text in ("a", "b", "c"):
            producer.send(session.create_text_message(text))

    with _factory(resumed, client).create_connection() as conn:
        session = conn.create_session()
        subscriber = session.create_durable_subscriber(topic, name)
        conn.start()
        got = [subscriber.receive(5.0) for _ in range(3)]
        assert [m.text if m is not None else None for m in got] == ["a", "b", "c"]
        assert subscriber.receive(0.2) is None
        subscriber.close()
        session.unsubscribe(name)
        assert _queue(queue) is None
        with pytest.raises(InvalidDestinationError):
            session.unsubscribe(name)


def _gone_within(name: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _queue(name) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_shared_subscription_queues_over_amqp() -> None:
    """A non-durable shared subscription's queue goes soon after its last consumer
    (``SHARED_EXPIRES_MS``: RabbitMQ closes the connection of an attach to a queue it
    deleted just before); a durable one's stays, with what was published meanwhile,
    until unsubscribed."""
    tag = uuid.uuid4().hex[:8]
    topic = f"topic://shared-{tag}"
    volatile, kept_name = f"volatile-{tag}", f"kept-{tag}"
    factory = _factory(AMQP, None)
    with factory.create_connection() as conn:
        session = conn.create_session()
        first = session.create_shared_consumer(topic, volatile)
        second = session.create_shared_consumer(topic, volatile)
        kept = session.create_shared_durable_consumer(topic, kept_name)
        assert _queue(shared_queue(None, volatile)) is not None
        first.close()
        assert _queue(shared_queue(None, volatile)) is not None  # one consumer left
        second.close()
        kept.close()
        # RabbitMQ runs a classic queue's expiry timer to the millisecond or so.
        assert _gone_within(shared_queue(None, volatile), SHARED_EXPIRES_MS / 1000 + 3)
        producer = session.create_producer(topic)
        producer.send(session.create_text_message("while away"))
        kept = session.create_shared_durable_consumer(topic, kept_name)
        conn.start()
        message = kept.receive(5.0)
        assert message is not None and message.text == "while away"
        kept.close()
        session.unsubscribe(kept_name)
        assert _queue(shared_queue(None, kept_name)) is None


@pytest.mark.parametrize("protocol", [AMQP, STOMP], ids=["amqp", "stomp"])
def test_consumers_of_a_shared_subscription_come_and_go_at_once(protocol: str) -> None:
    """Three connections each make and close a consumer of one non-durable shared
    subscription, again and again. Declared auto-delete (as jmslike declared it over
    STOMP before), its queue went with one connection's last consumer just as another had
    declared it, and RabbitMQ closed that one's connection at its attach or SUBSCRIBE
    (NOT_FOUND; over AMQP two of the three connections in each of 8 runs, over STOMP one
    to three in 12 of 13 runs); with an expiry instead, none (5 runs each way)."""
    tag = uuid.uuid4().hex[:8]
    topic, name = f"topic://churn-{tag}", f"churn-{tag}"
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            with _factory(protocol, None).create_connection() as conn:
                session = conn.create_session()
                for _ in range(100):
                    session.create_shared_consumer(topic, name).close()
        except BaseException as exc:  # reported below, with the others
            errors.append(exc)

    threads = [threading.Thread(target=churn) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []


def test_a_non_durable_shared_subscription_is_one_queue_over_both_protocols() -> None:
    """Declared alike over STOMP (SUBSCRIBE headers) and AMQP (management API): one
    queue, expiring, whose consumers over either protocol split the messages."""
    tag = uuid.uuid4().hex[:8]
    topic, name = f"topic://split-{tag}", f"split-{tag}"
    with (
        _factory(STOMP, None).create_connection() as over_stomp,
        _factory(AMQP, None).create_connection() as over_amqp,
    ):
        stomp_consumer = over_stomp.create_session().create_shared_consumer(topic, name)
        amqp_consumer = over_amqp.create_session().create_shared_consumer(topic, name)
        found = _queue(shared_queue(None, name))
        assert found is not None
        assert (found["durable"], found["auto_delete"], found["arguments"]) == (
            True,
            False,
            {"x-expires": SHARED_EXPIRES_MS},
        )
        over_stomp.start()
        over_amqp.start()
        session = over_amqp.create_session()
        producer = session.create_producer(topic)
        for n in range(20):
            producer.send(session.create_bytes_message(str(n).encode()))
        got = {"stomp": 0, "amqp": 0}
        for _ in range(20):
            for label, consumer in (("stomp", stomp_consumer), ("amqp", amqp_consumer)):
                if consumer.receive(0.05) is not None:
                    got[label] += 1
        assert sum(got.values()) == 20
        assert got["stomp"] > 0 and got["amqp"] > 0


def test_an_expired_subscription_queue_is_declared_again_on_reconnect() -> None:
    """A non-durable shared subscription's queue expires once unused: an outage that
    outlasts it leaves the reconnecting consumer's attach facing a missing queue, which
    RabbitMQ answers by closing the whole connection, again at every try. Before
    attaching again jmslike declares it again. Here the connection, on a failover URL
    through a relay, is stalled, the queue deleted (as the expiry would), then the
    connection cut: after the reconnect a message published to the topic arrives."""
    setup = Setup("rabbitmq-amqp")
    tag = uuid.uuid4().hex[:8]
    topic, name = f"topic://outage-{tag}", f"outage-{tag}"
    api = RabbitManagement(_management(), None, None, 10.0)
    try:
        with ConnectionFactory(setup.failover).create_connection() as conn:
            consumer = conn.create_session().create_shared_consumer(topic, name)
            conn.start()
            setup.relay.stall()
            assert api.delete_queue("jmslike-amqp", shared_queue(None, name))
            setup.cut_and_wait()
            assert api.queue("jmslike-amqp", shared_queue(None, name)) is not None
            with ConnectionFactory(setup.direct).create_connection() as other:
                session = other.create_session()
                session.create_producer(topic).send(session.create_text_message("after"))
            message = consumer.receive(10.0)
            assert message is not None and message.text == "after"
    finally:
        setup.relay.close()
