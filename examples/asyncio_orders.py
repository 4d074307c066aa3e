"""Ordering groups from coroutines (jmslike.aio): three sessions' listeners run side by
side on the event loop, and each customer's orders are still handled in order, one at a
time (ORD-9)."""

import asyncio
import random
from collections import defaultdict

from jmslike import Message, aio

CUSTOMERS, STEPS = 5, ("created", "paid", "packed", "shipped")


async def main() -> None:
    handled: dict[str, list[str]] = defaultdict(list)
    busy: set[str] = set()
    done = asyncio.Event()

    async def on_order(message: Message) -> None:
        customer = message.ordering_group
        assert customer is not None and customer not in busy, "a group ran twice at once"
        busy.add(customer)
        await asyncio.sleep(random.random() / 100)  # pretend to call another service
        handled[customer].append(message.text)
        busy.discard(customer)
        if sum(map(len, handled.values())) == CUSTOMERS * len(STEPS):
            done.set()

    async with await aio.connect("embedded://asyncio-orders") as connection:
        for _ in range(3):
            session = await connection.create_session()
            consumer = await session.create_consumer("queue://orders")
            await consumer.set_message_listener(on_order)
        await connection.start()

        sender = await connection.create_session()
        for c in range(CUSTOMERS):
            producer = await sender.create_producer("queue://orders")
            producer.enable_ordering_group(f"customer-{c}")
            for step in STEPS:
                await producer.send(sender.create_text_message(step))
        await asyncio.wait_for(done.wait(), 10)

    for customer, steps in sorted(handled.items()):
        print(f"{customer}: {' -> '.join(steps)}")
        assert steps == list(STEPS), (customer, steps)
    print(f"ok: {CUSTOMERS} customers, each in order, on three concurrent listeners")


asyncio.run(main())
