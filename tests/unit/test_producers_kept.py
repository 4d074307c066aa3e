"""What a session keeps of its producers: the open ones it must close with itself, and
nothing of those the application dropped.

JMS 2.0's idiom is ``context.create_producer().send(destination, body)`` for each
message (a ``JMSProducer`` has no ``close``), and a reply service that makes a producer
per reply and closes it is common too. The session kept every producer ever made, about
330 bytes a send for the session's life (found with tracemalloc: 40,000 sends, 41,001
producers held). It now refers to its open producers weakly and forgets a closed one.

Run: ``.venv/bin/python -m pytest tests/unit/test_producers_kept.py -v``.
"""

from __future__ import annotations

import gc
import uuid
import weakref

import pytest

import jmslike
from jmslike import ConnectionFactory


def _factory() -> ConnectionFactory:
    return ConnectionFactory(f"embedded://kept-{uuid.uuid4().hex[:8]}")


def test_a_jms_producer_per_send_is_not_kept() -> None:
    with _factory().create_context() as context:
        queue = context.create_queue("q")
        made = []
        for n in range(20):
            producer = context.create_producer()
            made.append(weakref.ref(producer._producer))  # the MessageProducer behind it
            producer.send(queue, f"m{n}")
        del producer
        gc.collect()
        assert [ref() for ref in made] == [None] * 20
        consumer = context.create_consumer(queue)
        assert [consumer.receive_body(str, 5.0) for _ in range(20)] == [f"m{n}" for n in range(20)]


def test_a_closed_producer_is_forgotten_and_an_open_one_closes_with_its_session() -> None:
    with _factory().create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue("q")
        closed = session.create_producer(queue)
        closed.send(session.create_text_message("one"))
        closed.close()
        assert closed not in session._producers
        still_open = session.create_producer(queue)
        message = session.create_text_message("after close")
        session.close()
        assert still_open.closed
        with pytest.raises(jmslike.IllegalStateError, match="producer is closed"):
            still_open.send(message)
