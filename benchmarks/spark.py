"""Spark sink and source against plain jmslike, same broker, same rows, one run.

* write: ``--rows`` rows in ``--groups`` groups (issue 7: 1,000,000 in 10,000) written
  by Spark (``local[2]``, ``jmslike.spark.write_ordered``: repartition by group, sort by
  ts, one producer per group, transacted batches of ``--batch-size``) against one plain
  jmslike producer session in this process doing the same (rows sorted by group, one
  bound producer per group, same transactions). Persistent messages, 100-byte bodies.
* streaming read: ``--stream-rows`` messages (1,000 groups at most, written by a plain
  producer to a fresh queue for each run) read by a Spark streaming query into a
  ``foreachBatch`` that counts them, with the read's default options unless
  ``--stream-batch`` (``maxMessagesPerBatch``), ``--acknowledge`` or
  ``--receive-timeout`` is given, against one plain jmslike CLIENT_ACKNOWLEDGE consumer
  acknowledging every 100 rows (every ``--stream-batch``, if given). The first query of
  the session runs in a cold JVM and a fresh Spark (about 5 s before its first batch's
  rows reach ``foreachBatch`` here) and is given on its own; then ``--runs`` queries in
  the warm session and as many plain reads, medians. The Spark side is given from the
  query's start and from the end of its first micro-batch on. What is left on the
  queues is drained at the end.

One queue holds all the written rows until they are drained: the suite's ActiveMQ
(memoryUsage 3 GB, scripts/brokers/activemq.sh) holds the issue's 1,000,000; the
suite's Artemis (1 GB heap) ran out of heap on them, so use ``--rows 200000`` there.

    python benchmarks/spark.py [--url stomp://127.0.0.1:61613] [--rows N] [--groups G]
                               [--stream-rows N] [--stream-batch B] [--batch-size B]
                               [--acknowledge stored|commit] [--receive-timeout S]
                               [--runs R] [--read-option NAME=VALUE ...] [--partitions N]

``--partitions N`` declares each streaming-read queue a partitioned queue of N partitions
(``partitioned_destinations``) for every client: the plain producer and consumer, and
the Spark read, which then splits its micro-batches into N input partitions by group
(``numPartitions``' default there; ``--read-option numPartitions=1`` for one).
``--row-sleep-us U`` gives each row U µs of waiting in its Spark task (the plain read
does no such work), where input partitions in parallel count. ``--batch-read-rows N``
times a batch drain (``spark.read``, ``readMode=drain``) of a queue of ``--partitions``
partitions holding N rows, a task a partition beside ``numPartitions=1``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from jmslike import ConnectionFactory, Session

# This directory holds benchmarks/stomp.py, which would shadow the stomp.py library when
# the STOMP provider is first loaded (after this, not at the import of jmslike above).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))


def _default_url() -> str:
    from brokerenv import broker_env

    return broker_env().get("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL", "stomp://127.0.0.1:61613")


def _declared(queue: str, partitions: int) -> dict[str, str]:
    """The factory setting that makes ``queue`` a partitioned queue (none for 0)."""
    return {"partitioned_destinations": f"{queue}={partitions}"} if partitions else {}


def plain_write(
    url: str, queue: str, rows: int, groups: int, batch: int, partitions: int = 0
) -> float:
    body = "x" * 100
    start = time.perf_counter()
    with ConnectionFactory(url, **_declared(queue, partitions)).create_connection() as connection:
        session = connection.create_session(transacted=True)
        pending = 0
        for g in range(groups):
            producer = session.create_producer(queue)
            producer.enable_ordering_group(f"c{g}")
            for ts in range(g, rows, groups):
                message = session.create_text_message(body)
                message.set_long_property("ts", ts)
                producer.send(message)
                pending += 1
                if pending >= batch:
                    session.commit()
                    pending = 0
            producer.close()
        session.commit()
    return rows / (time.perf_counter() - start)


def plain_read(url: str, queue: str, rows: int, batch: int, partitions: int = 0) -> float:
    start = time.perf_counter()
    with ConnectionFactory(url, **_declared(queue, partitions)).create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        connection.start()
        for n in range(1, rows + 1):
            if consumer.receive(10.0) is None:
                raise RuntimeError(f"plain read: only {n - 1} of {rows}")
            if n % batch == 0:
                session.acknowledge()
        session.acknowledge()
    return rows / (time.perf_counter() - start)


def drain(url: str, queue: str, partitions: int = 0) -> None:
    settings = _declared(queue, partitions)
    with ConnectionFactory(url, prefetch=1000, **settings).create_connection() as connection:
        consumer = connection.create_session(False, Session.DUPS_OK_ACKNOWLEDGE).create_consumer(
            queue
        )
        connection.start()
        while consumer.receive(2.0) is not None:
            pass


def _count_rows(df: Any, row_sleep: float) -> int:
    """The DataFrame's rows, each waiting ``row_sleep`` seconds in its Spark task."""
    if not row_sleep:
        return int(df.count())

    def work(rows: Any) -> Any:
        done = 0
        for _row in rows:
            time.sleep(row_sleep)
            done += 1
        yield done

    return sum(df.rdd.mapPartitions(work).collect())


def spark_batch_drain(
    spark: Any, url: str, queue: str, rows: int, options: dict[str, str], row_sleep: float
) -> float:
    """Rows a second of a batch read that drains ``queue`` (``readMode=drain``), from the
    call to the last row counted."""
    start = time.perf_counter()
    df = (
        spark.read.format("jmslike")
        .option("url", url)
        .option("destination", queue)
        .option("readMode", "drain")
        .options(**options)
        .load()
    )
    seen = _count_rows(df, row_sleep)
    elapsed = time.perf_counter() - start
    if seen != rows:
        raise RuntimeError(f"batch drain of {queue}: {seen} rows of {rows}")
    return rows / elapsed


def spark_stream(
    spark: Any, url: str, queue: str, rows: int, options: dict[str, str], row_sleep: float = 0.0
) -> tuple[float, float]:
    """Rows a second from the query's start, and after its first batch: the first
    includes the several seconds Spark takes to start a query's first micro-batch (its
    Python workers, the first plan), which a long-running query pays once. With
    ``row_sleep``, each row costs that many seconds of waiting in its Spark task (work
    that waits, a call to another service say), so that tasks in parallel show."""
    seen = 0
    first: tuple[float, int] | None = None

    def count(df: Any, batch_id: int) -> None:
        nonlocal seen, first
        seen += _count_rows(df, row_sleep)
        if first is None and seen:
            first = (time.perf_counter(), seen)

    with tempfile.TemporaryDirectory() as state:
        reader = (
            spark.readStream.format("jmslike")
            .option("url", url)
            .option("destination", queue)
            .option("stateDir", f"{state}/state")
            .options(**options)
        )
        query = (
            reader.load()
            .writeStream.foreachBatch(count)
            .option("checkpointLocation", f"{state}/checkpoint")
            .start()
        )
        start = time.perf_counter()
        while seen < rows:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            time.sleep(0.05)
        end = time.perf_counter()
        query.stop()
    assert first is not None
    after = (seen - first[1]) / (end - first[0]) if seen > first[1] else float("nan")
    return seen / (end - start), after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None)
    parser.add_argument("--rows", type=int, default=1_000_000, help="0: no write")
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--stream-rows", type=int, default=20_000)
    parser.add_argument("--stream-batch", type=int, default=None)
    parser.add_argument("--acknowledge", choices=("stored", "commit"), default=None)
    parser.add_argument("--receive-timeout", default=None, help="receiveTimeout, seconds")
    parser.add_argument("--runs", type=int, default=3, help="warm streaming reads (medians)")
    parser.add_argument(
        "--read-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any other option of the streaming read, e.g. maxBatchesAhead=1 (repeatable)",
    )
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument(
        "--partitions",
        type=int,
        default=0,
        help="streaming read: declare each queue partitioned, this many (every client)",
    )
    parser.add_argument(
        "--row-sleep-us",
        type=int,
        default=0,
        help="streaming read: each row waits this long in its Spark task (parallel tasks show)",
    )
    parser.add_argument(
        "--batch-read-rows",
        type=int,
        default=0,
        help="batch read (drain) of a queue of --partitions partitions this many rows, "
        "a task a partition beside numPartitions=1 (one task)",
    )
    args = parser.parse_args()
    url = args.url or _default_url()

    import jmslike.spark

    spark = jmslike.spark.local_session("jmslike-bench", shuffle_partitions=2)
    spark.sparkContext.setLogLevel("ERROR")
    jmslike.spark.register(spark)
    run = uuid.uuid4().hex[:8]
    try:
        if args.rows:
            write(spark, url, run, args)
        if args.stream_rows:
            stream(spark, url, run, args)
        if args.batch_read_rows:
            batch_read(spark, url, run, args)
    finally:
        spark.stop()


def write(spark: Any, url: str, run: str, args: argparse.Namespace) -> None:
    """Spark's ``write_ordered`` beside one plain producer, the same rows."""
    from pyspark.sql import functions as fn

    import jmslike.spark

    spark_queue, plain_queue = f"queue://bench-spark-{run}", f"queue://bench-plain-{run}"
    try:
        df = spark.range(args.rows).select(
            fn.concat(fn.lit("c"), (fn.col("id") % args.groups).cast("string")).alias("group"),
            fn.col("id").alias("ts"),
            fn.lit("x" * 100).alias("body"),
        )
        start = time.perf_counter()
        jmslike.spark.write_ordered(
            df,
            url=url,
            destination=spark_queue,
            group_column="group",
            order_column="ts",
            batchSize=str(args.batch_size),
        )
        spark_rate = args.rows / (time.perf_counter() - start)
        # One queue on the broker at a time: ActiveMQ's producer flow control (memory
        # limit) stops senders long before 1,000,000 messages are held.
        drain(url, spark_queue)
        plain_rate = plain_write(url, plain_queue, args.rows, args.groups, args.batch_size)
        drain(url, plain_queue)
        where = url.rsplit("@", maxsplit=1)[-1]
        print(f"write {args.rows} rows in {args.groups} groups, persistent, {where}")
        print(f"  spark local[2] write_ordered: {spark_rate:10,.0f} rows/s")
        print(f"  plain jmslike producer:       {plain_rate:10,.0f} rows/s")
        print(f"  ratio spark/plain:            {spark_rate / plain_rate:10.2f}")
    finally:
        drain(url, spark_queue)
        drain(url, plain_queue)


def stream(spark: Any, url: str, run: str, args: argparse.Namespace) -> None:
    """The streaming read: a cold first query, then ``--runs`` warm ones beside as many
    plain reads, each of its own freshly written queue."""
    options = {
        name: str(value)
        for name, value in (
            ("maxMessagesPerBatch", args.stream_batch),
            ("acknowledge", args.acknowledge),
            ("receiveTimeout", args.receive_timeout),
        )
        if value is not None
    }
    for given in args.read_option:
        name, _, value = given.partition("=")
        options[name] = value
    rows, groups = args.stream_rows, min(1000, max(1, args.stream_rows // 50))

    parts = args.partitions

    def fresh(name: str) -> str:
        queue = f"queue://bench-{name}-{run}"
        plain_write(url, queue, rows, groups, args.batch_size, parts)
        return queue

    def spark_run(n: int) -> tuple[float, float]:
        queue = fresh(f"stream{n}")
        try:
            read = {**options, **_declared(queue, parts)}
            return spark_stream(spark, url, queue, rows, read, args.row_sleep_us / 1e6)
        finally:
            drain(url, queue, parts)

    cold = spark_run(0)
    warm = [spark_run(n) for n in range(1, args.runs + 1)]
    plain = [
        plain_read(url, fresh(f"read{n}"), rows, args.stream_batch or 100, parts)
        for n in range(args.runs)
    ]
    start_rate = statistics.median(rate for rate, _ in warm)
    steady_rate = statistics.median(after for _, after in warm)
    read_rate = statistics.median(plain)
    described = ", ".join(f"{k}={v}" for k, v in options.items()) or "default options"
    where = f", a queue of {parts} partitions" if parts else ""
    if args.row_sleep_us:
        where += f", {args.row_sleep_us} µs of waiting a row in Spark (not in the plain read)"
    print(f"streaming read of {rows} rows in {groups} groups{where}, {described}")
    print(f"  first query, cold Spark:      {cold[0]:10,.0f} rows/s")
    print(f"    after its first batch:      {cold[1]:10,.0f} rows/s")
    print(f"  warm queries (median of {args.runs}):  {start_rate:10,.0f} rows/s")
    print(f"    after their first batch:    {steady_rate:10,.0f} rows/s")
    print(f"  plain jmslike consumer:       {read_rate:10,.0f} rows/s")
    print(f"  ratio spark/plain, cold:      {cold[0] / read_rate:10.2f}")
    print(f"  ratio spark/plain, warm:      {start_rate / read_rate:10.2f}")
    print(f"    after the first batch:      {steady_rate / read_rate:10.2f}")


def batch_read(spark: Any, url: str, run: str, args: argparse.Namespace) -> None:
    """A batch drain of a partitioned queue: one task a partition (the default) beside
    ``numPartitions=1``, alternating, each of its own freshly written queue, after an
    untimed one of each; medians of ``--runs``."""
    rows, parts = args.batch_read_rows, max(args.partitions, 1)
    groups = min(1000, max(1, rows // 50))
    rates: dict[str, list[float]] = {"split": [], "one": []}
    for n in range(args.runs + 1):
        for how, extra in (("split", {}), ("one", {"numPartitions": "1"})):
            queue = f"queue://bench-batch-{how}{n}-{run}"
            plain_write(url, queue, rows, groups, args.batch_size, parts)
            options = {"receiveTimeout": "1", **_declared(queue, parts), **extra}
            try:
                rate = spark_batch_drain(spark, url, queue, rows, options, args.row_sleep_us / 1e6)
            finally:
                drain(url, queue, parts)
            if n:  # the first of each warms Spark up
                rates[how].append(rate)
    split, one = (statistics.median(rates[how]) for how in ("split", "one"))
    work = f", {args.row_sleep_us} µs of waiting a row" if args.row_sleep_us else ""
    print(f"batch drain of {rows} rows in {groups} groups, a queue of {parts} partitions{work}")
    print(f"  a task a partition (default): {split:10,.0f} rows/s")
    print(f"  numPartitions=1 (one task):   {one:10,.0f} rows/s")
    print(f"  ratio:                        {split / one:10.2f}")


if __name__ == "__main__":
    main()
