"""What the asyncio API costs: the same jobs through ``jmslike`` and ``jmslike.aio``, side
by side in one run, alternated, medians of ``--runs``, reported as aio / sync.

* send: N x 1 KiB non-persistent text messages, one producer, timed until the broker
  confirmed a persistent one sent after them (a non-persistent send may return while
  its message still waits in the client for the connection's thread);
* receive: N messages (filled untimed) taken by one AUTO_ACKNOWLEDGE consumer's receive loop;
* listeners: N messages (filled untimed) taken by four listener sessions (AUTO).

Every aio call runs on its session's thread and wakes the event loop with its result,
so a message costs the hand-over twice; these figures say how much that is.

    python benchmarks/aio.py [--url embedded://] [--url stomp://...] [--count 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

# Run as a script, this folder comes first on sys.path; benchmarks/stomp.py would then
# stand in for the stomp.py library.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

from jmslike import ConnectionFactory, DeliveryMode, aio
from jmslike.config import redact_url

BODY = "x" * 1024


def _url(url: str) -> str:
    return f"embedded://bench-{uuid.uuid4().hex}" if url == "embedded://" else url


def _fill(factory: ConnectionFactory, queue: str, count: int) -> None:
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        producer.delivery_mode = DeliveryMode.NON_PERSISTENT
        for _ in range(count):
            producer.send(session.create_text_message(BODY))


def sync_job(factory: ConnectionFactory, job: str, count: int) -> float:
    queue = f"queue://bench-aio-{uuid.uuid4().hex[:8]}"
    if job != "send":
        _fill(factory, queue, count)
    with factory.create_connection() as connection:
        if job == "send":
            session = connection.create_session()
            producer = session.create_producer(queue)
            producer.delivery_mode = DeliveryMode.NON_PERSISTENT
            started = time.perf_counter()
            for _ in range(count):
                producer.send(session.create_text_message(BODY))
            producer.send(session.create_text_message("end"), DeliveryMode.PERSISTENT)
            elapsed = time.perf_counter() - started
            _drain_sync(connection, queue, count + 1)
            return count / elapsed
        if job == "receive":
            consumer = connection.create_session().create_consumer(queue)
            connection.start()
            started = time.perf_counter()
            for _ in range(count):
                assert consumer.receive(10.0) is not None
            return count / (time.perf_counter() - started)
        done = threading.Event()
        lock = threading.Lock()
        seen = [0]

        def on_message(_message: object) -> None:
            with lock:
                seen[0] += 1
                if seen[0] == count:
                    done.set()

        for _ in range(4):
            connection.create_session().create_consumer(queue).set_message_listener(on_message)
        started = time.perf_counter()
        connection.start()
        assert done.wait(120.0)
        return count / (time.perf_counter() - started)


def _drain_sync(connection: object, queue: str, count: int) -> None:
    consumer = connection.create_session().create_consumer(queue)  # type: ignore[attr-defined]
    connection.start()  # type: ignore[attr-defined]
    for _ in range(count):
        if consumer.receive(5.0) is None:
            break


async def aio_job(factory: ConnectionFactory, job: str, count: int) -> float:
    queue = f"queue://bench-aio-{uuid.uuid4().hex[:8]}"
    if job != "send":
        await asyncio.to_thread(_fill, factory, queue, count)
    async with await aio.ConnectionFactory(factory).create_connection() as connection:
        loop = asyncio.get_running_loop()
        if job == "send":
            session = await connection.create_session()
            producer = await session.create_producer(queue)
            producer.delivery_mode = DeliveryMode.NON_PERSISTENT
            started = loop.time()
            for _ in range(count):
                await producer.send(session.create_text_message(BODY))
            await producer.send(session.create_text_message("end"), DeliveryMode.PERSISTENT)
            elapsed = loop.time() - started
            await asyncio.to_thread(_drain_sync, connection.sync, queue, count + 1)
            return count / elapsed
        if job == "receive":
            consumer = await (await connection.create_session()).create_consumer(queue)
            await connection.start()
            started = loop.time()
            for _ in range(count):
                assert await consumer.receive(10.0) is not None
            return count / (loop.time() - started)
        done = asyncio.Event()
        seen = 0

        async def on_message(_message: object) -> None:
            nonlocal seen
            seen += 1
            if seen == count:
                done.set()

        for _ in range(4):
            consumer = await (await connection.create_session()).create_consumer(queue)
            await consumer.set_message_listener(on_message)
        started = loop.time()
        await connection.start()
        await asyncio.wait_for(done.wait(), 120.0)
        return count / (loop.time() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", action="append", help="broker URL (repeatable)")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", default="send,receive,listeners")
    args = parser.parse_args()
    urls = args.url or ["embedded://"]
    print("| target | job | sync msg/s | aio msg/s | aio / sync |")
    print("| --- | --- | ---: | ---: | ---: |")
    for url in urls:
        for job in args.jobs.split(","):
            sync_runs: list[float] = []
            aio_runs: list[float] = []
            for _ in range(args.runs):
                sync_runs.append(sync_job(ConnectionFactory(_url(url)), job, args.count))
                aio_runs.append(asyncio.run(aio_job(ConnectionFactory(_url(url)), job, args.count)))
            s, a = statistics.median(sync_runs), statistics.median(aio_runs)
            target = redact_url(url.split("?")[0])
            print(f"| {target} | {job} | {s:,.0f} | {a:,.0f} | {a / s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
