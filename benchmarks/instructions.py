"""CPU instructions per message on the embedded broker, counted by valgrind's callgrind.

A shared virtual machine's speed moves by half between runs, so timings of small changes
to the hot path say little; the number of instructions executed does not move. Each
line runs a fresh interpreter under callgrind twice, with ``--small`` and with
``--large`` messages (1 KiB text, sent through the public API, then received with
``receive()`` in AUTO_ACKNOWLEDGE, factory defaults), and divides the difference by the
difference in messages, so start-up and imports cancel out. The send column comes from
runs that only send; the receive column is the rest.

    python benchmarks/instructions.py [--groups 0,1000] [--small 2000] [--large 6000]

Needs valgrind (Debian: ``apt-get install valgrind``); each line takes about a minute.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import uuid

from jmslike import ConnectionFactory

BODY = "x" * 1024
_COLLECTED = re.compile(r"Collected : (\d+)")


def run(messages: int, groups: int, receive: bool) -> None:
    """Send ``messages`` (round-robin over ``groups`` bound producers), then receive them."""
    factory = ConnectionFactory(f"embedded://instructions-{uuid.uuid4().hex[:8]}")
    with factory.create_connection() as connection:
        session = connection.create_session()
        queue = session.create_queue("bench")
        producers = [session.create_producer(queue) for _ in range(max(groups, 1))]
        for index, producer in enumerate(producers if groups else ()):
            producer.enable_ordering_group(f"group-{index}")
        for index in range(messages):
            producers[index % len(producers)].send(session.create_text_message(BODY))
        if not receive:
            return
        consumer = session.create_consumer(queue)
        connection.start()
        for index in range(messages):
            if consumer.receive(5.0) is None:
                raise SystemExit(f"lost messages: received {index} of {messages}")


def count(messages: int, groups: int, receive: bool) -> int:
    """Instructions callgrind counted for one child run."""
    child = [sys.executable, __file__, "--child", str(messages), str(groups), str(int(receive))]
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *child],
        capture_output=True,
        text=True,
        check=True,
    )
    found = _COLLECTED.search(result.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{result.stderr}")
    return int(found.group(1))


def per_message(small: int, large: int, groups: int) -> tuple[int, int]:
    """(send, send and receive) instructions a message."""
    span = large - small
    send = (count(large, groups, False) - count(small, groups, False)) // span
    both = (count(large, groups, True) - count(small, groups, True)) // span
    return send, both


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--groups", default="0,1000", help="comma-separated group counts")
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=6000)
    args = parser.parse_args(argv)
    if args.child:
        messages, groups, receive = args.child
        run(messages, groups, bool(receive))
        return 0
    if args.large <= args.small:
        parser.error(f"--large {args.large} must be more than --small {args.small}")
    print("| groups | send | receive | both |")
    print("| ---: | ---: | ---: | ---: |")
    for groups in (int(g) for g in args.groups.split(",")):
        send, both = per_message(args.small, args.large, groups)
        print(f"| {groups:,} | {send:,} | {both - send:,} | {both:,} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
