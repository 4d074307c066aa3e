"""MessageConsumer and QueueBrowser.

A consumer owns a small buffer that its provider fills through ``_sink`` (on an I/O
thread, or for the embedded broker on whichever thread changed the broker). The
application takes from the buffer with ``receive()``, or the session's dispatcher thread
takes from it for a listener. Credit is asked of the provider only when the buffer is
empty, so a consumer never sits on more of a group than it is about to process (ORD-9).
A consumer may ask for more than ``prefetch`` at once while what it gets
carries no group (credit that follows consumption, ``_next_ask``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from jmslike._feed import Member
from jmslike.destination import Destination
from jmslike.durations import warn_if_milliseconds
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidArgumentError,
    JMSException,
    not_callable,
)
from jmslike.message import DELIVERY_COUNT, GROUP_ID, GROUP_SEQ, Message
from jmslike.middleware import DeliveryContext
from jmslike.ordering import returned_of
from jmslike.spi.provider import ConsumerSpec

if TYPE_CHECKING:
    from jmslike._feed import Feed
    from jmslike.connection import Connection
    from jmslike.session import Session, _Held
    from jmslike.spi.provider import ProviderConsumer

__all__ = ["MessageConsumer", "MessageListener", "QueueBrowser"]

log = logging.getLogger("jmslike.consumer")

MessageListener = Callable[[Message], object]

Buffered = tuple[Message, Any, float]
"""(message, provider token, not-before time) waiting in a consumer's buffer."""

GROW_WHILE_WAITS = 8
"""A request doubles while the application works through it in less than this many times
the broker's answer took: so a consumer holds at most about 2 x 8 round trips of its own
work, however fast it is, and a slow handler never makes it ask for more than prefetch."""

NO_WAIT_ANSWER = 0.02
"""Seconds (or 4 answers' time, if longer, up to ``NO_WAIT_ANSWER_MAX``) a
``receive_no_wait()`` with nothing buffered waits, after the consumer's last request to
a broker over the network (a grant, or the acknowledgement that frees a STOMP window),
for the broker's answer. A message the queue holds is "immediately available" in JMS's
words, and Qpid JMS drains the link for the answer the same way; withdrawing the request
at once, as before, meant that on ActiveMQ Classic and RabbitMQ over AMQP a
``receive_no_wait()`` loop never got a message the queue held."""

NO_WAIT_ANSWER_MAX = 0.25

IDLE_REQUEST = 0.01
"""Seconds (or 4 answers' time, if longer) a grown request may wait unanswered before it
is taken back: an idle consumer asks for ``prefetch`` again, as if it never grew."""


def wait_seconds(timeout: float, what: str) -> float | None:
    """A wait given in seconds, checked: ``inf`` is for ever (``None``); Java's
    milliseconds are warned about (``durations``)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise InvalidArgumentError(
            f"{what} timeout {timeout!r}: need seconds >= 0, or None to wait for ever"
        )
    if type(timeout) is int:  # the name is built only then: receive(1.0) is the hot path
        warn_if_milliseconds(f"{what} timeout", timeout)
    return None if math.isinf(timeout) else timeout


class MessageConsumer:
    """Receives messages from one destination (JMS MessageConsumer)."""

    def __init__(
        self,
        session: Session,
        destination: Destination,
        *,
        selector: str | None,
        no_local: bool = False,
        subscription: str | None = None,
        durable: bool = False,
        shared: bool = False,
        exclusive: bool = False,
        standby: bool = False,
        feed: Feed | None = None,
        container: bool = False,
    ) -> None:
        self._session = session
        self._connection = session._connection
        self.destination = destination
        self.message_selector = selector
        self.no_local = no_local
        self.subscription_name = subscription
        self._unshared_durable = durable and not shared
        """One active consumer at a time (JMS 2.0): ``Connection._check_durable_free``."""
        self._buffer: deque[Buffered] = deque()
        # The hot paths (the sink, receive's credit) take the Condition's lock directly:
        # ``with self._cond`` costs two Python-level calls per message, the lock none.
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._credit = 0
        self._sleeping = False  # a receiver waits on _cond (so the sink must notify)
        self._prefetch = session._connection._settings.prefetch
        # Credit that follows consumption (see _next_ask).
        self._max_ask = self._prefetch
        self._ask = self._prefetch
        self._asked_at = 0.0  # when the last request went out
        self._first_at = 0.0  # when receive() returned its first message (0: none yet)
        self._answer = 0.0  # how long the broker took to answer the last request
        self._requested_at = time.monotonic()
        """When this consumer last asked the broker for messages (a grant, or the
        acknowledgement that frees a STOMP window; a STOMP topic subscribes when
        created): a ``receive_no_wait()`` gives the broker until its answer is due
        (``NO_WAIT_ANSWER``), and no longer."""
        self._window_open = False
        """A fixed window (STOMP) was asked for: later grants are not requests."""
        self._grouped = False  # a grouped message arrived since the last request
        self._adaptive = False  # set once the provider consumer exists
        self._listener: MessageListener | None = None
        self._last: Any = None  # AUTO/DUPS_OK with receive(): the delivery not yet finished
        self._closed = False
        self._closing = False  # close() has begun (see Session._handed_out_while_closing)
        self._warned_groups = selector is None
        self._gate = session._gate
        # Where the provider's consumers read from several sockets, arrival order at the
        # gate need not be the broker's: the gate then also follows JMSXGroupSeq.
        self._gate_by_sequence = bool(
            session._connection.capabilities.extra.get("gate_by_sequence")
        )
        self._late: list[tuple[Message, Any]] = []
        self._warn_processes = (
            self._gate is not None
            and not destination.is_topic
            and not destination.is_temporary
            and session._settings.partitions_for(destination) is None
        )
        """On a broker that keeps no groups, say once that other processes would break
        them (the first grouped message tells, see ``_warn_single_process``)."""
        # ORD-3: a group's scope is one destination, and on a topic one subscription.
        if not destination.is_topic:
            self._gate_scope = destination.key
        elif subscription is None:
            self._gate_scope = f"{destination.key}#{uuid.uuid4().hex}"
        else:
            client = "" if shared and durable else self._connection.client_id or ""
            self._gate_scope = f"{destination.key}#{client}/{subscription}"
        if (exclusive or standby) and not session._connection.capabilities.exclusive_consumers:
            raise _lacks_exclusive(session, destination)
        self._feed = feed
        """A listener container's shared subscription this consumer takes from (_feed.py)."""
        self._provider: ProviderConsumer
        if feed is not None:
            self._provider = feed.join(self)
        else:
            spec = ConsumerSpec(
                destination,
                selector=selector,
                no_local=no_local,
                subscription=subscription,
                durable=durable,
                shared=shared,
                exclusive=exclusive,
                standby=standby,
            )
            self._provider = session._provider.create_consumer(spec, self._sink)
        if (exclusive or standby) and not self._provider.exclusive:
            # The provider took the spec but did not keep it strictly ordered: a second
            # consumer would compete. Refuse rather than pretend.
            self._provider.close([], [])
            raise _lacks_exclusive(session, destination)
        if self._provider.exclusive:
            # ORD-18: nothing waits in this consumer's buffer that a take-over would
            # have to give back; one message at a time, as IBM's strict destinations.
            self._prefetch = self._max_ask = self._ask = 1
            if self._connection.capabilities.exclusive_scope == "broker":
                # One active consumer across processes (a partition of a partitioned
                # queue, read by a Spark task, say): other processes cannot break a group.
                self._warn_processes = False
        elif feed is not None or container:
            # A container's session asks for the message it handles next and no more
            # (ORD-17): one that asked for more would hold those messages' groups from
            # the container's other sessions; with prefetch=100 the first to ask took a
            # hundred messages of every group queued. Where there is a feed, the feed
            # keeps the broker's window (container.py); where there is none (the
            # embedded broker hands groups out itself) the broker is in this process and
            # a request costs no round trip.
            self._prefetch = self._max_ask = self._ask = 1
        elif self._provider.adaptive_credit:
            self._max_ask = max(self._prefetch, self._connection._settings.max_prefetch)
        self._adaptive = self._max_ask > self._prefetch
        self._takes = self._provider.takes_directly and self._gate is None and feed is None
        """receive() takes each message in the call that finishes the last one, where the
        provider can (``takes_directly``): with no client gate or feed between them."""
        self._provider.revoke = self._revoke

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"buffered={len(self._buffer)}"
        return f"<MessageConsumer {self.destination} {state}>"

    @property
    def strictly_ordered(self) -> bool:
        """Whether the broker holds this consumer to a strictly ordered destination
        (ORD-18): declared by this consumer, by the factory's setting, or earlier by
        another consumer of the same broker (the declaration sticks)."""
        return self._provider.exclusive

    @property
    def request_size(self) -> int:
        """How many messages this consumer asks the broker for the next time its buffer
        runs empty: ``prefetch``, or more while a ``receive()`` loop outpaces the broker
        on messages that carry no group (up to ``request_limit``, see _next_ask)."""
        return self._ask

    @property
    def request_limit(self) -> int:
        """The most ``request_size`` can grow to: ``max(prefetch, max_prefetch)`` where the
        provider can take unused credit back, else ``prefetch``."""
        return self._max_ask

    @property
    def partitions(self) -> list[int] | None:
        """On a partitioned queue, the partitions this consumer takes messages from now
        (they change as processes come and go); None on any other destination."""
        owned = getattr(self._provider, "owned", None)
        return list(owned) if owned is not None else None

    def __enter__(self) -> MessageConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ provider side
    def _revoke(self, stale: Callable[[Any], bool]) -> list[Any]:
        """Drop buffered (or gate-parked) deliveries whose token ``stale`` picks: the
        provider lost them (a reconnect) and the broker will deliver them again. Returns
        their tokens. Deliveries already handed to the application stay where they are."""
        with self._cond:
            kept = [entry for entry in self._buffer if not stale(entry[1])]
            lost = [entry for entry in self._buffer if stale(entry[1])]
            self._buffer.clear()
            self._buffer.extend(kept)
            self._credit += len(lost)
        dropped = [token for _msg, token, _nb in lost]
        gate = self._gate
        if gate is not None:
            parked = gate.withdraw(self._session, lambda item: item[0] is self and stale(item[2]))
            dropped += [item[2] for _key, item in parked]
            # The buffered ones had passed the gate, so this session holds their groups:
            # it never will finish them, and the broker's copies must find their groups
            # free, with their place kept at the front of the line (as on close). Without
            # this, every group buffered here at a reconnect stalled for good (issue 18,
            # RabbitMQ over a failover URL).
            self._session._gate_returned([returned_of(self._gate_scope, m) for m, _t, _n in lost])
        return dropped

    def _sink(self, message: Message, token: Any) -> None:
        """Called by the provider (or a container's feed) for each delivery; never blocks,
        never runs user code.

        Where the broker ignores groups, a grouped delivery first passes the client gate
        (ORD-16), which may park it until its group is free for this session.
        """
        # An interrupt (Ctrl-C in a thread that dispatches, an embedded broker's) says
        # whether it came after the delivery was taken: the broker gives back the others.
        taken = False
        try:
            gate = self._gate
            if gate is not None:
                group = message._properties.get(GROUP_ID)
                if isinstance(group, str):
                    self._grouped = True
                    if self._warn_processes:
                        self._warn_processes = False
                        _warn_single_process(self._connection, self.destination)
                    with self._cond:
                        if self._credit > 0:
                            self._credit -= 1
                    key = (self._gate_scope, group)
                    sequence = (
                        message._properties.get(GROUP_SEQ) if self._gate_by_sequence else None
                    )
                    through = gate.arrive(
                        key,
                        self._session,
                        message.jms_message_id,
                        (self, message, token),
                        sequence if isinstance(sequence, int) else None,
                        message._group_prev_expiration,
                    )
                    taken = True
                    if through:  # _accept wakes whoever waits, as below
                        return
                    # Parked, the credit is spent all the same: wake whoever waits on this
                    # consumer so it asks for more, and other groups flow past (ORD-9).
                    with self._cond:
                        self._cond.notify()
                    if self._listener is not None:
                        self._session._wake(self)
                    return
            if self._adaptive and GROUP_ID in message._properties:
                self._grouped = True
            mutex = self._mutex  # acquire/try/release: cheaper than "with" once per message
            mutex.acquire()
            try:
                # A delivery nobody asked for (a STOMP window's, or one a provider fetched
                # to unblock a queue) leaves no debt behind.
                if self._credit > 0:
                    self._credit -= 1
                self._buffer.append((message, token, 0.0))
                taken = True
                if self._sleeping:
                    self._cond.notify()
            finally:
                mutex.release()
            if self._listener is not None:
                self._session._wake(self)
        except BaseException as exc:
            if taken:
                exc._jmslike_taken = True  # type: ignore[attr-defined]
            raise

    def _accept(self, message: Message, token: Any) -> None:
        """A delivery the client gate let through (its credit was counted on arrival)."""
        with self._cond:
            if self._closed:  # raced with close(): _shutdown gives it back
                self._late.append((message, token))
                return
            self._buffer.append((message, token, 0.0))
            self._cond.notify()
        if self._listener is not None:
            self._session._wake(self)

    def _grant(self, credit: int) -> None:
        with self._mutex:
            self._credit += credit
        if not self._window_open:
            self._requested_at = time.monotonic()
            self._window_open = self._provider.fixed_window
        try:
            self._provider.flow(credit)
        except (KeyboardInterrupt, SystemExit):
            self._unask(credit)
            raise

    def _unask(self, credit: int) -> None:
        """Ctrl-C came before the request for ``credit`` reached the provider: uncount
        it, or the next receive would wait for messages nobody asked for."""
        with self._mutex:
            self._credit = max(0, self._credit - credit)

    def _withdraw(self) -> None:
        """Stop asking: a consumer nobody is waiting on must not take a group (ORD-9)."""
        with self._cond:
            if self._credit <= 0:
                return
            self._credit = 0
        self._provider.flow(0)

    def _next_ask(self) -> int:
        """How many messages to ask for now that the buffer is empty.

        ``prefetch``, unless the provider can take credit back (``adaptive_credit``): then
        the request doubles, up to ``max_prefetch``, while the application got through the
        last one in less than ``GROW_WHILE_WAITS`` times the broker's answer took, and
        falls back to ``prefetch`` as soon as a grouped message arrives. Waiting a round
        trip per message is what kept a plain receive() loop at a fifth of the raw
        library's speed; ungrouped messages in a buffer keep no group from flowing past
        (ORD-9), and a slow handler never grows the request.
        """
        if not self._adaptive:
            return self._prefetch
        now = time.monotonic()
        ask, first = self._ask, self._first_at
        if self._grouped or not first:
            ask = self._prefetch
        else:
            self._answer = answer = first - self._asked_at
            if ask < self._max_ask and now - first < GROW_WHILE_WAITS * answer:
                ask = min(2 * ask, self._max_ask)
        self._grouped = False
        self._asked_at = now
        self._first_at = 0.0
        self._ask = ask
        return ask

    def _took(self) -> None:
        """receive() hands out a message: note when the request was first answered, and
        take back a grown request that is bringing grouped messages (ORD-9)."""
        if not self._first_at:
            self._first_at = time.monotonic()
        if self._grouped and self._ask > self._prefetch:
            self._shrink()

    def _shrink(self) -> None:
        self._ask = self._prefetch
        self._first_at = 0.0
        self._withdraw()

    def _requeue_front(self, items: list[Buffered]) -> None:
        """Put locally redelivered messages back at the head, in order (ORD-11)."""
        with self._cond:
            self._buffer.extendleft(reversed(items))
            self._cond.notify_all()
        if self._listener is not None:
            for _ in items:
                self._session._wake(self)

    def _pump(self) -> None:
        """Keep a listener supplied: ask for more once the buffer is empty."""
        self._ask_for_more(self._provider.flow)

    def _ask_for_more(self, send: Callable[[int], None]) -> bool:
        """A listener whose buffer is empty and who has asked for nothing asks now:
        ``send(credit)`` carries the request, alone (``_pump``) or with the acknowledgement
        of the message just finished (``Session._run_listener``: one broker round instead
        of two, as ``receive()`` does). False if nothing was needed."""
        if not self._listener_idle():
            return False
        ask = self._next_ask()
        with self._mutex:
            self._credit += ask
        try:
            send(ask)
        except BaseException:
            with self._mutex:  # never granted
                self._credit -= ask
            raise
        if ask > self._prefetch:
            self._watch_request(self._credit)  # a grown request, taken back if idle
        return True

    def _listener_idle(self) -> bool:
        """A started listener with nothing buffered and nothing asked for."""
        if (
            self._buffer  # at a glance first: only this thread takes from the buffer
            or self._credit > 0
            or self._closed
            or self._listener is None
            or not self._connection._started
        ):
            return False
        with self._cond:
            return not (self._buffer or self._credit > 0)

    def _take_after(self, token: Any) -> bool:
        """A listener finished the message of ``token`` and has nothing buffered or asked
        for, on a provider that takes directly: acknowledge it and take the next message
        in one call, and wake the dispatcher for it. False (nothing done) otherwise."""
        if not self._listener_idle():
            return False
        taken = self._session._take_next(self, [token])
        if taken is not None:
            self._buffer.append(taken)
            self._session._wake(self)
        return True

    def _watch_request(self, credit: int) -> None:
        """A listener's grown request: if none of it arrives within the idle time, take it
        back (as receive() does while it waits), checked on the session's dispatcher."""
        dispatcher = self._session._dispatcher
        if dispatcher is None:
            return
        dispatcher.call_later(
            max(IDLE_REQUEST, 4 * self._answer), lambda: self._request_idle(credit)
        )

    def _request_idle(self, credit: int) -> None:
        """Dispatcher thread: ``credit`` was outstanding an idle time ago."""
        if self._closed or self._listener is None or self._ask <= self._prefetch:
            return
        with self._cond:
            left = self._credit
            idle = left == credit and left > 0 and not self._buffer
        if idle:
            self._shrink()
            self._pump()
        elif left > 0:
            self._watch_request(left)  # some came: look again later

    def _pop_due(self) -> tuple[Buffered | None, float]:
        """The head of the buffer if it is due; else (None, seconds until it is)."""
        with self._mutex:
            if not self._buffer:
                return None, 0.0
            item = self._buffer[0]
            wait = item[2] - time.monotonic() if item[2] else 0.0
            if wait > 0:
                return None, wait
            return self._buffer.popleft(), 0.0

    # ---------------------------------------------------------------- receive
    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` seconds (None: until one comes).

        Returns None on timeout, or when the consumer or its connection is closed. With
        AUTO/DUPS_OK acknowledgement, calling receive again finishes the message returned
        last time (ORD-10).
        """
        session = self._session
        if self._closed or self._listener is not None or session._closed:
            self._check_receivable()  # raises, naming what is closed or why
        if self._connection._closed:
            session._check_open()
        if timeout is not None:
            timeout = wait_seconds(timeout, "receive")
        item: Buffered | None = None
        if not self._buffer and self._credit <= 0 and self._connection._started:
            if self._takes:  # finish the last message, if any, and take the next in one call
                item = session._finish_last_and_take(self)
            elif self._last is not None:  # finish it and ask for the next in one call
                self._finish_and_ask()
        elif self._last is not None:
            session._finish_last(self, more=bool(self._buffer))
            self._requested_at = time.monotonic()
        deadline = None if timeout is None else time.monotonic() + timeout
        buffer = self._buffer
        connection = self._connection
        while True:
            if item is None:
                if (
                    buffer
                    and not buffer[0][2]
                    and not self._closed
                    and connection._failed is None
                    and connection._started
                ):
                    item = buffer.popleft()  # _wait_for_item's fast path
                else:
                    item = self._wait_for_item(deadline)
                if item is None:
                    if timeout != 0 and not (
                        connection._started or connection._closed or self._closed
                    ):
                        connection._receive_before_start(self.destination)
                    return None
            taken, item = item, None
            message, token = taken[0], taken[1]
            try:
                if self._adaptive and not self._takes:
                    self._took()
                # Only a redelivery (a count above 1) can be past the limit: the check's
                # call is skipped for every first delivery.
                count = message._properties.get(DELIVERY_COUNT)
                if (
                    not isinstance(count, int)
                    or count <= 1
                    or not session._past_redelivery_limit(self, message, token)
                ):
                    message = session._deliver(self, message, token)
                    if self._closing:  # another thread is closing this consumer
                        kept = session._handed_out_while_closing(self, message)
                        if kept is None:
                            return None
                    chain = self._connection._delivery_chain
                    if chain is not None:
                        context = DeliveryContext(
                            self._connection, session, self, self.destination, message
                        )
                        chain(context)
                    return message
            except (KeyboardInterrupt, SystemExit):
                session._unreturned(self, taken)
                raise

    def _finish_and_ask(self) -> None:
        """AUTO/DUPS_OK receive() with nothing buffered or asked for: finish the last
        message and ask for the next in one provider call."""
        mutex = self._mutex
        ask = self._next_ask()
        self._requested_at = time.monotonic()
        mutex.acquire()
        try:
            self._credit += ask
        finally:
            mutex.release()
        try:
            self._session._finish_last(self, self._provider, ask)
        except (KeyboardInterrupt, SystemExit):
            self._unask(ask)
            raise

    def receive_no_wait(self) -> Message | None:
        """A message if one can be had at once, else None."""
        return self.receive(0.0)

    def _wait_for_item(self, deadline: float | None) -> Buffered | None:
        connection = self._connection
        buffer = self._buffer
        # receive_no_wait() (a timeout of 0) gives a broker over the network time to answer
        # (NO_WAIT_ANSWER); a receive with a timeout of its own waits that long, no longer.
        answered = deadline is None or deadline > time.monotonic()
        while True:
            if self._closed:
                return None
            if connection._failed is not None:
                self._lost()
                raise ConnectionFailedError(
                    f"consumer on {self.destination}: {connection._failed}"
                ) from connection._failed
            if not connection._started:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                connection._wait_started(remaining)
                continue
            # Fast path, no lock: only this consumer's own thread takes from the buffer,
            # and deque appends/pops are atomic.
            if buffer and not buffer[0][2]:
                return buffer.popleft()
            item, wait = self._pop_due() if buffer else (None, 0.0)
            if item is not None:
                return item
            try:
                if not wait and self._credit <= 0 and not buffer:
                    self._grant(self._next_ask())
                    if buffer or self._credit <= 0:  # got one, or the gate parked it: again
                        continue
                remaining = None if deadline is None else deadline - time.monotonic()
                if (
                    remaining is not None
                    and remaining <= 0
                    and not answered
                    and self._credit > 0
                    and not self._provider.takes_directly
                ):
                    # A request is out to a broker over the network: give it until its
                    # answer is due (a STOMP window open for long has brought what there
                    # was, so an empty queue costs nothing there).
                    answered = True
                    answer = min(max(NO_WAIT_ANSWER, 4 * self._answer), NO_WAIT_ANSWER_MAX)
                    now = time.monotonic()
                    deadline = self._requested_at + answer
                    if self._window_open:
                        # A fixed window (STOMP) asks for nothing more: what the broker
                        # had came long ago, unless this connection just sent something.
                        deadline = max(deadline, connection._sent_done + answer)
                    remaining = deadline - now
                if remaining is not None and remaining <= 0:
                    self._withdraw()
                    item, _ = self._pop_due()
                    return item
            except JMSException:
                # A close from another thread while this receive asked the broker (a STOMP
                # SUBSCRIBE whose receipt the DISCONNECT cut off): the receive was cut short
                # by the close and returns None, as JMS says; the error is the close's.
                if self.closed:
                    return None
                raise
            with self._cond:
                # Checked again under the lock that close() and a lost connection notify
                # with: one that came after the checks above would otherwise wake no one,
                # and this receive would sleep out its whole timeout.
                if self._stopping():
                    continue
                if buffer and (not buffer[0][2] or buffer[0][2] <= time.monotonic()):
                    continue
                waits = [w for w in (remaining, wait or None) if w is not None]
                grown = self._ask > self._prefetch and self._credit > 0
                if grown:
                    waits.append(max(IDLE_REQUEST, 4 * self._answer))
                self._sleeping = True
                try:
                    self._cond.wait(min(waits) if waits else None)
                finally:
                    self._sleeping = False
                idle = grown and not buffer and self._credit > 0
            if idle and not self._stopping():
                # Nothing came: the queue ran dry. An idle consumer must not sit on a
                # large request that the next groups' messages would fill (ORD-9).
                self._shrink()

    def __iter__(self) -> Iterator[Message]:
        """Iterate with ``receive()`` until the consumer or connection is closed."""
        while True:
            message = self.receive()
            if message is None:
                return
            yield message

    # -------------------------------------------------------------- listeners
    @property
    def message_listener(self) -> MessageListener | None:
        return self._listener

    @message_listener.setter
    def message_listener(self, listener: MessageListener | None) -> None:
        self.set_message_listener(listener)

    def get_message_listener(self) -> MessageListener | None:
        return self._listener

    def set_message_listener(self, listener: MessageListener | None) -> None:
        """Deliver messages to ``listener`` on the session's dispatcher thread (None: stop).

        Setting a listener finishes a message last taken with ``receive()`` (ORD-10).
        """
        self._check_open()
        if listener is not None and not callable(listener):
            raise not_callable("message listener", listener, "on_message")
        if self._last is not None:
            self._session._finish_last(self)
        self._listener = listener
        if listener is None:
            self._withdraw()
            return
        self._session._ensure_dispatcher()
        with self._cond:
            pending = len(self._buffer)
        for _ in range(pending):
            self._session._wake(self)
        self._pump()

    def _dispatch_one(self) -> None:
        """Run on the dispatcher thread: hand one due message to the listener."""
        listener = self._listener
        if (
            self._closed
            or listener is None
            or not self._connection._started
            or self._connection._failed is not None
        ):
            return
        item, wait = self._pop_due()
        if item is not None and self._adaptive:
            self._took()
        if item is None:
            if wait:
                timer = threading.Timer(wait, self._session._wake, args=(self,))
                timer.daemon = True
                timer.start()
            else:
                self._pump()
            return
        if not self._session._past_redelivery_limit(self, item[0], item[1]):
            self._session._run_listener(self, listener, item[0], item[1])
        self._pump()

    # ------------------------------------------------------------------ close
    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError(f"consumer on {self.destination} is closed")
        self._session._check_open()

    def _check_receivable(self) -> None:
        self._check_open()
        if self._listener is not None:
            raise IllegalStateError(
                f"consumer on {self.destination} has a message listener; receive() is not "
                "allowed (JMS)"
            )

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close; what this consumer held unacknowledged goes back in order (ORD-10)."""
        if self._closed:
            return
        self._session._close_consumer(self)

    def _close_giving_back(self) -> None:
        """Close, giving back even the AUTO/DUPS_OK message received last: the asyncio
        API kept it for a receive that was cancelled, so the application never saw it."""
        if not self._closed:
            self._session._close_consumer(self, finish_last=False)

    def _shutdown(self, delivered: list[_Held]) -> None:
        """Detach from the provider, giving back ``delivered`` and whatever is buffered
        (or parked at the client gate), in order (ORD-10)."""
        with self._cond:
            self._closed = True
            buffered = list(self._buffer)
            self._buffer.clear()
            self._credit = 0
            self._cond.notify_all()
        self._listener = None
        if self._feed is not None:
            self._leave_feed(self._feed, delivered, buffered)
            return
        undelivered = [token for _msg, token, _nb in buffered]
        gate = self._gate
        if gate is not None:
            parked = gate.withdraw(self._session, lambda item: item[0] is self)
            undelivered += [item[2] for _key, item in parked]
            returned = [h.returned() for h in delivered]
            returned += [returned_of(self._gate_scope, msg) for msg, _token, _nb in buffered]
            self._session._gate_returned(returned)
        with self._cond:
            # Delivered since the buffer was taken (the acknowledgement that came just
            # before this close freed the broker's window, and it sent the next message
            # at once): the application never saw them, so they go back unseen, behind
            # the rest. Dropped, they stayed in flight to a closed consumer (the embedded
            # broker) or came back flagged redelivered (RabbitMQ, Classic).
            undelivered += [token for _msg, token, _nb in self._buffer]
            self._buffer.clear()
        self._provider.close([h.token for h in delivered], undelivered)
        with self._cond:
            late, self._late = self._late, []
            late += [(msg, token) for msg, token, _nb in self._buffer]  # during the close
            self._buffer.clear()
        if late:
            # The gate let these through, or the broker sent them, while we closed: the
            # application never saw them, so back uncounted, keeping their place. (Given
            # back as seen, Classic over AMQP handed a message sent again to the closing
            # link, in a transaction, to the next consumer with its count one too high.)
            self._session._provider.return_unseen([token for _msg, token in late])
            self._session._gate_returned([returned_of(self._gate_scope, msg) for msg, _t in late])

    def _leave_feed(self, feed: Feed, delivered: list[_Held], buffered: list[Buffered]) -> None:
        """Give back to the feed, in order, what this consumer's session had of it
        unfinished (``delivered``, seen: as redelivered copies), then what was buffered
        or parked here (ORD-10); the feed hands them out again. The client gate, if
        any, hears that this session no longer holds those groups, after the feed has
        them back, so that nothing later of a group passes them."""
        session = self._session
        gate = self._gate
        parked: list[tuple[Message, Any]] = []
        if gate is not None:
            withdrawn = gate.withdraw(session, lambda item: item[0] is self, holes=False)
            parked = [(item[1], item[2]) for _key, item in withdrawn]
        items: list[tuple[Message, Any, bool]] = [
            (session._provider.redeliver(h.token), h.token, True) for h in delivered
        ]
        items += [(msg, token, bool(msg.jms_redelivered)) for msg, token, _nb in buffered]
        items += [(msg, token, bool(msg.jms_redelivered)) for msg, token in parked]
        assert isinstance(self._provider, Member)
        feed.leave(self._provider, items)
        with self._cond:
            late, self._late = self._late, []
        if late:  # the gate let these through while we closed
            feed.give_back([(msg, token, bool(msg.jms_redelivered)) for msg, token in late])
        if gate is not None:  # what was taken at the gate (parked messages were not)
            counts: dict[tuple[str, str], int] = {}
            taken = [h.group for h in delivered]
            taken += [msg.ordering_group for msg, _token, _nb in buffered]
            taken += [msg.ordering_group for msg, _token in late]
            for group in taken:
                if group is not None:
                    key = (self._gate_scope, group)
                    counts[key] = counts.get(key, 0) + 1
            for key, count in counts.items():
                gate.finish(key, session, count)

    def _stopping(self) -> bool:
        """Closed, or its connection lost: a receive must not start waiting."""
        return self._closed or self._connection._failed is not None

    def _wake_waiters(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _lost(self) -> None:
        """The connection is lost for good: what is buffered came over it and can never
        be acknowledged (the broker hands those messages out again), so it is dropped,
        and whoever waits in receive() wakes up to raise."""
        with self._cond:
            self._buffer.clear()
            self._credit = 0
            self._cond.notify_all()
        if self._gate is not None:
            self._gate.withdraw(self._session, lambda item: item[0] is self)
            self._gate.let_go(self._session)
        lost = getattr(self._provider, "lost", None)
        if lost is not None:  # a partitioned queue's consumer gives up its partitions
            lost()


_warned_single_process: set[tuple[str, str]] = set()


def _warn_single_process(connection: Connection, destination: Destination) -> None:
    """ORD-16: once per process, broker and queue, where grouped messages arrive from a
    broker that ignores groups on a queue that is not partitioned."""
    capabilities = connection.capabilities
    key = (str(capabilities.extra.get("gate_scope") or connection.url), destination.key)
    if key in _warned_single_process:
        return
    _warned_single_process.add(key)
    log.warning(
        "%s keeps no ordering groups, so jmslike keeps the groups of %s within this "
        "process only: consumers of it in other processes would take a group's messages "
        "at the same time. Declare it partitioned in every process to keep them across "
        'processes: [destinations."%s"] partitions = 16 in jmslike.toml, or the factory '
        "setting partitioned_destinations (docs/partitions.md)",
        capabilities.broker,
        destination,
        destination.key,
    )


def _lacks_exclusive(session: Session, destination: Destination) -> IllegalStateError:
    capabilities = session._connection.capabilities
    return IllegalStateError(
        f"{destination} is strictly ordered (ORD-18) but {capabilities.provider} "
        f"({capabilities.broker}) lacks capability exclusive_consumers: it cannot hold "
        "the destination to one active consumer"
    )


class QueueBrowser:
    """Looks at a queue's messages without taking them, in delivery order (ORD-20)."""

    def __init__(self, session: Session, queue: Destination, selector: str | None) -> None:
        self._session = session
        self.queue = queue
        self.message_selector = selector
        self._closed = False

    def __enter__(self) -> QueueBrowser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Message]:
        return iter(self.get_enumeration())

    def get_enumeration(self) -> list[Message]:
        """A snapshot of the waiting messages, in the order they will be delivered."""
        if self._closed:
            raise IllegalStateError(f"browser on {self.queue} is closed")
        self._session._check_open()
        return list(self._session._provider.browse(self.queue, self.message_selector))

    def close(self) -> None:
        self._closed = True
