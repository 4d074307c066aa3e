"""Request/reply between jmslike and a Java JMS service, over the temporary queues jmslike
makes where the broker has none of its own for the protocol: Artemis over STOMP (an
anycast queue) and RabbitMQ over AMQP 1.0 (a declared queue), each answered by a Qpid JMS
service on the same broker.

(Artemis' core JMS client is not here: it reads the JMSReplyTo of any message sent over
STOMP, temporary queue or not, as a destination of no type and refuses to send to it,
"Destination ... exists, but does not support MULTICAST routing"; docs/providers.md.)

The Java service (``Interop reply``) is written as a Java application writes one: it
replies to ``getJMSReplyTo()`` with ``JMSCorrelationID`` set to the request's
``JMSCorrelationID``, or to its ``JMSMessageID`` where it has none. jmslike's
``QueueRequestor`` must get each reply, correlated. Over STOMP on Artemis the request
carries a correlation id of its own: a Java client there reads no JMSMessageID of a
message sent over STOMP (Artemis gives it its own id on delivery; jmslike's travels as
the property ``jmslikeMessageID``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from brokerenv import broker_url
from javapeer import Endpoint, java_process, java_url

import jmslike
from jmslike import ConnectionFactory, TextMessage

REQUESTS = 3

CASES = [
    pytest.param(
        (
            "JMSLIKE_TEST_ARTEMIS_STOMP_URL",
            "JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL",
            "amqp",
            "JMSLIKE_TEST_ARTEMIS_AMQP_URL",
        ),
        id="artemis-stomp-qpid-jms",
        marks=(pytest.mark.java, pytest.mark.artemis, pytest.mark.stomp),
    ),
    pytest.param(
        (
            "JMSLIKE_TEST_RABBITMQ_AMQP_URL",
            "JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL",
            "amqp",
            "JMSLIKE_TEST_RABBITMQ_AMQP_URL",
        ),
        id="rabbitmq-amqp-qpid-jms",
        marks=(pytest.mark.java, pytest.mark.rabbitmq, pytest.mark.amqp),
    ),
]
"""(jmslike's URL, the broker's management API, which deletes the temporary queues, the
Java client's protocol, its URL), each a variable of tests/brokerenv.py."""


@pytest.mark.parametrize("case", CASES)
def test_java_service_replies_to_a_jmslike_temporary_queue(
    case: tuple[str, str, str, str], java_jar: Path
) -> None:
    variable, management, protocol, java_variable = case
    url = f"{broker_url(variable)}?managementUrl={quote(broker_url(management), safe='')}"
    service = f"jreply-{uuid.uuid4().hex[:8]}"
    endpoint = Endpoint(url, protocol, java_url(protocol, broker_url(java_variable)))
    command = java_process(
        java_jar, "reply", endpoint, "--queue", service, "--count", str(REQUESTS)
    )
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as java:  # (the pipes are closed and the process waited for however this ends)
        try:
            _request_replies(java, url, service, variable)
            out, err = java.communicate(timeout=30)
        finally:
            if java.poll() is None:
                java.kill()
    assert java.returncode == 0, err[-4000:]
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["body"] for r in records if r["event"] == "received"] == [
        f"question {n}" for n in range(REQUESTS)
    ]


def _request_replies(java: subprocess.Popen[str], url: str, service: str, variable: str) -> None:
    """Once the Java service is ready, REQUESTS requests through a QueueRequestor, each
    answered and correlated."""
    assert java.stdout is not None
    first = java.stdout.readline()
    assert '"ready"' in first, first
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        requestor = jmslike.QueueRequestor(session, f"queue://{service}")
        connection.start()
        for n in range(REQUESTS):
            request = session.create_text_message(f"question {n}")
            if "STOMP" in variable:
                request.jms_correlation_id = f"request-{n}"
            reply = requestor.request(request, timeout=20.0)
            assert isinstance(reply, TextMessage), f"no reply to request {n}"
            assert reply.text == f"re: question {n}"
            assert reply.jms_correlation_id == (
                request.jms_correlation_id or request.jms_message_id
            )
            assert isinstance(request.jms_reply_to, jmslike.TemporaryQueue)
        requestor.close()
