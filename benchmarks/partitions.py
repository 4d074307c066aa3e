"""Partitioned queues across consumer processes: throughput scaling and take-over time.

The issue's measurement (issue 16), on real brokers, with the cross-process tests'
consumer processes (tests/integration/workers/partition_worker.py: plain receive loops,
CLIENT_ACKNOWLEDGE, the queue partitioned by jmslike.toml alone):

* **scaling**: ``--messages`` (100,000) in ``--groups`` (1,000) groups are queued, then 1,
  2 and 4 consumer processes (``--sessions`` sessions each) take them with a
  ``--work-ms`` (2 ms) handler. Throughput is messages over the time from the first
  message's start to the last one's end. Every run is checked with
  jmslike.testing.ordercheck: nothing lost, nothing processed twice unflagged, every
  group in order, never two of a group at once.
* **take-over**: three processes consume; one is killed with SIGKILL mid-stream; for
  each partition it owned, the time from the kill to the first message of that partition
  a surviving process starts on (median and max over ``--kill-trials`` kills).

    python benchmarks/partitions.py [--cases rabbitmq-stomp,rabbitmq-amqp]
        [--messages 100000] [--groups 1000] [--work-ms 2] [--processes 1,2,4]
        [--sessions 2] [--partitions 16] [--kill-trials 3] [--markdown FILE]

The brokers must be running (scripts/brokers.sh start). docs/performance.md has the
figures of the last sitting.
"""

from __future__ import annotations

import argparse
import json
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


def scaling(case: str, args: argparse.Namespace, processes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Fleet(
            Path(tmp), case_url(case), _queue(), "client",
            partitions=args.partitions, work_ms=(args.work_ms, args.work_ms),
        )  # fmt: skip
        per_group = args.messages // args.groups
        started = time.monotonic()
        sent = send_groups(fleet, args.groups, per_group, DeliveryMode.NON_PERSISTENT)
        send_seconds = time.monotonic() - started
        try:
            for _ in range(processes):
                fleet.start(args.sessions)
            fleet.wait_processed(len(sent), args.timeout)
        finally:
            _close(case, fleet)
        records = fleet.records()
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
            sent = send_groups(fleet, 200, 50, DeliveryMode.NON_PERSISTENT)
            fleet.wait_processed(len(sent) // 5, args.timeout)
            owned = fleet.owned().get(victim.pid, [])
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
        "misordered, overlapping | unflagged duplicates |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        base = next(r["msg_s"] for r in rows if r["case"] == row["case"] and r["processes"] == 1)
        lines.append(
            f"| {row['case']} | {row['processes']} x {row['sessions']} | {row['msg_s']:,.0f} | "
            f"{row['msg_s'] / base:.2f} | {'; '.join(row['problems']) or 'none'} | "
            f"{row['duplicates']} |"
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
