"""The workloads of issue 8, each defined once so that every client does the same work.

Every workload moves ``size``-byte text messages (1 KiB by default) through a queue of its
own, fresh for each run. A *receive* workload reads what the *send* workload of the same
persistence just wrote (the send-then-receive of issue 5), so a queue is filled by the
client that drains it and no run pays for filling twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["WORKLOADS", "Kind", "Sizes", "Workload", "select"]


class Kind(Enum):
    """What a runner does; the runner decides how its client does it."""

    SEND = "send"
    RECEIVE = "receive"
    SEND_RECEIVE = "sendrecv"
    COMPETING = "competing"
    LATENCY = "latency"
    CONTAINER = "container"


@dataclass(frozen=True)
class Workload:
    """One line of the table: a kind of work with its parameters."""

    name: str
    kind: Kind
    persistent: bool = False
    groups: int = 0
    """Ordering groups the messages are spread over, round-robin (0: none)."""
    consumers: int = 1
    """Competing consumers (COMPETING) or the container's concurrency (CONTAINER)."""
    pipelined: bool = False
    """Persistent sends that overlap their round trips: jmslike's asynchronous send (JMS
    2.0, a CompletionListener), raw sends that wait for the broker's answers as they come
    (Proton) or for the last one's receipt (stomp.py)."""
    description: str = ""

    @property
    def delivery(self) -> str:
        return "persistent" if self.persistent else "non-persistent"


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("send", Kind.SEND, description="send N, non-persistent"),
        Workload("receive", Kind.RECEIVE, description="receive N (what send wrote)"),
        Workload("send-p", Kind.SEND, True, description="send N, persistent"),
        Workload("receive-p", Kind.RECEIVE, True, description="receive N persistent ones"),
        Workload(
            "send-pa",
            Kind.SEND,
            True,
            pipelined=True,
            description="send N, persistent, asynchronous (JMS 2.0 CompletionListener)",
        ),
        Workload("sendrecv", Kind.SEND_RECEIVE, description="send and receive at once"),
        Workload("sendrecv-p", Kind.SEND_RECEIVE, True, description="the same, persistent"),
        Workload("unordered-4", Kind.COMPETING, consumers=4, description="4 consumers, no groups"),
        Workload(
            "groups-4",
            Kind.COMPETING,
            groups=1000,
            consumers=4,
            description="4 consumers, 1,000 ordering groups",
        ),
        Workload("latency", Kind.LATENCY, description="p50/p99 at a fixed offered rate"),
        Workload(
            "container-1",
            Kind.CONTAINER,
            groups=100,
            consumers=1,
            description="listener container, 100 groups, 1 ms handler, concurrency 1",
        ),
        Workload(
            "container-8",
            Kind.CONTAINER,
            groups=100,
            consumers=8,
            description="the same at concurrency 8",
        ),
    )
}
"""Every workload, in the order a run goes through them (a receive after its send)."""


@dataclass(frozen=True)
class Sizes:
    """How much work each workload does; persistent sends get their own count because a
    broker that syncs its journal per message (Artemis: about 170 a second here) would
    otherwise take most of the run."""

    count: int = 20_000
    """Non-persistent throughput lines: enough that a run lasts a second or more on every
    broker, so that start-up and the first round trips do not set the figure."""
    persistent_count: int = 500
    pipelined_count: int = 5_000
    """Persistent sends that overlap: the broker syncs its journal for many at once."""
    latency_count: int = 1_000
    rate: float = 500.0
    """Offered rate of the latency workload, messages per second."""
    container_count: int = 4_000
    handler_ms: float = 1.0
    size: int = 1024
    prefetch: int = 100

    def count_for(self, workload: Workload) -> int:
        if workload.kind is Kind.LATENCY:
            return self.latency_count
        if workload.kind is Kind.CONTAINER:
            return self.container_count
        if workload.pipelined:
            return self.pipelined_count
        return self.persistent_count if workload.persistent else self.count

    @property
    def body(self) -> str:
        return "x" * self.size


QUICK = Sizes(
    count=200,
    persistent_count=50,
    pipelined_count=50,
    latency_count=100,
    rate=200.0,
    container_count=200,
)
"""``--quick``: every workload, each tiny: a smoke run, not a measurement."""


def select(names: str | None) -> list[Workload]:
    """The workloads named (comma-separated), in run order; a receive pulls in its send,
    which must fill the queue first."""
    if not names:
        return list(WORKLOADS.values())
    wanted = {name.strip() for name in names.split(",") if name.strip()}
    unknown = wanted - set(WORKLOADS)
    if unknown:
        raise ValueError(f"unknown workloads {sorted(unknown)}; choose from {', '.join(WORKLOADS)}")
    for receive, send in (("receive", "send"), ("receive-p", "send-p")):
        if receive in wanted:
            wanted.add(send)
    return [w for name, w in WORKLOADS.items() if name in wanted]
