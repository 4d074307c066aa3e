"""Order events: CSV -> Spark -> broker (one group per customer) -> listener container
that applies them -> Spark batch read that checks every customer's events were applied
in order.

Run by hand (a broker over STOMP must be running; docs/spark.md):

    python examples/spark_orders_pipeline.py stomp://127.0.0.1:61613

The tests run ``main(url, spark)`` against the suite's ActiveMQ with their SparkSession.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import jmslike

CSV = Path(__file__).parent / "data" / "orders.csv"


def _spark() -> Any:
    """A local SparkSession whose Python workers import this venv's jmslike."""
    import jmslike.spark

    return jmslike.spark.local_session("jmslike-orders-pipeline")


def main(url: str, spark: Any = None, timeout: float = 60.0) -> dict[str, int]:
    """Run the pipeline once on fresh queues; returns counts, raises if order broke."""
    from pyspark.sql import functions as fn

    import jmslike.spark

    spark = spark or _spark()
    jmslike.spark.register(spark)
    run = uuid.uuid4().hex[:8]
    orders, applied = f"queue://orders-{run}", f"queue://orders-applied-{run}"

    # 1. CSV -> Spark -> broker. The input is shuffled on purpose: write_ordered
    #    repartitions by customer and sorts by ts, and each group goes out through one
    #    producer bound to it (ORD-5, ORD-8).
    events = spark.read.csv(str(CSV), header=True, inferSchema=True)
    events = events.withColumn("body", fn.col("action")).repartition(3)
    total = events.count()
    jmslike.spark.write_ordered(
        events, url=url, destination=orders, group_column="customer_id", order_column="ts"
    )

    # 2. A listener container applies the events, four customers at a time, each
    #    customer strictly in order (ORD-9, ORD-17), and records what it applied.
    factory = jmslike.ConnectionFactory(url)
    lock = threading.Lock()
    last_ts: dict[str, int] = {}
    done = threading.Event()
    count = 0
    with factory.create_connection() as out:
        out_session = out.create_session()
        recorder = out_session.create_producer(applied)

        def apply(message: jmslike.Message) -> None:
            nonlocal count
            customer = message.ordering_group
            ts = message.get_long_property("ts")
            assert customer is not None and ts is not None
            with lock:
                last_ts[customer] = ts  # the application's own state would change here
                note = out_session.create_text_message(message.text)
                note.set_string_property("customer", customer)
                note.set_long_property("ts", ts)
                note.set_long_property("appliedAt", time.monotonic_ns())
                recorder.send(note)
                count += 1
                if count == total:
                    done.set()

        with jmslike.MessageListenerContainer(factory, orders, apply, concurrency=4):
            if not done.wait(timeout):
                raise RuntimeError(f"applied {count} of {total} events in {timeout}s")

    # 3. A Spark batch read of what was applied: per customer, in the order applied,
    #    the timestamps must rise, and no event may be missing.
    rows = (
        spark.read.format("jmslike")
        .option("url", url)
        .option("destination", applied)
        .option("readMode", "drain")
        .load()
        .select(
            fn.col("properties")["customer"].alias("customer"),
            fn.col("properties")["ts"].cast("long").alias("ts"),
            fn.col("properties")["appliedAt"].cast("long").alias("applied_at"),
        )
    )
    # A drain consumes: cache it, or Spark may run the read again and find the queue empty.
    rows = rows.cache()
    if rows.count() != total:
        raise RuntimeError(f"read back {rows.count()} applied events of {total}")
    per_customer = rows.groupBy("customer").agg(
        fn.array_sort(fn.collect_list(fn.struct("applied_at", "ts"))).alias("steps")
    )
    expected = dict(events.groupBy("customer_id").count().collect())
    customers = broken = 0
    for row in per_customer.collect():
        customers += 1
        stamps = [step["ts"] for step in row["steps"]]
        if stamps != sorted(stamps) or len(stamps) != expected.get(row["customer"]):
            broken += 1
            print(f"customer {row['customer']}: applied out of order or incomplete: {stamps}")
    if broken or customers != len(expected):
        raise RuntimeError(f"{broken} customers broken, {customers} of {len(expected)} seen")
    result = {"events": total, "customers": customers, "out_of_order": broken}
    print(f"ok: {total} events of {customers} customers applied in order")
    return result


if __name__ == "__main__":
    default = os.environ.get("JMSLIKE_URL", "stomp://127.0.0.1:61613")
    main(sys.argv[1] if len(sys.argv) > 1 else default)
