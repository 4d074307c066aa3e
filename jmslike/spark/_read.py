"""Batch read: a destination into a DataFrame, browsed (left in place) or drained.

A queue is one ordered line, so a batch read of it is one Spark partition read by one
task with one connection: the rows come in delivery order, which is group order (ORD-9,
ORD-20). A partitioned queue (docs/partitions.md) is as many lines as it has partitions,
each holding whole groups, so it is read as that many Spark partitions, one task each:
Spark's partition *i* is the queue's partition *i*, browsed, or drained by a consumer of
that partition alone (strictly ordered and standby, as a partitioned consumer's own: a
partition some other process consumes now stays with it, and the task reads what it
gets before ``receiveTimeout``). ``numPartitions=1`` reads such a queue in one task, as
one consumer of every partition. ``offset`` counts from 0 in each Spark partition.

``readMode=drain`` consumes with CLIENT_ACKNOWLEDGE and acknowledges every
``drainAckEvery`` rows (default 100) and after the last one. Not once at the end: a
broker pages a limited number of messages in for delivery (ActiveMQ Classic's
maxPageSize, 200 by default) and sends no more while those are unacknowledged, so a
drain that never acknowledged would stop there. A task that fails leaves only the
rows since the last acknowledgement on the broker: cache a drained DataFrame, and
use the streaming read where every row must survive a failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from jmslike.destination import Destination
from jmslike.errors import ConfigurationError
from jmslike.session import Session
from jmslike.spark._mapping import message_row
from jmslike.spark._options import SparkOptions

__all__ = ["JmsBatchReader"]


class JmsBatchReader(DataSourceReader):
    def __init__(self, options: SparkOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(line) for line in self._lines()]

    def _lines(self) -> list[tuple[Destination, bool]]:
        """What each Spark partition reads: (destination, one partition of a partitioned
        queue). Checked on the driver, so a bad ``numPartitions`` fails before any read."""
        options = self.options
        destination = options.destination
        spec = options.partitioned()
        wanted = options.num_partitions
        if spec is None or wanted == 1:
            if wanted not in (None, 1):
                raise ConfigurationError(
                    f"option numPartitions={wanted}: a batch read of {destination}, which is "
                    "not partitioned, is one ordered line read by one task; leave "
                    "numPartitions out (it splits streaming micro-batches only)"
                )
            return [(destination, False)]
        if wanted not in (None, spec.count):
            raise ConfigurationError(
                f"option numPartitions={wanted}: a batch read of {destination} reads its "
                f"{spec.count} partitions, one task each; use {spec.count} (or leave it "
                "out), or 1 for one task reading them all"
            )
        return [(spec.partition(index), True) for index in range(spec.count)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        options = self.options
        destination, one_partition = partition.value
        with options.factory().create_connection() as connection:
            if options.read_mode == "browse":
                session = connection.create_session()
                for offset, message in enumerate(session.create_browser(destination)):
                    yield message_row(message, offset)
                return
            session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = session.create_consumer(
                destination, strictly_ordered=one_partition, standby=one_partition
            )
            connection.start()
            offset = 0
            while (received := consumer.receive(options.receive_timeout)) is not None:
                yield message_row(received, offset)
                offset += 1
                if offset % options.drain_ack_every == 0:
                    session.acknowledge()
            if offset % options.drain_ack_every:
                session.acknowledge()
