"""The client-side group gate (ORD-16 within a process), unit level and through the API.

The API-level tests use ``embedded://...?nativeGroups=false``: a real in-process broker
that, like RabbitMQ, ignores JMSXGroupID and hands a group's messages to any consumer.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from jmslike import ConnectionFactory, ConnectionFailedError, Session, TransactionInDoubtError
from jmslike.message import TextMessage
from jmslike.ordering import ClientGroupGate, GroupBinding, StripedGroupGate

pytestmark = pytest.mark.embedded

KEY = ("queue://q", "g")


def make_gate(wait: float = 30.0) -> tuple[ClientGroupGate[str], list[str]]:
    delivered: list[str] = []
    return ClientGroupGate(delivered.append, wait_for_return=wait), delivered


def test_free_group_passes_and_holder_keeps_taking() -> None:
    gate, out = make_gate()
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "A", "m2", "A:m2")
    assert out == ["A:m1", "A:m2"]
    assert gate.holders() == {"queue://q\0g": "A"}


def test_other_session_waits_until_holder_finished_everything() -> None:
    """ORD-9: B gets the group's next message only when A has finished all it held."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "A", "m2", "A:m2")
    gate.arrive(KEY, "B", "m3", "B:m3")
    assert out == ["A:m1", "A:m2"]
    gate.finish(KEY, "A", 1)
    assert out == ["A:m1", "A:m2"]
    gate.finish(KEY, "A", 1)
    assert out == ["A:m1", "A:m2", "B:m3"]


def test_holder_does_not_overtake_what_waits_at_another_session() -> None:
    """A later message for the holding session must queue behind an earlier one parked
    for another session, or it would be processed before it (ORD-9)."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "B", "m2", "B:m2")
    gate.arrive(KEY, "A", "m3", "A:m3")
    assert out == ["A:m1"]
    gate.finish(KEY, "A")
    assert out == ["A:m1", "B:m2"]
    gate.finish(KEY, "B")
    assert out == ["A:m1", "B:m2", "A:m3"]


def test_given_back_messages_keep_their_place() -> None:
    """ORD-10/11: what A gave back to the broker comes first when it arrives again."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "B", "m2", "B:m2")
    gate.give_back(KEY, "A", ["m1"])
    assert out == ["A:m1"], "m2 must wait for m1 to come back"
    gate.arrive(KEY, "C", "m1", "C:m1")
    assert out == ["A:m1", "C:m1"]
    gate.finish(KEY, "C")
    assert out == ["A:m1", "C:m1", "B:m2"]


@pytest.mark.parametrize(
    "first_back", [[1], [2, 3]], ids=["held-then-buffered", "buffered-then-held"]
)
def test_messages_given_back_twice_keep_send_order(first_back: list[int]) -> None:
    """A transacted session gives back the message of an in-doubt commit, and at the
    reconnect the later ones it had buffered (or the other way round): the line must
    hold them in JMSXGroupSeq order, not in the order they were given back."""
    gate, out = make_gate()
    for n in (1, 2, 3):
        gate.arrive(KEY, "A", f"m{n}", f"A:m{n}")
    second_back = [n for n in (1, 2, 3) if n not in first_back]
    for back in (first_back, second_back):
        gate.give_back(KEY, "A", [f"m{n}" for n in back], back)
    for n in (3, 2, 1):  # the broker's copies come to B, latest first
        gate.arrive(KEY, "B", f"m{n}", f"B:m{n}")
    assert out[3:] == ["B:m1", "B:m2", "B:m3"]


def test_a_copy_that_beats_its_in_doubt_commit_goes_first_and_keeps_no_hole() -> None:
    """At a reconnect a transacted session drops what it had buffered (m2, m3: given back,
    holes at the front), and the broker's copy of the message in its unanswered commit
    (m1) can arrive before that commit raises in doubt. The copy goes ahead of the holes
    it precedes in send order, and the in-doubt give-back keeps no place for m1 (its copy
    is already here): nothing waits for a message that will not come again."""
    gate, out = make_gate()
    for n in (1, 2, 3):
        gate.arrive(KEY, "A", f"m{n}", f"A:m{n}", sequence=n)
    gate.give_back(KEY, "A", ["m2", "m3"], [2, 3])  # the reconnect drops the buffer
    gate.arrive(KEY, "A", "m1", "A:m1 again", sequence=1)
    assert out[3:] == ["A:m1 again"], "the copy waited behind later messages"
    gate.give_back(KEY, "A", ["m1"], [1], in_doubt=True)  # the commit raises now
    for n in (2, 3):
        gate.arrive(KEY, "A", f"m{n}", f"A:m{n} again", sequence=n)
    assert out[3:] == ["A:m1 again", "A:m2 again", "A:m3 again"]


def test_a_message_that_never_comes_back_stops_blocking() -> None:
    gate, out = make_gate(wait=0.0)
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "B", "m2", "B:m2")
    gate.give_back(KEY, "A", ["m1"])
    gate.expire_holes(KEY)
    assert out == ["A:m1", "B:m2"]


def test_withdrawn_parked_delivery_leaves_a_hole() -> None:
    gate, out = make_gate()
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "B", "m2", "B:m2")
    gate.arrive(KEY, "C", "m3", "C:m3")
    taken = gate.withdraw("B", lambda item: item.startswith("B:"))
    assert taken == [(KEY, "B:m2")]
    gate.finish(KEY, "A")
    assert out == ["A:m1"], "m3 waits for m2, which went back to the broker"
    gate.arrive(KEY, "D", "m2", "D:m2")
    assert out == ["A:m1", "D:m2"]
    gate.finish(KEY, "D")
    assert out == ["A:m1", "D:m2", "C:m3"]


def test_groups_and_destinations_are_independent() -> None:
    """ORD-3: the same name on two destinations is two groups."""
    gate, out = make_gate()
    gate.arrive(("queue://a", "g"), "A", "1", "A:a")
    gate.arrive(("queue://b", "g"), "B", "2", "B:b")
    gate.arrive(("queue://a", "h"), "B", "3", "B:h")
    assert out == ["A:a", "B:b", "B:h"]


def _two_sessions(
    connection: Any, a_transacted: bool = False, a_mode: int = Session.CLIENT_ACKNOWLEDGE
) -> tuple[Any, ...]:
    """On a broker that ignores groups: ``send(text)`` to group g of queue://q, and
    sessions A and B (CLIENT_ACKNOWLEDGE; A transacted, or in ``a_mode``, if asked) with
    a consumer each."""
    sender = connection.create_session()
    producer = sender.create_producer("queue://q")
    producer.enable_ordering_group("g")
    a = connection.create_session(
        a_transacted, Session.SESSION_TRANSACTED if a_transacted else a_mode
    )
    b = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    ca, cb = a.create_consumer("queue://q"), b.create_consumer("queue://q")
    connection.start()

    def send(text: str) -> None:
        producer.send(sender.create_text_message(text))

    return send, a, ca, cb


def test_through_the_api_holder_messages_queue_behind_parked_ones() -> None:
    """On a broker that ignores groups: A holds g:1; B's consumer is handed g:2 (parked);
    a later g:3 handed to A must not be processed before g:2."""
    factory = ConnectionFactory(f"embedded://gate-{uuid.uuid4().hex}?nativeGroups=false")
    with factory.create_connection() as connection:
        send, _a, ca, cb = _two_sessions(connection)
        send("g:1")
        first = ca.receive(1.0)
        assert first is not None and first.text == "g:1"
        send("g:2")
        assert cb.receive(0.1) is None, "g:2 is parked at B while A holds g"
        send("g:3")
        assert ca.receive(0.1) is None, "g:3 must not overtake g:2"
        first.acknowledge()
        second = cb.receive(1.0)
        assert second is not None and second.text == "g:2"
        second.acknowledge()
        third = ca.receive(1.0)
        assert third is not None and third.text == "g:3"


def test_through_the_api_a_reconnect_frees_the_groups_of_what_was_buffered() -> None:
    """A reconnect drops what a consumer buffered from the lost connection (the broker
    hands it out again). Its session had taken those groups at the gate; it must let
    them go, or the broker's copy, at another session, waits for ever (issue 18: RabbitMQ
    over a failover URL lost half its groups after a broker restart)."""
    url = f"embedded://gate-{uuid.uuid4().hex}?nativeGroups=false"
    with ConnectionFactory(url, prefetch=2).create_connection() as connection:
        send, a, ca, cb = _two_sessions(connection)
        for text in ("g:1", "g:2"):
            send(text)
        first = ca.receive(1.0)
        assert first is not None and first.text == "g:1"
        first.acknowledge()  # A still holds g: g:2 waits in its buffer
        assert cb.receive(0.1) is None
        # What the provider does after a reconnect: revoke the buffer, and the broker
        # delivers those messages again (here: released, as the lost connection would).
        lost = ca._revoke(lambda token: True)
        assert len(lost) == 1
        a._provider.release(lost)
        again = cb.receive(2.0)
        assert again is not None and again.text == "g:2", "g stayed held by A's session"
        assert again.jms_redelivered
        again.acknowledge()


def _lost_answer_keeps_g1_place(
    error: Exception,
    method: str,
    finish: Callable[[Any, Any], object],
    *,
    a_transacted: bool = False,
    a_mode: int = Session.CLIENT_ACKNOWLEDGE,
) -> None:
    """A holds g:1 while g:2 is parked at B; the provider's ``method`` then fails with
    ``error`` while ``finish(a, ca)`` finishes g:1 (it may or may not have reached the
    broker). g:2 must wait until the broker hands g:1 out again."""
    url = f"embedded://gate-{uuid.uuid4().hex}?nativeGroups=false"
    with ConnectionFactory(url).create_connection() as connection:
        send, a, ca, cb = _two_sessions(connection, a_transacted, a_mode)
        send("g:1")
        first = ca.receive(1.0)
        assert first is not None and first.text == "g:1"
        send("g:2")
        assert cb.receive(0.2) is None, "g:2 is parked at B while A holds g"
        taken: list[object] = []

        def failing(tokens: list[object], *_rest: object) -> None:
            taken.extend(tokens)
            raise error

        setattr(a._provider, method, failing)
        with pytest.raises(type(error)):
            finish(a, ca)
        assert len(taken) == 1
        assert cb.receive(0.3) is None, f"g:2 went ahead of g:1, whose {method} may not be done"
        a._provider.release(taken)  # it was not: the broker hands g:1 out again
        again = cb.receive(2.0)
        assert again is not None and (again.text, again.jms_redelivered) == ("g:1", True)
        again.acknowledge()
        second = cb.receive(1.0)
        assert second is not None and second.text == "g:2"


def test_through_the_api_an_in_doubt_commit_keeps_its_messages_place() -> None:
    """A commit whose answer was lost (TransactionInDoubtError) may not have happened: the
    broker then hands its messages out again, maybe to another session. Until they come
    back, the group's later messages wait behind them (issue 18: RabbitMQ restarted
    under a transacted consumer, and its in-doubt g007:40 came again after 41 to 66)."""
    _lost_answer_keeps_g1_place(
        TransactionInDoubtError("the answer to COMMIT was lost"),
        "commit",
        lambda a, _ca: a.commit(),
        a_transacted=True,
    )


def test_through_the_api_an_auto_acknowledgement_lost_with_the_connection_keeps_its_place() -> None:
    """ORD-10 in the AUTO receive loop, which acknowledges the last message and asks for
    the next in one provider call: the group is freed only once that acknowledgement is
    written. If the connection is lost while it is written, the broker hands the message
    out again, and the group's later messages wait behind it."""
    _lost_answer_keeps_g1_place(
        ConnectionFailedError("the connection was lost while writing the ACK"),
        "acknowledge_and_flow",
        lambda _a, ca: ca.receive(0.1),  # finishes g:1 first
        a_mode=Session.AUTO_ACKNOWLEDGE,
    )


# ---------------------------------------------- arrival order is not broker order


def test_sequence_a_later_message_waits_for_its_predecessor() -> None:
    """ORD-9/ORD-16 where consumers read from separate sockets (RabbitMQ over STOMP): the
    producer's seq 2 arrives at B before seq 1 arrives at C; the gate keeps send order."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "ID:p:1", "A:1", sequence=1)
    gate.finish(KEY, "A")
    gate.arrive(KEY, "B", "ID:p:3", "B:3", sequence=3)  # seq 2 is still on its way
    assert out == ["A:1"]
    gate.arrive(KEY, "C", "ID:p:2", "C:2", sequence=2)
    assert out == ["A:1", "C:2"]
    gate.finish(KEY, "C")
    assert out == ["A:1", "C:2", "B:3"]


def test_sequence_first_message_seen_waits_for_lower_numbers_then_gives_up() -> None:
    """A group's first message seen with seq 2 waits briefly for seq 1 (which may be in
    flight on another socket); if it never comes (taken long ago, or expired), the line
    moves on after ``wait_for_predecessor``."""
    delivered: list[str] = []
    gate = ClientGroupGate(delivered.append, wait_for_predecessor=0.0)
    gate.arrive(KEY, "B", "ID:p:7", "B:2", sequence=2)
    assert delivered == []
    gate.expire_holes(KEY)
    assert delivered == ["B:2"]


def test_sequence_a_predecessor_a_feed_holds_is_waited_for_however_long() -> None:
    """A listener container's feed holds seq 2 and 3 (``expect``); another feed hands out
    seq 4 first: it waits past ``wait_for_predecessor`` until 2 and 3 have come and are
    finished (ORD-8). Given back by its feed instead (``unexpect``), a hole waits
    ``wait_for_return`` only."""
    delivered: list[str] = []
    gate = ClientGroupGate(delivered.append, wait_for_return=0.0, wait_for_predecessor=0.0)
    gate.arrive(KEY, "A", "ID:p:1", "A:1", sequence=1)
    gate.finish(KEY, "A")
    gate.expect(KEY, "ID:p:2", 2)
    gate.expect(KEY, "ID:p:3", 3)
    gate.arrive(KEY, "B", "ID:p:4", "B:4", sequence=4)
    gate.expire_holes(KEY)
    assert delivered == ["A:1"]
    gate.arrive(KEY, "A", "ID:p:2", "A:2", sequence=2)
    assert delivered == ["A:1", "A:2"]
    gate.unexpect(KEY, "ID:p:3", 3)  # its feed closed: the broker has it again
    gate.finish(KEY, "A")
    gate.expire_holes(KEY)
    assert delivered == ["A:1", "A:2", "B:4"]
    assert gate._in_process == {}


def test_sequence_redeliveries_and_rebinding_do_not_wait() -> None:
    """A number at or below the highest seen (a redelivery, or ORD-8a's restart at 1 after
    binding again) leaves no holes."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "ID:p:1", "A:1", sequence=1)
    gate.arrive(KEY, "A", "ID:p:2", "A:2", sequence=2)
    gate.finish(KEY, "A", 2)
    gate.arrive(KEY, "B", "ID:p:3", "B:1", sequence=1)
    assert out == ["A:1", "A:2", "B:1"]


def test_sequence_producers_are_independent() -> None:
    """Two producers of one group (ORD-8): each producer's numbers are its own."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "ID:p:1", "A:p1", sequence=1)
    gate.arrive(KEY, "A", "ID:q:1", "A:q1", sequence=1)
    assert out == ["A:p1", "A:q1"]


def test_sequence_expired_predecessor_is_not_waited_for() -> None:
    """ORD-13 + ORD-16: a message whose predecessor expired (the producer says when it
    expires) passes at once; one whose predecessor is still alive waits for it."""
    gate, out = make_gate()
    past = int(time.time() * 1000) - 1
    gate.arrive(KEY, "A", "ID:p:1", "A:1", sequence=1)
    gate.finish(KEY, "A")
    gate.arrive(KEY, "B", "ID:p:3", "B:3", sequence=3, predecessor_expiration=past)
    assert out == ["A:1", "B:3"]
    future = int(time.time() * 1000) + 60_000
    gate.arrive(KEY, "C", "ID:q:2", "C:2", sequence=2, predecessor_expiration=future)
    assert out == ["A:1", "B:3"]  # q's seq 1 may still come


def test_binding_carries_the_previous_expiration() -> None:
    """The producer's binding tells each message when its predecessor in the group
    expires; the first message of a binding has none (ORD-8a)."""
    binding = GroupBinding("g")
    first, second, third = TextMessage("1"), TextMessage("2"), TextMessage("3")
    first.jms_expiration = 1234
    binding.stamp(first)
    binding.stamp(second)
    binding.stamp(third)
    assert [m._group_prev_expiration for m in (first, second, third)] == [0, 1234, 0]


def test_given_back_message_that_came_back_early_takes_its_place() -> None:
    """ORD-11: the broker may deliver a given-back message again (to another socket)
    before the session that held it has finished giving it back; it is parked behind the
    holder then, and moves into its place instead of waiting for itself."""
    gate, out = make_gate()
    gate.arrive(KEY, "A", "m1", "A:m1")
    gate.arrive(KEY, "B", "m1", "B:m1")  # redelivered to B while A still holds it
    assert out == ["A:m1"]
    gate.give_back(KEY, "A", ["m1"])
    assert out == ["A:m1", "B:m1"]


def test_striped_gate_keeps_each_group_and_spans_its_stripes_for_withdraw_and_let_go() -> None:
    """ORD-9/ORD-16 through the process's gate (16 stripes): each group is held on its
    own; a closing consumer withdraws, and a lost connection lets go of, every group."""
    delivered: list[str] = []
    gate: StripedGroupGate[str] = StripedGroupGate(delivered.append)
    keys = [("queue://q", f"g{n}") for n in range(64)]
    assert len({id(gate.stripe(key)) for key in keys}) > 1
    for key in keys:
        assert gate.arrive(key, "A", f"{key[1]}-1", f"A:{key[1]}")
        assert not gate.arrive(key, "B", f"{key[1]}-2", f"B:{key[1]}")
    assert delivered == [f"A:{key[1]}" for key in keys]
    assert len(gate.holders()) == 64
    parked = gate.withdraw("B", lambda item: item.startswith("B:"), holes=False)
    assert sorted(item for _key, item in parked) == sorted(f"B:{key[1]}" for key in keys)
    gate.let_go("A")
    assert gate.holders() == {}
    assert len(gate) == 0


def test_withdraw_waits_for_a_hand_out_under_way() -> None:
    """A released message is handed to its consumer after the gate's lock; a consumer
    that closes (withdraw) must find it handed out, not still on its way."""
    entered, go = threading.Event(), threading.Event()
    delivered: list[str] = []

    def deliver(item: str) -> None:
        entered.set()
        assert go.wait(5.0)
        delivered.append(item)

    gate = ClientGroupGate(deliver)
    arriving = threading.Thread(target=gate.arrive, args=(KEY, "A", "m1", "A:m1"))
    arriving.start()
    assert entered.wait(5.0)
    withdrawing = threading.Thread(target=gate.withdraw, args=("A", lambda _item: True))
    withdrawing.start()
    withdrawing.join(0.3)
    assert withdrawing.is_alive(), "withdraw returned while the hand-out was under way"
    go.set()
    withdrawing.join(5.0)
    arriving.join(5.0)
    assert not withdrawing.is_alive() and delivered == ["A:m1"]
