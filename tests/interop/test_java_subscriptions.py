"""Durable and shared subscriptions that a Java (Qpid JMS) and a jmslike subscriber share on
Artemis over AMQP 1.0 (issue 5, item 3).

Artemis keeps a subscription as a queue named from the client id and the link name, so the
two clients meet only if jmslike names its links exactly as Qpid JMS does
(providers/jmslike_amqp/subscriptions.py). Each test makes the subscription on one side,
lets the other side resume it, and deletes it from the side that did not make it: a
mismatch in naming shows as messages missing, or as an unknown subscription.

RabbitMQ is not here: over AMQP 1.0 it keeps no durable subscriptions (docs/providers.md).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from brokerenv import broker_url
from javapeer import Endpoint, java_url, run_java

import jmslike
from jmslike import ConnectionFactory

pytestmark = [pytest.mark.java, pytest.mark.artemis, pytest.mark.amqp]

ART_AMQP = "JMSLIKE_TEST_ARTEMIS_AMQP_URL"


def _endpoint() -> Endpoint:
    url = broker_url(ART_AMQP)
    return Endpoint(url, "amqp", java_url("amqp", url))


def _publish(topic: str, texts: list[str]) -> None:
    with ConnectionFactory(broker_url(ART_AMQP)).create_connection() as conn:
        session = conn.create_session()
        producer = session.create_producer(f"topic://{topic}")
        for text in texts:
            producer.send(session.create_text_message(text))


def _texts(records: list[dict[str, object]]) -> list[object]:
    return [r["body"] for r in records if r.get("event") == "received"]


def test_durable_subscription_made_in_java_resumed_and_deleted_in_python(
    java_jar: Path,
) -> None:
    """Java subscribes and leaves; what is published meanwhile waits in the subscription;
    jmslike with the same client id and name reads it, in order; Java reads what came after
    jmslike left and deletes the subscription; jmslike then finds no such subscription."""
    tag = uuid.uuid4().hex[:8]
    client, topic, name = f"client-{tag}", f"audit-{tag}", "audit"
    endpoint = _endpoint()
    made = run_java(
        java_jar, "subscribe", endpoint, "--topic", topic, "--subscription", name,
        "--client-id", client,
    )  # fmt: skip
    assert [r["event"] for r in made] == ["subscribed"]
    _publish(topic, ["a", "b", "c"])

    factory = ConnectionFactory(broker_url(ART_AMQP), client_id=client)
    with factory.create_connection() as conn:
        subscriber = conn.create_session().create_durable_subscriber(f"topic://{topic}", name)
        conn.start()
        got = [subscriber.receive(5.0) for _ in range(3)]
        assert [m.text if m is not None else None for m in got] == ["a", "b", "c"]
        assert subscriber.receive(0.2) is None
        subscriber.close()
    _publish(topic, ["d", "e"])

    later = run_java(
        java_jar, "subscribe", endpoint, "--topic", topic, "--subscription", name,
        "--client-id", client, "--count", "2", "--unsubscribe", "true",
    )  # fmt: skip
    assert _texts(later) == ["d", "e"]
    assert later[-1]["event"] == "unsubscribed"
    with factory.create_connection() as conn, pytest.raises(jmslike.InvalidDestinationError):
        conn.create_session().unsubscribe(name)


def test_durable_subscription_made_in_python_deleted_in_java(java_jar: Path) -> None:
    """The other way round: jmslike makes it, Java resumes it with what jmslike left."""
    tag = uuid.uuid4().hex[:8]
    client, topic, name = f"client-{tag}", f"ledger-{tag}", "ledger"
    factory = ConnectionFactory(broker_url(ART_AMQP), client_id=client)
    with factory.create_connection() as conn:
        conn.create_session().create_durable_subscriber(f"topic://{topic}", name).close()
    _publish(topic, ["1", "2", "3"])
    got = run_java(
        java_jar, "subscribe", _endpoint(), "--topic", topic, "--subscription", name,
        "--client-id", client, "--count", "3", "--unsubscribe", "true",
    )  # fmt: skip
    assert _texts(got) == ["1", "2", "3"]
    with factory.create_connection() as conn, pytest.raises(jmslike.InvalidDestinationError):
        conn.create_session().unsubscribe(name)


def test_shared_durable_subscription_without_client_id(java_jar: Path) -> None:
    """A shared durable subscription with no client id is global (Qpid JMS' ``name|global``
    link): jmslike's consumer of the same name reads what Java's subscription kept."""
    tag = uuid.uuid4().hex[:8]
    topic, name = f"prices-{tag}", f"prices-{tag}"
    endpoint = _endpoint()
    run_java(
        java_jar, "subscribe", endpoint, "--topic", topic, "--subscription", name,
        "--shared", "true",
    )  # fmt: skip
    _publish(topic, ["p1", "p2"])
    with ConnectionFactory(broker_url(ART_AMQP)).create_connection() as conn:
        consumer = conn.create_session().create_shared_durable_consumer(f"topic://{topic}", name)
        conn.start()
        got = [consumer.receive(5.0) for _ in range(2)]
        assert [m.text if m is not None else None for m in got] == ["p1", "p2"]
        consumer.close()
    done = run_java(
        java_jar, "subscribe", endpoint, "--topic", topic, "--subscription", name,
        "--shared", "true", "--unsubscribe", "true",
    )  # fmt: skip
    assert done[-1]["event"] == "unsubscribed"
