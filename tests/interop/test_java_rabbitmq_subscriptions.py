"""A jmslike durable subscription on RabbitMQ over AMQP 1.0 keeps what a Java (Qpid JMS)
producer publishes while the subscriber is away.

RabbitMQ's AMQP 1.0 plugin keeps no subscription of its own (it drops a topic link's
queue when the link detaches), so jmslike keeps one as a queue it declares and binds to
``amq.topic`` through the management API (jmslike.spi.rabbit_subscriptions). A Java
application publishing to the topic ``/topic/<name>`` (where RabbitMQ routes by the name
as routing key) must reach it: the test subscribes with a selector, leaves, lets Java
publish, comes back and reads what the selector takes (one group), in the order Java
sent it, then
unsubscribes; a second unsubscribe finds none. Before, the subscription could not be
made at all (capability ``durable_subscriptions`` false).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from brokerenv import broker_url
from javapeer import Endpoint, java_url, run_java

import jmslike
from jmslike import ConnectionFactory

pytestmark = [pytest.mark.java, pytest.mark.rabbitmq, pytest.mark.amqp]

AMQP = "JMSLIKE_TEST_RABBITMQ_AMQP_URL"
MANAGEMENT = "JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"


def test_durable_subscription_keeps_what_java_published_meanwhile(java_jar: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, name, run = f"prices-{tag}", "prices", f"run-{tag}"
    url = f"{broker_url(AMQP)}?managementUrl={quote(broker_url(MANAGEMENT), safe='')}"
    factory = ConnectionFactory(url, client_id=f"client-{tag}")
    # Whole groups: a selector hiding a group's first messages would have the client
    # gate wait for them (the producer's JMSXGroupSeq says they exist, ORD-14).
    selector = f"JMSXGroupID = '{run}-group-1'"
    with factory.create_connection() as conn:
        conn.create_session().create_durable_subscriber(
            f"topic://{topic}", name, message_selector=selector
        ).close()

    endpoint = Endpoint(url, "amqp", java_url("amqp", broker_url(AMQP)))
    sent = run_java(
        java_jar, "produce", endpoint, "--topic", f"/topic/{topic}", "--run", run,
        "--groups", "2", "--per-group", "5",
    )  # fmt: skip
    wanted = [r["correlation_id"] for r in sent if r["group"] == f"{run}-group-1"]
    assert len(wanted) == 5

    with factory.create_connection() as conn:
        session = conn.create_session()
        subscriber = session.create_durable_subscriber(
            f"topic://{topic}", name, message_selector=selector
        )
        conn.start()
        got = [subscriber.receive(5.0) for _ in wanted]
        assert [m.jms_correlation_id if m is not None else None for m in got] == wanted
        assert all(m is not None and m.get_string_property("run") == run for m in got)
        assert subscriber.receive(0.3) is None
        subscriber.close()
        session.unsubscribe(name)
        with pytest.raises(jmslike.InvalidDestinationError):
            session.unsubscribe(name)
