"""jmslike as a PySpark data source and sink (PySpark 4.x Python Data Source API).

``register(spark)`` makes ``format("jmslike")`` known to a SparkSession; then::

    jmslike.spark.write_ordered(df, url=..., destination="queue://orders",
                                group_column="customer_id", order_column="ts")
    spark.read.format("jmslike").option("url", url).option("destination", d).load()
    spark.readStream.format("jmslike")....option("stateDir", path).load()

docs/spark.md says which ordering rules hold end to end and why. Importing this module
needs pyspark (``pip install 'jmslike[spark]'``); ``import jmslike`` never imports it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

try:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.datasource import DataSource
except ImportError as exc:  # pragma: no cover - depends on the installation
    from jmslike.errors import ConfigurationError

    raise ConfigurationError(
        "jmslike.spark needs PySpark 4.0 or later: pip install 'jmslike[spark]'"
    ) from exc

from jmslike.errors import ConfigurationError
from jmslike.spark._mapping import READ_COLUMNS, READ_SCHEMA, plan_write
from jmslike.spark._options import SparkOptions, parse_options
from jmslike.spark._read import JmsBatchReader
from jmslike.spark._stream import JmsStreamReader
from jmslike.spark._write import (
    DUPLICATE_ID_PROPERTY,
    ROW_ID_PROPERTY,
    JmsBatchWriter,
    JmsStreamWriter,
)

__all__ = [
    "DUPLICATE_ID_PROPERTY",
    "READ_COLUMNS",
    "READ_SCHEMA",
    "ROW_ID_PROPERTY",
    "JmsDataSource",
    "SparkOptions",
    "local_session",
    "parse_options",
    "prepare_ordered",
    "register",
    "write_ordered",
]


def local_session(app_name: str, *, cores: int = 2, shuffle_partitions: int = 4) -> SparkSession:
    """A local SparkSession for examples, tests and benchmarks on one machine: its Python
    workers run this interpreter (so they import the same jmslike), and the driver binds
    to loopback only, with no web UI."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )


class JmsDataSource(DataSource):
    """The ``jmslike`` format. Options: docs/spark.md; unknown keys are factory settings."""

    @classmethod
    def name(cls) -> str:
        return "jmslike"

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self._parsed: SparkOptions | None = None

    @property
    def parsed(self) -> SparkOptions:
        if self._parsed is None:
            self._parsed = parse_options(dict(self.options))
        return self._parsed

    def schema(self) -> str:
        return READ_SCHEMA

    def _plan(self, schema: Any) -> Any:
        options = self.parsed
        fields = [(f.name, type(f.dataType).__name__) for f in schema.fields]
        return plan_write(fields, options.body_column, options.group_column, options.order_column)

    def writer(self, schema: Any, overwrite: bool) -> JmsBatchWriter:
        if overwrite:
            raise ConfigurationError(
                'save mode "overwrite": a destination cannot be overwritten, only appended '
                'to; use .mode("append")'
            )
        return JmsBatchWriter(self.parsed, self._plan(schema))

    def streamWriter(self, schema: Any, overwrite: bool) -> JmsStreamWriter:  # noqa: N802
        return JmsStreamWriter(self.parsed, self._plan(schema))

    def reader(self, schema: Any) -> JmsBatchReader:
        return JmsBatchReader(self.parsed)

    def streamReader(self, schema: Any) -> JmsStreamReader:  # noqa: N802
        return JmsStreamReader(self.parsed)


def register(spark: SparkSession) -> None:
    """Make ``format("jmslike")`` known to ``spark`` (idempotent)."""
    spark.dataSource.register(JmsDataSource)


def prepare_ordered(df: DataFrame, group_column: str, order_column: str | None) -> DataFrame:
    """``df`` with each group in one partition, sorted by ``order_column``.

    The sink cannot move rows between partitions, so this is the step that lets a plain
    ``df.write.format("jmslike")`` keep ORD-8 end to end: it pass its checks instead of
    raising ``OrderingError``.
    """
    sort = [group_column] if order_column is None else [group_column, order_column]
    return df.repartition(group_column).sortWithinPartitions(*sort)


def write_ordered(
    df: DataFrame,
    *,
    url: str,
    destination: str,
    group_column: str,
    order_column: str | None = None,
    **options: str,
) -> None:
    """Send ``df``, every group by one producer in ``order_column`` order (ORD-5, ORD-8).

    ``options`` are more ``.option()`` pairs: ``user``, ``password``, ``batchSize``,
    ``bodyColumn``, ``deliveryMode`` or any factory setting.
    """
    # The same checks the data source makes in Spark's planner process, made here too so
    # that a bad option or schema raises the jmslike error itself, in this process.
    parsed = parse_options(
        {
            "url": url,
            "destination": destination,
            "groupColumn": group_column,
            **({"orderColumn": order_column} if order_column else {}),
            **options,
        }
    )
    fields = [(f.name, type(f.dataType).__name__) for f in df.schema.fields]
    plan_write(fields, parsed.body_column, group_column, order_column)
    register(df.sparkSession)
    writer = prepare_ordered(df, group_column, order_column).write.format("jmslike")
    writer = writer.option("url", url).option("destination", destination)
    writer = writer.option("groupColumn", group_column)
    if order_column is not None:
        writer = writer.option("orderColumn", order_column)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()
