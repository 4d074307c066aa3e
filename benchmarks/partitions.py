"""Partitioned queues across consumer processes: throughput scaling and take-over time.

The issue's measurement (issue 16), on real brokers, with the cross-process tests'
consumer processes (tests/integration/workers/partition_worker.py: plain receive loops,
CLIENT_ACKNOWLEDGE, the queue partitioned by jmslike.toml alone):

* **scaling**: ``--messages`` (100,000) in ``--groups`` (1,000) groups are queued, then 1,
  2 and 4 consumer processes (``--sessions`` sessions each) take them with a
  ``--work-ms`` (2 ms) handler; with ``--settle`` the processes start first, their
  partitions settle, and then the messages are sent. Throughput is messages over the
  time from the first message's start to the last one's end. Each row also says where
  the time went: the consumer processes' CPU a message, how busy the machine's cores
  were, a session's mean receive wait, work and acknowledgement per message, and the
  balance (mean messages a session over the busiest session's). Every run is checked with
  jmslike.testing.ordercheck: nothing lost, nothing processed twice unflagged, every
  group in order, never two of a group at once.
* **take-over**: three processes consume, their partitions settled before the first
  send; one is killed with SIGKILL mid-stream; for each partition it owned, the time
  from the kill to the first message of that partition a surviving process starts on
  (median and max over ``--kill-trials`` kills).

    python benchmarks/partitions.py [--cases rabbitmq-stomp,rabbitmq-amqp]
        [--messages 100000] [--groups 1000] [--work-ms 2] [--processes 1,2,4]
        [--sessions 2] [--partitions 16] [--kill-trials 3] [--settle] [--markdown FILE]

The brokers must be running (scripts/brokers.sh start). docs/performance.md has the
figures of the last sitting.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# This directory holds benchmarks/stomp.py, which would shadow the stomp.py library.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))

from brokercases import case_url, delete_rabbitmq_queues  # noqa: E402
from integration.test_partitions_processes import Fleet, send_groups  # noqa: E402

from jmslike import DeliveryMode  # noqa: E402
from jmslike.testing.ordercheck import problems  # noqa: E402


def _queue() -> str:
    return f"queue://bench-parts-{uuid.uuid4().hex[:8]}"


def _close(case: str, fleet: Fleet) -> None:
    """Stop the processes and delete the partition queues (RabbitMQ's quorum queues pile
    up otherwise: see tests/brokercases.py)."""
    try:
        fleet.close()
    finally:
        for child, _log in fleet.workers:
            if child.poll() is None:
                child.kill()
        delete_rabbitmq_queues(case, fleet.queue.removeprefix("queue://"))


def _busy_jiffies() -> tuple[int, int]:
    """(busy, total) clock ticks of the whole machine so far, from /proc/stat: how busy
    both cores were while the consumers ran (broker included) says where scaling stops."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _phases(done: list[dict[str, Any]]) -> dict[str, float]:
    """Mean milliseconds a session spent per message waiting in ``receive``, working and
    acknowledging: with the work fixed, the other two say whether the broker round trips
    or the machine hold a session back."""
    sessions: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for record in done:
        sessions.setdefault((record["pid"], record.get("session", 0)), []).append(record)
    waits, works, acks = [], [], []
    for records in sessions.values():
        records.sort(key=lambda r: r["start"])
        for before, after in itertools.pairwise(records):
            waits.append(after["start"] - before["finished"])
        works += [r["end"] - r["start"] for r in records]
        acks += [r["finished"] - r["end"] for r in records]

    def mean(values: list[float]) -> float:
        return statistics.fmean(values) * 1000 if values else 0.0

    counts = [len(records) for records in sessions.values()]
    return {
        "wait_ms": mean(waits),
        "work_ms": mean(works),
        "ack_ms": mean(acks),
        # The run lasts as long as its busiest session: how evenly the messages spread.
        "balance": statistics.fmean(counts) / max(counts) if counts else 0.0,
        "per_session": sorted(counts),
    }


_PID_FILES = {
    "rabbitmq": "rabbitmq/rabbitmq.pid",
    "activemq": "activemq/activemq.pid",
    "artemis": "artemis-instance/data/artemis.pid",
}


def _broker_cpu(case: str) -> float | None:
    """CPU seconds the case's broker has used so far, from the pid file scripts/brokers.sh
    writes ($JMSLIKE_BROKERS_DIR, default .brokers); None where there is none."""
    home = Path(os.environ.get("JMSLIKE_BROKERS_DIR") or _HERE.parent / ".brokers")
    try:
        pid = int((home / _PID_FILES[case.partition("-")[0]]).read_text().split()[0])
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (KeyError, OSError, ValueError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_settled(fleet: Fleet, partitions: int, processes: int, timeout: float) -> None:
    """Until every partition has its owner and the processes hold even shares (within
    one), as they report every half second."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        owned = fleet.owned()
        counts = [len(parts) for parts in owned.values()]
        held = sorted(p for parts in owned.values() for p in parts)
        settled = len(owned) == processes and held == list(range(partitions))
        if settled and max(counts) - min(counts) <= 1:
            return
        time.sleep(0.25)
    raise TimeoutError(f"partitions not settled over {processes} processes: {fleet.owned()}")


def scaling(case: str, args: argparse.Namespace, processes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Fleet(
            Path(tmp), case_url(case), _queue(), "client",
            partitions=args.partitions, work_ms=(args.work_ms, args.work_ms),
        )  # fmt: skip
        per_group = args.messages // args.groups
        try:
            if args.settle:
                for _ in range(processes):
                    fleet.start(args.sessions)
                _wait_settled(fleet, args.partitions, processes, args.timeout)
                # Consumption starts with the first send: CPU is counted from here.
                (busy_before, total_before), broker_before = _busy_jiffies(), _broker_cpu(case)
            started = time.monotonic()
            sent = send_groups(fleet, args.groups, per_group, DeliveryMode.NON_PERSISTENT)
            send_seconds = time.monotonic() - started
            if not args.settle:
                (busy_before, total_before), broker_before = _busy_jiffies(), _broker_cpu(case)
                for _ in range(processes):
                    fleet.start(args.sessions)
            fleet.wait_processed(len(sent), args.timeout)
            (busy_after, total_after), broker_after = _busy_jiffies(), _broker_cpu(case)
        finally:
            _close(case, fleet)
        records = fleet.records()
    cpu_s = sum(r["cpu_s"] for r in records if "cpu_s" in r)
    done = [r for r in records if r.get("ok")]
    elapsed = max(r.get("finished", r["end"]) for r in done) - min(r["start"] for r in done)
    found = problems(records, sent)
    return {
        "case": case,
        "processes": processes,
        "sessions": args.sessions,
        "messages": len(sent),
        "send_msg_s": len(sent) / send_seconds,
        "msg_s": len(sent) / elapsed,
        "problems": found[:5],
        "duplicates": len(done) - len({r["text"] for r in done}),
        # CPU of the consumer processes (start to exit) per message, and how busy the
        # machine's cores were while they consumed (1.0: every core all the time).
        "consumer_cpu_us": cpu_s / len(sent) * 1e6,
        "machine_busy": (busy_after - busy_before) / max(1, total_after - total_before),
        # The broker's CPU a message while they consumed (None: no pid file found).
        "broker_cpu_us": (
            (broker_after - broker_before) / len(sent) * 1e6
            if broker_before is not None and broker_after is not None
            else None
        ),
        **_phases(done),
    }


def takeover(case: str, args: argparse.Namespace) -> list[float]:
    """Seconds from a SIGKILL to the first message a survivor starts on, per partition
    the killed process owned."""
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Fleet(
            Path(tmp), case_url(case), _queue(), "client",
            partitions=args.partitions, work_ms=(args.work_ms, args.work_ms),
        )  # fmt: skip
        try:
            victim = fleet.start(args.sessions)
            for _ in range(2):
                fleet.start(args.sessions)
            # A kill before the partitions settle can hit a process that owns nothing
            # (in a rebalance, or for good under the old assignment: seen in CI), and
            # then times nothing. The measure is a kill of a settled owner.
            _wait_settled(fleet, args.partitions, 3, args.timeout)
            sent = send_groups(fleet, 200, 50, DeliveryMode.NON_PERSISTENT)
            fleet.wait_processed(len(sent) // 5, args.timeout)
            owned = fleet.owned().get(victim.pid, [])
            if not owned:
                raise RuntimeError(f"the victim owns no partition once settled: {fleet.owned()}")
            killed_at = time.time()
            victim.kill()
            victim.wait(10.0)
            fleet.wait_processed(len(sent), args.timeout)
        finally:
            _close(case, fleet)
        records = [r for r in fleet.records() if r.get("ok") and r["pid"] != victim.pid]
    times = []
    for partition in owned:
        starts = [
            r["start"]
            for r in records
            if r["start"] > killed_at
            and zlib.crc32(r["text"].split(":")[0].encode()) % args.partitions == partition
        ]
        if starts:
            times.append(min(starts) - killed_at)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="rabbitmq-stomp,rabbitmq-amqp")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--work-ms", type=float, default=2.0)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--kill-trials", type=int, default=3)
    parser.add_argument(
        "--settle",
        action="store_true",
        help="start the processes and wait for their partitions to settle, then send "
        "(default: queue every message first, then start them one after another)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows, kills = [], {}
    for case in args.cases.split(","):
        for processes in (int(p) for p in args.processes.split(",")):
            row = scaling(case, args, processes)
            rows.append(row)
            print(json.dumps(row), flush=True)
        times: list[float] = []
        for _ in range(args.kill_trials):
            times += takeover(case, args)
        kills[case] = times
        print(json.dumps({"case": case, "takeover_s": times}), flush=True)
    lines = [
        "| broker / protocol | processes x sessions | msg/s | vs 1 process | lost, "
        "misordered, overlapping | unflagged duplicates | CPU a message: consumers / "
        "broker | cores busy | per message: receive wait / work / acknowledge |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        base = next(r["msg_s"] for r in rows if r["case"] == row["case"] and r["processes"] == 1)
        broker = "-" if row["broker_cpu_us"] is None else f"{row['broker_cpu_us']:,.0f}"
        lines.append(
            f"| {row['case']} | {row['processes']} x {row['sessions']} | {row['msg_s']:,.0f} | "
            f"{row['msg_s'] / base:.2f} | {'; '.join(row['problems']) or 'none'} | "
            f"{row['duplicates']} | {row['consumer_cpu_us']:,.0f} / {broker} µs | "
            f"{row['machine_busy']:.0%} | {row['wait_ms']:.2f} / {row['work_ms']:.2f} / "
            f"{row['ack_ms']:.2f} ms |"
        )
    lines += ["", "| broker / protocol | kill to take-over, median | max | partitions timed |",
              "| --- | --- | --- | --- |"]  # fmt: skip
    for case, times in kills.items():
        if times:
            lines.append(
                f"| {case} | {statistics.median(times):.2f} s | {max(times):.2f} s | {len(times)} |"
            )
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps({"scaling": rows, "takeover": kills}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
