"""One bench invocation: every target, every client, every workload, ``runs`` times.

Runs are interleaved (run 1 of everything, then run 2...), and the order of the clients
rotates from run to run, so that drift on a shared machine (another process, the JVM of
a broker warming up, a journal filling) hits every client alike instead of the one that
happens to go last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import sys
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from jmslike_bench.runners.base import Measurement, Runner
from jmslike_bench.targets import Target
from jmslike_bench.workloads import Kind, Sizes, Workload

__all__ = ["CLIENTS", "Cell", "Results", "make_runners", "run_suite"]

log = logging.getLogger("jmslike.bench.suite")

CLIENTS = ("jmslike", "defaults", "raw", "java")
"""The columns: jmslike tuned (the other clients' prefetch), jmslike with its factory
defaults, the raw library it wraps, the broker's Java JMS client."""


@dataclass
class Cell:
    """Every run of one workload by one client on one target."""

    samples: list[Measurement] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@dataclass
class Results:
    """What a bench measured, and what it could not."""

    sizes: Sizes
    runs: int
    workloads: list[Workload]
    targets: list[Target]
    warmup: int = 0
    """Messages per untimed warm-up run (0: none), in each client's own process or JVM."""
    libraries: dict[str, dict[str, str]] = field(default_factory=dict)
    """target name -> client -> the library that client is (``stomp.py 8.1.2``)."""
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    """target name -> client -> why it did not run."""
    cells: dict[tuple[str, str, str], Cell] = field(default_factory=dict)
    """(target name, client, workload name) -> its runs."""

    def cell(self, target: str, client: str, workload: str) -> Cell:
        return self.cells.setdefault((target, client, workload), Cell())


def make_runners(
    target: Target, sizes: Sizes, clients: list[str], java_reason: Callable[[], str | None]
) -> tuple[list[Runner], dict[str, str]]:
    """The runners for ``target``, and why the others are missing."""
    runners: list[Runner] = []
    skipped: dict[str, str] = {}
    if "jmslike" in clients or "defaults" in clients:
        from jmslike_bench.runners.jms import JmslikeRunner

        if "jmslike" in clients:
            runners.append(JmslikeRunner(target, sizes))
        if "defaults" in clients:
            runners.append(JmslikeRunner(target, sizes, tuned=False))
    if "raw" in clients:
        try:
            if target.protocol == "stomp":
                from jmslike_bench.runners.raw_stomp import RawStompRunner

                runners.append(RawStompRunner(target, sizes))
            elif target.protocol == "amqp":
                from jmslike_bench.runners.raw_proton import RawProtonRunner

                runners.append(RawProtonRunner(target, sizes))
            else:
                skipped["raw"] = "jmslike's own broker: there is no raw library"
        except ImportError as exc:
            skipped["raw"] = f"not installed: {exc.name}"
    if "java" in clients:
        reason = (
            "no Java JMS client for the embedded broker"
            if target.java_protocol is None
            else java_reason()
        )
        if reason is None:
            from jmslike_bench.runners.java import JavaRunner

            runners.append(JavaRunner(target, sizes))
        else:
            skipped["java"] = reason
    return runners, skipped


def _fresh(tag: str) -> str:
    return f"bench-{tag}-{uuid.uuid4().hex[:10]}"


def _one_pass(
    runner: Runner,
    workloads: list[Workload],
    results: Results | None,
    step: Callable[[str], None],
) -> None:
    """Every workload once with ``runner``; None for ``results``: a warm-up, unrecorded."""
    target = runner.target.name
    filled: dict[bool, str | None] = {}
    for workload in workloads:
        if not runner.supports(workload):
            continue
        step(f"{target} {runner.client} {workload.name}")
        if workload.kind is Kind.RECEIVE:
            queue = filled.pop(workload.persistent, None)
            if queue is None:  # its send failed: nothing to receive
                if results is not None:
                    results.cell(target, runner.client, workload.name).failures.append(
                        "the send before it failed"
                    )
                continue
        else:
            queue = _fresh(runner.client)
        try:
            if workload.kind is not Kind.RECEIVE:
                runner.prepare(queue)
            measured = runner.run(workload, queue)
            if results is not None:
                results.cell(target, runner.client, workload.name).samples.append(measured)
            if workload.kind is Kind.SEND and not workload.pipelined:
                filled[workload.persistent] = queue
                continue  # its receive, or the end of the pass, cleans up
        except Exception as exc:
            if workload.kind is Kind.SEND and not workload.pipelined:
                filled[workload.persistent] = None
            text = traceback.format_exc()
            log.warning("%s %s %s failed: %s", target, runner.client, workload.name, exc)
            log.debug("%s", text)
            if results is not None:
                results.cell(target, runner.client, workload.name).failures.append(
                    f"{type(exc).__name__}: {exc}"
                )
        runner.cleanup(queue)
    for left in filled.values():  # sends whose receive was not asked for
        if left is not None:
            runner.cleanup(left)


@contextlib.contextmanager
def _progress(total: int, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A tqdm bar on stderr over every workload run (off when not asked for)."""
    if not enabled:
        yield lambda label: log.info("running %s", label)
        return
    from tqdm import tqdm

    with tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True) as bar:
        started = [False]

        def step(label: str) -> None:
            if started[0]:
                bar.update(1)
            started[0] = True
            bar.set_description(label, refresh=True)

        yield step
        if started[0]:
            bar.update(1)


def warm_workloads(workloads: list[Workload]) -> list[Workload]:
    """What the warm-up runs: each non-persistent throughput workload asked for (their
    code paths are the ones the timed runs take), with a receive's send; not the paced
    latency run nor the container, whose speed is the handler's."""
    kinds = (Kind.SEND, Kind.RECEIVE, Kind.SEND_RECEIVE, Kind.COMPETING)
    return [w for w in workloads if w.kind in kinds and not w.persistent]


def run_suite(
    targets: list[Target],
    workloads: list[Workload],
    sizes: Sizes,
    runs: int,
    clients: list[str],
    *,
    warmup: int = 0,
    progress: bool = False,
    java_reason: Callable[[], str | None] | None = None,
) -> Results:
    """Measure; never raises for a broker or client that fails (the result says so)."""
    if java_reason is None:
        from jmslike_bench.runners.java import java_unavailable

        cached: list[str | None] = []

        def java_reason() -> str | None:
            if not cached:
                cached.append(java_unavailable())
            return cached[0]

    results = Results(sizes, runs, workloads, targets, warmup)
    live: list[tuple[Target, list[Runner]]] = []
    for target in targets:
        if target.skipped:
            continue
        runners, skipped = make_runners(target, sizes, clients, java_reason)
        results.skipped[target.name] = skipped
        results.libraries[target.name] = {r.client: r.library for r in runners}
        live.append((target, runners))
    warm = warm_workloads(workloads)
    per_run = sum(
        sum(1 for r in runners for w in workloads if r.supports(w)) for _, runners in live
    )
    warm_steps = sum(len(runners) * len(warm) for _, runners in live) if warmup else 0
    try:
        with _progress(per_run * runs + warm_steps, progress) as step:
            if warmup:
                # Every client, in the process (the JVM) that then does the timed runs:
                # the brokers' JVMs and the Java client's JIT speed up a lot over their
                # first loads (docs/performance.md).
                small = dataclasses.replace(sizes, count=warmup)
                for _, runners in live:
                    for runner in runners:
                        runner.sizes = small
                        _one_pass(runner, warm, None, lambda label: step(f"warm-up {label}"))
                        runner.sizes = sizes
                        runner.warmup = warmup
            for run in range(runs):
                for _, runners in live:
                    shift = run % len(runners) if runners else 0
                    for runner in runners[shift:] + runners[:shift]:
                        _one_pass(runner, workloads, results, step)
    finally:
        for _, runners in live:
            for runner in runners:
                runner.close()
    return results
