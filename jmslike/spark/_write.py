"""The sink: each Spark task sends its partition's rows through its own connection.

Thread/process model: ``write`` runs in a Spark Python worker process on an executor,
one task at a time per worker; it opens one connection and one transacted session,
creates one producer per group it meets (bound with ``enable_ordering_group``, ORD-5)
and commits every ``batchSize`` rows, so persistent sends are confirmed per
transaction rather than one round trip per message. A transaction's messages keep
their order (ORD-8). Rows with a duplicate id for Artemis go outside transactions
(see ``send_partition``).

What the sink cannot do is move rows between partitions: Spark gives each task its
partition as it is. So group order holds end to end only when all rows of a group are
in one partition, sorted by ``orderColumn``; :func:`jmslike.spark.write_ordered` makes
the DataFrame so. A plain ``df.write.format("jmslike")`` is checked instead of trusted:
a row that comes before its group's previous row raises ``OrderingError`` in the task
(its open transaction is rolled back), and a group met by two tasks raises
``OrderingError`` on the driver when the job commits. Order is never broken silently,
but sends committed before such an error stay sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)

from jmslike.errors import OrderingError
from jmslike.producer import MessageProducer
from jmslike.spark._mapping import WritePlan
from jmslike.spark._options import SparkOptions

__all__ = ["DUPLICATE_ID_PROPERTY", "ROW_ID_PROPERTY", "JmsBatchWriter", "JmsStreamWriter"]

log = logging.getLogger("jmslike.spark")

DUPLICATE_ID_PROPERTY = "_AMQ_DUPL_ID"
"""Artemis drops a message whose duplicate id it has already seen on the address."""
ROW_ID_PROPERTY = "sparkRowId"
"""The same deterministic id, readable on every broker, for consumers that dedupe."""


@dataclass
class PartitionSent(WriterCommitMessage):
    """What one task sent: the driver checks that no group was split across tasks."""

    partition: int
    rows: int
    groups: frozenset[str]


def send_partition(
    options: SparkOptions, plan: WritePlan, rows: Iterator[Sequence[Any]], row_id_prefix: str | None
) -> PartitionSent:
    """Send ``rows`` in their order; one producer per group, commits per batchSize."""
    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    factory = options.factory()
    count = 0
    producers: dict[str, MessageProducer] = {}
    last: dict[str, Any] = {}
    with factory.create_connection() as connection:
        dedupe = row_id_prefix is not None and (
            options.duplicate_ids == "true"
            or (options.duplicate_ids == "auto" and connection.capabilities.broker == "artemis")
        )
        # Artemis rejects a whole transaction holding one duplicate and drops the
        # connection, so rows with duplicate ids go one by one (each dropped alone).
        transacted = not dedupe
        session = connection.create_session(transacted=transacted)
        plain = session.create_producer(options.destination)
        plain.delivery_mode = options.delivery_mode
        pending = 0
        for row in rows:
            message = plan.message(session, row)
            group = plan.group(row)
            producer = plain
            if group is not None:
                order = plan.order(row)
                if order is not None:
                    before = last.get(group)
                    if before is not None and order < before:
                        if transacted:
                            session.rollback()
                        raise OrderingError(
                            f"partition {partition}: group {group!r} has {plan.order_column}="
                            f"{order!r} after {before!r}; sort within partitions first "
                            "(jmslike.spark.write_ordered does)"
                        )
                    last[group] = order
                found = producers.get(group)
                if found is None:
                    found = session.create_producer(options.destination)
                    found.delivery_mode = options.delivery_mode
                    found.enable_ordering_group(group)
                    producers[group] = found
                producer = found
            if row_id_prefix is not None:
                row_id = f"{row_id_prefix}-{partition}-{count}"
                message.set_string_property(ROW_ID_PROPERTY, row_id)
                if dedupe:
                    message.set_string_property(DUPLICATE_ID_PROPERTY, row_id)
            producer.send(message)
            count += 1
            pending += 1
            if transacted and pending >= options.batch_size:
                session.commit()
                pending = 0
        if transacted:
            session.commit()
    return PartitionSent(partition, count, frozenset(producers))


def check_split_groups(messages: Sequence[WriterCommitMessage | None]) -> None:
    """Raise ``OrderingError`` if two tasks sent the same group (their sends interleaved)."""
    owner: dict[str, int] = {}
    for message in messages:
        if not isinstance(message, PartitionSent):
            continue
        for group in message.groups:
            first = owner.setdefault(group, message.partition)
            if first != message.partition:
                raise OrderingError(
                    f"group {group!r} was in partitions {first} and {message.partition}, so "
                    "two tasks sent it at once and its order on the broker is not the order "
                    "of orderColumn; repartition by the group column first "
                    "(jmslike.spark.write_ordered does)"
                )


class JmsBatchWriter(DataSourceWriter):
    """``df.write.format("jmslike")``: one connection per task, see the module docstring."""

    def __init__(self, options: SparkOptions, plan: WritePlan) -> None:
        self.options = options
        self.plan = plan

    def write(self, iterator: Iterator[Sequence[Any]]) -> PartitionSent:
        return send_partition(self.options, self.plan, iterator, None)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        check_split_groups(messages)
        sent = sum(m.rows for m in messages if isinstance(m, PartitionSent))
        log.info("sent %d rows to %s", sent, self.options.destination)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        sent = sum(m.rows for m in messages if isinstance(m, PartitionSent))
        log.warning(
            "write to %s failed; %d rows of tasks that finished stay sent (a broker has no "
            "undo for committed sends)",
            self.options.destination,
            sent,
        )


class JmsStreamWriter(DataSourceStreamWriter):
    """``writeStream``: at-least-once, every row with a deterministic id.

    A retried task or a replayed micro-batch sends its rows again with the same
    ``{query id}-{batch id}-{partition}-{row}`` id; Artemis drops them through its
    duplicate detection (``_AMQ_DUPL_ID``), other brokers deliver them again and the id
    (``sparkRowId``) lets the consumer drop them.
    """

    def __init__(self, options: SparkOptions, plan: WritePlan) -> None:
        self.options = options
        self.plan = plan

    def write(self, iterator: Iterator[Sequence[Any]]) -> PartitionSent:
        context = TaskContext.get()
        query = batch = None
        if context is not None:
            query = context.getLocalProperty("sql.streaming.queryId")
            batch = context.getLocalProperty("streaming.sql.batchId")
        prefix = f"{query or 'query'}-{batch if batch is not None else 'batch'}"
        return send_partition(self.options, self.plan, iterator, prefix)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        check_split_groups(messages)
        log.debug("micro-batch %d sent to %s", batchId, self.options.destination)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        log.warning(
            "micro-batch %d to %s failed; Spark sends it again with the same row ids",
            batchId,
            self.options.destination,
        )
