"""``benchmarks/partitions.py`` end to end at a tiny scale on RabbitMQ over STOMP: the
scaling rows and the take-over times come out, with the diagnostics that say where
scaling stops. Checks that the benchmark runs and that its runs kept the promise; never
how fast (its figures are for docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from brokerenv import broker_url

pytestmark = [pytest.mark.stomp, pytest.mark.rabbitmq]

BENCH = Path(__file__).parents[2] / "benchmarks" / "partitions.py"


def test_partitions_bench_reports_scaling_and_take_over(tmp_path: Path) -> None:
    broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL")  # fails, never skips, without the broker
    out = tmp_path / "parts.json"
    command = [
        sys.executable, str(BENCH), "--cases", "rabbitmq-stomp", "--messages", "300",
        "--groups", "30", "--work-ms", "0.5", "--processes", "1,2", "--partitions", "4",
        "--kill-trials", "1", "--timeout", "120", "--json", str(out),
    ]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = report["scaling"]
    assert [row["processes"] for row in rows] == [1, 2]
    for row in rows:
        assert row["messages"] == 300 and row["problems"] == [], row
        assert row["msg_s"] > 0 and row["consumer_cpu_us"] > 0, row
        assert 0 < row["machine_busy"] <= 1 and 0 < row["balance"] <= 1, row
        assert row["broker_cpu_us"] is None or row["broker_cpu_us"] > 0, row
        assert sum(row["per_session"]) >= 300, row
        assert row["work_ms"] >= 0.5, row
    assert report["takeover"]["rabbitmq-stomp"], "no partition of the killed process was timed"
    assert "| rabbitmq-stomp | 2 x 2 |" in finished.stdout
