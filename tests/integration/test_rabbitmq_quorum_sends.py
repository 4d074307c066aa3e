"""RabbitMQ over STOMP: non-persistent sends to quorum queues (a partitioned queue's
partitions, strict queues) are all there after the sending connection closes.

Seen here before the fix: of 100,000 NON_PERSISTENT messages sent to a 16-partition
queue and the connection closed at once, 24 never reached their queue (the broker drops
what is still on its way to a quorum queue when the channel closes). jmslike now asks for
a receipt on those sends and the close waits for them. Counted through the management
API, which lags a few seconds.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest
from brokercases import case_url, delete_rabbitmq_queues
from brokerenv import broker_url

from jmslike import ConnectionFactory, DeliveryMode
from jmslike.spi.management import RabbitManagement

pytestmark = [pytest.mark.rabbitmq, pytest.mark.stomp]

MESSAGES, GROUPS = 100_000, 200


def test_non_persistent_sends_to_partitions_survive_the_close(tmp_path) -> None:
    name = f"qqsend-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "jmslike.toml"
    config.write_text(f'[destinations."queue://{name}"]\npartitions = 16\n')
    before = os.environ.get("JMSLIKE_CONFIG")
    os.environ["JMSLIKE_CONFIG"] = str(config)
    try:
        factory = ConnectionFactory(case_url("rabbitmq-stomp"))
    finally:
        if before is None:
            del os.environ["JMSLIKE_CONFIG"]
        else:
            os.environ["JMSLIKE_CONFIG"] = before
    api = RabbitManagement(broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL"), None, None, 10)
    try:
        with factory.create_connection() as connection:
            session = connection.create_session()
            producers = []
            for g in range(GROUPS):
                producer = session.create_producer(f"queue://{name}")
                producer.delivery_mode = DeliveryMode.NON_PERSISTENT
                producer.enable_ordering_group(f"g{g}")
                producers.append(producer)
            for _ in range(MESSAGES // GROUPS):
                for producer in producers:
                    producer.send(session.create_text_message("x"))
        deadline = time.monotonic() + 30
        while (queued := sum(api.queue_depths("/", name).values())) < MESSAGES:
            assert time.monotonic() < deadline, f"{MESSAGES - queued} of {MESSAGES} lost"
            time.sleep(1.0)
        assert queued == MESSAGES
    finally:
        delete_rabbitmq_queues("rabbitmq-stomp", name)
