"""Hypothesis state machine: random interleavings against the ordering invariants.

Three sessions (CLIENT_ACKNOWLEDGE, transacted, AUTO_ACKNOWLEDGE) compete for one queue
fed by five grouped producers and one ungrouped. Hypothesis picks the next step (send,
receive, acknowledge, recover, commit, rollback, close-and-reopen); after every step the
model checks, against what the real embedded broker did:

* no group is held by two sessions at once (ORD-9);
* every group is delivered and finished in send order (ORD-9, ORD-11);
* a message is seen twice only as a flagged redelivery with a raised count (ORD-11);
* a session that may take something gets it (no message is stuck), and at the end
  nothing is lost: every message not finished comes out, in order, exactly once more.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from jmslike import ConnectionFactory, Message, Session

pytestmark = pytest.mark.embedded

GROUPS = ["g0", "g1", "g2", "g3", "g4", None]  # None: a message in no group
MODES = [Session.CLIENT_ACKNOWLEDGE, Session.SESSION_TRANSACTED, Session.AUTO_ACKNOWLEDGE]


@dataclass
class ModelSession:
    mode: int
    session: Session
    consumer: object
    unfinished: list[tuple[str | None, int]] = field(default_factory=list)
    replay: list[tuple[str | None, int]] = field(default_factory=list)

    def holds(self) -> set[str]:
        return {g for g, _ in self.unfinished + self.replay if g is not None}


class OrderingMachine(RuleBasedStateMachine):
    query = ""
    """URL query of the broker under test; the subclass runs the client-side gate."""

    def __init__(self) -> None:
        super().__init__()
        self.factory = ConnectionFactory(
            f"embedded://sm-{uuid.uuid4().hex}{self.query}", max_redeliveries=-1
        )
        self.connection = self.factory.create_connection()
        self.connection.start()
        # Where the broker pins groups to sessions, a session that may take a message gets
        # it at once. Behind the client gate a message can wait at another session's
        # consumer instead, so only ordering, not that liveness, is checked there.
        self.native = self.connection.capabilities.native_groups
        self.queue = "queue://work"
        psession = self.connection.create_session()
        self.producers = {}
        for group in GROUPS:
            producer = psession.create_producer(self.queue)
            if group is not None:
                producer.enable_ordering_group(group)
            self.producers[group] = producer
        self.psession = psession
        self.sessions = [self._open(mode) for mode in MODES]
        self.sent: dict[str | None, list[int]] = {g: [] for g in GROUPS}
        self.finished: dict[str | None, list[int]] = {g: [] for g in GROUPS}
        self.deliveries: dict[int, int] = {}
        self.next_id = 0

    def _open(self, mode: int) -> ModelSession:
        session = self.connection.create_session(mode == Session.SESSION_TRANSACTED, mode)
        return ModelSession(mode, session, session.create_consumer(self.queue))

    # ------------------------------------------------------------ model views
    def _holder_of(self, group: str) -> list[int]:
        return [i for i, s in enumerate(self.sessions) if group in s.holds()]

    def _outstanding(self, group: str | None) -> list[int]:
        """Messages of ``group`` sent and not finished, in send order."""
        done = set(self.finished[group])
        return [m for m in self.sent[group] if m not in done]

    def _available_to(self, index: int) -> bool:
        me = self.sessions[index]
        if me.replay:
            return True
        taken = {m for s in self.sessions for _, m in s.unfinished + s.replay}
        for group in GROUPS:
            free = [m for m in self._outstanding(group) if m not in taken]
            if not free:
                continue
            if group is None:
                return True
            holders = self._holder_of(group)
            if not holders or holders == [index]:
                return True
        return False

    def _finish(self, items: list[tuple[str | None, int]]) -> None:
        for group, mid in items:
            self.finished[group].append(mid)

    # ------------------------------------------------------------------ rules
    @rule(group=st.sampled_from(GROUPS))
    def send(self, group: str | None) -> None:
        self.next_id += 1
        message = self.psession.create_text_message(str(self.next_id))
        self.producers[group].send(message)
        self.sent[group].append(self.next_id)

    @rule(index=st.integers(0, 2))
    def receive(self, index: int) -> None:
        me = self.sessions[index]
        if me.mode == Session.AUTO_ACKNOWLEDGE and me.unfinished:
            self._finish(me.unfinished)  # ORD-10: the next receive finishes the last one
            me.unfinished = []
        expect_something = self._available_to(index)
        message = me.consumer.receive_no_wait()
        if message is None:
            assert not (self.native and expect_something), (
                f"session {index} got nothing though a message was free"
            )
            return
        self._check_delivery(index, message)

    def _check_delivery(self, index: int, message: Message) -> None:
        me = self.sessions[index]
        mid = int(message.text)
        group = message.ordering_group
        assert mid in self.sent[group], f"message {mid} arrived with group {group!r}"
        seen = self.deliveries.get(mid, 0)
        assert mid not in self.finished[group], f"message {mid} delivered after it was finished"
        for other, session in enumerate(self.sessions):
            assert all(m != mid for _, m in session.unfinished), (
                f"message {mid} delivered while session {other} still holds it"
            )
        if me.replay:
            expected_group, expected = me.replay.pop(0)
            assert (group, mid) == (expected_group, expected), "replay out of order (ORD-11)"
        elif group is not None:
            mine = {m for _, m in me.unfinished}
            nxt = next(m for m in self._outstanding(group) if m not in mine)
            assert mid == nxt, f"group {group}: got {mid}, expected {nxt} (ORD-9)"
        assert message.jms_redelivered == (seen > 0), f"message {mid} redelivered flag wrong"
        assert message.get_int_property("JMSXDeliveryCount") == seen + 1
        self.deliveries[mid] = seen + 1
        me.unfinished.append((group, mid))

    @rule(index=st.integers(0, 2))
    def finish(self, index: int) -> None:
        """acknowledge() in CLIENT mode, commit() in a transaction; AUTO: nothing."""
        me = self.sessions[index]
        if me.mode == Session.CLIENT_ACKNOWLEDGE:
            me.session.acknowledge()
        elif me.mode == Session.SESSION_TRANSACTED:
            me.session.commit()
        else:
            return
        self._finish(me.unfinished)
        me.unfinished = []

    @rule(index=st.integers(0, 2))
    def give_back(self, index: int) -> None:
        """recover() or rollback(): the held messages come again, first, in order."""
        me = self.sessions[index]
        if me.mode == Session.SESSION_TRANSACTED:
            me.session.rollback()
        else:
            me.session.recover()
        me.replay = me.unfinished + me.replay
        me.unfinished = []

    @rule(index=st.integers(0, 2))
    def close_and_reopen(self, index: int) -> None:
        me = self.sessions[index]
        me.session.close()
        if me.mode == Session.AUTO_ACKNOWLEDGE:
            self._finish(me.unfinished)  # ORD-10: closing finishes an AUTO receive
        self.sessions[index] = self._open(me.mode)

    # ------------------------------------------------------------- invariants
    @invariant()
    def one_holder_per_group(self) -> None:
        for group in GROUPS[:-1]:
            assert len(self._holder_of(group)) <= 1, f"group {group} held by two sessions"

    @invariant()
    def finished_in_send_order(self) -> None:
        for group in GROUPS[:-1]:
            done = self.finished[group]
            assert done == self.sent[group][: len(done)], f"group {group} finished out of order"

    def teardown(self) -> None:
        try:
            for me in self.sessions:
                me.session.close()
                if me.mode == Session.AUTO_ACKNOWLEDGE:
                    self._finish(me.unfinished)
            drain = self.connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = drain.create_consumer(self.queue)
            got: dict[str | None, list[int]] = {g: [] for g in GROUPS}
            while (message := consumer.receive(0.2)) is not None:
                got[message.ordering_group].append(int(message.text))
            for group in GROUPS:
                assert got[group] == self._outstanding(group), f"group {group}: lost or reordered"
        finally:
            self.connection.close()


class ClientGateOrderingMachine(OrderingMachine):
    """The same interleavings on a broker that ignores groups (ORD-16 client gate)."""

    query = "?nativeGroups=false"


for _machine in (OrderingMachine, ClientGateOrderingMachine):
    _machine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestOrderingStateMachine = OrderingMachine.TestCase
TestClientGateOrderingStateMachine = ClientGateOrderingMachine.TestCase
