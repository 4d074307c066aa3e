"""``jmslike bench --quick`` end to end: the embedded broker and ActiveMQ over STOMP, with
jmslike and raw stomp.py, tiny counts. Checks that every workload ran and produced a
figure; never how fast (the bench is a tool: speed is for docs/performance.md)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from brokerenv import broker_url

from jmslike.cli import main
from jmslike.spi.management import ArtemisManagement
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
            "jmslike,defaults,raw",
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
    expected = [
        (target, client, name)
        for target in ("embedded", "activemq/stomp")
        for client in ("jmslike", "defaults")
        for name in WORKLOADS
    ]
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


@pytest.mark.java
def test_java_runner_keeps_one_warm_jvm() -> None:
    """Issue 17: the Java client's warm-up and timed runs go through one JVM, so the timed
    runs measure a warm JIT, not a JVM started for each of them."""
    from jmslike_bench.runners.java import JavaRunner, java_unavailable
    from jmslike_bench.targets import discover
    from jmslike_bench.workloads import QUICK

    broker_url("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL")
    assert java_unavailable() is None
    (target,) = discover(["activemq"], ["stomp"])
    assert target.skipped is None
    runner = JavaRunner(target, QUICK, idle=2.0)  # the empty-queue run fails in 2 s, not 20
    queue = f"bench-java-{uuid.uuid4().hex[:10]}"
    try:
        assert runner.run(WORKLOADS["send"], queue).msgs_per_s > 0
        jvm = runner._jvm
        assert jvm is not None and jvm.poll() is None
        assert runner.run(WORKLOADS["receive"], queue).msgs_per_s > 0
        assert runner._jvm is jvm and jvm.poll() is None  # the same JVM, still up
        with pytest.raises(RuntimeError, match="received 0 of"):
            runner.run(WORKLOADS["receive"], queue)  # nothing left: the JVM says so
        assert runner._jvm is jvm  # a failed run does not cost the JVM
    finally:
        runner.close()
    assert runner._jvm is None and jvm.wait(timeout=5) == 0


def test_raw_stomp_sends_text_as_jmslike_does() -> None:
    """The raw baseline asks the broker for jmslike's work: a text body without
    ``content-length``, which ActiveMQ Classic keeps a TextMessage. stomp.py adds the
    header by default, and Classic then stores a BytesMessage, cheaper for it: the raw
    send line of ``jmslike bench`` measured 75,900 msg/s that way against 37,000 with
    text frames, beside jmslike's 29,000 to 30,000 (docs/performance.md)."""
    from jmslike import ConnectionFactory, TextMessage
    from jmslike_bench.runners.raw_stomp import Broker, raw_send

    url = broker_url("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL")
    queue = f"bench-raw-{uuid.uuid4().hex[:10]}"
    assert raw_send(Broker("activemq", url, 1), queue, 1, False, True) > 0
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        consumer = session.create_consumer(session.create_queue(queue))
        connection.start()
        message = consumer.receive(10.0)
    assert isinstance(message, TextMessage), type(message)
    assert message.text == "x" * 1024


@pytest.mark.amqp
@pytest.mark.rabbitmq
def test_raw_proton_receivers_with_credit_1_take_everything(tmp_path: Path) -> None:
    """The raw Proton baseline with ``--prefetch 1`` (docs/performance.md, grouped
    listeners at the same credit): four receivers of one message each on RabbitMQ take
    the whole queue. Proton's own flow controller tops a window up when a delivery
    arrives, before Proton counts its credit as used: with a window of 1 it granted
    nothing more, RabbitMQ sent no flow frame, and the run stalled after 4 messages."""
    broker_url("JMSLIKE_TEST_RABBITMQ_AMQP_URL")  # fails, never skips, without the broker
    out = tmp_path / "bench.json"
    code = main(
        [
            "bench",
            *("--brokers", "rabbitmq", "--protocols", "amqp", "--clients", "raw"),
            *("--workloads", "groups-4", "--prefetch", "1", "--count", "400"),
            *("--runs", "1", "--warmup", "0", "--no-progress", "--json", str(out)),
        ]
    )
    assert code == 0
    (line,) = json.loads(out.read_text())["lines"]
    assert line["failures"] == [] and line["msgs_per_s"]["median"] > 0, line


@pytest.mark.artemis
def test_bench_leaves_no_queue_on_artemis(tmp_path: Path) -> None:
    """Persistent sends nobody reads (an asynchronous send's, a send whose receive was not
    asked for) are deleted with their queues after the pass: Artemis keeps every unread
    message, and a few full bench runs of them took the test broker out of heap. Checked
    through its management API."""
    broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL")
    api = ArtemisManagement(broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), "admin", "admin", 10)
    before = set(api.queue_depths("bench-"))
    code = main(
        [
            "bench",
            "--quick",
            "--brokers",
            "artemis",
            "--protocols",
            "stomp",
            "--clients",
            "jmslike,raw",
            "--workloads",
            "send-p,send-pa",
            "--no-progress",
            "--json",
            str(tmp_path / "bench.json"),
        ]
    )
    assert code == 0
    assert set(api.queue_depths("bench-")) - before == set()
