"""``receive_no_wait()`` over STOMP: no wait on an empty queue, a message just sent taken.

A STOMP subscription's window is fixed at SUBSCRIBE and freed by ACKs, so once a
consumer has subscribed, asking again sends the broker nothing and there is no answer
to wait for. Since ``receive_no_wait()`` learnt to wait one answer's time for the broker
(20 ms, for AMQP's credit: ``jmslike/consumer.py``, ``NO_WAIT_ANSWER``), every call on
an empty STOMP queue waited those 20 ms too (a poll of 25 calls took over 0.5 s, found
by timing an idle ``receive_no_wait()`` loop). Now a consumer with a fixed window
(``ProviderConsumer.fixed_window``) waits only after its subscription, after an ACK
that frees its window, and within 20 ms of a send on its connection, so that a message
the application has just sent is still returned (the shipped scenario
``test_receive_no_wait_takes_a_message_the_queue_holds`` checks that on every case).

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_receive_no_wait.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import time
import uuid

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory

pytestmark = pytest.mark.stomp

POLLS = 25
NO_WAIT_ANSWER = 0.02
"""What each poll waited before (jmslike.consumer.NO_WAIT_ANSWER): 25 polls took at least
0.5 s. The test allows half that, a hundred times what they take now."""

CASES = [
    pytest.param("activemq", marks=pytest.mark.activemq, id="activemq"),
    pytest.param("artemis", marks=pytest.mark.artemis, id="artemis"),
    pytest.param("rabbitmq", marks=pytest.mark.rabbitmq, id="rabbitmq"),
]


@pytest.mark.parametrize("broker", CASES)
def test_polling_an_empty_queue_does_not_wait(broker: str) -> None:
    url = broker_url(f"JMSLIKE_TEST_{broker.upper()}_STOMP_URL")
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue(f"no-wait-{uuid.uuid4().hex[:8]}")
        consumer = session.create_consumer(queue)
        connection.start()
        assert consumer.receive_no_wait() is None  # the first call subscribes and waits
        time.sleep(2 * NO_WAIT_ANSWER)  # away from any send or acknowledgement
        started = time.perf_counter()
        polled = [consumer.receive_no_wait() for _ in range(POLLS)]
        took = time.perf_counter() - started
        assert polled == [None] * POLLS
        assert took < POLLS * NO_WAIT_ANSWER / 2, f"{POLLS} polls took {took:.3f} s"
        # A message sent on this connection is returned by the poll right after it,
        # every time (each poll then waits for it as long as the broker takes).
        producer = session.create_producer(queue)
        for number in range(10):
            producer.send(session.create_text_message(str(number)))
            got = consumer.receive_no_wait()
            assert got is not None and got.text == str(number), number
            time.sleep(2 * NO_WAIT_ANSWER)
