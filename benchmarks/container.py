"""A listener container's speed-up with its concurrency, and what each message costs.

``jmslike bench``'s ``container-1`` / ``container-8`` workloads give the rate; this script
gives what explains it, per broker and protocol: the client's CPU time a message, its
voluntary context switches a message (threads that went to sleep and were woken: the
interpreter lock changing hands shows here) and the broker's CPU time a message (the
process listening on the URL's port, from ``/proc``; "-" where it cannot be read), and,
timed in the handler, how long its work took a message (its sleep, longer than asked by
the time the woken thread waits for a core and the interpreter lock) and how long a
session thread took between a handler's return and its next call.

Each run fills a fresh queue with ``--count`` x 1 KiB non-persistent messages in
``--groups`` groups, sent round-robin, then starts a ``MessageListenerContainer`` whose
handler sleeps ``--work-ms`` (0: does nothing, the container's own cost alone) and
times it from its start until the last message is handled. The concurrencies alternate
within each run, so drift on a shared machine hits them alike; each line is a median
of ``--runs``, after an untimed warm-up. ``--prefetch`` sets the factory's prefetch (the
default leaves the factory's own: what users get), ``--thread-cpus`` its ``thread_cpus``
(docs/threading.md#placement; free by default), ``--switch-interval`` the interpreter's
(``sys.setswitchinterval``, 0.005 s by default).

    python benchmarks/container.py [--targets embedded,activemq/amqp,rabbitmq/stomp,...]
        [--concurrency 1,8] [--count N] [--groups G] [--work-ms W] [--runs R]
        [--prefetch P] [--thread-cpus one|0|...] [--switch-interval S]

Broker URLs come from the environment (``JMSLIKE_TEST_<BROKER>_<PROTOCOL>_URL``), else
from ``.brokers/brokers.env`` (written by ``scripts/brokers.sh start``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder comes first on sys.path; benchmarks/stomp.py would then
# shadow the stomp.py library.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import resource
import statistics
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field

from jmslike import ConnectionFactory, DeliveryMode, Message, MessageListenerContainer
from jmslike_bench.cpu import cpu_of, listening_pid, own_cpu
from jmslike_bench.env import TARGETS, delete_rabbitmq_queue, quiet_partition_advice, target_url

IDLE = 120.0
"""Seconds a run may take before it fails."""


@dataclass
class Line:
    rates: list[float] = field(default_factory=list)
    client_us: list[float] = field(default_factory=list)
    switches: list[float] = field(default_factory=list)
    broker_us: list[float] = field(default_factory=list)
    work_ms: list[float] = field(default_factory=list)
    """The handler's own time a message (its sleep: longer than ``--work-ms`` by the time
    the woken thread waits for a core and the interpreter lock)."""
    between_ms: list[float] = field(default_factory=list)
    """A session thread's time from a handler's return to its next call (the
    acknowledgement, the next message, the dispatch), a message."""


@dataclass
class Run:
    rate: float
    client_cpu: float
    switches: float
    broker_cpu: float | None
    work_ms: float
    between_ms: float


def url_of(target: str, prefetch: int | None, thread_cpus: str = "") -> str:
    """The URL of ``target``, with ``prefetch`` and ``thread_cpus`` if set."""
    url = target_url(target, "embedded://bench-container")
    if prefetch is not None:
        url += ("&" if "?" in url else "?") + f"prefetch={prefetch}"
    if thread_cpus:
        url += ("&" if "?" in url else "?") + f"threadCpus={urllib.parse.quote(thread_cpus)}"
    return url


def _switches() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def fill(factory: ConnectionFactory, queue: str, count: int, groups: int) -> None:
    with factory.create_connection() as connection:
        session = connection.create_session()
        producers = [session.create_producer(session.create_queue(queue)) for _ in range(groups)]
        for index, producer in enumerate(producers):
            producer.enable_ordering_group(f"g{index}")
        body = "x" * 1024
        for n in range(count):
            producers[n % groups].send(
                session.create_text_message(body), delivery_mode=DeliveryMode.NON_PERSISTENT
            )


def run_once(
    factory: ConnectionFactory,
    concurrency: int,
    count: int,
    groups: int,
    work: float,
    rabbitmq: bool = False,
    pid: int | None = None,
) -> Run:
    """One container run, the queue's filling left out."""
    queue = f"bench-container-{uuid.uuid4().hex[:10]}"
    fill(factory, queue, count, groups)
    lock = threading.Lock()
    left = count
    done = threading.Event()
    worked = between = 0.0
    gaps = 0
    returned: dict[int, float] = {}  # session thread -> when its handler last returned

    def on_message(_message: Message) -> None:
        nonlocal left, worked, between, gaps
        called = time.perf_counter()
        if work:
            time.sleep(work)
        now = time.perf_counter()
        thread = threading.get_ident()
        with lock:
            worked += now - called
            last = returned.get(thread)
            if last is not None:
                between += called - last
                gaps += 1
            returned[thread] = now
            left -= 1
            if left == 0:
                done.set()

    try:
        cpu, switches, theirs = own_cpu(), _switches(), cpu_of(pid)
        started = time.perf_counter()
        with MessageListenerContainer(
            factory, f"queue://{queue}", on_message, concurrency=concurrency
        ):
            if not done.wait(IDLE):
                raise RuntimeError(f"concurrency {concurrency}: handled {count - left} of {count}")
            elapsed = time.perf_counter() - started
        after = cpu_of(pid)
        broker = after - theirs if after is not None and theirs is not None else None
        return Run(
            count / elapsed,
            own_cpu() - cpu,
            _switches() - switches,
            broker,
            worked / count * 1e3,
            between / max(gaps, 1) * 1e3,
        )
    finally:
        if rabbitmq:  # it keeps a STOMP /queue/ for ever: do not fill the broker measured
            delete_rabbitmq_queue(queue)


def run_target(
    target: str, url: str, concurrencies: list[int], count: int, groups: int, work: float, runs: int
) -> dict[int, Line]:
    """Every concurrency ``runs`` times on one target, alternating, after a warm-up."""
    factory = ConnectionFactory(url)
    rabbitmq = target.startswith("rabbitmq")
    port = urllib.parse.urlsplit(url).port
    pid = listening_pid(port) if port else None
    lines = {c: Line() for c in concurrencies}
    run_once(factory, max(concurrencies), min(count, 2_000), groups, work, rabbitmq)  # warm-up
    for run in range(runs):
        for concurrency in concurrencies if run % 2 == 0 else concurrencies[::-1]:
            done = run_once(factory, concurrency, count, groups, work, rabbitmq, pid)
            line = lines[concurrency]
            line.rates.append(done.rate)
            line.client_us.append(done.client_cpu / count * 1e6)
            line.switches.append(done.switches / count)
            if done.broker_cpu is not None:
                line.broker_us.append(done.broker_cpu / count * 1e6)
            line.work_ms.append(done.work_ms)
            line.between_ms.append(done.between_ms)
    return lines


def _median(values: list[float], form: str) -> str:
    return form.format(statistics.median(values)) if values else "-"


def _concurrencies(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--concurrency {text!r}: need numbers >= 1")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--concurrency", type=_concurrencies, default=[1, 8])
    parser.add_argument("--count", type=int, default=8_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--work-ms", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--prefetch", type=int, default=None)
    parser.add_argument(
        "--thread-cpus", default="", help="the factory's thread_cpus ('one', '0', ...)"
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="sys.setswitchinterval for the run (seconds; Python's default is 0.005)",
    )
    args = parser.parse_args(argv)
    if args.switch_interval is not None:
        if args.switch_interval <= 0:
            parser.error(f"--switch-interval {args.switch_interval}: must be > 0")
        sys.setswitchinterval(args.switch_interval)
    quiet_partition_advice()
    for name, value in (("--count", args.count), ("--groups", args.groups), ("--runs", args.runs)):
        if value < 1:
            parser.error(f"{name} {value}: must be >= 1")
    if args.work_ms < 0:
        parser.error(f"--work-ms {args.work_ms}: must be >= 0")
    urls = {
        t.strip(): url_of(t.strip(), args.prefetch, args.thread_cpus)
        for t in args.targets.split(",")
    }
    prefetch = "factory default" if args.prefetch is None else str(args.prefetch)
    print(
        f"{args.count:,} x 1 KiB non-persistent in {args.groups} groups, handler "
        f"{args.work_ms:g} ms, prefetch {prefetch}, thread_cpus "
        f"{args.thread_cpus or 'free'}, medians of {args.runs}"
    )
    base = args.concurrency[0]
    print(
        f"{'target':15} {'conc':>4} {'msg/s':>9} {f'x conc {base}':>10} {'client µs/msg':>14} "
        f"{'switches/msg':>13} {'broker µs/msg':>14} {'handler ms':>11} {'between ms':>11}"
    )
    for target, url in urls.items():
        lines = run_target(
            target, url, args.concurrency, args.count, args.groups, args.work_ms / 1000, args.runs
        )
        first = statistics.median(lines[base].rates)
        for concurrency, line in lines.items():
            ratio = statistics.median(line.rates) / first
            print(
                f"{target:15} {concurrency:>4} {_median(line.rates, '{:,.0f}'):>9} "
                f"{ratio:>10.2f} {_median(line.client_us, '{:.0f}'):>14} "
                f"{_median(line.switches, '{:.1f}'):>13} {_median(line.broker_us, '{:.0f}'):>14} "
                f"{_median(line.work_ms, '{:.3f}'):>11} {_median(line.between_ms, '{:.3f}'):>11}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
