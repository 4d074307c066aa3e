"""``benchmarks/stomp_acks.py`` at a tiny scale on each STOMP broker: every kind of
receive (one ACK per message, cumulative ACKs, jmslike) comes out with its figures and
the broker's CPU. Checks that the benchmark runs, never how fast (its figures are for
docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from brokerenv import broker_url

BENCH = Path(__file__).parents[2] / "benchmarks" / "stomp_acks.py"


@pytest.mark.stomp
@pytest.mark.parametrize(
    "broker",
    [
        pytest.param("rabbitmq", marks=pytest.mark.rabbitmq),
        pytest.param("activemq", marks=pytest.mark.activemq),
        pytest.param("artemis", marks=pytest.mark.artemis),
    ],
)
def test_stomp_acks_bench_reports_every_kind(broker: str) -> None:
    broker_url(f"JMSLIKE_TEST_{broker.upper()}_STOMP_URL")  # fails, never skips, without it
    command = [sys.executable, str(BENCH), "--brokers", broker, "--count", "300", "--runs", "1"]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    rows = [line.split() for line in finished.stdout.splitlines() if line.startswith(broker)]
    assert [row[1] for row in rows] == ["individual", "cumulative", "jmslike"], finished.stdout
    for _name, _kind, rate, client_us, broker_us in rows:
        assert float(rate.replace(",", "")) > 0 and float(client_us) > 0, finished.stdout
        assert float(broker_us) >= 0, finished.stdout  # "-": the broker's CPU was not read
