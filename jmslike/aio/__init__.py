"""jmslike for asyncio: the JMS objects as coroutines, with ordering groups unchanged.

    from jmslike import aio

    async with await aio.connect("embedded://") as connection:
        session = await connection.create_session()
        producer = await session.create_producer("queue://orders")
        await producer.send(session.create_text_message("hello"))

The classes mirror the synchronous ones and share everything below them (messages,
settings, errors, the ordering engine, the providers): each ``aio`` object holds the
synchronous one as ``.sync``. No call that waits runs on the event loop: a session's
calls run on that session's own thread, one at a time as JMS requires, and listeners given
here run on the event loop while that thread waits for them, so the ordering rules
(ORD-9, ORD-10) hold as they do for synchronous listeners. docs/asyncio.md tells the
whole story.
"""

from jmslike.aio._bridge import AsyncListener
from jmslike.aio.connection import Connection, ConnectionFactory, connect
from jmslike.aio.container import MessageListenerContainer
from jmslike.aio.endpoints import MessageConsumer, MessageProducer, QueueBrowser
from jmslike.aio.session import Session

__all__ = [
    "AsyncListener",
    "Connection",
    "ConnectionFactory",
    "MessageConsumer",
    "MessageListenerContainer",
    "MessageProducer",
    "QueueBrowser",
    "Session",
    "connect",
]
