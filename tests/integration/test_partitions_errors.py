"""Bad input around partitioned queues, on the real brokers (docs/partitions.md, Errors).

* Two processes of one consumer group declare different partition counts: the second is
  refused when it creates its consumer, naming both counts and the setting, and the first
  reports the disagreement to its exception listener; nothing is taken by the second.
* The management API a broker needs for partitions (Artemis, RabbitMQ) is unreachable,
  or refuses the credentials: the first send or consumer raises an error naming
  ``managementUrl``, before anything is sent.

The other errors (a smaller count with messages left in dropped partitions, a misrouted
group, a partitioned queue also declared strictly ordered) are in
tests/contract/test_partitions.py, on every provider.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from brokercases import CASES, case_url, delete_rabbitmq_queues
from brokerenv import broker_url

from jmslike import ConfigurationError, ConnectionFactory, ConnectionFailedError, JMSSecurityError

WORKER = Path(__file__).parent / "workers" / "partition_worker.py"


def _config(tmp: Path, queue: str, count: int) -> Path:
    path = tmp / f"jmslike-{count}.toml"
    path.write_text(
        "[defaults]\npartition_heartbeat = 0.3\npartition_timeout = 1.2\n\n"
        f'[destinations."{queue}"]\npartitions = {count}\n'
    )
    return path


@pytest.mark.parametrize("case", CASES)
def test_processes_that_disagree_on_the_count_are_refused(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bad input: a process with ``partitions = 4`` joins one with 8: its consumer is
    refused with ConfigurationError naming both counts and where to set them; the first
    process reports it to its exception listener and keeps its partitions."""
    url = case_url(case)
    queue = f"queue://parts-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "worker.jsonl"
    env = {"JMSLIKE_CONFIG": str(_config(tmp_path, queue, 8))}
    child = subprocess.Popen(
        [sys.executable, str(WORKER), "--url", url, "--queue", queue, "--log", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, **env},
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        monkeypatch.setenv("JMSLIKE_CONFIG", str(_config(tmp_path, queue, 4)))
        before = set(threading.enumerate())
        with ConnectionFactory(url).create_connection() as connection:
            with pytest.raises(ConfigurationError) as info:
                connection.create_session().create_consumer(queue)
            text = str(info.value)
            assert "partitions = 4" in text and "8" in text and "jmslike.toml" in text
        # Nothing of the refused consumer outlives the connection: the partitions the
        # coordinator attached to it meanwhile (on RabbitMQ each with a connection of its
        # own) kept their connections open, and a broker that dropped one later logged
        # its loss in another test.
        deadline = time.monotonic() + 5.0
        while (left := _io_threads_since(before)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"connections' threads left running after close: {left}"
        deadline = time.monotonic() + 10.0
        reported = []
        while not reported and time.monotonic() < deadline:
            time.sleep(0.2)
            reported = [
                r
                for line in log.read_text().splitlines()
                if "error" in (r := json.loads(line)) and "partitions = 8" in r["error"]
            ]
        assert reported, "the running process did not report the disagreement"
        owned = json.loads(Path(str(log) + ".owned").read_text())["owned"]
        assert owned == list(range(8))
    finally:
        if child.poll() is None:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(30.0)
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
        with contextlib.suppress(Exception):
            delete_rabbitmq_queues(case, queue.removeprefix("queue://"))


def _io_threads_since(before: set[threading.Thread]) -> list[str]:
    """The connections' I/O threads started since ``before`` that still run."""
    return [
        t.name
        for t in threading.enumerate()
        if t not in before
        and (t.name.startswith(("jmslike-amqp-127", "jmslike-stomp-io")) or "__io_loop" in t.name)
    ]


MANAGED = [c for c in CASES if str(c.id).split("-")[0] in ("artemis", "rabbitmq")]


@pytest.mark.parametrize("case", MANAGED)
@pytest.mark.parametrize("fault", ["unreachable", "credentials"])
def test_management_api_faults_are_named(case: str, fault: str) -> None:
    """Bad input: Artemis and RabbitMQ hold a partition to one consumer only through
    their management API. Unreachable, or refusing the credentials, the first consumer
    and the first send each raise an error naming managementUrl and what to do; nothing
    was sent. The deploy step (``declare_queue``, ``jmslike declare``) says the same."""
    url = case_url(case).split("?")[0]
    if fault == "unreachable":
        management = "http://127.0.0.1:9/console/jolokia"
        expected: type[Exception] = ConnectionFailedError
    else:
        # The broker's own API (its port moves with scripts/brokers.sh's offset), a wrong login.
        broker = case.partition("-")[0].upper()
        real = urlsplit(broker_url(f"JMSLIKE_TEST_{broker}_MANAGEMENT_URL"))
        management = f"http://nobody:wrong@{real.hostname}:{real.port}{real.path}"
        expected = JMSSecurityError
    queue = f"queue://parts-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(url, managementUrl=management, partitioned_destinations={queue: 2})
    with factory.create_connection() as connection:
        session = connection.create_session()
        with pytest.raises(expected) as info:
            session.create_consumer(queue)
        assert "managementUrl" in str(info.value)
        assert "wrong" not in str(info.value)  # never a password
        producer = session.create_producer(queue)
        with pytest.raises(expected):
            producer.send(session.create_text_message("x"))
        with pytest.raises(expected, match="managementUrl"):
            connection.declare_queue(queue)
