"""The STOMP benchmark scripts at a tiny scale on each STOMP broker: ``stomp_acks.py``
(one ACK per message, cumulative ACKs, jmslike) and ``stomp_sends.py`` (jmslike holding
SENDs, jmslike writing each alone, raw stomp.py) come out with every kind, its figures
and the broker's CPU; ``stomp_groups.py`` (four grouped consumers, five ways) with every
kind, its rate and how evenly the broker spread the groups. Checks that the benchmarks
run, never how fast (their figures are for docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from brokerenv import broker_url

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
STOMP_BROKERS = [
    pytest.param("rabbitmq", marks=pytest.mark.rabbitmq),
    pytest.param("activemq", marks=pytest.mark.activemq),
    pytest.param("artemis", marks=pytest.mark.artemis),
]


@pytest.mark.stomp
@pytest.mark.parametrize("broker", STOMP_BROKERS)
@pytest.mark.parametrize(
    ("script", "kinds"),
    [
        ("stomp_acks.py", ["individual", "cumulative", "jmslike"]),
        ("stomp_sends.py", ["jmslike", "unbatched", "raw"]),
    ],
)
def test_stomp_bench_reports_every_kind(broker: str, script: str, kinds: list[str]) -> None:
    broker_url(f"JMSLIKE_TEST_{broker.upper()}_STOMP_URL")  # fails, never skips, without it
    bench = str(BENCHMARKS / script)
    command = [sys.executable, bench, "--brokers", broker, "--count", "300", "--runs", "1"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [line.split() for line in finished.stdout.splitlines() if line.startswith(broker)]
    assert [row[1] for row in rows] == kinds, finished.stdout
    for _name, _kind, rate, client_us, broker_us in rows:
        assert float(rate.replace(",", "")) > 0 and float(client_us) > 0, finished.stdout
        assert float(broker_us) >= 0, finished.stdout  # "-": the broker's CPU was not read


@pytest.mark.stomp
@pytest.mark.parametrize("broker", STOMP_BROKERS)
def test_stomp_groups_bench_reports_every_kind(broker: str) -> None:
    """``stomp_groups.py`` (four grouped consumers: raw stomp.py two ways, jmslike on one
    connection and on four, the listener container): every kind, a rate, and the
    busiest consumer's share (at least an even share, at most all four shares)."""
    broker_url(f"JMSLIKE_TEST_{broker.upper()}_STOMP_URL")  # fails, never skips, without it
    bench = str(BENCHMARKS / "stomp_groups.py")
    command = [sys.executable, bench, "--brokers", broker, "--count", "400", "--groups", "10"]
    finished = subprocess.run(
        [*command, "--runs", "1"], capture_output=True, text=True, timeout=300, check=False
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [line.split() for line in finished.stdout.splitlines() if line.startswith(broker)]
    assert [row[1] for row in rows] == [
        "raw",
        "raw-threads",
        "jmslike",
        "jmslike-4conn",
        "container",
    ], finished.stdout
    for row in rows:
        assert float(row[2].replace(",", "")) > 0, finished.stdout
        assert 1.0 <= float(row[3]) <= 4.0, finished.stdout
