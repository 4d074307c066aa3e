"""``jmslike bench --quick`` end to end: the embedded broker and ActiveMQ over STOMP, with
jmslike and raw stomp.py, tiny counts. Checks that every workload ran and produced a
figure; never how fast (the bench is a tool: speed is for docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from brokerenv import broker_url

from jmslike.cli import main
from jmslike_bench.workloads import WORKLOADS, Kind

pytestmark = [pytest.mark.stomp, pytest.mark.activemq, pytest.mark.embedded]


def test_quick_bench_measures_every_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker_url("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL")  # fails, never skips, without the broker
    out = tmp_path / "bench.json"
    code = main(
        [
            "bench",
            "--quick",
            "--brokers",
            "embedded,activemq",
            "--protocols",
            "embedded,stomp",
            "--clients",
            "jmslike,raw",
            "--no-progress",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    document = json.loads(out.read_text())
    assert [t["name"] for t in document["targets"]] == ["embedded", "activemq/stomp"]
    assert all(t["skipped"] is None for t in document["targets"])
    lines = {(x["target"], x["client"], x["workload"]): x for x in document["lines"]}
    expected = [("embedded", "jmslike", name) for name in WORKLOADS]
    expected += [("activemq/stomp", "jmslike", name) for name in WORKLOADS]
    expected += [
        ("activemq/stomp", "raw", w.name) for w in WORKLOADS.values() if w.kind != Kind.CONTAINER
    ]
    for key in expected:
        line = lines[key]
        assert line["failures"] == [], key
        assert line["msgs_per_s"]["median"] > 0, key
        if line["kind"] == Kind.LATENCY.value:
            assert line["p50_ms"]["median"] > 0 and line["p99_ms"]["median"] > 0
    assert "activemq/stomp" in capsys.readouterr().out
