"""Selectors on JMS header fields over messages a Java JMS producer sent, beside jmslike's.

jmslike keeps some header values off the wire where the broker would misuse them, and
carries them in headers of its own (docs/providers.md, limits): the priority on Classic
and Artemis (ORD-12), the group sequence over STOMP and on Classic (ORD-4). A selector
on such a field is written to read jmslike's header where a message has one, else the
broker's own field, which is where a Java producer's values are. This checks the second
half against the real thing: Java sends 3 groups x 4 messages with JMSXGroupSeq 1..4
and priority 8 on every second one; jmslike sends one message of priority 9 and one of
1; then jmslike browses the queue with selectors on those fields.

Run: ``.venv/bin/python -m pytest tests/interop/test_java_selectors.py`` (needs
``scripts/brokers.sh start``, Java 17 and Maven; a missing broker fails, never skips).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from brokerenv import broker_url
from javapeer import Endpoint, java_url, run_java

from jmslike import ConnectionFactory

JAVA = {  # jmslike URL variable -> (case id, Java protocol, the Java client's broker variable)
    "JMSLIKE_TEST_ACTIVEMQ_STOMP_URL": ("classic-stomp", "openwire", "ACTIVEMQ_OPENWIRE"),
    "JMSLIKE_TEST_ACTIVEMQ_AMQP_URL": ("classic-amqp", "openwire", "ACTIVEMQ_OPENWIRE"),
    "JMSLIKE_TEST_ARTEMIS_STOMP_URL": ("artemis-stomp", "core", "ARTEMIS_AMQP"),
    "JMSLIKE_TEST_ARTEMIS_AMQP_URL": ("artemis-amqp", "core", "ARTEMIS_AMQP"),
}
CASES = [
    pytest.param(
        variable,
        id=f"java-{protocol}-jmslike-{case}",
        marks=[
            pytest.mark.java,
            pytest.mark.activemq if "ACTIVEMQ" in variable else pytest.mark.artemis,
            pytest.mark.stomp if "STOMP" in variable else pytest.mark.amqp,
        ],
    )
    for variable, (case, protocol, _java) in JAVA.items()
]


@pytest.mark.parametrize("variable", CASES)
def test_selectors_read_a_java_producers_header_fields(variable: str, java_jar: Path) -> None:
    url = broker_url(variable)
    _case, protocol, java = JAVA[variable]
    java_variable = f"JMSLIKE_TEST_{java}_URL"
    queue = f"selectors-{uuid.uuid4().hex[:8]}"
    run_java(
        java_jar, "produce", Endpoint(url, protocol, java_url(protocol, broker_url(java_variable))),
        "--queue", queue, "--run", queue, "--groups", "3", "--per-group", "4",
        "--priorities", "yes",
    )  # fmt: skip
    if "ARTEMIS" in variable:  # Artemis browses over STOMP through its management API
        url += "?managementUrl=" + quote(broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), "")
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(f"queue://{queue}")
        producer.send(session.create_text_message("py-high"), priority=9)
        producer.send(session.create_text_message("py-low"), priority=1)

        def browse(selector: str) -> list[str]:
            names = []
            for message in session.create_browser(f"queue://{queue}", selector):
                index = message.get_object_property("index")
                names.append(f"java-{index}" if index is not None else str(message.text))
            return sorted(names)

        assert browse("JMSPriority > 5") == sorted(["py-high", *["java-2", "java-4"] * 3])
        assert browse("JMSPriority < 4") == ["py-low"]
        assert browse("JMSXGroupSeq = 2") == ["java-2"] * 3
        connection.start()
        consumer = session.create_consumer(f"queue://{queue}")
        while consumer.receive(0.5) is not None:
            pass  # leave the broker clean
