"""Send and receive helpers the contract scenarios share, free of pytest so that any test code can
use them.

``receive_any``/``drain_any`` exist for brokers where a group's next message may wait at a
consumer other than the one that held the group (``connection.capabilities.group_scope``
other than "session"): a scenario cannot know which consumer to block on.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import types
import uuid
from collections.abc import Callable, Iterator

from jmslike import Connection, Destination, Message, MessageConsumer, Session

__all__ = [
    "FIRST_WAIT",
    "CompletionRecorder",
    "GroupRecorder",
    "Interrupt",
    "drain_any",
    "drain_consumer",
    "interrupted_at",
    "left_on",
    "receive_any",
    "receive_count",
    "send_texts",
    "texts",
]

FIRST_WAIT = 1.0
"""Seconds ``drain_consumer`` waits for a first message, whatever its ``timeout``."""


class Interrupt(KeyboardInterrupt):
    """The Ctrl-C a test raises inside jmslike (``interrupted_at``), told apart from a real
    one."""


@contextlib.contextmanager
def interrupted_at(point: int, where: Callable[[types.FrameType], bool]) -> Iterator[None]:
    """Raise :class:`Interrupt` inside the block at the ``point``-th call, in this thread,
    of a function whose frame ``where`` accepts: where a real Ctrl-C can land, since
    CPython raises it when a function starts (or a loop goes round). Run the block with
    point 1, 2, ... until it runs through, and each place has been tried."""
    calls = 0

    own = globals()  # (not this module's frames: leaving the block resumes this generator)

    def tracer(frame: types.FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_globals is not own and where(frame):
            calls += 1
            if calls == point:
                sys.settrace(None)
                raise Interrupt

    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(None)


def send_texts(session: Session, destination: str, bodies: list[str]) -> None:
    """Send one TextMessage per body, in order, from a producer closed afterwards."""
    producer = session.create_producer(destination)
    for body in bodies:
        producer.send(session.create_text_message(body))
    producer.close()


def drain_consumer(
    consumer: MessageConsumer, timeout: float = 0.2, first: float = FIRST_WAIT
) -> list[Message]:
    """Receive until a receive with ``timeout`` returns None.

    The first receive waits at least ``first`` seconds: a subscription made a moment ago on a
    broker that has just started (a cold JVM, a queue being declared) can take longer than
    ``timeout`` to deliver its first message, and a drain that gave up then would read as
    "nothing was there". Once messages flow, ``timeout`` is the gap that ends the drain.
    """
    out: list[Message] = []
    wait = max(timeout, first)
    while True:
        msg = consumer.receive(wait)
        if msg is None:
            return out
        out.append(msg)
        wait = timeout


def receive_count(
    consumer: MessageConsumer, count: int, timeout: float = 5.0, after: float = 0.2
) -> list[Message]:
    """Receive ``count`` messages, waiting up to ``timeout`` for each, then whatever else
    comes within ``after`` seconds.

    For a scenario that knows how many messages it expects: it asserts on everything that
    came, one too many included, without waiting out a drain's long quiet gap to be sure
    nothing else comes (the messages it waits for are on the broker already, and one too
    many would be right behind them). Returns fewer than ``count`` when one did not come
    within ``timeout``.
    """
    out: list[Message] = []
    for _ in range(count):
        msg = consumer.receive(timeout)
        if msg is None:
            return out
        out.append(msg)
    while (msg := consumer.receive(after)) is not None:
        out.append(msg)
    return out


def left_on(
    connection: Connection, queue: str | Destination, timeout: float = 5.0
) -> list[Message]:
    """What is still on ``queue``, found without waiting out a quiet gap: a marker sent to
    it now comes after everything there (one producer's sends to a queue arrive in
    order), so what a consumer gets before the marker is what was left, and an empty list
    means nothing was. The marker is consumed; the connection is started. No other
    consumer may be open on the queue: it could take the marker (or what was left).

    Raises AssertionError when the marker does not come within ``timeout``.
    """
    session = connection.create_session()
    try:
        marker = f"jmslike-testing-marker-{uuid.uuid4().hex}"
        session.create_producer(queue).send(session.create_text_message(marker))
        consumer = session.create_consumer(queue)
        connection.start()
        left: list[Message] = []
        while (msg := consumer.receive(timeout)) is not None:
            if getattr(msg, "text", None) == marker:
                return left
            left.append(msg)
        raise AssertionError(f"the marker sent to {queue} did not come back; before it: {left}")
    finally:
        session.close()


def receive_any(
    consumers: list[MessageConsumer], timeout: float = 2.0, poll: float = 0.02
) -> tuple[int, Message] | tuple[None, None]:
    """Poll ``consumers`` in turn with short receives until one returns a message.

    Returns ``(index into consumers, message)``, or ``(None, None)`` once ``timeout``
    seconds passed with no message. Every consumer is polled at least once.
    """
    deadline = time.monotonic() + timeout
    while True:
        for index, consumer in enumerate(consumers):
            msg = consumer.receive_no_wait() or consumer.receive(poll)
            if msg is not None:
                return index, msg
        if time.monotonic() >= deadline:
            return None, None


def drain_any(consumers: list[MessageConsumer], timeout: float = 0.2) -> list[tuple[int, Message]]:
    """``receive_any`` until no consumer gets a message for ``timeout`` seconds."""
    out: list[tuple[int, Message]] = []
    while True:
        index, msg = receive_any(consumers, timeout)
        if index is None or msg is None:
            return out
        out.append((index, msg))


def texts(messages: list[Message]) -> list[str | None]:
    """The text bodies of ``messages`` (helper for assertions)."""
    return [getattr(m, "text", None) for m in messages]


class CompletionRecorder:
    """A completion listener (JMS 2.0 asynchronous send) that keeps each message's
    outcome in the order told: None once completed, else the exception. ``all_told`` is
    set once ``expected`` outcomes came, so a test can wait for them without polling."""

    def __init__(self, expected: int = 0) -> None:
        self.told: list[tuple[str, BaseException | None]] = []
        self.expected = expected
        self.all_told = threading.Event()

    def on_completion(self, message: Message) -> None:
        self._tell(message, None)

    def on_exception(self, message: Message, exception: BaseException) -> None:
        self._tell(message, exception)

    def _tell(self, message: Message, outcome: BaseException | None) -> None:
        self.told.append((getattr(message, "text", None) or "", outcome))  # a TextMessage's
        if len(self.told) >= self.expected:
            self.all_told.set()


class GroupRecorder:
    """A message listener for ordering scenarios whose messages' texts are
    ``"<group>:<number>"``: it works ``work`` seconds on each and records each group's
    numbers in the order processed, and every message that began while another of its
    group was in progress (``overlaps``, ORD-9). ``all_seen`` is set once ``expected``
    messages were processed. Safe to call from many sessions' threads at once."""

    def __init__(self, expected: int, work: float = 0.001) -> None:
        self.expected = expected
        self.work = work
        self.seen: dict[str, list[int]] = {}
        self.overlaps: list[str] = []
        self.all_seen = threading.Event()
        self._count = 0
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, message: Message) -> None:
        text = str(getattr(message, "text", ""))
        group, _, number = text.partition(":")
        with self._lock:
            if group in self._busy:
                self.overlaps.append(text)
            self._busy.add(group)
        time.sleep(self.work)
        with self._lock:
            self._busy.discard(group)
            self.seen.setdefault(group, []).append(int(number))
            self._count += 1
            if self._count >= self.expected:
                self.all_seen.set()

    @property
    def count(self) -> int:
        """Messages processed so far."""
        return self._count
