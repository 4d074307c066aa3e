"""jmslike itself, through its public API only, over whichever provider the URL picks."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from jmslike import ConnectionFactory, DeliveryMode, Message, MessageListenerContainer
from jmslike_bench.runners.base import IDLE, Countdown, Measurement, Runner, paced
from jmslike_bench.stats import percentile
from jmslike_bench.targets import Target
from jmslike_bench.workloads import Kind, Sizes, Workload

__all__ = ["JmslikeRunner"]

log = logging.getLogger("jmslike.bench.jmslike")


class JmslikeRunner(Runner):
    """AUTO_ACKNOWLEDGE receives and listeners. Tuned (the ``jmslike`` column): the same
    prefetch as the other clients. Untuned (``defaults``): the factory exactly as
    ``ConnectionFactory(url)`` makes it, no setting changed (prefetch 1), so that the
    table shows what an application gets before it tunes anything."""

    client = "jmslike"
    library = "jmslike"

    def __init__(self, target: Target, sizes: Sizes, *, tuned: bool = True) -> None:
        super().__init__(target, sizes)
        self.tuned = tuned
        if not tuned:
            self.client = "defaults"
            self.library = "jmslike, factory defaults"
        url = target.url
        if target.protocol == "embedded":
            url = f"embedded://bench-{id(self):x}"  # one broker per runner, kept by the pool
        self.factory = self._factory(url, sizes.prefetch) if tuned else ConnectionFactory(url)
        # The container keeps jmslike's default prefetch of 1 per session (ORD-9); on the
        # STOMP and AMQP brokers its sessions share one subscription, whose window the
        # container sizes itself (jmslike/_feed.py), whatever clientWindow says.
        self.container_factory = self._factory(url, 1) if tuned else self.factory
        self._keep: Any = None
        if target.protocol == "embedded":
            # The embedded broker lives while a connection holds it: keep one open so that
            # a receive finds what the send before it wrote.
            self._keep = self.factory.create_connection()

    @staticmethod
    def _factory(url: str, prefetch: int) -> ConnectionFactory:
        options: dict[str, Any] = {"prefetch": prefetch, "request_timeout": 60.0}
        if url.startswith("stomp"):
            options["clientWindow"] = prefetch  # Artemis' consumer-window-size
        return ConnectionFactory(url, **options)

    def supports(self, workload: Workload) -> bool:
        return True

    def prepare(self, queue: str) -> None:
        if self.target.broker == "rabbitmq" and self.target.protocol == "stomp":
            from jmslike_bench.runners.raw_stomp import declare_rabbitmq_queue

            declare_rabbitmq_queue(self.target.url, queue)

    def close(self) -> None:
        if self._keep is not None:
            self._keep.close()

    def run(self, workload: Workload, queue: str) -> Measurement:
        count = self.sizes.count_for(workload)
        kind = workload.kind
        if kind is Kind.SEND:
            return Measurement(
                self._send(queue, count, workload.persistent, pipelined=workload.pipelined)
            )
        if kind is Kind.RECEIVE:
            return Measurement(self._receive(queue, count))
        if kind is Kind.SEND_RECEIVE:
            return Measurement(self._send_receive(queue, count, workload.persistent))
        if kind is Kind.COMPETING:
            return Measurement(self._competing(queue, count, workload))
        if kind is Kind.LATENCY:
            return self._latency(queue, count)
        return Measurement(self._container(queue, count, workload))

    # ------------------------------------------------------------------ workloads
    def _send(
        self, queue: str, count: int, persistent: bool, groups: int = 0, *, pipelined: bool = False
    ) -> float:
        """msg/s through ``MessageProducer.send`` until the connection is closed (its
        DISCONNECT receipt or close frame confirms the broker read every send); with
        ``pipelined``, asynchronous sends, whose answers the close waits for."""
        mode = DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT
        body = self.sizes.body
        connection = self.factory.create_connection()
        try:
            session = connection.create_session()
            destination = session.create_queue(queue)
            producers = [session.create_producer(destination) for _ in range(max(1, groups))]
            if groups:
                for index, producer in enumerate(producers):
                    producer.enable_ordering_group(f"group-{index}")
            width = len(producers)
            answers = _Answers() if pipelined else None
            started = time.perf_counter()
            for index in range(count):
                producers[index % width].send(
                    session.create_text_message(body),
                    delivery_mode=mode,
                    completion_listener=answers,
                )
            connection.close()
            elapsed = time.perf_counter() - started
            if answers is not None and (answers.completed != count or answers.failed):
                raise RuntimeError(
                    f"jmslike: {answers.completed} of {count} sends completed, "
                    f"first failure: {answers.failed[:1]}"
                )
            return count / elapsed
        finally:
            connection.close()

    def _receive(self, queue: str, count: int) -> float:
        with self.factory.create_connection() as connection:
            session = connection.create_session()
            started = time.perf_counter()
            consumer = session.create_consumer(session.create_queue(queue))
            connection.start()
            for index in range(count):
                if consumer.receive(IDLE) is None:
                    raise RuntimeError(f"jmslike: received {index} of {count}")
            consumer.close()  # acknowledges the last one
            return count / (time.perf_counter() - started)

    def _send_receive(self, queue: str, count: int, persistent: bool) -> float:
        failed: list[BaseException] = []

        def send() -> None:
            try:
                self._send(queue, count, persistent)
            except BaseException as exc:
                failed.append(exc)

        with self.factory.create_connection() as connection:
            session = connection.create_session()
            consumer = session.create_consumer(session.create_queue(queue))
            connection.start()
            sender = threading.Thread(target=send, name="bench-sender", daemon=True)
            started = time.perf_counter()
            sender.start()
            for index in range(count):
                if consumer.receive(IDLE) is None:
                    raise RuntimeError(f"jmslike: received {index} of {count}") from (
                        failed[0] if failed else None
                    )
            sender.join()
            if failed:
                raise failed[0]
            consumer.close()
            return count / (time.perf_counter() - started)

    def _competing(self, queue: str, count: int, workload: Workload) -> float:
        """Fill the queue (untimed), then ``consumers`` listeners, each in its own session,
        take it all: the time from the first subscription to the last delivery."""
        self._send(queue, count, workload.persistent, groups=workload.groups)
        done = Countdown(count)
        with self.factory.create_connection() as connection:
            started = time.perf_counter()
            for _ in range(workload.consumers):
                session = connection.create_session()
                consumer = session.create_consumer(session.create_queue(queue))
                consumer.set_message_listener(lambda message: done.tick())
            connection.start()
            done.wait("jmslike")
            return count / (time.perf_counter() - started)

    def _latency(self, queue: str, count: int) -> Measurement:
        """Send at a fixed rate on one connection, a listener on another records how long
        each message took (the send time travels as a property)."""
        latencies: list[float] = []
        done = Countdown(count)

        def on_message(message: Message) -> None:
            sent = message.get_long_property("sentNanos") or 0
            latencies.append(time.perf_counter_ns() - sent)
            done.tick()

        with self.factory.create_connection() as receiving:
            session = receiving.create_session()
            session.create_consumer(session.create_queue(queue)).set_message_listener(on_message)
            receiving.start()
            with self.factory.create_connection() as sending:
                out = sending.create_session()
                producer = out.create_producer(out.create_queue(queue))
                body = self.sizes.body
                started = time.perf_counter()
                for _ in paced(count, self.sizes.rate):
                    message = out.create_text_message(body)
                    message.set_long_property("sentNanos", time.perf_counter_ns())
                    producer.send(message, delivery_mode=DeliveryMode.NON_PERSISTENT)
                done.wait("jmslike")
                elapsed = time.perf_counter() - started
        return Measurement(
            count / elapsed,
            percentile(latencies, 0.50) / 1e6,
            percentile(latencies, 0.99) / 1e6,
        )

    def _container(self, queue: str, count: int, workload: Workload) -> float:
        """A listener container at ``consumers`` concurrency on ``groups`` ordering groups,
        each message handled in ``handler_ms``: the speed-up target compares two of these."""
        self._send(queue, count, workload.persistent, groups=workload.groups)
        done = Countdown(count)
        pause = self.sizes.handler_ms / 1000.0

        def handle(message: Message) -> None:
            time.sleep(pause)
            done.tick()

        started = time.perf_counter()
        with MessageListenerContainer(
            self.container_factory, f"queue://{queue}", handle, concurrency=workload.consumers
        ):
            done.wait("jmslike container")
            elapsed = time.perf_counter() - started
        return count / elapsed


class _Answers:
    """The asynchronous sends' CompletionListener: counts what the broker confirmed."""

    def __init__(self) -> None:
        self.completed = 0
        self.failed: list[BaseException] = []

    def on_completion(self, message: Message) -> None:
        self.completed += 1

    def on_exception(self, message: Message, exception: BaseException) -> None:
        self.failed.append(exception)
