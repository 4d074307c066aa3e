"""The real broker x protocol cases, for tests that start processes of their own.

The contract suite (tests/contract/conftest.py) runs in-process against these and the
embedded broker; tests that start consumer processes need a URL a child can use on its
own (credentials and the management endpoint in it), which is what :func:`case_url`
gives. ``CASES`` is ready for ``pytest.mark.parametrize("case", CASES)``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from brokerenv import broker_url

__all__ = [
    "BENCH_TARGETS",
    "CASES",
    "bench_target_url",
    "case_url",
    "delete_rabbitmq_queues",
    "url_variables",
]

_MARKS = {
    "activemq-stomp": (pytest.mark.stomp, pytest.mark.activemq),
    "artemis-stomp": (pytest.mark.stomp, pytest.mark.artemis),
    "rabbitmq-stomp": (pytest.mark.stomp, pytest.mark.rabbitmq),
    "activemq-amqp": (pytest.mark.amqp, pytest.mark.activemq),
    "artemis-amqp": (pytest.mark.amqp, pytest.mark.artemis),
    "rabbitmq-amqp": (pytest.mark.amqp, pytest.mark.rabbitmq),
}

CASES = [pytest.param(case, id=case, marks=marks) for case, marks in _MARKS.items()]

BENCH_TARGETS = [
    pytest.param("embedded"),
    *(pytest.param(case.replace("-", "/"), marks=marks) for case, marks in _MARKS.items()),
]
"""The benchmark scripts' targets (``embedded``, ``activemq/stomp``, ...), marked."""


def url_variables(broker: str) -> list[Any]:
    """``broker``'s STOMP and AMQP URL variables (``JMSLIKE_TEST_<BROKER>_<PROTOCOL>_URL``)
    as parameters ``stomp`` and ``amqp``, marked, for a test that builds its own URL."""
    return [
        pytest.param(
            f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL",
            marks=_MARKS[f"{broker}-{protocol}"],
            id=protocol,
        )
        for protocol in ("stomp", "amqp")
    ]


def bench_target_url(target: str) -> None:
    """Fail (never skip) when a broker target's URL is not set."""
    if target != "embedded":
        broker, protocol = target.split("/")
        broker_url(f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL")


def case_url(case: str) -> str:
    """A URL of the case's broker that carries everything a child process needs."""
    broker, protocol = case.split("-")
    url = broker_url(f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL")
    if case == "rabbitmq-amqp":
        url += "/jmslike-amqp"  # the vhost of the AMQP contract case (scripts/brokers/rabbitmq.sh)
    if broker in ("artemis", "rabbitmq"):
        # Named even where jmslike would guess it (RabbitMQ's port 15672): brokers started
        # with a port offset (scripts/brokers.sh) listen elsewhere, and a guess would reach
        # another broker's API, declaring the partitions there.
        management = broker_url(f"JMSLIKE_TEST_{broker.upper()}_MANAGEMENT_URL")
        url += "?managementUrl=" + quote(management, safe="")
    return url


def delete_rabbitmq_queues(case: str, prefix: str) -> None:
    """Delete the RabbitMQ queues whose names start with ``prefix`` (a test's partitions).

    A RabbitMQ single-active-consumer queue is a quorum queue, a Raft cluster of its own;
    a test broker that gathered a few hundred of them stopped accepting connections here
    (its log went silent, its HTTP API still answered), so the tests that make them
    delete them again. Other cases: nothing to do.
    """
    if not case.startswith("rabbitmq"):
        return
    from jmslike.spi.management import RabbitManagement

    api = RabbitManagement(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10)
    vhost = "jmslike-amqp" if case.endswith("amqp") else "/"
    for name in api.queue_depths(vhost, prefix):
        api.delete_queue(vhost, name)
