"""Embedded broker throughput through the public API (issue 2's speed targets).

(a) 100,000 x 1 KiB text messages sent, then received, in no group; (b) the same spread
round-robin over 1,000 ordering groups; reported as messages per second through both
phases (N / (send time + receive time)) and the ratio b/a. Then the listener container:
100 groups x 100 messages with a 1 ms handler, concurrency 8 against concurrency 1.

    python benchmarks/embedded.py [--messages N] [--runs R] [--json FILE] [--clock cpu]

Each figure is the median of ``--runs`` runs (default 5), each on a fresh broker; (a) and
(b) runs alternate, so that drift on a shared machine affects both alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid

from jmslike import ConnectionFactory, Message, MessageListenerContainer

BODY = "x" * 1024


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
"""``--clock cpu`` times (a) and (b) by the sending and receiving thread's own CPU time:
on a shared machine the wall clock counts other processes' turns too, while the thread's
CPU time is what a quiet machine's wall clock would show (both phases run on this thread)."""
clock = CLOCKS["wall"]


def throughput(messages: int, groups: int) -> float:
    """Messages per second through send-all then receive-all, on a fresh broker."""
    factory = ConnectionFactory(f"embedded://bench-{uuid.uuid4().hex[:8]}")
    with factory.create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue("bench")
        producers = [session.create_producer(queue) for _ in range(max(groups, 1))]
        if groups:
            for index, producer in enumerate(producers):
                producer.enable_ordering_group(f"group-{index}")
        started = clock()
        width = len(producers)
        for index in range(messages):
            producers[index % width].send(session.create_text_message(BODY))
        consumer = session.create_consumer(queue)
        connection.start()
        received = 0
        while received < messages and consumer.receive(5.0) is not None:
            received += 1
        elapsed = clock() - started
        if received != messages:
            raise SystemExit(f"lost messages: received {received} of {messages}")
        return messages / elapsed


def _container_seconds(groups: int, per_group: int, handler_ms: float, concurrency: int) -> float:
    """Seconds for a listener container to process groups x per_group messages."""
    factory = ConnectionFactory(f"embedded://bench-c-{uuid.uuid4().hex[:8]}")
    with factory.create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue("work")
        producers = [session.create_producer(queue) for _ in range(groups)]
        for index, producer in enumerate(producers):
            producer.enable_ordering_group(f"customer-{index}")
        for _ in range(per_group):
            for producer in producers:
                producer.send(session.create_text_message("event"))
    total = groups * per_group
    done = 0
    lock = threading.Lock()
    finished = threading.Event()

    def handle(message: Message) -> None:
        nonlocal done
        time.sleep(handler_ms / 1000.0)
        with lock:
            done += 1
            if done == total:
                finished.set()

    started = time.perf_counter()
    with MessageListenerContainer(factory, "queue://work", handle, concurrency=concurrency):
        if not finished.wait(300):
            raise SystemExit(f"container stalled at {done} of {total}")
    return time.perf_counter() - started


def container_speedup(
    groups: int = 100, per_group: int = 100, handler_ms: float = 1.0
) -> dict[str, float]:
    """Seconds to process groups x per_group messages at concurrency 1 and 8."""
    one = _container_seconds(groups, per_group, handler_ms, 1)
    eight = _container_seconds(groups, per_group, handler_ms, 8)
    return {"concurrency_1_s": one, "concurrency_8_s": eight, "speedup": one / eight}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--skip-container", action="store_true")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="time (a) and (b) by (default wall)"
    )
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock]

    throughput(10_000, 0)  # warm-up: imports, allocator
    a_runs: list[float] = []
    b_runs: list[float] = []
    for _ in range(args.runs):  # interleaved, so drift on a shared machine hits both alike
        a_runs.append(throughput(args.messages, 0))
        b_runs.append(throughput(args.messages, 1000))
    a, b = statistics.median(a_runs), statistics.median(b_runs)
    result: dict[str, object] = {
        "messages": args.messages,
        "no_groups_msg_per_s": round(a),
        "groups_1000_msg_per_s": round(b),
        "ratio_b_over_a": round(b / a, 3),
        "runs": {
            "no_groups": [round(x) for x in a_runs],
            "groups_1000": [round(x) for x in b_runs],
        },
    }
    print(
        f"(a) no groups      : {a:10,.0f} msg/s  (runs: {', '.join(f'{x:,.0f}' for x in a_runs)})"
    )
    print(
        f"(b) 1,000 groups   : {b:10,.0f} msg/s  (runs: {', '.join(f'{x:,.0f}' for x in b_runs)})"
    )
    print(f"    ratio b/a      : {b / a:10.3f}   (target >= 0.8; (a) target >= 50,000 msg/s)")
    if not args.skip_container:
        speed = container_speedup()
        result["container"] = {k: round(v, 3) for k, v in speed.items()}
        print(
            f"container 100x100, 1 ms handler: concurrency 1 {speed['concurrency_1_s']:.2f} s, "
            f"concurrency 8 {speed['concurrency_8_s']:.2f} s, speed-up {speed['speedup']:.2f}x "
            "(target >= 6)"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
