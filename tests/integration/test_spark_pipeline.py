"""jmslike as a Spark data source and sink (issue 7), against a real local SparkSession
and the suite's real brokers (ActiveMQ Classic and Artemis over STOMP).

Spark's Python workers are separate processes, so an in-memory embedded broker cannot be
used here: every test talks to a real broker. Each test uses queues of its own.
"""

from __future__ import annotations

import json
import random
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from brokerenv import broker_url
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import spark_partition_id

import jmslike
import jmslike.spark as jspark
from jmslike import ConfigurationError, ConnectionFactory, Message
from jmslike.partitions.layout import partition_of

pytestmark = [pytest.mark.spark, pytest.mark.stomp, pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).parents[2]
SparkError = (PySparkException, Py4JJavaError)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = jmslike.spark.local_session("jmslike-tests")
    session.sparkContext.setLogLevel("ERROR")
    jspark.register(session)
    yield session
    session.stop()


@pytest.fixture
def activemq() -> str:
    return broker_url("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL")


@pytest.fixture
def artemis() -> str:
    return broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL").split("?")[0]


def _on(*brokers: str) -> pytest.MarkDecorator:
    """Parametrise a test over ``brokers`` (fixture names), each with its own marker."""
    return pytest.mark.parametrize(
        "broker", [pytest.param(name, marks=getattr(pytest.mark, name)) for name in brokers]
    )


def _queue(name: str) -> str:
    return f"queue://spark-{name}-{uuid.uuid4().hex[:8]}"


def _drain(url: str, queue: str, timeout: float = 1.0) -> list[Message]:
    with ConnectionFactory(url).create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        got = []
        while (message := consumer.receive(timeout)) is not None:
            got.append(message)
        return got


def _count(url: str, queue: str) -> int:
    """Messages on an ActiveMQ queue, left in place (ActiveMQ browses over STOMP)."""
    with ConnectionFactory(url).create_connection() as connection:
        return sum(1 for _ in connection.create_session().create_browser(queue))


def _eventually(probe: Any, want: int, seconds: float = 20.0) -> int:
    """``probe()`` once it equals ``want`` or the last value after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (got := probe()) != want and time.monotonic() < deadline:
        time.sleep(0.5)
    return int(got)


def _send_groups(url: str, queue: str, groups: int, per_group: int, **settings: str) -> None:
    """Group after group, each through its own bound producer (ORD-5)."""
    with ConnectionFactory(url, **settings).create_connection() as connection:
        session = connection.create_session()
        producers = []
        for g in range(groups):
            producer = session.create_producer(queue)
            producer.enable_ordering_group(f"g{g}")
            producers.append(producer)
        for g, producer in enumerate(producers):
            for i in range(per_group):
                message = session.create_text_message(f"g{g}-{i}")
                message.set_int_property("step", i)
                producer.send(message)


def _orders(spark: SparkSession, customers: int, per_customer: int, parts: int) -> DataFrame:
    rows = [
        (f"c{c}", ts, f"event {c}/{ts}", ts * 10)
        for c in range(customers)
        for ts in range(per_customer)
    ]
    random.Random(3).shuffle(rows)
    df = spark.createDataFrame(rows, "customer_id string, ts long, body string, amount int")
    return df.repartition(parts)


def _assert_group_order(messages: list[Message], per_group: int, groups: int) -> None:
    seen: dict[str, list[int]] = {}
    for message in messages:
        group = message.ordering_group
        assert group is not None
        seen.setdefault(group, []).append(message.get_long_property("ts") or 0)
    assert len(seen) == groups
    for group, stamps in seen.items():
        assert stamps == list(range(per_group)), (group, stamps)


# ------------------------------------------------------------------------------ write


@pytest.mark.activemq
def test_batch_write_keeps_group_order_of_shuffled_partitions(
    spark: SparkSession, activemq: str
) -> None:
    """ORD-5, ORD-8: 2,000 rows of 20 groups, shuffled over 4 partitions, arrive per
    group in ``ts`` order, each group from one producer (sequence 1..n, ORD-4)."""
    queue = _queue("order")
    df = _orders(spark, customers=20, per_customer=100, parts=4)
    jspark.write_ordered(
        df, url=activemq, destination=queue, group_column="customer_id", order_column="ts"
    )
    messages = _drain(activemq, queue)
    assert len(messages) == 2000
    _assert_group_order(messages, per_group=100, groups=20)
    by_group: dict[str, list[int]] = {}
    for message in messages:
        by_group.setdefault(message.ordering_group or "", []).append(
            message.get_int_property("JMSXGroupSeq") or 0
        )
        assert message.get_int_property("amount") == (message.get_long_property("ts") or 0) * 10
    assert all(seqs == list(range(1, 101)) for seqs in by_group.values())


@pytest.mark.activemq
def test_plain_write_of_unsorted_partition_raises_ordering_error(
    spark: SparkSession, activemq: str
) -> None:
    """The sink cannot reorder rows: a partition whose group goes back in ``ts`` fails
    with OrderingError rather than sending out of order; so does a group split over
    two partitions (raised when the job commits)."""
    queue = _queue("unsorted")
    rows = [("c1", 2, "b"), ("c1", 1, "a")]
    df = spark.createDataFrame(rows, "customer_id string, ts long, body string").coalesce(1)
    writer = (
        df.write.format("jmslike")
        .option("url", activemq)
        .option("destination", queue)
        .option("groupColumn", "customer_id")
        .option("orderColumn", "ts")
        .mode("append")
    )
    with pytest.raises(SparkError, match=r"OrderingError.*'c1' has ts=1 after 2"):
        writer.save()
    assert _count(activemq, queue) == 0  # the row before it was in the rolled-back transaction

    split = spark.createDataFrame(
        spark.sparkContext.parallelize([("c1", 1, "a"), ("c1", 2, "b")], 2),
        "customer_id string, ts long, body string",
    )
    assert split.rdd.getNumPartitions() == 2
    with pytest.raises(SparkError, match=r"OrderingError.*group 'c1' was in partitions"):
        split.write.format("jmslike").option("url", activemq).option(
            "destination", _queue("split")
        ).option("groupColumn", "customer_id").mode("append").save()


@pytest.mark.activemq
def test_unmappable_schema_raises_before_any_message_is_sent(
    spark: SparkSession, activemq: str
) -> None:
    queue = _queue("schema")
    df = spark.createDataFrame(
        [("c1", 1, "a", [1, 2])], "customer_id string, ts long, body string, tags array<int>"
    )
    with pytest.raises(ConfigurationError, match="column 'tags' is ArrayType"):
        jspark.write_ordered(
            df, url=activemq, destination=queue, group_column="customer_id", order_column="ts"
        )
    with pytest.raises(SparkError, match="ConfigurationError: column 'tags' is ArrayType"):
        df.write.format("jmslike").option("url", activemq).option("destination", queue).mode(
            "append"
        ).save()
    no_body = df.drop("body", "tags")
    with pytest.raises(SparkError, match="bodyColumn='body': no such column"):
        no_body.write.format("jmslike").option("url", activemq).option("destination", queue).mode(
            "append"
        ).save()
    # A misspelt option of the data source's own is named as one (it was reported as an
    # unknown ConnectionFactory setting, with the factory's list and not the options').
    with pytest.raises(
        SparkError, match=r"unknown option 'groupcolum' \(did you mean 'groupColumn'"
    ):
        df.drop("tags").write.format("jmslike").option("url", activemq).option(
            "destination", queue
        ).option("groupColum", "customer_id").mode("append").save()
    assert _count(activemq, queue) == 0


# ------------------------------------------------------------------------------- read


@pytest.mark.activemq
def test_batch_read_columns(spark: SparkSession, activemq: str) -> None:
    """Body, headers, properties, group and sequence (ORD-20); browse leaves the
    messages, drain takes them."""
    queue = _queue("read")
    with ConnectionFactory(activemq).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        producer.enable_ordering_group("acct-1")
        text = session.create_text_message("hello")
        text.set_string_property("region", "EU")
        text.set_int_property("qty", 3)
        text.jms_correlation_id = "corr-1"
        producer.send(text)
        producer.send(session.create_bytes_message(b"\x00\x01"))
    reader = spark.read.format("jmslike").option("url", activemq).option("destination", queue)
    browsed = reader.load()
    assert tuple(browsed.columns) == tuple(name for name, _ in jspark.READ_COLUMNS)
    first, second = browsed.orderBy("offset").collect()
    assert (first.body, first.body_bytes) == ("hello", None)
    assert (first.group, first.group_seq) == ("acct-1", 1)
    assert first.properties == {"region": "EU", "qty": "3"}
    assert first.correlation_id == "corr-1"
    assert first.message_id.startswith("ID:")
    assert first.destination == queue and first.priority == 4 and first.delivery_mode == 2
    assert (second.body, bytes(second.body_bytes), second.group_seq) == (None, b"\x00\x01", 2)
    assert _count(activemq, queue) == 2
    drained = reader.option("readMode", "drain").load().cache()
    assert drained.count() == 2
    assert _count(activemq, queue) == 0


# -------------------------------------------------------------------------- streaming


def _write_stream(
    spark: SparkSession, url: str, queue: str, source: Path, checkpoint: Path
) -> None:
    stream = spark.readStream.schema("customer_id string, ts long, body string").json(str(source))
    query = (
        stream.writeStream.format("jmslike")
        .option("url", url)
        .option("destination", queue)
        .option("groupColumn", "customer_id")
        .option("orderColumn", "ts")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


@pytest.mark.artemis
def test_streaming_write_replayed_batch_is_dropped_by_artemis(
    spark: SparkSession, artemis: str, tmp_path: Path
) -> None:
    """At-least-once with deterministic ids: Spark replays micro-batch 0 (its commit
    removed from the checkpoint) and sends the same rows again with the same
    ``{query}-{batch}-{partition}-{row}`` id; Artemis' duplicate detection drops them."""
    queue = _queue("stream-write")
    source = tmp_path / "in"
    source.mkdir()
    with open(source / "events.json", "w", encoding="utf-8") as out:
        for i in range(60):
            out.write(json.dumps({"customer_id": f"c{i % 3}", "ts": i, "body": f"e{i}"}) + "\n")
    checkpoint = tmp_path / "checkpoint"
    _write_stream(spark, artemis, queue, source, checkpoint)
    (checkpoint / "commits" / "0").unlink()
    (checkpoint / "commits" / ".0.crc").unlink()
    _write_stream(spark, artemis, queue, source, checkpoint)  # replays batch 0
    assert (checkpoint / "commits" / "0").exists()
    messages = _drain(artemis, queue)
    assert len(messages) == 60
    ids = [m.get_string_property(jspark.ROW_ID_PROPERTY) or "" for m in messages]
    assert len(set(ids)) == 60
    assert all(i.split("-")[-3:-1] == ["0", "0"] for i in ids)  # batch 0, partition 0
    assert all(m.get_string_property(jspark.DUPLICATE_ID_PROPERTY) for m in messages)
    stamps: dict[str, list[int]] = {}
    for message in messages:
        stamps.setdefault(message.ordering_group or "", []).append(
            message.get_long_property("ts") or 0
        )
    assert all(s == sorted(s) and len(s) == 20 for s in stamps.values())


def _read_stream(
    spark: SparkSession,
    url: str,
    queue: str,
    state: Path,
    checkpoint: Path,
    batches: list[tuple[int, list[Any]]],
    fail_batch: int | None = None,
    acknowledge: str = "commit",
) -> Any:
    """``batches`` gets (batch id, rows) of every batch with rows; the first such batch
    from ``fail_batch`` on fails. Empty batches are how jmslike lets Spark commit a
    pending batch when the broker has nothing else for a fresh session (_stream.py)."""

    def on_batch(df: DataFrame, batch_id: int) -> None:
        rows = [(r.offset, r.group, r.body, r.properties.get("step")) for r in df.collect()]
        if not rows:
            return
        if fail_batch is not None and batch_id >= fail_batch:
            raise RuntimeError(f"batch {batch_id} fails on purpose")
        batches.append((batch_id, rows))

    stream = (
        spark.readStream.format("jmslike")
        .option("url", url)
        .option("destination", queue)
        .option("stateDir", str(state))
        .option("maxMessagesPerBatch", "20")
        .option("drainAckEvery", "7")
        .option("receiveTimeout", "0.5")
        .option("acknowledge", acknowledge)
        .load()
    )
    return (
        stream.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def _wait_rows(batches: list[tuple[int, list[Any]]], total: int, query: Any) -> None:
    deadline = time.monotonic() + 90
    while sum(len(rows) for _, rows in batches) < total and time.monotonic() < deadline:
        assert query.exception() is None, query.exception()
        time.sleep(0.2)


@_on("activemq", "artemis")
def test_streaming_read_acks_on_commit_and_reads_a_failed_batch_again(
    spark: SparkSession, broker: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Offsets kept in stateDir; broker acknowledgement only when Spark commits: the
    second batch fails, its messages stay on the broker, and the restarted query reads it
    again (same offsets, same rows). Group order holds within and across micro-batches.
    Each batch is acknowledged exactly when Spark commits it, never with another batch."""
    url = str(request.getfixturevalue(broker))
    queue = _queue("stream-read")
    # 60 messages in 3 batches of 20: the first is g0 and the start of g1, which its
    # session holds until Spark commits it (ORD-9); on ActiveMQ, which offers g1's rest
    # only to that session, the second batch can only come after that commit
    _send_groups(url, queue, groups=4, per_group=15)
    state, checkpoint = tmp_path / "state", tmp_path / "checkpoint"
    first: list[tuple[int, list[Any]]] = []
    query = _read_stream(spark, url, queue, state, checkpoint, first, fail_batch=1)
    with pytest.raises(SparkError, match="fails on purpose"):
        query.awaitTermination(120)
    assert len(first) == 1
    assert [row[0] for row in first[0][1]] == list(range(1, 21))
    # the first batch was committed (Spark commits a batch when it plans the next one);
    # the failed one was not
    assert json.loads((state / "committed.json").read_text())["seq"] == 20
    assert (state / "batch-40.json").exists()
    if broker == "activemq":  # Artemis cannot browse over STOMP
        # only the committed batch is acknowledged: the failed one went back untouched
        assert _eventually(lambda: _count(url, queue), 40, 10.0) == 40

    second: list[tuple[int, list[Any]]] = []
    query = _read_stream(spark, url, queue, state, checkpoint, second)
    try:
        _wait_rows(second, 40, query)
        if broker == "activemq":
            # the last batch is committed too, by the empty batch planned after it
            assert _eventually(lambda: _count(url, queue), 0) == 0
        assert (
            _eventually(lambda: json.loads((state / "committed.json").read_text())["seq"], 60) == 60
        )
    finally:
        query.stop()
    assert [row[0] for row in second[0][1]] == list(range(21, 41))  # read again, same rows
    rows = [row for _, batch in [*first, *second] for row in batch]
    assert [row[0] for row in rows] == list(range(1, 61))
    steps: dict[str, list[int]] = {}
    for _, group, _body, step in rows:
        steps.setdefault(group, []).append(int(step))
    assert steps == {f"g{g}": list(range(15)) for g in range(4)}
    time.sleep(1.0)  # the stopped query's connection closes
    assert _drain(url, queue) == []


@_on("activemq", "artemis")
def test_streaming_read_stored_acks_once_on_disk_and_serves_a_failed_batch_from_it(
    spark: SparkSession, broker: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``acknowledge=stored`` (the default): a batch is acknowledged once it is spooled in
    stateDir, so the broker forgets it before Spark commits it; the second batch fails,
    and the restarted query serves it again from the state dir (same offsets, same rows),
    then reads on. Group order holds within and across micro-batches; no empty batch is
    needed, and nothing is left on the broker."""
    url = str(request.getfixturevalue(broker))
    queue = _queue("stream-stored")
    _send_groups(url, queue, groups=4, per_group=15)
    state, checkpoint = tmp_path / "state", tmp_path / "checkpoint"
    first: list[tuple[int, list[Any]]] = []
    query = _read_stream(spark, url, queue, state, checkpoint, first, 1, "stored")
    with pytest.raises(SparkError, match="fails on purpose"):
        query.awaitTermination(120)
    assert [row[0] for row in first[0][1]] == list(range(1, 21))
    assert json.loads((state / "committed.json").read_text())["seq"] == 20
    assert (state / "batch-40.jsonl").exists()  # the spool, renamed
    # The reader's receiver thread spools the next batch while Spark runs the current
    # one: each row of the third batch is in its spool (acknowledged) or on the broker.
    spool = state / "spool-40.jsonl"
    left = 20 - (len(spool.read_text().splitlines()) if spool.exists() else 0)
    if broker == "activemq":  # Artemis cannot browse over STOMP
        # the failed batch was acknowledged when it was stored
        assert _eventually(lambda: _count(url, queue), left, 10.0) == left

    second: list[tuple[int, list[Any]]] = []
    query = _read_stream(spark, url, queue, state, checkpoint, second, None, "stored")
    try:
        _wait_rows(second, 40, query)
    finally:
        query.stop()
    assert [row[0] for row in second[0][1]] == list(range(21, 41))  # from the state dir
    rows = [row for _, batch in [*first, *second] for row in batch]
    assert [row[0] for row in rows] == list(range(1, 61))
    steps: dict[str, list[int]] = {}
    for _, group, _body, step in rows:
        steps.setdefault(group, []).append(int(step))
    assert steps == {f"g{g}": list(range(15)) for g in range(4)}
    time.sleep(1.0)  # the stopped query's connection closes
    assert _drain(url, queue) == []


@pytest.fixture
def rabbitmq() -> str:
    return broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL")


def _four_partitions(broker: str, queue: str) -> dict[str, str]:
    """The options (factory settings) that declare ``queue`` with 4 partitions."""
    declared = {"partitioned_destinations": f"{queue}=4"}
    if broker == "rabbitmq":  # single-active-consumer queues come from its management API
        declared["managementUrl"] = broker_url("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL")
    return declared


def _check_partitioned_rows(seen: list[tuple[int, int, str, int]], groups: int, per: int) -> None:
    """(Spark partition, offset, group, step) rows of a 4-partition queue: each group's
    rows in the Spark partition of its queue partition, in send order, every row once,
    and more than one partition used."""
    steps: dict[str, list[int]] = {}
    for pid, _offset, group, step in seen:  # collect() keeps partition order
        assert pid == partition_of(group, 4), (group, pid)
        steps.setdefault(group, []).append(step)
    assert steps == {f"g{g}": list(range(per)) for g in range(groups)}
    assert len({pid for pid, _offset, _group, _step in seen}) > 1


def _with_options(reader: Any, options: dict[str, str]) -> Any:
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader


@_on("activemq", "rabbitmq")
def test_batch_read_of_a_partitioned_queue_reads_each_partition_in_a_task(
    spark: SparkSession, broker: str, request: pytest.FixtureRequest
) -> None:
    """A browse (where the broker has browsers: not RabbitMQ) and then a drain of a queue
    declared with 4 partitions: Spark's partition i reads the queue's partition i, each
    group in send order (ORD-9, ORD-20), offsets from 0 in each; the drain takes
    everything."""
    url = str(request.getfixturevalue(broker))
    queue = _queue("batch-partitioned")
    declared = _four_partitions(broker, queue)
    groups, per_group = 12, 20
    _send_groups(url, queue, groups, per_group, **declared)
    reader = _with_options(
        spark.read.format("jmslike").option("url", url).option("destination", queue), declared
    ).option("receiveTimeout", "1")

    def rows(frame: DataFrame) -> list[tuple[int, int, str, int]]:
        return [
            (r.pid, r.offset, r.group, int(r.properties["step"]))
            for r in frame.withColumn("pid", spark_partition_id()).collect()
        ]

    reads = [] if broker == "rabbitmq" else [rows(reader.load())]
    drain = reader.option("readMode", "drain")  # (option() changes the reader itself)
    reads.append(rows(drain.load().cache()))
    for seen in reads:
        _check_partitioned_rows(seen, groups, per_group)
        for pid in range(4):
            offsets = [offset for p, offset, _group, _step in seen if p == pid]
            assert offsets == list(range(len(offsets)))
    assert drain.load().count() == 0


@_on("activemq", "rabbitmq")
def test_streaming_read_of_a_partitioned_queue_runs_each_partition_as_a_spark_partition(
    spark: SparkSession, broker: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A queue declared with 4 partitions (the factory setting, passed as a read option)
    is read as 4 Spark input partitions a micro-batch: Spark's partition i holds the
    groups of the queue's partition i, each in send order (ORD-9, ORD-17); every message
    is read once, and rows are seen in more than one Spark partition."""
    url = str(request.getfixturevalue(broker))
    queue = _queue("stream-partitioned")
    declared = _four_partitions(broker, queue)
    groups, per_group = 12, 20
    _send_groups(url, queue, groups, per_group, **declared)
    batches: list[tuple[int, list[tuple[int, int, str, int]]]] = []

    def on_batch(df: DataFrame, batch_id: int) -> None:
        rows = df.withColumn("pid", spark_partition_id()).collect()
        batches.append(
            (batch_id, [(r.pid, r.offset, r.group, int(r.properties["step"])) for r in rows])
        )

    reader = _with_options(
        spark.readStream.format("jmslike").option("url", url).option("destination", queue),
        {**declared, "stateDir": str(tmp_path / "state")},
    )
    query = (
        reader.option("receiveTimeout", "0.5")
        .load()
        .writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        _wait_rows(batches, groups * per_group, query)
    finally:
        query.stop()
    seen = [row for _batch_id, rows in batches for row in rows]
    assert sorted(offset for _pid, offset, _group, _step in seen) == list(
        range(1, groups * per_group + 1)
    )
    _check_partitioned_rows(seen, groups, per_group)


# ---------------------------------------------------------------------------- example


@pytest.mark.activemq
def test_example_orders_pipeline(spark: SparkSession, activemq: str) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import spark_orders_pipeline
    finally:
        sys.path.remove(str(ROOT / "examples"))
    result = spark_orders_pipeline.main(activemq, spark)
    assert result == {"events": 221, "customers": 40, "out_of_order": 0}


def test_options_are_checked_and_password_never_shown() -> None:
    with pytest.raises(ConfigurationError, match="option url is missing"):
        jspark.parse_options({"destination": "queue://x"})
    with pytest.raises(ConfigurationError, match="batchSize='0'"):
        jspark.parse_options({"url": "stomp://h:1", "destination": "queue://x", "batchSize": "0"})
    parsed = jspark.parse_options(
        {"url": "stomp://h:1", "destination": "queue://x", "password": "s3cret"}
    )
    assert "s3cret" not in repr(parsed)
    with pytest.raises(
        ConfigurationError, match=r"unknown option 'readmod' \(did you mean 'readMode'"
    ):
        jspark.parse_options({"url": "stomp://h:1", "destination": "queue://x", "readmod": "x"})
    # A provider's setting is no misspelt option: it goes to the factory.
    parsed = jspark.parse_options(
        {"url": "stomp://h:1", "destination": "queue://x", "reconnectAttempts": "3"}
    )
    assert parsed.settings == {"reconnectattempts": "3"}
    assert isinstance(jmslike.JMSException, type)
