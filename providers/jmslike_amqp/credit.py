"""Receiver credit on a broker that stops a queue at a blocked group (Artemis).

Artemis pins a group to the consumer (the link) that took its first message, for the
life of that link. Its dispatch loop (``QueueImpl.deliver``) walks the queue in order,
and when the next message belongs to a group whose consumer has no credit, it gives up
for every consumer of the queue (ARTEMIS-1999: the group's consumer is the only one
looked at). So with credit 1 per consumer (ORD-9: a session holds only the groups it is
about to process), a session that holds ``g:1`` unfinished and asks for nothing stops
the whole queue as soon as ``g:2`` is next: other sessions' receives return nothing,
even with ``h:1`` and ungrouped messages right behind it.

What unblocks the queue is credit on the consumer the group is pinned to, for exactly
that one message, at a moment when that message is next. A waiting receiver finds out
with a drain (*probe*): it grants its credit in drain mode, and the broker sends what it
can and answers at once. If nothing came, the message next in line belongs to a group
pinned to a consumer without credit, or the queue is empty. The receiver then *pokes*
one such consumer of the same connection (one that was pinned a group and asks for
nothing): a drain of 1 on its link. The broker gives it that group's message, if the
group is its own, and nothing otherwise: the dispatch loop stops at the first message it
cannot hand out, so a poked consumer takes no new group while the blocking message is
ahead. Whatever the poke brings waits in that consumer's buffer, where it would have gone
anyway (the group is pinned there). When no poke brings anything, the receiver grants
its credit plainly and waits.

A drain cannot tell an empty queue from a blocked one, and a poke of an empty queue is
not safe: a message arriving during it goes to the poked consumer, the only one with
credit, and if it starts a new group, that group is pinned there, behind the group the
consumer holds (Artemis sends no ``available`` count in a drain's answer). So before a
poke the receiver *looks* at the queue's head (a ``copy`` receiver with a drain of 1,
``AmqpTransport.peek_now``): it pokes only the consumer the head's group is pinned to
(the groups each receiver was given are kept in ``groups``: Artemis pins a group to a
link for the life of the link), and no one when the queue is empty, when the head is in
no group, or when its group is pinned to a consumer of another connection. The poke is
then for exactly the blocking message, which is ahead of anything that arrives during
it, so the poked consumer takes no new group. A look costs an attach, a drain and a
detach (4 ms at the median on Artemis here), paid only on this slow path. A receiver
still pokes only after it has waited with plain credit since it last got something
(``patient``), and after a poke that brought a message it waits with plain credit again
rather than probe at once: while it waits, whatever arrives can only come to it. Where
nobody can look (a shared subscription's ring, or a look that got no answer), the
receiver pokes its blockers one by one without looking, as before looks existed.

Pokes go to one consumer at a time: two consumers poked at once could take the blocking
message and then, with the other's credit, a new group's first message. Without a look,
the consumer that got a grouped message most recently is poked first.

A consumer that takes a grouped message and then asks for nothing may block receivers
already waiting with plain credit: they probe again (a drain of what they have). So may
a message sent later, of a group pinned to such a consumer: a receiver that waits with
plain credit while such consumers exist probes again after 20 ms, then after twice as
long each time, up to once a second, until it gets something.

Everything here runs on the connection's thread: the API's grants and withdrawals are
posted to it, and deliveries and the broker's flow frames are handled there.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from jmslike_amqp.links import LinkHandle
from jmslike_amqp.received import Incoming
from jmslike_amqp.transport import AmqpTransport

__all__ = ["Credit", "Ring"]

IDLE = 0
"""No credit on the link."""
PLAIN = 1
"""Credit granted plainly; the receiver waits for the broker."""
PROBE = 2
"""Credit granted in drain mode; waiting for the broker's answer."""
ASK = 3
"""The probe came back empty; waiting for a poke of another consumer to end."""
DRAINING = 4
"""Credit withdrawn (a drain of 0); waiting for the broker's answer."""

_STAMPS = itertools.count(1)

FIRST_RECHECK = 0.02
"""Seconds a receiver waiting with plain credit behind a possible blocker waits before it
probes again; doubled each time, up to ``LAST_RECHECK``."""
LAST_RECHECK = 1.0

Look = Callable[[Callable[[Incoming | None, bool], None]], None]
"""Looks at the queue's head on the connection's thread and tells the callback there:
``(head, answered)``, as ``AmqpTransport.peek_now``."""


class Ring(list["Credit"]):
    """The receivers competing for one queue (or shared subscription) on one connection.

    A list the connection can refer to weakly (``AmqpConnection.rings``): a ring lives
    as long as a receiver of it does, so a process that makes a queue per request (a
    temporary queue) keeps nothing for each once its receivers are gone."""


class Credit:
    """One receiver's credit among the receivers of one queue (or shared subscription)
    on one connection, ``ring``."""

    __slots__ = (
        "closed",
        "delay",
        "due",
        "got",
        "groups",
        "link",
        "look",
        "looks",
        "patient",
        "phase",
        "pinned",
        "poke_got",
        "poking",
        "ring",
        "selective",
        "since",
        "stamp",
        "timer",
        "transport",
        "tried",
        "waiters",
        "want",
    )

    def __init__(
        self,
        transport: AmqpTransport,
        ring: Ring,
        *,
        selective: bool,
        look: Look | None = None,
    ) -> None:
        self.transport = transport
        self.ring = ring
        self.look = look
        """Looks at the queue's head before a poke; None where nobody can."""
        self.looks = 0
        """Counts the looks started; only the latest one's answer counts."""
        self.groups: set[str] = set()
        """The groups the broker gave this link, so pinned to it while it lives."""
        self.selective = selective
        """A receiver with a selector: an empty probe may only mean that nothing
        matches, so it never pokes (it is still poked)."""
        self.link: LinkHandle | None = None
        self.want = 0
        """Credit the API layer asked for and the broker has not used."""
        self.phase = IDLE
        self.got = 0
        """Deliveries during the current probe."""
        self.poking = False
        """A poke (a drain of 1) of this receiver is on its way."""
        self.poke_got = False
        self.waiters: list[Credit] = []
        """Receivers waiting for the current poke of this one to end."""
        self.tried: set[int] = set()
        """Receivers poked (by id) since this one last got something."""
        self.pinned = False
        """This receiver took a grouped message: the broker pins groups to it."""
        self.stamp = 0
        """When it last took a grouped message (the order pokes go in)."""
        self.closed = False
        self.delay = FIRST_RECHECK
        """How long a wait with plain credit lasts before the next probe."""
        self.patient = False
        """It has waited with plain credit since it last got something: only then does
        an empty probe lead to a poke."""
        self.timer = 0
        """Counts the rechecks armed; only the latest one probes (``_recheck``)."""
        self.due = 0.0
        """When the pending recheck fires (monotonic), 0 when none is pending: a wait
        arms a new one only if it must come sooner, not one timer per empty probe."""
        self.since = 0.0
        """When the current wait with plain credit began (monotonic)."""
        ring.append(self)

    # ---------------------------------------------------------------- the API's
    def flow(self, credit: int) -> None:
        """Grant ``credit`` more for the API layer; 0 withdraws what is left."""
        link = self.link
        if link is None or self.closed:
            return
        transport = self.transport
        if credit <= 0:
            self.want = 0
            if self.phase == PLAIN:
                if transport.credit_now(link) > 0 and transport.grant_now(link, 0, drain=True):
                    self.phase = DRAINING
                else:
                    self.phase = IDLE
            return  # a probe, ask or drain on its way finds want 0 when it ends
        self.want += credit
        if self.poking or self.phase in (PROBE, ASK, DRAINING):
            return  # handled when that ends
        if self.phase == PLAIN:
            transport.grant_now(link, credit)
            return
        self._ask()

    def _ask(self) -> None:
        """IDLE with credit wanted: probe if something of this connection may block the
        queue, else grant plainly."""
        link = self.link
        if link is None:
            return
        self.tried.clear()
        if self.selective or not self._blockers():
            self.phase = PLAIN
            self.transport.grant_now(link, self.want)
            return
        self.phase = PROBE
        self.got = 0
        self.transport.grant_now(link, self.want, drain=True)

    def _blockers(self) -> list[Credit]:
        """Receivers of the ring that may hold the queue up: pinned a group, asking for
        nothing, with no credit; the most recently pinned first."""
        found = [
            other
            for other in self.ring
            if other is not self
            and other.pinned
            and not other.closed
            and other.want == 0
            and other.phase == IDLE
            and other.link is not None
        ]
        found.sort(key=lambda other: -other.stamp)
        return found

    # ----------------------------------------------------------- the broker's
    def delivered(self, group: str | None) -> None:
        """A delivery on this link (after it went to the API layer), of ``group``."""
        link = self.link
        if link is None:
            return
        if self.want > 0:
            self.want -= 1
        grouped = group is not None
        if group is not None:
            self.groups.add(group)
            self.pinned = True
            self.stamp = next(_STAMPS)
        self.delay = FIRST_RECHECK
        self.patient = False
        used_up = self.transport.credit_now(link) <= 0
        if self.poking:
            self.poke_got = True
            if used_up:
                self._poke_end()
            return
        phase = self.phase
        if phase == PROBE:
            self.got += 1
            if used_up:
                self._probe_end()
        elif phase == DRAINING:
            if used_up:
                self._drained()
        elif phase == PLAIN and used_up:
            self.phase = IDLE
            if self.want > 0:
                self._ask()
            elif grouped:
                self._wake_waiting()

    def flowed(self) -> None:
        """The broker sent a flow frame for this link (a drain's answer among others)."""
        link = self.link
        if link is None or self.transport.credit_now(link) > 0:
            return
        if self.poking:
            self._poke_end()
        elif self.phase == PROBE:
            self._probe_end()
        elif self.phase == DRAINING:
            self._drained()

    def _drained(self) -> None:
        self.phase = IDLE
        if self.want > 0:
            self._ask()

    def _probe_end(self) -> None:
        self.phase = IDLE
        if self.want <= 0:
            return
        if self.got > 0:
            self._ask()
            return
        if not self.patient:
            # Nothing now may mean an empty queue, where a poke could hand the next
            # message to arrive to the poked consumer (see _poked): first wait with plain
            # credit, so that arrivals come here, and poke only if the recheck finds
            # nothing again.
            self._wait_plain(soon=True)
            return
        self._poke_next()

    def _poke_next(self) -> None:
        """The queue gave this receiver nothing: look at its head and poke the blocker
        that holds the head's group; without a look, poke the next blocker not tried
        yet. Wait with plain credit when there is nobody (more) to poke."""
        link = self.link
        if link is None:
            return
        look = self.look
        if look is not None:
            if self.tried:  # the blocker the head pointed at was poked already
                self._wait_plain()
                return
            self.phase = ASK  # until the look's answer, then the poke's
            self.looks += 1
            number = self.looks
            look(lambda head, answered: self._looked(number, head, answered))
            return
        self._poke_blind()

    def _looked(self, number: int, head: Incoming | None, answered: bool) -> None:
        """The look at the queue's head before a poke came back (connection's thread)."""
        if number != self.looks or self.phase != ASK or self.poking:
            return  # a later look, a restart or a close came first
        if self.closed or self.link is None or self.want <= 0:
            self.phase = IDLE
            return
        if not answered:
            self._poke_blind()  # nothing known: as if no look existed
            return
        group = head.group_id if head is not None else None
        if group is not None:
            for blocker in self._blockers():
                if group in blocker.groups:
                    self.tried.add(id(blocker))
                    blocker._poke(self)
                    return
        # An empty queue (a poke would hand the next arrival to the poked consumer), a
        # head in no group (it arrived after the probe: it comes by plain credit), or a
        # group pinned elsewhere (another connection's consumer): nobody to poke.
        self._wait_plain(soon=head is not None and group is None)

    def _poke_blind(self) -> None:
        """Poke the next blocker not tried yet, most recently pinned first, or wait with
        plain credit when none is left."""
        for blocker in self._blockers():
            if id(blocker) not in self.tried:
                self.tried.add(id(blocker))
                self.phase = ASK
                blocker._poke(self)
                return
        self._wait_plain()

    def _wait_plain(self, *, soon: bool = False) -> None:
        """Grant what is wanted plainly and probe again later, in case a blocker's
        group comes next; ``soon``: after the shortest pause, not the next longer one."""
        link = self.link
        if link is None:
            return
        self.tried.clear()
        self.phase = PLAIN
        self.transport.grant_now(link, self.want)
        if soon:
            self.delay = FIRST_RECHECK
        self.since = time.monotonic()
        if self.due and self.due <= self.since + self.delay:
            return  # the pending recheck comes first (and waits out FIRST_RECHECK)
        self._arm(self.delay)
        self.delay = min(self.delay * 2, LAST_RECHECK)

    def _arm(self, delay: float) -> None:
        self.due = time.monotonic() + delay
        self.timer += 1
        timer = self.timer
        self.transport.call_later(delay, lambda: self._recheck(timer))

    def _recheck(self, timer: int) -> None:
        """Still waiting with plain credit: a message sent since may be held up behind a
        group pinned to a consumer of this connection; probe again."""
        if timer != self.timer:
            return
        self.due = 0.0
        link = self.link
        if (
            link is None
            or self.closed
            or self.phase != PLAIN
            or self.want <= 0
            or not self._blockers()
        ):
            return
        early = self.since + FIRST_RECHECK - time.monotonic()
        if early > 0:  # a recheck armed for an earlier wait: this one is not over yet
            self._arm(early)
            return
        self.patient = True
        if self.transport.grant_now(link, 0, drain=True):
            self.phase = PROBE
            self.got = 0

    def _poke(self, waiter: Credit) -> None:
        self.waiters.append(waiter)
        if self.poking:
            return
        link = self.link
        self.poking = True
        self.poke_got = False
        if link is None or not self.transport.grant_now(link, 1, drain=True):
            self._poke_end()

    def _poke_end(self) -> None:
        self.poking = False
        got = self.poke_got
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            waiter._poked(got)
        if self.want > 0 and self.phase == IDLE and not self.closed:
            self._ask()

    def _poked(self, got: bool) -> None:
        """The poke this receiver waited for ended (``got``: it brought a message)."""
        if self.phase != ASK:
            return
        self.phase = IDLE
        if self.want <= 0 or self.closed:
            return
        if got:
            # Not probe again at once: what is next may be nothing yet, and a poke
            # then hands a message arriving meanwhile, of a new group, to the poked
            # consumer, which pins that group there. Waiting with plain credit, this
            # receiver is the only one a new group's message can go to.
            self._wait_plain(soon=True)
        else:
            self._poke_next()

    def _wake_waiting(self) -> None:
        """This receiver now holds a group and asks for nothing: receivers waiting with
        plain credit may be held up behind its group; they probe again."""
        transport = self.transport
        for other in self.ring:
            link = other.link
            if (
                other is self
                or other.closed
                or other.selective
                or other.phase != PLAIN
                or other.want <= 0
                or link is None
            ):
                continue
            if transport.grant_now(link, 0, drain=True):
                other.phase = PROBE
                other.got = 0

    def restart(self, owed: int) -> None:
        """The link was attached again after a reconnect: the broker pinned no group to
        it yet, nothing is on its way, and ``owed`` deliveries the API layer never got
        are wanted again on top of what it still wanted."""
        self.want += owed
        self.phase = IDLE
        self.poking = self.poke_got = self.pinned = self.patient = False
        self.groups.clear()
        self.looks += 1
        self.timer += 1
        self.due = 0.0
        self.waiters = []
        self.tried.clear()
        self.got = 0
        self.delay = FIRST_RECHECK
        if self.want > 0 and not self.closed:
            self._ask()

    # ------------------------------------------------------------------ close
    def retire(self) -> None:
        """The receiver's link closes: leave the ring; whoever waits on it goes on."""
        self.closed = True
        if self in self.ring:
            self.ring.remove(self)
        for other in self.ring:
            if self in other.waiters:
                other.waiters.remove(self)
        if self.poking:
            self.poke_got = False
            self._poke_end()
