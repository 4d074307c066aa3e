"""A receive of the asyncio API cancelled just as its message came (jmslike.aio.endpoints):
the message is kept for the consumer's next receive, or given back unseen when the
consumer closes, on every provider case. The race is made certain, not waited for: the
test holds the event loop while the session's thread hands the message over, then
cancels the receive before the loop hears of it."""

from __future__ import annotations

import asyncio
import time

import pytest

from jmslike import Session, aio


async def _cancelled_as_it_arrived(consumer: aio.MessageConsumer, send) -> bool:
    """Start a receive, send one message, hold the loop until the receive's call on the
    session's thread has ended, then cancel the receive. True if that call had taken the
    message (it is then kept), False if it had timed out first."""
    task = asyncio.create_task(consumer.receive())
    await asyncio.sleep(0.005)  # the receive is waiting on the session's thread
    send()
    deadline = time.monotonic() + 2.0
    while consumer._bridge._pending and time.monotonic() < deadline:
        time.sleep(0.002)  # holds the loop: the result cannot reach the task
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return bool(consumer._kept)


@pytest.mark.parametrize(
    "mode",
    [Session.AUTO_ACKNOWLEDGE, Session.CLIENT_ACKNOWLEDGE, Session.SESSION_TRANSACTED],
    ids=["auto", "client", "transacted"],
)
def test_a_cancelled_receive_keeps_its_message(make_factory, unique, mode) -> None:
    queue = f"queue://{unique('q')}"

    async def scenario() -> None:
        factory = aio.ConnectionFactory(make_factory())
        async with await factory.create_connection() as connection:
            transacted = mode == Session.SESSION_TRANSACTED
            session = await connection.create_session(transacted, mode)
            consumer = await session.create_consumer(queue)
            await connection.start()
            sync_sender = connection.sync.create_session()
            producer = sync_sender.create_producer(queue)
            sent = iter(range(1000))
            last = -1

            def send() -> None:
                nonlocal last
                last = next(sent)
                producer.send(sync_sender.create_text_message(str(last)))

            # 1. kept for the next receive, which returns it (not a later one).
            for _ in range(30):
                if await _cancelled_as_it_arrived(consumer, send):
                    break
                message = await consumer.receive(5.0)  # it came to the next slice
                assert message is not None and message.text == str(last)
            else:
                pytest.fail("the race never happened in 30 tries")
            kept_text = str(last)
            send()
            first = await consumer.receive(5.0)
            second = await consumer.receive(5.0)
            assert [first.text, second.text] == [kept_text, str(last)]
            if transacted:
                await session.commit()
            elif mode == Session.CLIENT_ACKNOWLEDGE:
                await session.acknowledge()

            # 2. given back unseen when the consumer closes first.
            for _ in range(30):
                if await _cancelled_as_it_arrived(consumer, send):
                    break
                assert (await consumer.receive(5.0)).text == str(last)
                if transacted:
                    await session.commit()
                elif mode == Session.CLIENT_ACKNOWLEDGE:
                    await session.acknowledge()
            else:
                pytest.fail("the race never happened in 30 tries")
            await consumer.close()
            if transacted:
                await session.rollback()  # a transacted session's close leaves it to this
            again = await (await connection.create_session()).create_consumer(queue)
            message = await again.receive(5.0)
            assert message is not None and message.text == str(last)
            assert await again.receive(0.3) is None

    asyncio.run(asyncio.wait_for(scenario(), 120.0))
