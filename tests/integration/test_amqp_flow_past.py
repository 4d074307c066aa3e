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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import Message, MessageConsumer, MessageProducer, Session
from jmslike_amqp.credit import LAST_RECHECK, Credit

pytestmark = pytest.mark.amqp

BROKERS = [
    pytest.param("JMSLIKE_TEST_ARTEMIS_AMQP_URL", marks=pytest.mark.artemis, id="artemis"),
    pytest.param("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL", marks=pytest.mark.activemq, id="activemq"),
]


@dataclass
class Held:
    """Session A holds ``g:1`` unacknowledged; B's consumer is on the same queue and
    connection; ``send`` sends a grouped text message from another connection."""

    send: Callable[[str, str], None]
    first: Message
    held_by_a: MessageConsumer
    waiting_b: MessageConsumer


@contextmanager
def a_holds_g1(variable: str) -> Iterator[Held]:
    factory = jmslike.ConnectionFactory(broker_url(variable))
    queue = f"queue://flow-past-{uuid.uuid4().hex[:8]}"
    with factory.create_connection() as sending, factory.create_connection() as connection:
        out = sending.create_session()
        producers: dict[str, MessageProducer] = {}

        def send(group: str, text: str) -> None:
            if group not in producers:
                producers[group] = out.create_producer(queue)
                producers[group].enable_ordering_group(group)
            producers[group].send(out.create_text_message(text))

        send("g", "g:1")
        a = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        b = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        held_by_a, waiting_b = a.create_consumer(queue), b.create_consumer(queue)
        connection.start()
        first = held_by_a.receive(2.0)
        assert first is not None and first.text == "g:1"
        yield Held(send, first, held_by_a, waiting_b)


@pytest.mark.parametrize("variable", BROKERS)
def test_later_messages_flow_past_a_held_group(variable: str) -> None:
    """Session A holds g:1 unacknowledged; B waits in receive() on an empty queue; then
    g:2 and h:1 are sent: B gets h:1 within about a second of its send returning (the
    waiting receiver's longest pause between probes, ``LAST_RECHECK``), and g:2 waits for
    A's group. Timed from the send, not from the start of the wait: a persistent send on
    a busy machine can take seconds of its own (the broker's journal), which says nothing
    about the probe."""
    with a_holds_g1(variable) as held:
        first, held_by_a, waiting_b = held.first, held.held_by_a, held.waiting_b
        sent_at: list[float] = []

        def send_later() -> None:
            time.sleep(0.3)
            held.send("g", "g:2")
            held.send("h", "h:1")
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
    rounds = 12
    with a_holds_g1(variable) as held:
        send, first = held.send, held.first
        held_by_a, waiting_b = held.held_by_a, held.waiting_b
        for number in range(2, rounds + 2):
            sent_at: list[float] = []

            def send_later(n: int = number, sent_at: list[float] = sent_at) -> None:
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


@pytest.mark.parametrize("variable", BROKERS)
def test_a_steady_stream_of_other_groups_all_flows_past(variable: str) -> None:
    """While A holds g:1, 800 messages of 50 other groups arrive at 200 a second; B,
    waiting in receive(), must get every one of them, and A none.

    B's probes find the queue empty between arrivals. Poking A at once then (a drain of
    1 on A's link) handed a message arriving within that drain to A and pinned its group
    there, with every later message of the group: on Artemis, 20 to 40 of 1,000 messages
    ended at A in each of 3 runs. Now a receiver pokes only after it has waited with
    plain credit, where arrivals come to it (credit.py, ``patient``)."""
    total, groups, rate = 800, 50, 200.0
    with a_holds_g1(variable) as held:
        send, first, waiting_b = held.send, held.first, held.waiting_b
        got: list[str] = []

        def take() -> None:
            while len(got) < total:
                message = waiting_b.receive(3.0)
                if message is None:
                    return
                got.append(message.text)
                message.acknowledge()

        taker = threading.Thread(target=take)
        taker.start()
        started = time.monotonic()
        for number in range(total):
            send(f"h{number % groups}", f"h{number % groups}:{number}")
            pause = started + (number + 1) / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        taker.join(30.0)
        missing = total - len(got)
        assert missing == 0, f"{missing} of {total} did not reach B (pinned to A?)"
        first.acknowledge()


@pytest.mark.artemis
def test_nobody_is_poked_while_the_queue_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """While A holds g:1 and the queue is empty, B waits 3 s in receive(): B looks at the
    queue's head before each poke, finds nothing, and pokes nobody.

    A poke of an empty queue (a drain of 1 on A's link) hands a message arriving within
    its round trip to A, where a new group would be pinned behind g:1; without the look,
    B poked A after every empty recheck of its wait (credit.py). Then g:2 is sent: now the
    head is A's group, so B pokes A, and A's next receive after it acknowledges g:1 finds
    g:2 already there."""
    pokes: list[frozenset[str]] = []
    looks: list[str | None] = []
    poke, looked = Credit._poke, Credit._looked

    def counted_poke(self: Credit, waiter: Credit) -> None:
        pokes.append(frozenset(self.groups))
        poke(self, waiter)

    def counted_look(self: Credit, number: int, head: Any, answered: bool) -> None:
        looks.append(head.group_id if head is not None else None)
        looked(self, number, head, answered)

    monkeypatch.setattr(Credit, "_poke", counted_poke)
    monkeypatch.setattr(Credit, "_looked", counted_look)
    with a_holds_g1("JMSLIKE_TEST_ARTEMIS_AMQP_URL") as held:
        assert held.waiting_b.receive(3.0) is None
        assert looks, "B never looked at the queue's head while it waited"
        assert set(looks) == {None}, f"looks saw {looks} in an empty queue"
        assert pokes == [], f"B poked {len(pokes)} times while the queue was empty"
        held.send("g", "g:2")
        assert held.waiting_b.receive(3.0) is None  # g:2 is A's group's
        assert "g" in looks, f"B never saw g:2 at the head: {looks}"
        assert pokes and all("g" in groups for groups in pokes), pokes
        held.first.acknowledge()
        nxt = held.held_by_a.receive(2.0)
        assert nxt is not None and nxt.text == "g:2"
