"""ORD-9 over AMQP with messages sent while a session holds a group.

Artemis stops a queue's dispatch at a message whose group is pinned to a consumer
without credit; the provider's receivers probe and poke around it
(providers/jmslike_amqp/credit.py). The contract suite covers messages already queued;
here they come later, while another session already waits with plain credit, which only
the periodic probe of a waiting receiver finds. ActiveMQ Classic skips such a message by
itself: the same test holds there.

Run: ``.venv/bin/python -m pytest tests/integration/test_amqp_flow_past.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import Session
from jmslike_amqp.credit import LAST_RECHECK

pytestmark = pytest.mark.amqp

BROKERS = [
    pytest.param("JMSLIKE_TEST_ARTEMIS_AMQP_URL", marks=pytest.mark.artemis, id="artemis"),
    pytest.param("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL", marks=pytest.mark.activemq, id="activemq"),
]


@pytest.mark.parametrize("variable", BROKERS)
def test_later_messages_flow_past_a_held_group(variable: str) -> None:
    """Session A holds g:1 unacknowledged; B waits in receive() on an empty queue; then
    g:2 and h:1 are sent: B gets h:1 within about a second of its send returning (the
    waiting receiver's longest pause between probes, ``LAST_RECHECK``), and g:2 waits for
    A's group. Timed from the send, not from the start of the wait: a persistent send on
    a busy machine can take seconds of its own (the broker's journal), which says nothing
    about the probe."""
    factory = jmslike.ConnectionFactory(broker_url(variable))
    queue = f"queue://flow-past-{uuid.uuid4().hex[:8]}"
    with factory.create_connection() as sending, factory.create_connection() as connection:
        out = sending.create_session()
        producers = {}
        for group in ("g", "h"):
            producers[group] = out.create_producer(queue)
            producers[group].enable_ordering_group(group)
        producers["g"].send(out.create_text_message("g:1"))
        a = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        b = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        held_by_a, waiting_b = a.create_consumer(queue), b.create_consumer(queue)
        connection.start()
        first = held_by_a.receive(2.0)
        assert first is not None and first.text == "g:1"

        sent_at: list[float] = []

        def send_later() -> None:
            time.sleep(0.3)
            producers["g"].send(out.create_text_message("g:2"))
            producers["h"].send(out.create_text_message("h:1"))
            sent_at.append(time.monotonic())

        sender = threading.Thread(target=send_later)
        sender.start()
        got = waiting_b.receive(15.0)
        arrived = time.monotonic()
        sender.join()
        assert got is not None and got.text == "h:1"
        late = arrived - sent_at[0]
        assert late < LAST_RECHECK + 0.5, f"h:1 came {late:.2f} s after its send returned"
        assert waiting_b.receive(0.2) is None  # g:2 is A's group's
        first.acknowledge()
        nxt = held_by_a.receive(2.0)
        assert nxt is not None and nxt.text == "g:2"


@pytest.mark.parametrize("variable", BROKERS)
def test_each_new_group_flows_past_while_the_held_group_grows(variable: str) -> None:
    """The same, round after round: while A holds g:1, each round sends g's next message
    and then a new group's first; B must get every new group's message, and A none.

    A receiver that probed again right after a poke brought g's message poked A once
    more while the new group's message was still on its way; arriving during that poke,
    it went to A and pinned its group there. Each round sends when B is about to probe,
    which makes that race likely (one round in twelve, on Artemis, before the fix). The
    receiver now waits with plain credit after such a poke (credit.py)."""
    factory = jmslike.ConnectionFactory(broker_url(variable))
    queue = f"queue://flow-past-{uuid.uuid4().hex[:8]}"
    rounds = 12
    with factory.create_connection() as sending, factory.create_connection() as connection:
        out = sending.create_session()
        producer = out.create_producer(queue)

        def send(group: str, text: str) -> None:
            message = out.create_text_message(text)
            message.set_string_property("JMSXGroupID", group)
            producer.send(message)

        send("g", "g:1")
        a = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        b = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        held_by_a, waiting_b = a.create_consumer(queue), b.create_consumer(queue)
        connection.start()
        first = held_by_a.receive(2.0)
        assert first is not None and first.text == "g:1"
        for number in range(2, rounds + 2):
            sent_at: list[float] = []

            def send_later(n: int = number) -> None:
                # B, waiting, probes 20, 60, 140 and 300 ms into its wait: send then
                time.sleep((0.06, 0.14, 0.3)[n % 3])
                send("g", f"g:{n}")
                send(f"h{n}", f"h{n}:1")
                sent_at.append(time.monotonic())

            sender = threading.Thread(target=send_later)
            sender.start()
            got = waiting_b.receive(LAST_RECHECK + 5.0)
            arrived = time.monotonic()
            sender.join()
            assert got is not None, f"round {number}: B got nothing"
            assert got.text == f"h{number}:1", f"round {number}: B got {got.text}"
            late = arrived - sent_at[0]
            assert late < LAST_RECHECK + 0.5, f"h{number}:1 came {late:.2f} s after its send"
            got.acknowledge()
        first.acknowledge()
        texts = []
        for _ in range(rounds):
            message = held_by_a.receive(2.0)
            assert message is not None, f"A got only {texts}"
            texts.append(message.text)
            message.acknowledge()
        assert texts == [f"g:{n}" for n in range(2, rounds + 2)]
