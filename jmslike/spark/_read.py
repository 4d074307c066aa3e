"""Batch read: a destination into a DataFrame, browsed (left in place) or drained.

A queue is one ordered line, so a batch read is one Spark partition read by one task
with one connection: the rows come in delivery order, which is group order (ORD-9,
ORD-20). ``readMode=drain`` consumes with CLIENT_ACKNOWLEDGE and acknowledges every
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

from jmslike.session import Session
from jmslike.spark._mapping import message_row
from jmslike.spark._options import SparkOptions

__all__ = ["JmsBatchReader"]


class JmsBatchReader(DataSourceReader):
    def __init__(self, options: SparkOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        options = self.options
        with options.factory().create_connection() as connection:
            if options.read_mode == "browse":
                session = connection.create_session()
                for offset, message in enumerate(session.create_browser(options.destination)):
                    yield message_row(message, offset)
                return
            session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = session.create_consumer(options.destination)
            connection.start()
            offset = 0
            while (received := consumer.receive(options.receive_timeout)) is not None:
                yield message_row(received, offset)
                offset += 1
                if offset % options.drain_ack_every == 0:
                    session.acknowledge()
            if offset % options.drain_ack_every:
                session.acknowledge()
