"""A listener container's acknowledgements are held back a moment and written in batches
(STOMP: ``FEED_ACK_DELAY``; AMQP: ``CallQueue.post_soon``, ``SOON_DELAY``): a thread
switch per message cost more than the work. Held ones must still reach the broker on
their own, with nothing else written after them on that connection.

The container's connection goes through a relay (tests/faultproxy.py) that is cut once
every message was handled and a moment has passed: the connection can write nothing
more, and the broker gives back whatever it had not been told was done. A fresh consumer
must then find the queue empty. Every broker x protocol case.

Run: ``.venv/bin/python -m pytest tests/integration/test_held_acknowledgements.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from brokercases import CASES
from groupsends import send_grouped_texts

from jmslike import ConnectionFactory, Message, MessageListenerContainer

GROUPS, PER_GROUP = 4, 10
SETTLE = 1.0
"""Seconds between the last message handled and the cut: many times either delay."""


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_a_containers_held_acknowledgements_reach_the_broker_on_their_own(relay_for) -> None:
    url, direct, relay = relay_for
    queue = f"queue://held-acks-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(direct).create_connection() as connection:
        send_grouped_texts(connection.create_session(), queue, GROUPS, PER_GROUP)
    total = GROUPS * PER_GROUP
    handled: list[str] = []
    done = threading.Event()

    def handle(message: Message) -> None:
        handled.append(message.text or "")
        if len(handled) == total:
            done.set()

    container = MessageListenerContainer(ConnectionFactory(url), queue, handle, concurrency=2)
    container.start()
    try:
        assert done.wait(30), f"{relay.name}: handled {len(handled)} of {total}"
        time.sleep(SETTLE)
        relay.cut()  # nothing more goes out on that connection, not even a close
    finally:
        container.stop()
    with ConnectionFactory(direct).create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        back = consumer.receive(2.0)
    assert back is None, (
        f"{relay.name}: {back.text if back else ''} came back after every message was "
        f"handled and {SETTLE} s had passed: a held acknowledgement never reached the broker"
    )
