"""A soak workload: what a long-running service does to a connection factory, in a loop,
with the process's resources sampled as it runs.

Leaks show only over time: a thread per connection that never ends, a socket per
refused client id, a buffer per temporary queue. Each round opens a connection with a
client id, asks a long-lived service for a reply over a temporary queue, creates and
closes a consumer, tries the taken client id on a second connection (which must raise
``InvalidClientIDError`` and leave nothing open) and closes everything again. The
resident set size, the thread count and the open file descriptors are sampled after
each round; :meth:`SoakReport.growth` compares the second half of the run with the first,
so that a slow linear leak shows however high the process started.

Used by tests/integration/test_soak.py (seconds per broker case) and benchmarks/soak.py
(the ten-minute run); docs/reliability.md has the figures.
"""

from __future__ import annotations

import gc
import logging
import os
import statistics
import threading
import time
import tracemalloc
import uuid
from dataclasses import dataclass, field

import jmslike
from jmslike.config import redact_url

__all__ = ["Sample", "SoakReport", "sample", "soak"]

log = logging.getLogger("jmslike.testing.soak")


@dataclass(frozen=True, slots=True)
class Sample:
    """The process's resources at one moment."""

    at: float
    """Seconds since the soak started."""
    rss_kib: int
    threads: int
    fds: int
    heap_kib: int = 0
    """Python's own heap (tracemalloc's traced memory, after a collection), when the
    soak traces it: unlike RSS it does not step with the allocator's pools, so a leak
    of a few hundred bytes a round shows within seconds."""


def sample(at: float = 0.0) -> Sample:
    """RSS, threads and open fds of this process: psutil's if it is installed, else
    /proc's (Linux), which are the same numbers without a dependency; and the Python
    heap if tracemalloc is tracing."""
    heap = 0
    if tracemalloc.is_tracing():
        gc.collect()
        heap = tracemalloc.get_traced_memory()[0] // 1024
    try:
        import psutil  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        psutil = None
    if psutil is not None:
        process = psutil.Process()
        return Sample(
            at,
            process.memory_info().rss // 1024,
            process.num_threads(),
            process.num_fds(),
            heap,
        )
    fields: dict[str, str] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return Sample(
        at,
        int(fields["VmRSS"].split()[0]),
        int(fields["Threads"]),
        len(os.listdir("/proc/self/fd")),
        heap,
    )


@dataclass
class SoakReport:
    """What a soak did and what the process used while it did it."""

    url: str
    """Redacted: a report gets printed."""
    rounds: int = 0
    replies: int = 0
    refused_client_ids: int = 0
    named_reply_queue: bool = False
    """The broker has no temporary queues for this protocol: replies came over a named
    queue instead."""
    samples: list[Sample] = field(default_factory=list)
    start: Sample | None = None
    """After the warm-up: the first sample that counts."""
    end: Sample | None = None
    """After everything was closed again."""

    def halves(self) -> tuple[list[Sample], list[Sample]]:
        counted = self.samples
        middle = len(counted) // 2
        return counted[:middle], counted[middle:]

    def growth(self) -> dict[str, float]:
        """How much each resource rose from the first half of the run to the second:
        the highest value for threads and fds (a leak adds, a pause does not hide it),
        the median for RSS (one sample taken mid-garbage-collection proves nothing)."""
        first, second = self.halves()
        if not first or not second:
            return {"rss_kib": 0.0, "heap_kib": 0.0, "threads": 0.0, "fds": 0.0}
        return {
            "rss_kib": statistics.median(s.rss_kib for s in second)
            - statistics.median(s.rss_kib for s in first),
            "heap_kib": statistics.median(s.heap_kib for s in second)
            - statistics.median(s.heap_kib for s in first),
            "threads": float(max(s.threads for s in second) - max(s.threads for s in first)),
            "fds": float(max(s.fds for s in second) - max(s.fds for s in first)),
        }

    def curve(self, points: int = 10) -> list[Sample]:
        """``points`` samples spread evenly over the run (the last one included): the
        shape of each resource over time, short enough to print in a report."""
        counted = self.samples
        if len(counted) <= points:
            return list(counted)
        return [counted[round(i * (len(counted) - 1) / (points - 1))] for i in range(points)]

    def curve_lines(self) -> list[str]:
        """The curve as one line per resource: ``rss_kib: 54932 55010 ...``."""
        curve = self.curve()
        at = " ".join(f"{s.at:.0f}" for s in curve)
        return [f"at_s: {at}"] + [
            f"{name}: " + " ".join(str(getattr(s, name)) for s in curve)
            for name in ("rss_kib", "heap_kib", "threads", "fds")
        ]

    def summary(self) -> str:
        start, end = self.start, self.end
        figures = (
            f"start rss={start.rss_kib} KiB heap={start.heap_kib} KiB threads={start.threads} "
            f"fds={start.fds}; end rss={end.rss_kib} KiB heap={end.heap_kib} KiB "
            f"threads={end.threads} fds={end.fds}"
            if start is not None and end is not None
            else "no samples"
        )
        growth = ", ".join(f"{k} {v:+.0f}" for k, v in self.growth().items())
        over = "a named queue" if self.named_reply_queue else "temporary queues"
        return (
            f"{self.rounds} rounds, {self.replies} replies over {over}, "
            f"{self.refused_client_ids} client "
            f"ids refused; {figures}; second half vs first: {growth}"
        )


class _Service:
    """The long-lived other side: answers each request on the queue it names."""

    def __init__(self, factory: jmslike.ConnectionFactory, queue: str) -> None:
        self.connection = factory.create_connection()
        session = self.connection.create_session()
        self._consumer = session.create_consumer(queue)
        self._replier = session.create_producer(None)
        self._session = session
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._serve, name="soak-service", daemon=True)
        self.connection.start()
        self._thread.start()

    def _serve(self) -> None:
        try:
            while (request := self._consumer.receive()) is not None:
                if request.jms_reply_to is None:
                    continue
                reply = self._session.create_text_message("reply")
                reply.jms_correlation_id = request.jms_message_id
                self._replier.send(reply, destination=request.jms_reply_to)
        except jmslike.ConnectionFailedError as exc:
            self.errors.append(exc)
        except jmslike.IllegalStateError:
            pass  # closed while receiving: the soak is over
        except Exception as exc:  # the test must see it, not a silent thread
            log.exception("soak service failed")
            self.errors.append(exc)

    def close(self) -> None:
        self.connection.close()
        self._thread.join(10.0)


def _round(url: str, queue: str, report: SoakReport) -> None:
    client_id = f"soak-{uuid.uuid4().hex[:12]}"
    owner = jmslike.ConnectionFactory(url, client_id=client_id, request_timeout=10.0)
    with owner.create_connection() as connection:
        # The id is taken: a second connection with it is refused, and leaves nothing.
        try:
            jmslike.ConnectionFactory(url, client_id=client_id).create_connection().close()
        except jmslike.InvalidClientIDError:
            report.refused_client_ids += 1
        else:
            raise AssertionError(f"client id {client_id!r} was taken twice on {report.url}")
        session = connection.create_session()
        replies: jmslike.Destination
        if connection.capabilities.temporary_destinations:
            replies = session.create_temporary_queue()
        else:  # a provider without temporary queues: a queue of the soak's own
            replies = session.create_queue(queue.removeprefix("queue://") + "-replies")
            report.named_reply_queue = True
        answers = session.create_consumer(replies)
        requester = session.create_producer(queue)
        connection.start()
        request = session.create_text_message("request")
        request.jms_reply_to = replies
        requester.send(request)
        reply = answers.receive(timeout=10.0)
        if reply is None or reply.jms_correlation_id != request.jms_message_id:
            raise AssertionError(f"no reply over a temporary queue on {report.url} ({reply!r})")
        report.replies += 1
        answers.close()
        # A consumer made and closed on a plain queue (nothing waits there).
        session.create_consumer(queue + "-idle").close()
        requester.close()
        session.close()


def soak(url: str, seconds: float, warm_up_rounds: int = 3, trace_heap: bool = True) -> SoakReport:
    """Run rounds against ``url`` for ``seconds`` (after ``warm_up_rounds``, which fill
    caches and start the threads that live as long as the process) and sample the
    process after each; every connection is closed when it returns. ``trace_heap``
    traces Python's heap with tracemalloc for the run (one frame: cheap enough)."""
    started_tracing = trace_heap and not tracemalloc.is_tracing()
    if started_tracing:
        tracemalloc.start(1)
    try:
        return _soak(url, seconds, warm_up_rounds)
    finally:
        if started_tracing:
            tracemalloc.stop()


def _soak(url: str, seconds: float, warm_up_rounds: int) -> SoakReport:
    report = SoakReport(redact_url(url))
    factory = jmslike.ConnectionFactory(url, request_timeout=10.0)
    queue = f"queue://soak-{uuid.uuid4().hex[:8]}"
    service = _Service(factory, queue)
    try:
        for _ in range(warm_up_rounds):
            _round(url, queue, report)
        report.start = sample()
        began = time.monotonic()
        while (elapsed := time.monotonic() - began) < seconds:
            _round(url, queue, report)
            report.rounds += 1
            report.samples.append(sample(elapsed))
    finally:
        service.close()
    if service.errors:
        raise AssertionError(f"the soak's service failed: {service.errors[0]!r}")
    report.end = sample(time.monotonic() - began)
    log.info("soak of %s: %s", report.url, report.summary())
    return report
