"""``sends_at_once``: which sends the asyncio API makes on the event loop over STOMP and
AMQP 1.0, on every broker.

A non-persistent send outside a transaction, to the destination the session last sent
such a send to, waits for nothing: over AMQP (while the sender link has credit) it only
encodes the message and queues the transfer for the connection's thread; over STOMP it
is posted for the connection's writer thread (``Wire.post``) instead of written on the
caller's. ``jmslike.aio`` then makes it on the loop instead of handing it to the
session's thread and back. Checked here: which sends qualify (a first send to a
destination, a persistent one and one in a transaction do not), that the aio producer
really skips the hand-over for them, and that messages sent partly on the loop and
partly through the session's thread arrive all, once, in send order (ORD-1), grouped or
not, also after the STOMP writer thread has ended for want of work and started again.

Run: ``.venv/bin/python -m pytest tests/integration/test_sends_at_once.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest
from brokercases import CASES
from brokerenv import broker_url
from faultproxy import Relay

import jmslike
import jmslike_amqp.session
import jmslike_amqp.transport
from jmslike import DeliveryMode, Queue, aio
from jmslike_stomp.wire import _Writer

IDLE = _Writer.IDLE

BROKERS = [
    pytest.param(
        f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL",
        marks=[getattr(pytest.mark, broker), getattr(pytest.mark, protocol)],
        id=f"{broker}-{protocol}",
    )
    for protocol in ("stomp", "amqp")
    for broker in ("activemq", "artemis", "rabbitmq")
]

NON_PERSISTENT = DeliveryMode.NON_PERSISTENT
PERSISTENT = DeliveryMode.PERSISTENT


def _queue(tag: str) -> Queue:
    return Queue(f"at-once-{tag}-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("variable", BROKERS)
def test_which_sends_are_made_at_once(variable: str) -> None:
    factory = jmslike.ConnectionFactory(broker_url(variable))
    first, other = _queue("first"), _queue("other")
    with factory.create_connection() as connection:
        session = connection.create_session()
        provider = session._provider
        assert not provider.sends_at_once(first, NON_PERSISTENT)  # no link yet
        producer = session.create_producer(first)
        producer.delivery_mode = NON_PERSISTENT
        producer.send(session.create_text_message("attaches the link"))
        assert provider.sends_at_once(first, NON_PERSISTENT)
        assert provider.sends_at_once(Queue(first.name), NON_PERSISTENT)  # equal, not same
        assert not provider.sends_at_once(first, PERSISTENT)
        assert not provider.sends_at_once(other, NON_PERSISTENT)
        # Nothing of this link waits to be written: no window to wait for.
        assert not provider.wake_when_at_once(first, NON_PERSISTENT, lambda: None)

        transacted = connection.create_session(True)
        in_tx = transacted.create_producer(first)
        in_tx.send(session.create_text_message("in a transaction"), NON_PERSISTENT)
        assert not transacted._provider.sends_at_once(first, NON_PERSISTENT)
        transacted.commit()

        consumer = session.create_consumer(first)
        connection.start()
        texts = [consumer.receive(10.0), consumer.receive(10.0)]
        # Two sessions' sends: no order between them (Artemis over STOMP was seen to
        # deliver the committed one first).
        assert sorted(m.text if m is not None else "" for m in texts) == [  # type: ignore[attr-defined]
            "attaches the link",
            "in a transaction",
        ]


def _numbers(url: str, queue: Queue, count: int) -> list[int]:
    """The numbers ``count`` messages of ``queue`` start with (``"7"``, ``"7:..."``), in
    the order received; then nothing more may be there (nothing twice)."""
    received: list[int] = []
    with jmslike.ConnectionFactory(url).create_connection() as connection:
        connection.start()
        consumer = connection.create_session().create_consumer(queue)
        while len(received) < count:
            message = consumer.receive(10.0)
            assert message is not None, f"lost after {len(received)}: {received[-5:]}"
            received.append(int(message.text.partition(":")[0]))  # type: ignore[attr-defined]
        assert consumer.receive_no_wait() is None
    return received


async def _send_mixed(url: str, queue: Queue, count: int) -> tuple[int, int]:
    """Sends ``count`` messages in three groups, every fifth persistent; returns how many
    sends went through the session's thread and how many were made on the loop."""
    handed = 0
    async with await aio.connect(url) as connection:
        session = await connection.create_session()
        producer = await session.create_producer(queue)
        producer.delivery_mode = NON_PERSISTENT
        call = producer._bridge.call

        async def counted(fn: Any) -> Any:
            nonlocal handed
            handed += 1
            return await call(fn)

        producer._bridge.call = counted  # type: ignore[method-assign]
        for number in range(count):
            if number == count // 2:
                await asyncio.sleep(IDLE + 0.3)  # the STOMP writer thread ends meanwhile
            message = session.create_text_message(str(number))
            message.set_string_property("JMSXGroupID", f"g{number % 3}")
            await producer.send(message, PERSISTENT if number % 5 == 4 else None)
    return handed, count - handed


@pytest.mark.parametrize("variable", BROKERS)
def test_aio_sends_on_the_loop_arrive_in_order(variable: str) -> None:
    url = broker_url(variable)
    queue = _queue("aio")
    count = 300
    handed, at_once = asyncio.run(asyncio.wait_for(_send_mixed(url, queue, count), 60.0))
    persistent = count // 5
    # The first send attaches the link and every persistent one waits for the broker;
    # right after a persistent one the link is the same, so the next send is at once
    # again. A send that found no credit (the broker grants in steps) is handed over too.
    assert handed >= 1 + persistent
    assert at_once >= (count - persistent) * 3 // 4, (handed, at_once)

    assert _numbers(url, queue, count) == list(range(count))


NETWORK_CASES = [case for case in CASES if case.id != "embedded"]

BODY = "x" * 2048


async def _send_while_stalled(
    url: str, relay: Relay, queue: Queue, count: int
) -> tuple[float, bool]:
    """Sends ``count`` messages after the first while the relay moves nothing for two
    seconds; returns the longest the event loop went without a turn meanwhile, and
    whether the sends were still waiting at the end of it."""
    loop = asyncio.get_running_loop()
    gaps: list[float] = []
    async with await aio.connect(url) as connection:
        session = await connection.create_session()
        producer = await session.create_producer(queue)
        producer.delivery_mode = NON_PERSISTENT
        await producer.send(session.create_text_message("0"))
        relay.stall()
        # Should a send hold the loop, nothing below runs to lift the stall: this does,
        # so that such a failure shows as the gap it made, not as a hang.
        watchdog = threading.Timer(5.0, relay.resume)
        watchdog.start()

        async def tick() -> None:
            last = loop.time()
            while True:
                await asyncio.sleep(0.01)
                now = loop.time()
                gaps.append(now - last)
                last = now

        async def send_all() -> None:
            for number in range(1, count + 1):
                await producer.send(session.create_text_message(f"{number}:{BODY}"))

        ticker = asyncio.create_task(tick())
        sender = asyncio.create_task(send_all())
        try:
            await asyncio.sleep(2.0)
            await asyncio.sleep(0.02)  # a turn of the ticker after a loop held up
            stalled, waited = max(gaps), not sender.done()
        finally:
            relay.resume()
            watchdog.cancel()
        await sender
        ticker.cancel()
    return stalled, waited


@pytest.mark.parametrize("relay_for", NETWORK_CASES, indirect=True)
def test_loop_turns_while_the_broker_reads_nothing(
    relay_for: tuple[str, str, Relay],
) -> None:
    """A broker applying flow control stops reading the socket. Over STOMP the sends made
    on the event loop are posted for the connection's writer thread, and once it is
    behind they go to the session's thread, which waits for the socket; over AMQP they
    queue transfers while the broker's credit lasts, then wait for more on the session's
    thread. Either way the loop keeps turning, and nothing is lost or reordered once the
    broker reads again."""
    url, direct, relay = relay_for
    queue = _queue("stalled")
    count = 10_000
    stalled, waited = asyncio.run(
        asyncio.wait_for(_send_while_stalled(url, relay, queue, count), 120.0)
    )
    assert stalled < 0.5, f"the event loop stood still {stalled:.2f} s behind a send"
    if "stomp" in url:
        # More than the socket, the relay and the writer's backlog hold: the sender
        # waited (on its session's thread), the loop did not. (Over AMQP how much goes
        # before the sender waits is the broker's credit.)
        assert waited, "the sends did not wait for a broker that reads nothing"

    assert _numbers(direct, queue, count + 1) == list(range(count + 1))


AMQP_BROKERS = [case for case in BROKERS if str(case.id).endswith("-amqp")]


async def _send_past_the_window(url: str, queue: Queue, count: int) -> tuple[int, int, int]:
    """Sends ``count`` non-persistent messages as fast as the loop goes; returns the sends
    handed to the session's thread, the waits for the provider's window and the
    wake-ups that ended them."""
    handed = waits = wakes = 0
    async with await aio.connect(url) as connection:
        session = await connection.create_session()
        producer = await session.create_producer(queue)
        producer.delivery_mode = NON_PERSISTENT
        call, wake = producer._bridge.call, type(producer)._wake
        provider = session.sync._provider
        asked = provider.wake_when_at_once

        async def counted(fn: Any) -> Any:
            nonlocal handed
            handed += 1
            return await call(fn)

        def counted_wake(self: Any) -> None:
            nonlocal wakes
            wakes += 1
            wake(self)

        def counted_ask(*args: Any) -> bool:
            nonlocal waits
            waiting = asked(*args)
            waits += waiting
            return waiting

        producer._bridge.call = counted  # type: ignore[method-assign]
        # On the class: the producer keeps no attribute of its own (__slots__).
        type(producer)._wake = counted_wake  # type: ignore[method-assign]
        provider.wake_when_at_once = counted_ask
        try:
            for number in range(count):
                await producer.send(session.create_text_message(str(number)))
        finally:
            type(producer)._wake = wake  # type: ignore[method-assign]
    return handed, waits, wakes


@pytest.mark.parametrize("variable", AMQP_BROKERS)
def test_aio_producer_waits_for_the_window_on_the_loop(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop sending faster than the connection's thread fills the link's window
    (``AT_ONCE_WINDOW``, made 20 here so that it surely fills); the producer then waits
    on the loop until half of it went, woken by the connection's thread, instead of
    handing each send over; every message arrives, in order."""
    monkeypatch.setattr(jmslike_amqp.session, "AT_ONCE_WINDOW", 20)
    monkeypatch.setattr(jmslike_amqp.session, "AT_ONCE_LOW", 10)
    monkeypatch.setattr(jmslike_amqp.transport, "AT_ONCE_LOW", 10)
    url = broker_url(variable)
    queue = _queue("window")
    count = 5_000
    handed, waits, wakes = asyncio.run(
        asyncio.wait_for(_send_past_the_window(url, queue, count), 120.0)
    )
    # The first send attaches the link; others go over only while the broker's credit
    # ran out (each wait there is a thread's).
    assert handed < count // 10, (handed, waits, wakes)
    assert waits > 0, "the window never filled"
    assert wakes >= waits, f"{waits - wakes} waits ended by the look-again timeout"

    assert _numbers(url, queue, count) == list(range(count))


AMQP_CASES = [case for case in NETWORK_CASES if str(case.id).endswith("-amqp")]


async def _send_until_cut(url: str, relay: Relay, queue: Queue) -> BaseException | None:
    """Sends as fast as the loop goes and cuts the connection after 0.3 s; returns what
    the sends raised (None: the sends went on for 20 s)."""
    async with await aio.connect(url) as connection:
        session = await connection.create_session()
        producer = await session.create_producer(queue)
        producer.delivery_mode = NON_PERSISTENT
        cut = asyncio.get_running_loop().call_later(0.3, relay.cut)
        try:
            async with asyncio.timeout(20.0):
                while True:
                    await producer.send(session.create_text_message("x"))
        except TimeoutError:
            return None
        except jmslike.JMSException as exc:
            return exc
        finally:
            cut.cancel()


@pytest.mark.parametrize("relay_for", AMQP_CASES, indirect=True)
def test_aio_send_waiting_for_the_window_fails_with_its_connection(
    relay_for: tuple[str, str, Relay], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection lost while a producer waits for its window (made 20, so that it is
    full when the cut comes) leaves transfers that will never be made: the send must not
    wait for them for good, but fail as any send on a lost connection does."""
    monkeypatch.setattr(jmslike_amqp.session, "AT_ONCE_WINDOW", 20)
    monkeypatch.setattr(jmslike_amqp.session, "AT_ONCE_LOW", 10)
    monkeypatch.setattr(jmslike_amqp.transport, "AT_ONCE_LOW", 10)
    url, _direct, relay = relay_for
    raised = asyncio.run(_send_until_cut(url, relay, _queue("cut")))
    assert isinstance(raised, jmslike.ConnectionFailedError), raised
