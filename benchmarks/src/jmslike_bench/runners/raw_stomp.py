"""Raw stomp.py, the way its documentation recommends for throughput: sends without
waiting (a receipt on the last message only, or on every one where the guarantee asks
for it, waited for one by one or, for asynchronous sends, all at the end), receives in
a ``ConnectionListener`` with ``ack:client-individual`` and an ACK per message on
stomp.py's own thread.

The frames are the ones jmslike's STOMP dialect writes for the same broker (destination
names, prefetch headers, text bodies without ``content-length`` where that makes them
TextMessages), so both sides ask the broker for the same work. Also used by
``benchmarks/stomp.py``, which compares more variants on STOMP alone.
"""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.parse
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import stomp

from jmslike import ConnectionFactory
from jmslike_bench.runners.base import IDLE, Countdown, Measurement, Runner, paced
from jmslike_bench.stats import percentile
from jmslike_bench.targets import Target
from jmslike_bench.workloads import Kind, Sizes, Workload

__all__ = [
    "BODY",
    "TIMEOUT",
    "Broker",
    "RawStompRunner",
    "declare",
    "declare_rabbitmq_queue",
    "drain",
    "raw_connection",
    "raw_receive",
    "raw_receive_handoff",
    "raw_send",
]

BODY = "x" * 1024
TIMEOUT = 60.0
"""Seconds a receipt may take before a run fails."""


@dataclass(frozen=True)
class Broker:
    """What raw stomp.py must write to do what jmslike's dialect for this broker does."""

    name: str
    url: str
    prefetch: int
    predeclare: bool = True

    @property
    def parsed(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.url)

    def destination(self, queue: str) -> str:
        return queue if self.name == "artemis" else f"/queue/{queue}"

    @property
    def text_frames(self) -> bool:
        """Whether a text body goes without ``content-length``, as jmslike's dialect sends
        a TextMessage there: ActiveMQ Classic and Artemis read a frame with the header as
        a BytesMessage and one without as a TextMessage (what a Java JMS consumer of the
        same queue reads as text), and a TextMessage costs them more work per message
        (stomp.py adds the header unless told not to). RabbitMQ has no message types."""
        return self.name in ("activemq", "artemis")

    def send_headers(self, persistent: bool) -> dict[str, str]:
        # Non-persistent is every broker's default over STOMP. Not "persistent:false",
        # which RabbitMQ 3.10 reads as durable:false for the queue (rabbitmq-stomp #47).
        headers = {"persistent": "true"} if persistent else {}
        if self.name == "artemis":
            headers["destination-type"] = "ANYCAST"
        return headers

    def jms_headers(self, persistent: bool, index: int) -> dict[str, str]:
        """What jmslike's codec adds to a TextMessage's SEND on this broker: a message id
        and the sender's timestamp (Artemis overwrites ``timestamp``: jmslike's header),
        and where the broker gives every frame a ``content-length``, the type that marks
        text. A non-persistent send carries no ``persistent`` header."""
        headers = self.send_headers(persistent)
        headers["jmslikeMessageID"] = f"ID:raw:{index}"
        stamp = "jmslikeTimestamp" if self.name == "artemis" else "timestamp"
        headers[stamp] = str(int(time.time() * 1000))
        if self.name != "activemq":
            headers["jmslikeType"] = "text"
        return headers

    def subscribe_headers(self) -> dict[str, str]:
        # As jmslike_stomp's Dialect.prefetch_headers writes them.
        if self.name == "activemq":
            return {"activemq.prefetchSize": str(self.prefetch)}
        if self.name == "artemis":  # bytes, not messages; the provider uses -1 above 1
            return {
                "subscription-type": "ANYCAST",
                "consumer-window-size": "1" if self.prefetch <= 1 else "-1",
            }
        return {"prefetch-count": str(self.prefetch)}

    def factory(self) -> ConnectionFactory:
        return ConnectionFactory(
            self.url,
            prefetch=self.prefetch,
            clientWindow=self.prefetch,
            request_timeout=TIMEOUT,
        )


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    """Receipts as events, errors kept, messages handed to ``handler``."""

    def __init__(self) -> None:
        self.receipts: dict[str, threading.Event] = {}
        self.errors: list[str] = []
        self.handler: Callable[[Any], None] | None = None

    def expect(self, receipt: str) -> threading.Event:
        event = self.receipts[receipt] = threading.Event()
        return event

    def on_receipt(self, frame: Any) -> None:
        event = self.receipts.pop(frame.headers.get("receipt-id", ""), None)
        if event is not None:
            event.set()

    def on_error(self, frame: Any) -> None:
        self.errors.append(f"{frame.headers.get('message')}: {frame.body!r}"[:500])
        for event in list(self.receipts.values()):
            event.set()

    def on_message(self, frame: Any) -> None:
        if self.handler is not None:
            self.handler(frame)


def _wait(listener: _Listener, event: threading.Event, what: str) -> None:
    if not event.wait(TIMEOUT):
        raise RuntimeError(f"raw stomp.py: no receipt for {what} within {TIMEOUT} s")
    if listener.errors:
        raise RuntimeError(f"raw stomp.py: ERROR frame: {listener.errors[0]}")


@contextlib.contextmanager
def raw_connection(broker: Broker) -> Iterator[tuple[Any, _Listener]]:
    parsed = broker.parsed
    # RabbitMQ reads the CONNECT frame's host header as the virtual host; stomp.py sends
    # the host name there unless told a vhost.
    conn = stomp.Connection12(
        [(parsed.hostname or "127.0.0.1", parsed.port or 61613)],
        vhost="/" if broker.name == "rabbitmq" else None,
        auto_content_length=not broker.text_frames,
    )
    listener = _Listener()
    conn.set_listener("bench", listener)
    user = urllib.parse.unquote(parsed.username) if parsed.username else None
    password = urllib.parse.unquote(parsed.password) if parsed.password else None
    conn.connect(user, password, wait=True)
    try:
        yield conn, listener
    finally:
        with contextlib.suppress(Exception):
            conn.disconnect(receipt=f"bye-{uuid.uuid4().hex[:8]}")


def raw_send(
    broker: Broker,
    queue: str,
    count: int,
    persistent: bool,
    sync: bool,
    body: str = BODY,
    groups: int = 0,
    jms_headers: bool = False,
    answered: bool = False,
) -> float:
    """msg/s: pipelined (receipt on the last message) or sync (receipt on every one);
    ``answered``: pipelined with a receipt on every message, all waited for at the end,
    what a JMS 2.0 asynchronous send promises (each message answered; a RECEIPT answers
    for its own frame, and ActiveMQ Classic stores a SEND that asks none without
    waiting for the store, so a receipt on the last message only is less). With
    ``groups``, round-robin ``JMSXGroupID`` headers; with ``jms_headers``, the
    per-message headers jmslike's frames carry (``Broker.jms_headers``), made as it
    makes them, for each message."""
    destination = broker.destination(queue)
    plain = broker.send_headers(persistent)
    grouped = [{**plain, "JMSXGroupID": f"group-{g}"} for g in range(groups)]
    with raw_connection(broker) as (conn, listener):
        pending: list[threading.Event] = []
        started = time.perf_counter()
        for index in range(count):
            if jms_headers:
                headers = broker.jms_headers(persistent, index)
            else:
                headers = grouped[index % groups] if groups else plain
            if answered:
                receipt = f"a{index}"
                pending.append(listener.expect(receipt))
                conn.send(destination, body, headers=headers, receipt=receipt)
            elif sync or index == count - 1:
                receipt = f"s{index}"
                event = listener.expect(receipt)
                conn.send(destination, body, headers=headers, receipt=receipt)
                _wait(listener, event, f"message {index}")
            else:
                conn.send(destination, body, headers=headers)
        for index, event in enumerate(pending):
            _wait(listener, event, f"message {index}")
        return count / (time.perf_counter() - started)


def _subscribe_client_individual(conn: Any, broker: Broker, queue: str, sub: str) -> None:
    """The raw subscription every raw receive times: per-message ACKs, and the same
    prefetch headers jmslike's dialect writes."""
    conn.subscribe(
        broker.destination(queue),
        id=sub,
        ack="client-individual",
        headers=broker.subscribe_headers(),
    )


def _unsubscribe(conn: Any, listener: _Listener, sub: str) -> None:
    """UNSUBSCRIBE with a receipt: the broker has read every ACK before it."""
    event = listener.expect(f"unsub-{sub}")
    conn.unsubscribe(sub, receipt=f"unsub-{sub}")
    _wait(listener, event, "UNSUBSCRIBE")


def raw_receive_handoff(broker: Broker, queue: str, count: int) -> float:
    """msg/s: ack:client-individual, frames handed from stomp.py's thread to this one
    (a deque and a condition, as a synchronous receive() must), conn.ack per message."""
    buffer: deque[Any] = deque()
    ready = threading.Condition()
    waiting = False
    with raw_connection(broker) as (conn, listener):

        def on_message(frame: Any) -> None:
            with ready:
                buffer.append(frame)
                if waiting:
                    ready.notify()

        listener.handler = on_message
        started = time.perf_counter()
        _subscribe_client_individual(conn, broker, queue, "bench")
        for index in range(count):
            if not buffer:
                with ready:
                    waiting = True
                    if not buffer and not ready.wait(IDLE):
                        raise RuntimeError(f"raw stomp.py: received {index} of {count}")
                    waiting = False
            conn.ack(buffer.popleft().headers["ack"])
        _unsubscribe(conn, listener, "bench")
        return count / (time.perf_counter() - started)


def raw_receive(broker: Broker, queue: str, count: int, consumers: int = 1) -> float:
    """msg/s: ack:client-individual, conn.ack per message in the listener; ``consumers``
    competing subscriptions, each on a connection of its own."""
    done = Countdown(count)
    with contextlib.ExitStack() as stack:
        connections = [stack.enter_context(raw_connection(broker)) for _ in range(consumers)]
        started = time.perf_counter()
        for conn, listener in connections:

            def on_message(frame: Any, conn: Any = conn) -> None:
                conn.ack(frame.headers["ack"])
                done.tick()

            listener.handler = on_message
            _subscribe_client_individual(conn, broker, queue, "bench")
        done.wait("raw stomp.py")
        for conn, listener in connections:
            _unsubscribe(conn, listener, "bench")
        return count / (time.perf_counter() - started)


def drain(broker: Broker, queue: str, idle: float = 1.0) -> int:
    """Take (auto-ack) whatever is left on ``queue``; how many there were."""
    taken = 0
    seen = threading.Event()
    with raw_connection(broker) as (conn, listener):

        def on_message(frame: Any) -> None:
            nonlocal taken
            taken += 1
            seen.set()

        listener.handler = on_message
        headers = broker.subscribe_headers()
        if broker.name == "activemq":
            headers["activemq.prefetchSize"] = "1000"
        elif broker.name == "rabbitmq":
            headers["prefetch-count"] = "1000"
        conn.subscribe(broker.destination(queue), id="drain", ack="auto", headers=headers)
        while seen.wait(idle):
            seen.clear()
        event = listener.expect("undrain")
        conn.unsubscribe("drain", receipt="undrain")
        event.wait(10.0)
    return taken


def declare(broker: Broker, queue: str) -> None:
    """RabbitMQ: declare ``queue`` as a consumer's SUBSCRIBE does (durable, shared), so
    that it exists before its producers: a first SEND would declare it otherwise."""
    if broker.name != "rabbitmq" or not broker.predeclare:
        return
    with raw_connection(broker) as (conn, listener):
        conn.subscribe(broker.destination(queue), id="declare", ack="auto")
        event = listener.expect("declared")
        conn.unsubscribe("declare", receipt="declared")
        _wait(listener, event, "declaring the queue")


def declare_rabbitmq_queue(url: str, queue: str) -> None:
    """:func:`declare` for a RabbitMQ STOMP URL, for the runners that are not raw."""
    declare(Broker("rabbitmq", url, 1), queue)


class RawStompRunner(Runner):
    """Raw stomp.py for one STOMP target."""

    client = "raw"
    library = f"stomp.py {getattr(stomp, '__version__', '')}".strip()

    def __init__(self, target: Target, sizes: Sizes) -> None:
        super().__init__(target, sizes)
        self.broker = Broker(target.broker, target.url, sizes.prefetch)

    def prepare(self, queue: str) -> None:
        declare(self.broker, queue)

    def run(self, workload: Workload, queue: str) -> Measurement:
        count = self.sizes.count_for(workload)
        body = self.sizes.body
        persistent = workload.persistent
        kind = workload.kind
        if kind is Kind.SEND:
            # A persistent send is confirmed message by message, the guarantee a
            # persistent JMS send gives (a pipelined one too, its receipts waited for at
            # the end); a non-persistent one only at the end.
            sync = persistent and not workload.pipelined
            answered = persistent and workload.pipelined
            return Measurement(
                raw_send(
                    self.broker, queue, count, persistent, sync=sync, body=body, answered=answered
                )
            )
        if kind is Kind.RECEIVE:
            return Measurement(raw_receive(self.broker, queue, count))
        if kind is Kind.SEND_RECEIVE:
            return Measurement(self._send_receive(queue, count, persistent))
        if kind is Kind.COMPETING:
            raw_send(self.broker, queue, count, persistent, False, body, workload.groups)
            return Measurement(raw_receive(self.broker, queue, count, workload.consumers))
        if kind is Kind.LATENCY:
            return self._latency(queue, count)
        raise ValueError(f"raw stomp.py has no {workload.name}")

    def _send_receive(self, queue: str, count: int, persistent: bool) -> float:
        failed: list[BaseException] = []
        result: list[float] = []

        def receive() -> None:
            try:
                result.append(raw_receive(self.broker, queue, count))
            except BaseException as exc:
                failed.append(exc)

        receiver = threading.Thread(target=receive, name="bench-receiver", daemon=True)
        started = time.perf_counter()
        receiver.start()
        raw_send(self.broker, queue, count, persistent, persistent, self.sizes.body)
        receiver.join()
        if failed:
            raise failed[0]
        return count / (time.perf_counter() - started)

    def _latency(self, queue: str, count: int) -> Measurement:
        latencies: list[float] = []
        done = Countdown(count)
        broker = self.broker
        with raw_connection(broker) as (inbound, in_listener):

            def on_message(frame: Any) -> None:
                latencies.append(time.perf_counter_ns() - int(frame.headers["sentNanos"]))
                inbound.ack(frame.headers["ack"])
                done.tick()

            in_listener.handler = on_message
            _subscribe_client_individual(inbound, broker, queue, "bench")
            with raw_connection(broker) as (outbound, _):
                destination = broker.destination(queue)
                headers = broker.send_headers(False)
                started = time.perf_counter()
                for _ in paced(count, self.sizes.rate):
                    outbound.send(
                        destination,
                        self.sizes.body,
                        headers={**headers, "sentNanos": str(time.perf_counter_ns())},
                    )
                done.wait("raw stomp.py")
                elapsed = time.perf_counter() - started
            _unsubscribe(inbound, in_listener, "bench")
        return Measurement(
            count / elapsed, percentile(latencies, 0.5) / 1e6, percentile(latencies, 0.99) / 1e6
        )
