"""Raw python-qpid-proton, the way its documentation's examples do throughput: one
``proton.reactor.Container`` running a ``MessagingHandler``; the sender sends while it
has credit (``on_sendable``) and counts ``on_accepted``, the receiver keeps a credit
window (``prefetch``) and accepts each message as it arrives (``auto_accept``).

A persistent send keeps one message in flight, waiting for the broker's outcome before
the next: the guarantee a persistent JMS send gives (jmslike's and Qpid JMS' alike). A
non-persistent one is sent while credit lasts, and the run ends when the broker has
accepted the last message (the examples' ``simple_send``).

The receivers' window is kept by hand (``prefetch`` granted at attach, one more per
message), which is what ``MessagingHandler(prefetch=N)``'s flow controller means to do.
That controller tops the window up when a delivery arrives, but Proton takes a
receiver's credit down only when the delivery is read (``advance``), so at that moment
the window looks full; with a window of 1 it grants nothing, and the next grant waits
for a flow frame from the broker. RabbitMQ sent none: with ``--prefetch 1`` four
receivers took one message each and the run stalled.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import urllib.parse
from typing import Any

import proton
from proton.handlers import MessagingHandler
from proton.reactor import Container

from jmslike_amqp.links import Capability, DurableNode
from jmslike_bench.runners.base import IDLE, Measurement, Runner, run_child
from jmslike_bench.stats import percentile
from jmslike_bench.targets import Target
from jmslike_bench.workloads import Kind, Sizes, Workload

__all__ = ["RawProtonRunner", "address_of", "node_options"]


def address_of(broker: str, queue: str) -> str:
    """``queue``'s address as jmslike_amqp writes it: RabbitMQ's plugin wants /queue/x,
    Classic announces the queue:// prefix in its open frame."""
    if broker == "rabbitmq":
        return f"/queue/{queue}"
    return f"queue://{queue}" if broker == "activemq" else queue


def node_options(broker: str) -> Any:
    """A sender's or receiver's node options as jmslike attaches: a queue, and on RabbitMQ
    a durable one (jmslike_amqp.durability), so both sides get the same guarantee and the
    same disk writes for persistent messages. Without the queue capability Artemis makes
    a multicast address without queues, which stores nothing."""
    if broker == "rabbitmq":
        return [Capability("queue"), DurableNode()]
    return Capability("queue")


class _Job(MessagingHandler):
    """Sends ``to_send`` messages and/or receives ``to_receive`` on one connection per
    direction; ``interval`` > 0 sends at that pace instead (the latency workload)."""

    def __init__(
        self,
        runner: RawProtonRunner,
        address: str,
        *,
        to_send: int = 0,
        to_receive: int = 0,
        receivers: int = 1,
        persistent: bool = False,
        pipelined: bool = False,
        groups: int = 0,
        interval: float = 0.0,
    ) -> None:
        super().__init__(prefetch=0, auto_accept=True)  # the window by hand: see above
        self.runner = runner
        self.address = address
        self.to_send, self.to_receive = to_send, to_receive
        self.receivers = receivers
        self.persistent, self.groups, self.interval = persistent, groups, interval
        self.one_at_a_time = persistent and not pipelined
        """Wait for each message's outcome before the next (a synchronous JMS send)."""
        self.sent = self.confirmed = self.received = 0
        self.latencies: list[float] = []
        self.started = self.finished = 0.0
        self.sender: Any = None
        self.connections: list[Any] = []
        self.error: str | None = None
        self.last_progress = time.monotonic()

    def _connect(self, container: Any) -> Any:
        parsed = urllib.parse.urlsplit(self.runner.target.url)
        user = urllib.parse.unquote(parsed.username) if parsed.username else None
        password = urllib.parse.unquote(parsed.password) if parsed.password else None
        connection = container.connect(
            url=f"amqp://{parsed.hostname}:{parsed.port}",
            # One container id per connection: Classic takes it for a JMS client id and
            # refuses a second connection that uses it (the job's other connection then
            # never sent or received anything).
            container_id=f"{container.container_id}-{len(self.connections)}",
            user=user,
            password=password,
            allowed_mechs="PLAIN" if user else "ANONYMOUS",
            reconnect=False,
        )
        self.connections.append(connection)
        return connection

    def on_start(self, event: Any) -> None:
        container = event.container
        kind = node_options(self.runner.target.broker)
        self.started = time.perf_counter()
        for _ in range(self.receivers if self.to_receive else 0):
            receiver = container.create_receiver(
                self._connect(container), self.address, options=kind
            )
            receiver.flow(self.runner.sizes.prefetch)
        if self.to_send:
            self.sender = container.create_sender(
                self._connect(container), self.address, options=kind
            )
        if self.interval:
            container.schedule(self.interval, self)
        container.schedule(1.0, _Watchdog(self))

    def _message(self) -> proton.Message:
        message = proton.Message(
            body=self.runner.sizes.body,
            durable=self.persistent,
            properties={"sentNanos": time.perf_counter_ns()} if self.interval else None,
        )
        if self.groups:
            message.group_id = f"group-{self.sent % self.groups}"
        return message

    def on_sendable(self, event: Any) -> None:
        if self.interval:
            return  # paced by on_timer_task
        sender = event.sender
        while sender.credit and self.sent < self.to_send:
            if self.one_at_a_time and self.sent > self.confirmed:
                return  # one in flight: the next goes on_accepted
            sender.send(self._message())
            self.sent += 1

    def on_timer_task(self, event: Any) -> None:
        """The latency workload's pacing: send what is due by now, then wake again."""
        due = min(self.to_send, int((time.perf_counter() - self.started) / self.interval) + 1)
        while self.sent < due and self.sender.credit:
            self.sender.send(self._message())
            self.sent += 1
        if self.sent < self.to_send:
            event.container.schedule(self.interval, self)

    def on_accepted(self, event: Any) -> None:
        self.confirmed += 1
        self.last_progress = time.monotonic()
        if self.persistent and not self.interval:
            self.on_sendable(event)
        self._maybe_done()

    def on_message(self, event: Any) -> None:
        event.receiver.flow(1)  # goes out with the acceptance, as the controller's did
        if self.interval:
            sent = event.message.properties["sentNanos"]
            self.latencies.append(time.perf_counter_ns() - sent)
        self.received += 1
        self.last_progress = time.monotonic()
        self._maybe_done()

    def _maybe_done(self) -> None:
        if self.confirmed >= self.to_send and self.received >= self.to_receive:
            if not self.finished:
                self.finished = time.perf_counter()
            self.stop()

    def stop(self) -> None:
        for connection in self.connections:
            connection.close()

    def on_transport_error(self, event: Any) -> None:
        self.error = f"transport error: {event.transport.condition}"
        self.stop()

    def on_link_error(self, event: Any) -> None:
        self.error = f"link error: {event.link.remote_condition}"
        self.stop()

    def on_rejected(self, event: Any) -> None:
        self.error = f"rejected: {event.delivery.remote.condition}"
        self.stop()


class _Watchdog:
    """Ends a job that made no progress for :data:`IDLE` seconds."""

    def __init__(self, job: _Job) -> None:
        self.job = job

    def on_timer_task(self, event: Any) -> None:
        job = self.job
        if job.finished:
            return
        if time.monotonic() - job.last_progress > IDLE:
            job.error = (
                f"no progress for {IDLE} s: sent {job.sent}, accepted {job.confirmed}, "
                f"received {job.received}"
            )
            job.stop()
            return
        event.container.schedule(1.0, self)


class RawProtonRunner(Runner):
    """Raw python-qpid-proton for one AMQP 1.0 target."""

    client = "raw"
    library = f"python-qpid-proton {'.'.join(map(str, proton.VERSION))}"

    def _address(self, queue: str) -> str:
        return address_of(self.target.broker, queue)

    def _run(self, job: _Job) -> _Job:
        Container(job).run()  # on this thread, as the examples do; returns when closed
        if job.error or not job.finished:
            raise RuntimeError(f"raw proton: {job.error or 'ended before the work was done'}")
        return job

    def run(self, workload: Workload, queue: str) -> Measurement:
        """One child process per run (its start-up untimed): two Proton containers on
        two threads of one process, jmslike's and this one, have crashed the interpreter
        here (docs/performance.md), and a child has no jmslike threads competing for the
        GIL either."""
        spec = {
            "target": dataclasses.asdict(self.target),
            "sizes": dataclasses.asdict(self.sizes),
            "workload": workload.name,
            "queue": queue,
            "warmup": self.warmup,
        }
        command = [sys.executable, "-m", "jmslike_bench.runners.raw_proton", json.dumps(spec)]
        return run_child(command, "raw proton")

    def warm_up(self, count: int, queue: str) -> None:
        """An untimed send and receive of ``count`` messages on a queue of its own, in the
        child process that then does the timed run: the suite's warm-up runs ran in other
        processes, so this one's imports, allocator and first connection are still cold."""
        warm = f"{queue}-warm"
        try:
            self._run(_Job(self, self._address(warm), to_send=count, to_receive=count))
        finally:
            self.cleanup(warm)

    def measure(self, workload: Workload, queue: str) -> Measurement:
        """The run itself, in the child process."""
        count = self.sizes.count_for(workload)
        address = self._address(queue)
        persistent = workload.persistent
        kind = workload.kind
        if kind is Kind.SEND:
            job = self._run(
                _Job(
                    self,
                    address,
                    to_send=count,
                    persistent=persistent,
                    pipelined=workload.pipelined,
                )
            )
        elif kind is Kind.RECEIVE:
            job = self._run(_Job(self, address, to_receive=count))
        elif kind is Kind.SEND_RECEIVE:
            job = self._run(
                _Job(self, address, to_send=count, to_receive=count, persistent=persistent)
            )
        elif kind is Kind.COMPETING:
            self._run(_Job(self, address, to_send=count, groups=workload.groups))
            job = self._run(_Job(self, address, to_receive=count, receivers=workload.consumers))
        elif kind is Kind.LATENCY:
            job = self._run(
                _Job(self, address, to_send=count, to_receive=count, interval=1 / self.sizes.rate)
            )
            return Measurement(
                count / (job.finished - job.started),
                percentile(job.latencies, 0.5) / 1e6,
                percentile(job.latencies, 0.99) / 1e6,
            )
        else:
            raise ValueError(f"raw proton has no {workload.name}")
        return Measurement(count / (job.finished - job.started))


def _child(spec_text: str) -> None:
    """``python -m jmslike_bench.runners.raw_proton SPEC``: one run, one JSON line."""
    from jmslike_bench.workloads import WORKLOADS

    spec = json.loads(spec_text)
    runner = RawProtonRunner(Target(**spec["target"]), Sizes(**spec["sizes"]))
    workload = WORKLOADS[spec["workload"]]
    if spec.get("warmup") and workload.kind is not Kind.LATENCY:
        runner.warm_up(spec["warmup"], spec["queue"])
    measured = runner.measure(workload, spec["queue"])
    print(json.dumps(dataclasses.asdict(measured)), flush=True)


if __name__ == "__main__":
    _child(sys.argv[1])
