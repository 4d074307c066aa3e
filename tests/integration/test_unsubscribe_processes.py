"""``unsubscribe(name)`` of a shared durable subscription that another process consumes.

JMS forbids deleting a durable subscription while a consumer is on it. Within one
process jmslike knows its own consumers; across processes only the broker does. Where
the protocol cannot delete a shared durable subscription by its name (Artemis without
a client id, over STOMP and AMQP; RabbitMQ over STOMP, which deletes only the queues it
named itself), jmslike deletes it through the broker's management API, which refuses
while any consumer is attached. Here a child process holds a consumer of the
subscription: this process's ``unsubscribe`` must raise IllegalStateError and leave the
subscription; once the child is killed, it must delete it, and a second one must say
there is none. Before, on Artemis without a client id, every ``unsubscribe`` raised
InvalidDestinationError, and on RabbitMQ it returned and left the subscription with its
messages (the contract case ``test_shared_durable_subscription_needs_no_client_id``).
And on RabbitMQ, where only the management API finds a subscription by name, the
connection that made one still deletes it without that API.

Run: ``.venv/bin/python -m pytest tests/integration/test_unsubscribe_processes.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid

import pytest
from brokercases import CASES, case_url
from brokerenv import broker_url

import jmslike
from jmslike import ConnectionFactory
from jmslike.spi.management import RabbitManagement

CHILD = """
import sys
from jmslike import ConnectionFactory
url, management, topic, name = sys.argv[1:5]
connection = ConnectionFactory(url, managementUrl=management).create_connection()
connection.create_session().create_shared_durable_consumer(topic, name)
connection.start()
print("ready", flush=True)
sys.stdin.read()  # consume until killed
"""

SHARED = [case for case in CASES if not case.id.startswith("activemq-")]
"""The cases with shared durable subscriptions."""


@pytest.mark.parametrize("case", SHARED)
def test_unsubscribe_waits_for_another_process_to_let_go(case: str) -> None:
    url = case_url(case)
    management = broker_url(
        "JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"
        if case.startswith("artemis")
        else "JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"
    )
    topic = f"topic://unsubscribe-{uuid.uuid4().hex[:8]}"
    name = f"n-{uuid.uuid4().hex[:8]}"
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, url, management, topic, name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        try:
            assert child.stdout.readline().split() == ["ready"]
            factory = ConnectionFactory(url, managementUrl=management)
            with factory.create_connection() as connection:
                session = connection.create_session()
                with pytest.raises(jmslike.IllegalStateError, match="active consumer"):
                    session.unsubscribe(name)
                # Still there: what is sent now waits for the subscription's consumers.
                session.create_producer(topic).send(session.create_text_message("kept"))
                child.kill()
                child.wait(10.0)
                consumer = session.create_shared_durable_consumer(topic, name)
                connection.start()
                message = consumer.receive(10.0)
                assert message is not None and message.text == "kept"
                consumer.close()
                deadline = time.monotonic() + 10.0
                while True:  # the broker may count the dead process's consumer a while
                    try:
                        session.unsubscribe(name)
                        break
                    except jmslike.IllegalStateError:
                        assert time.monotonic() < deadline, "never let go of the dead consumer"
                with pytest.raises(jmslike.InvalidDestinationError, match=name):
                    session.unsubscribe(name)
        finally:
            child.kill()


@pytest.mark.stomp
@pytest.mark.rabbitmq
def test_without_the_management_api_rabbitmq_unsubscribes_over_stomp() -> None:
    """RabbitMQ over STOMP finds a durable subscription by name only through its
    management API. Where that is unreachable, the connection that made the subscription
    still deletes it over STOMP: subscribed again for a moment, then unsubscribed naming
    its queue. Another connection cannot, and says which setting is missing."""
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    nowhere = f"http://127.0.0.1:{dead.getsockname()[1]}"
    dead.close()  # nothing listens there
    url = broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL")
    client, topic = f"c-{uuid.uuid4().hex[:8]}", f"topic://unsubscribe-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(url, managementUrl=nowhere)
    with factory.create_connection() as other:
        other.client_id = f"{client}-other"
        with factory.create_connection() as connection:
            connection.client_id = client
            session = connection.create_session()
            session.create_durable_subscriber(topic, "audit").close()
            with pytest.raises(jmslike.ConnectionFailedError, match="managementUrl"):
                other.create_session().unsubscribe("audit")
            session.unsubscribe("audit")
            management = RabbitManagement(
                broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10
            )
            assert management.queue("/", f"jmslike-durable-{client}.audit") is None
