"""What a runner is and what it returns."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from jmslike_bench.env import delete_queue
from jmslike_bench.targets import Target
from jmslike_bench.workloads import Kind, Sizes, Workload

__all__ = ["IDLE", "Countdown", "Measurement", "Runner", "paced", "run_child"]

IDLE = 20.0
"""Seconds without progress before a run is declared failed."""


@dataclass(frozen=True)
class Measurement:
    """One run of one workload: messages per second and, for latency, percentiles."""

    msgs_per_s: float
    p50_ms: float | None = None
    p99_ms: float | None = None


class Runner:
    """Runs workloads against one target with one kind of client."""

    client: str = ""
    """The column this runner fills: ``jmslike``, ``raw`` or ``java``."""
    library: str = ""
    """What the raw or Java column is, for the table's legend (``stomp.py 8.1``)."""

    def __init__(self, target: Target, sizes: Sizes) -> None:
        self.target = target
        self.sizes = sizes
        self.warmup = 0
        """Set by the suite once its warm-up pass is done: a runner whose timed runs each
        start a process of their own (raw Proton) warms that process up first with a run
        of this many messages, untimed."""

    def supports(self, workload: Workload) -> bool:
        """Whether this client can do ``workload`` as defined; the default: all but the
        listener container, which only jmslike has."""
        return workload.kind is not Kind.CONTAINER

    def run(self, workload: Workload, queue: str) -> Measurement:
        """Do ``workload`` on the queue named ``queue`` (a plain name: the runner maps it
        to its protocol's address) and time it."""
        raise NotImplementedError

    def prepare(self, queue: str) -> None:
        """Make ``queue`` ready before a workload uses it (RabbitMQ over STOMP declares it
        as a consumer would, so that it exists before its producers)."""

    def cleanup(self, queue: str) -> None:
        """Remove what a run left on the broker, best effort (a bench must not fill the
        broker it measures)."""
        delete_queue(self.target.broker, queue)

    def close(self) -> None:
        """Release what the runner holds for the whole bench."""


class Countdown:
    """Counts deliveries on any thread; :meth:`wait` fails only when nothing arrives for
    :data:`IDLE` seconds, so a slow broker is not mistaken for a lost message."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self._lock = threading.Lock()
        self._done = threading.Event()

    def tick(self, n: int = 1) -> None:
        with self._lock:
            self.count += n
            if self.count >= self.total:
                self._done.set()

    def wait(self, what: str) -> None:
        last, deadline = -1, time.monotonic() + IDLE
        while not self._done.wait(0.5):
            if self.count != last:
                last, deadline = self.count, time.monotonic() + IDLE
            elif time.monotonic() > deadline:
                raise RuntimeError(f"{what}: received {self.count} of {self.total}")


def paced(count: int, rate: float) -> Iterator[int]:
    """Yield 0..count-1, each at its slot of a fixed offered ``rate`` (msg/s): the
    latency workload's schedule, so that a slow send does not lower the offered rate."""
    interval = 1.0 / rate
    started = time.perf_counter()
    for index in range(count):
        delay = started + index * interval - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        yield index


def run_child(command: list[str], what: str) -> Measurement:
    """Run a measuring child process (the Java client, raw Proton) and read the JSON line
    it prints last: ``msgs_per_s`` and, for latency, ``p50_ms`` and ``p99_ms``."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=IDLE * 15, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{what} exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    result = json.loads(lines[-1])
    return Measurement(result["msgs_per_s"], result.get("p50_ms"), result.get("p99_ms"))
