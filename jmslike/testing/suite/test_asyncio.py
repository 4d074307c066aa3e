"""The asyncio API (``jmslike.aio``, docs/asyncio.md) on a provider: the same JMS model
and the same ordering rules as the synchronous API, for coroutines.

Each scenario runs its own event loop (``asyncio.run``), so the suite needs no asyncio
plugin for pytest.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import jmslike
from jmslike import aio

WAIT = 20.0
"""Seconds a scenario waits for its messages at most (a busy CI machine)."""


def _run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario(), 60.0))


async def _send_texts(session: aio.Session, queue: str, bodies: list[str], **kw: Any) -> None:
    producer = await session.create_producer(queue)
    for body in bodies:
        await producer.send(session.create_text_message(body), **kw)
    await producer.close()


async def _receive_all(consumer: aio.MessageConsumer, count: int) -> list[jmslike.Message]:
    got: list[jmslike.Message] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while len(got) < count and loop.time() < deadline:
        message = await consumer.receive(0.5)
        if message is not None:
            got.append(message)
    return got


async def _send_groups(connection: aio.Connection, queue: str, groups: int, per_group: int) -> None:
    """``per_group`` messages ``"g<g>:<i>"`` in each of ``groups`` groups, group by group."""
    sender = await connection.create_session()
    for g in range(groups):
        producer = await sender.create_producer(queue)
        producer.enable_ordering_group(f"g{g}")
        for i in range(per_group):
            await producer.send(sender.create_text_message(f"g{g}:{i}"))
    await sender.close()


class _GroupLog:
    """What a handler of ``"g<g>:<i>"`` messages saw: each group's numbers in the order
    handled, messages that started while their group had one in progress, and the most
    groups in progress at once; ``done`` once ``expected`` were handled."""

    def __init__(self, expected: int, work: Callable[[], float]) -> None:
        self.expected = expected
        self.work = work
        self.seen: dict[str, list[int]] = defaultdict(list)
        self.overlaps: list[str] = []
        self.most = 0
        self.done = asyncio.Event()
        self._in_progress: set[str] = set()

    async def handle(self, message: jmslike.Message) -> None:
        group, _, n = message.text.partition(":")
        if group in self._in_progress:
            self.overlaps.append(message.text)
        self._in_progress.add(group)
        self.most = max(self.most, len(self._in_progress))
        await asyncio.sleep(self.work())
        self.seen[group].append(int(n))
        self._in_progress.discard(group)
        if sum(len(v) for v in self.seen.values()) >= self.expected:
            self.done.set()

    def check(self, groups: int, per_group: int) -> None:
        assert not self.overlaps, self.overlaps
        assert dict(self.seen) == {f"g{g}": list(range(per_group)) for g in range(groups)}


def test_aio_send_then_receive_in_order(make_factory, unique) -> None:
    """API: ``await producer.send``, ``await consumer.receive``, ``async for`` and
    ``receive_no_wait`` give a queue's messages once each, in send order (ORD-1)."""
    queue = f"queue://{unique('q')}"
    bodies = [f"m{i}" for i in range(30)]

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            assert connection.url == connection.sync.url  # the URL it was made from
            session = await connection.create_session()
            await _send_texts(session, queue, bodies)
            consumer = await session.create_consumer(queue)
            await connection.start()
            got = [m.text for m in await _receive_all(consumer, 10)]
            async for message in consumer:
                got.append(message.text)
                if len(got) == len(bodies):
                    break
            assert got == bodies
            assert await consumer.receive(0.3) is None
            assert await consumer.receive_no_wait() is None
            await consumer.close()
            assert await consumer.receive(0.1) is None  # closed: None, as in JMS

    _run(scenario)


def test_aio_group_listeners_keep_each_group_in_order_one_at_a_time(make_factory, unique) -> None:
    """ORD-9, ORD-10, ORD-17: coroutine listeners on three sessions, each taking a random
    while over a message: every message once, each group in send order, and no two
    messages of a group in progress at once (a message is finished when its coroutine
    returns, so its group's next one waits for that)."""
    queue = f"queue://{unique('q')}"
    groups, per_group = 6, 12

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            await _send_groups(connection, queue, groups, per_group)
            rng = random.Random(7)
            log = _GroupLog(groups * per_group, lambda: rng.random() * 0.004)
            for _ in range(3):
                session = await connection.create_session()
                consumer = await session.create_consumer(queue)
                await consumer.set_message_listener(log.handle)
            await connection.start()
            await asyncio.wait_for(log.done.wait(), WAIT)
            await asyncio.sleep(0.3)  # anything delivered twice would come by now
            log.check(groups, per_group)

    _run(scenario)


def test_aio_transacted_listener_rolls_back_in_order(make_factory, unique, require) -> None:
    """ORD-10, ORD-11: a coroutine listener of a transacted session commits and rolls back
    on the session (its calls reach the session while the listener runs); the rolled-back
    message comes again, marked redelivered, before the messages after it."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            require(connection.sync, "transactions")
            session = await connection.create_session(transacted=True)
            seen: list[tuple[str, bool]] = []
            done = asyncio.Event()

            async def on_message(message: jmslike.Message) -> None:
                seen.append((message.text, bool(message.jms_redelivered)))
                await asyncio.sleep(0)
                if message.text == "m2" and not message.jms_redelivered:
                    await session.rollback()
                    return
                await session.commit()
                if message.text == "m4":
                    done.set()

            consumer = await session.create_consumer(queue)
            await consumer.set_message_listener(on_message)
            await connection.start()
            await _send_texts(await connection.create_session(), queue, [f"m{i}" for i in range(5)])
            await asyncio.wait_for(done.wait(), WAIT)
            assert seen == [
                ("m0", False),
                ("m1", False),
                ("m2", False),
                ("m2", True),
                ("m3", False),
                ("m4", False),
            ], seen

    _run(scenario)


def test_aio_client_acknowledge_and_recover(make_factory, unique) -> None:
    """ORD-10, ORD-11: ``await session.recover()`` gives back what the session holds, in
    order and marked redelivered; ``await session.acknowledge()`` finishes it."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            session = await connection.create_session(False, aio.Session.CLIENT_ACKNOWLEDGE)
            await _send_texts(session, queue, ["a", "b", "c"])
            consumer = await session.create_consumer(queue)
            await connection.start()
            first = await _receive_all(consumer, 2)
            assert [m.text for m in first] == ["a", "b"]
            await session.recover()
            again = await _receive_all(consumer, 3)
            assert [(m.text, bool(m.jms_redelivered)) for m in again] == [
                ("a", True),
                ("b", True),
                ("c", False),
            ]
            await session.acknowledge()
            await consumer.close()
            other = await (await connection.create_session()).create_consumer(queue)
            assert await other.receive(0.5) is None  # all three acknowledged

    _run(scenario)


def test_aio_cancelled_receives_lose_and_reorder_nothing(make_factory, unique) -> None:
    """API: receives cut short by ``asyncio.wait_for`` while another task sends: every
    message still comes once, in send order (ORD-1). A message that arrived for a
    receive that was cancelled waits for the consumer's next receive. Once seen out of
    order (11 before 10, ActiveMQ over AMQP, 2 ms timeouts): a receive took a later
    message at hand on the loop before the cancelled one had kept its own. Run by hand,
    300 messages at 0.5 ms, that was 7 runs of 30 before the fix and 0 of 30 after."""
    queue = f"queue://{unique('q')}"
    count = 200

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            consumer = await (await connection.create_session()).create_consumer(queue)
            await connection.start()
            sender = await connection.create_session()

            async def send() -> None:
                await _send_texts(sender, queue, [str(i) for i in range(count)])

            task = asyncio.create_task(send())
            got: list[int] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT
            while len(got) < count and loop.time() < deadline:
                try:
                    message = await asyncio.wait_for(consumer.receive(), 0.0005)
                except TimeoutError:
                    continue
                got.append(int(message.text))
            await task
            assert got == list(range(count))
            assert await consumer.receive(0.3) is None

    _run(scenario)


def test_aio_listener_errors_reach_the_exception_listener(make_factory, unique) -> None:
    """API: a coroutine listener that raises is reported to the connection's exception
    listener (itself a coroutine, run on the loop, set as ``connection.exception_listener``,
    which was kept on the asyncio object and never called) as ListenerError, and delivery
    goes on."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            errors: list[jmslike.JMSException] = []
            seen: list[str] = []
            done = asyncio.Event()

            async def on_error(error: jmslike.JMSException) -> None:
                errors.append(error)

            async def on_message(message: jmslike.Message) -> None:
                seen.append(message.text)
                if message.text == "boom":
                    raise RuntimeError("boom")
                if message.text == "after":
                    done.set()

            # The synchronous connection's attribute spelling: set_exception_listener.
            connection.exception_listener = on_error
            assert connection.exception_listener is on_error
            session = await connection.create_session()
            await (await session.create_consumer(queue)).set_message_listener(on_message)
            await connection.start()
            await _send_texts(session, queue, ["boom", "after"])
            await asyncio.wait_for(done.wait(), WAIT)
            for _ in range(100):
                if errors:
                    break
                await asyncio.sleep(0.05)
            assert seen[0] == "boom" and seen[-1] == "after"
            assert errors and isinstance(errors[0], jmslike.ListenerError), errors

    _run(scenario)


def test_aio_own_listener_cannot_close_or_stop(make_factory, unique) -> None:
    """API: as in the synchronous API, a listener cannot close or stop its connection or
    close its session (each would wait for the listener itself): IllegalStateError."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            session = await connection.create_session()
            refused: list[str] = []
            done = asyncio.Event()

            async def on_message(message: jmslike.Message) -> None:
                for name, call in (
                    ("connection.close", connection.close),
                    ("connection.stop", connection.stop),
                    ("session.close", session.close),
                ):
                    try:
                        await call()
                    except jmslike.IllegalStateError:
                        refused.append(name)
                done.set()

            await (await session.create_consumer(queue)).set_message_listener(on_message)
            await connection.start()
            await _send_texts(await connection.create_session(), queue, ["x"])
            await asyncio.wait_for(done.wait(), WAIT)
            assert refused == ["connection.close", "connection.stop", "session.close"]

    _run(scenario)


@pytest.mark.parametrize("bad", [-1, "soon", float("nan")], ids=["negative", "str", "nan"])
def test_aio_bad_input_is_refused_before_anything_happens(make_factory, unique, bad) -> None:
    """API: a bad receive timeout or a listener that is not callable raises
    InvalidArgumentError naming the value, and the consumer keeps its messages."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            session = await connection.create_session()
            await _send_texts(session, queue, ["kept"])
            consumer = await session.create_consumer(queue)
            await connection.start()
            with pytest.raises(jmslike.InvalidArgumentError, match=repr(bad).strip("'")):
                await consumer.receive(bad)
            with pytest.raises(jmslike.InvalidArgumentError, match="not callable"):
                await consumer.set_message_listener(bad)  # type: ignore[arg-type]
            message = await consumer.receive(WAIT)
            assert message is not None and message.text == "kept"

    _run(scenario)


def test_aio_settings_reach_the_sends_and_misspellings_raise(make_factory, unique) -> None:
    """API: the asyncio producer's settings are the synchronous producer's
    (``disable_message_id`` was kept on the asyncio object and never sent), a misspelt
    attribute raises, and ``consumer.message_listener = f`` says to await
    ``set_message_listener`` instead of keeping a listener nothing calls."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            session = await connection.create_session()
            producer = await session.create_producer(queue)
            producer.disable_message_timestamp = True
            producer.priority = 6
            assert producer.sync.disable_message_timestamp and producer.sync.priority == 6
            with pytest.raises(AttributeError):
                producer.prioirty = 1  # type: ignore[attr-defined]
            await producer.send(session.create_text_message("x"))
            consumer = await session.create_consumer(queue)
            with pytest.raises(AttributeError, match=r"await consumer\.set_message_listener"):
                consumer.message_listener = print
            await connection.start()
            message = await consumer.receive(WAIT)
            assert message is not None and message.text == "x"
            # (The timestamp is a hint JMS lets a provider ignore: ActiveMQ over STOMP
            # stamps its own, so only the priority is checked on the wire.)
            assert message.jms_priority == 6

            async def on_message(_message: jmslike.Message) -> None:
                return None

            await consumer.set_message_listener(on_message)
            assert consumer.message_listener is on_message

    _run(scenario)


def test_aio_container_runs_groups_side_by_side_each_in_order(make_factory, unique) -> None:
    """ORD-17: a listener container with a coroutine handler and ``concurrency=3`` works
    on several groups at once, each group in send order and one message at a time; it
    can be stopped from its own handler (it stops once the handler returns)."""
    queue = f"queue://{unique('q')}"
    groups, per_group = 6, 8

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            await _send_groups(connection, queue, groups, per_group)
        log = _GroupLog(groups * per_group, lambda: 0.01)

        async def handle(message: jmslike.Message) -> None:
            await log.handle(message)
            if log.done.is_set():
                await container.stop()  # from the handler: returns at once

        container = aio.MessageListenerContainer(factory, queue, handle, concurrency=3)
        async with container:
            await asyncio.wait_for(log.done.wait(), WAIT)
        assert not container.running
        with pytest.raises(jmslike.IllegalStateError, match="stopped container does not"):
            await container.start()
        assert container.processed == groups * per_group
        assert log.most >= 2, f"at most {log.most} group(s) in progress at once"
        log.check(groups, per_group)

    _run(scenario)


def test_aio_closing_ends_a_waiting_receive(make_factory, unique) -> None:
    """API: a task waiting in ``receive()`` (or ``async for``) while another task closes
    the session gets None (the loop ends), as a synchronous receive cut short by a close
    does; the close gives back nothing the task had not received."""
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            session = await connection.create_session()
            consumer = await session.create_consumer(queue)
            await connection.start()
            got: list[str] = []

            async def read() -> None:
                async for message in consumer:
                    got.append(message.text)

            reader = asyncio.create_task(read())
            await _send_texts(await connection.create_session(), queue, ["a"])
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT
            while not got and loop.time() < deadline:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)  # the reader waits again
            await session.close()
            await asyncio.wait_for(reader, WAIT)
            assert got == ["a"]
            other = await (await connection.create_session()).create_consumer(queue)
            assert await other.receive(0.5) is None  # "a" was finished by the close

    _run(scenario)


def test_aio_interceptors_see_every_send_and_delivery(make_factory, unique) -> None:
    """API: the factory's interceptors (jmslike.middleware) wrap the asyncio API's sends
    and deliveries as they wrap the synchronous API's, receives and listeners alike."""
    from jmslike.middleware import Interceptor

    queue = f"queue://{unique('q')}"
    calls: list[str] = []

    class Count(Interceptor):
        def send(self, context, proceed) -> None:
            calls.append("send")
            proceed()

        def deliver(self, context, proceed) -> None:
            calls.append("deliver")
            proceed()

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory(interceptors=[Count()]))
        async with await factory.create_connection() as connection:
            session = await connection.create_session()
            await _send_texts(session, queue, ["a", "b", "c", "d"])
            consumer = await session.create_consumer(queue)
            await connection.start()
            assert [m.text for m in await _receive_all(consumer, 2)] == ["a", "b"]
            await consumer.close()
            done = asyncio.Event()
            seen: list[str] = []

            async def on_message(message: jmslike.Message) -> None:
                seen.append(message.text)
                if len(seen) == 2:
                    done.set()

            listener = await (await connection.create_session()).create_consumer(queue)
            await listener.set_message_listener(on_message)
            await asyncio.wait_for(done.wait(), WAIT)
            assert seen == ["c", "d"]
        assert calls.count("send") == 4 and calls.count("deliver") == 4, calls

    _run(scenario)
