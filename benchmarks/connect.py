"""How long a connection takes to open: ``create_connection()`` then ``close()``.

A connection's set-up is a few frames each way (STOMP's CONNECT and CONNECTED; AMQP's
header, SASL and open), so it shows delays that a stream of messages hides, such as a
broker that keeps Nagle's algorithm on and a client that acknowledges at the TCP level
late (ActiveMQ Classic over AMQP took 47 ms a connection here until the AMQP driver
acknowledged every read at once). Each target: ``--runs`` connections after one untimed,
median and worst in milliseconds.

    python benchmarks/connect.py [--targets embedded,activemq/amqp,rabbitmq/stomp,...] [--runs N]

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
import statistics
import time

from jmslike import ConnectionFactory
from jmslike_bench.env import TARGETS, target_url


def timings(url: str, runs: int) -> list[float]:
    """Milliseconds for each of ``runs`` connections opened and closed, after a warm-up."""
    factory = ConnectionFactory(url)
    factory.create_connection().close()
    spent = []
    for _ in range(runs):
        started = time.perf_counter()
        connection = factory.create_connection()
        opened = time.perf_counter()
        connection.close()
        spent.append((opened - started) * 1000)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"{'target':16}{'median ms':>10}{'worst ms':>10}")
    for target in args.targets.split(","):
        spent = timings(target_url(target), args.runs)
        print(f"{target:16}{statistics.median(spent):10.2f}{max(spent):10.2f}")


if __name__ == "__main__":
    main()
