"""A Spark streaming read whose driver is killed for real (SIGKILL to the driver's whole
process tree: the Python driver, Spark's JVM and its Python workers) mid-stream, then
started again on the same ``stateDir`` and ``checkpointLocation``: nothing lost, nothing
read twice under two offsets, every group in send order (ORD-9, ORD-11), and nothing
left on the broker.

The default ``acknowledge=stored`` acknowledges a batch once it is spooled to disk, and
the reader spools up to ``maxBatchesAhead`` full batches ahead of Spark, so the kill
leaves spools, renamed batches and batches Spark ran but did not commit. Spark may run
a batch again after the restart (its sink is at-least-once): it must be the same rows,
so the test's sink writes each run of a batch to a file of its own and compares them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory

pytestmark = [pytest.mark.spark, pytest.mark.stomp, pytest.mark.slow, pytest.mark.timeout(300)]

GROUPS, PER_GROUP, BATCH = 8, 250, 200

CHILD = r"""
import json, os, sys, time
import jmslike.spark

url, queue, state, checkpoint, out = sys.argv[1:6]
spark = jmslike.spark.local_session("jmslike-killed-reader")
spark.sparkContext.setLogLevel("ERROR")
jmslike.spark.register(spark)

def sink(df, batch_id):
    rows = [[r.offset, r.group, int(r.properties["step"])] for r in df.collect()]
    if not rows:
        return
    name = f"{out}/batch-{batch_id}-{os.getpid()}.json"
    with open(name + ".tmp", "w") as f:
        json.dump(rows, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(name + ".tmp", name)
    time.sleep(0.3)  # a slow sink: the reader gets ahead of Spark

query = (
    spark.readStream.format("jmslike")
    .option("url", url)
    .option("destination", queue)
    .option("stateDir", state)
    .option("maxMessagesPerBatch", sys.argv[6])
    .option("drainAckEvery", "50")
    .option("receiveTimeout", "0.5")
    .load()
    .writeStream.foreachBatch(sink)
    .option("checkpointLocation", checkpoint)
    .start()
)
print("started", flush=True)
query.awaitTermination()
"""


@pytest.mark.parametrize(
    "variable",
    [
        pytest.param("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL", marks=pytest.mark.activemq, id="activemq"),
        pytest.param("JMSLIKE_TEST_RABBITMQ_STOMP_URL", marks=pytest.mark.rabbitmq, id="rabbitmq"),
    ],
)
def test_a_killed_driver_loses_nothing_and_keeps_group_order(variable: str, tmp_path: Path) -> None:
    url = broker_url(variable)
    queue = f"queue://spark-killed-{uuid.uuid4().hex[:8]}"
    total = GROUPS * PER_GROUP
    _send(url, queue)
    out = tmp_path / "out"
    out.mkdir()
    args = [url, queue, str(tmp_path / "state"), str(tmp_path / "checkpoint"), str(out)]

    with _Driver(args, tmp_path / "first.log") as first:
        # Killed once Spark ran two batches, while the reader is ahead of it.
        _wait(lambda: len(list(out.glob("batch-*.json"))) >= 2, first, "two batches")
        _kill_tree(first)
    state = tmp_path / "state"
    left = sorted(p.name for p in state.iterdir())
    assert any(name.startswith(("spool-", "batch-")) for name in left), left
    print("left in stateDir by the kill:", left)
    seen_first = _rows_seen(out)
    assert 0 < len(seen_first) < total, "killed mid-stream"

    with _Driver(args, tmp_path / "second.log") as second:
        _wait(lambda: len(_rows_seen(out)) >= total, second, f"all {total} rows")
        _kill_tree(second)

    runs: dict[int, list[list[object]]] = {}
    for file in sorted(out.glob("batch-*.json")):
        batch_id = int(file.name.split("-")[1])
        rows = json.loads(file.read_text())
        # A batch Spark runs again after the restart is the same rows (from stateDir).
        assert runs.setdefault(batch_id, rows) == rows, f"batch {batch_id} changed"
    ordered = sorted((row for rows in runs.values() for row in rows), key=lambda r: r[0])
    assert [row[0] for row in ordered] == list(range(1, total + 1)), "lost or doubled"
    steps: dict[str, list[int]] = {}
    for _offset, group, step in ordered:
        steps.setdefault(str(group), []).append(int(step))
    assert steps == {f"g{g}": list(range(PER_GROUP)) for g in range(GROUPS)}
    assert _left_on(url, queue) == 0


def _send(url: str, queue: str) -> None:
    """Groups interleaved, each through its own bound producer (ORD-5)."""
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(transacted=True)
        producers = []
        for g in range(GROUPS):
            producer = session.create_producer(queue)
            producer.enable_ordering_group(f"g{g}")
            producers.append(producer)
        for step in range(PER_GROUP):
            for producer in producers:
                message = session.create_text_message("x" * 100)
                message.set_int_property("step", step)
                producer.send(message)
            session.commit()


class _Driver:
    """The child driver in a session of its own, so that one signal reaches its tree."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.marker = uuid.uuid4().hex
        env = {**os.environ, "JMSLIKE_TEST_KILLED_READER": self.marker}
        self.log = open(log, "w")  # noqa: SIM115 (closed in __exit__)
        self.child = subprocess.Popen(
            [sys.executable, "-c", CHILD, *args, str(BATCH)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def __enter__(self) -> _Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        _kill_tree(self)
        self.log.close()


def _kill_tree(driver: _Driver) -> None:
    """SIGKILL to every process that carries the driver's marker (Spark's Python
    workers may leave its process group), then wait until none is left."""
    deadline = time.monotonic() + 30.0
    while True:
        found = _marked(driver.marker)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert time.monotonic() < deadline, f"processes outlived SIGKILL: {found}"
        time.sleep(0.1)
    driver.child.wait(10.0)


def _marked(marker: str) -> list[int]:
    found = []
    needle = f"JMSLIKE_TEST_KILLED_READER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _rows_seen(out: Path) -> set[int]:
    seen: set[int] = set()
    for file in out.glob("batch-*.json"):
        try:
            seen.update(int(row[0]) for row in json.loads(file.read_text()))
        except (OSError, ValueError):
            continue
    return seen


def _wait(done: Callable[[], bool], driver: _Driver, what: str) -> None:
    deadline = time.monotonic() + 180.0
    while not done():
        if driver.child.poll() is not None:
            pytest.fail(f"the driver exited ({driver.child.returncode}) before {what}")
        assert time.monotonic() < deadline, f"no {what} within 180 s"
        time.sleep(0.1)


def _left_on(url: str, queue: str) -> int:
    """What the broker still has for the queue (read, and so removed)."""
    with ConnectionFactory(url).create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        left = 0
        while consumer.receive(1.0) is not None:
            left += 1
        return left
