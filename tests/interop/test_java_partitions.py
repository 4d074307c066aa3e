"""A Java producer on a jmslike partitioned queue (ORD-16, docs/partitions.md).

A Java JMS application that sends to a partitioned queue does what jmslike's producer
does, in two lines: it takes the CRC-32 of the group name's UTF-8 bytes
(``java.util.zip.CRC32``), mod the partition count, and sends to queue
``<name>.p<partition>`` (on RabbitMQ addressed as ``/amq/queue/<name>.p<partition>``, since
the partitions are single-active-consumer queues that jmslike declared). Here the Java
peer (tests/interop/java, ``produce --partitions``) does exactly that, interleaving 6
groups; jmslike consumers of the partitioned queue, declared by setting alone, get every
message on the partition jmslike itself would have chosen, each group from one partition
and in JMSXGroupSeq order. (On ActiveMQ Classic the jmslike side reads over AMQP: Classic's
STOMP does not give JMSXGroupID back on a delivery, docs/providers.md.)

Run: ``JMSLIKE_BROKERS_DIR=... .venv/bin/python -m pytest tests/interop/test_java_partitions.py``
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from brokerenv import broker_url
from javapeer import Endpoint, java_url, run_java

from jmslike import ConnectionFactory, Session
from jmslike.partitions.layout import partition_of

PARTITIONS = 4
GROUPS = 6
PER_GROUP = 5

CASES = [
    pytest.param(
        ("JMSLIKE_TEST_RABBITMQ_AMQP_URL", "amqp", "JMSLIKE_TEST_RABBITMQ_AMQP_URL", "/amq/queue/"),
        id="rabbitmq-qpid-jms",
        marks=(pytest.mark.java, pytest.mark.rabbitmq, pytest.mark.amqp),
    ),
    pytest.param(
        ("JMSLIKE_TEST_ARTEMIS_AMQP_URL", "core", "JMSLIKE_TEST_ARTEMIS_AMQP_URL", ""),
        id="artemis-core",
        marks=(pytest.mark.java, pytest.mark.artemis, pytest.mark.amqp),
    ),
    pytest.param(
        ("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL", "openwire", "JMSLIKE_TEST_ACTIVEMQ_OPENWIRE_URL", ""),
        id="activemq-openwire",
        marks=(pytest.mark.java, pytest.mark.activemq, pytest.mark.amqp),
    ),
]


@pytest.mark.parametrize("deploy", [False, True], ids=["consumers-first", "declared-first"])
@pytest.mark.parametrize("case", CASES)
def test_java_producer_lands_groups_on_jmslike_partitions(
    case: tuple[str, str, str, str], deploy: bool, java_jar: Path, tmp_path: Path
) -> None:
    """ORD-16 with Java: the documented hash, computed by java.util.zip.CRC32, puts each
    group on the partition jmslike chose for it; jmslike consumers get each group in
    order, from that partition only.

    ``declared-first`` is the deploy order docs/partitions.md gives: ``jmslike declare``
    (its partition count from a config file, a process of its own) makes the partitions,
    the Java producer sends everything before any jmslike consumer exists, and the consumers
    come last. On RabbitMQ this fails without the declaration: Qpid JMS sending to
    ``/amq/queue/<name>.p<n>`` where no such queue exists has its sends accepted and the
    messages dropped, with no error (seen on 3.10.8: 4 messages sent, no queue made,
    nothing kept)."""
    variable, protocol, java_variable, prefix = case
    url = broker_url(variable)
    for broker in ("ARTEMIS", "RABBITMQ"):
        # Named, not guessed: brokers started with a port offset (scripts/brokers.sh)
        # have their management API elsewhere than jmslike's default.
        if variable.startswith(f"JMSLIKE_TEST_{broker}"):
            url += "?managementUrl=" + broker_url(f"JMSLIKE_TEST_{broker}_MANAGEMENT_URL")
    queue = f"jparts-{uuid.uuid4().hex[:8]}"
    run = uuid.uuid4().hex[:6]
    factory = ConnectionFactory(
        url,
        partitioned_destinations={f"queue://{queue}": PARTITIONS},
        partition_heartbeat=0.2,
        partition_timeout=0.8,
    )
    endpoint = Endpoint(url, protocol, java_url(protocol, broker_url(java_variable)))

    def produce() -> list[dict[str, Any]]:
        return run_java(
            java_jar, "produce", endpoint, "--queue", queue, "--run", run,
            "--groups", str(GROUPS), "--per-group", str(PER_GROUP),
            "--partitions", str(PARTITIONS), "--queue-prefix", prefix,
        )  # fmt: skip

    sent: list[dict[str, Any]] = []
    if deploy:
        config = tmp_path / "jmslike.toml"
        config.write_text(f'[destinations."queue://{queue}"]\npartitions = {PARTITIONS}\n')
        declared = subprocess.run(
            [sys.executable, "-m", "jmslike", "declare", url, queue],
            env={**os.environ, "JMSLIKE_CONFIG": str(config)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert declared.returncode == 0, declared.stderr
        assert declared.stdout.startswith(f"queue://{queue} (partitioned: {queue}.p0, "), declared
        sent = produce()
    with factory.create_connection() as connection:
        reports: list[Exception] = []
        connection.set_exception_listener(reports.append)
        # Consumers first (without deploy): on RabbitMQ they declare the partitions
        # single-active-consumer queues, which a Java producer then addresses.
        consumers = [
            connection.create_session(False, Session.CLIENT_ACKNOWLEDGE).create_consumer(
                f"queue://{queue}"
            )
            for _ in range(2)
        ]
        # Each group from one consumer (checked below) needs the partitions shared out
        # before anything is taken: with the messages already queued (deploy), the
        # first consumer would otherwise start on every partition and hand some over.
        deadline = time.monotonic() + 15.0
        while sorted(p for c in consumers for p in c.partitions) != list(
            range(PARTITIONS)
        ) or not all(c.partitions for c in consumers):
            assert time.monotonic() < deadline, [c.partitions for c in consumers]
            time.sleep(0.05)
        connection.start()
        if not deploy:
            sent = produce()
        assert len(sent) == GROUPS * PER_GROUP
        for record in sent:
            assert record["partition"] == partition_of(record["group"], PARTITIONS)
        got: dict[str, list[int]] = {}
        by_consumer: dict[str, set[int]] = {}
        deadline = time.monotonic() + 30.0
        while sum(map(len, got.values())) < len(sent) and time.monotonic() < deadline:
            for index, consumer in enumerate(consumers):
                message = consumer.receive(0.1)
                if message is None:
                    continue
                group = message.get_string_property("JMSXGroupID")
                got.setdefault(group, []).append(message.get_int_property("JMSXGroupSeq"))
                by_consumer.setdefault(group, set()).add(index)
                message.acknowledge()
        assert sorted(got) == sorted({r["group"] for r in sent})
        for group, sequence in got.items():
            assert sequence == list(range(1, PER_GROUP + 1)), (group, sequence)
            assert len(by_consumer[group]) == 1
        assert not reports, reports  # no group arrived on a partition not its own
