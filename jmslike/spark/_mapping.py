"""Rows <-> messages: which Spark column becomes which part of a JMS message.

The write plan is built on the driver from the DataFrame's schema, before any task
runs, so a schema that cannot map raises there and no message is sent. A row then
becomes a message by index lookups only (no per-row schema work), on the executors.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from jmslike.errors import ConfigurationError, InvalidOrderingGroupError, MessageFormatError
from jmslike.message import BytesMessage, Message, TextMessage, check_property_name
from jmslike.session import Session

__all__ = [
    "READ_COLUMNS",
    "READ_SCHEMA",
    "WritePlan",
    "arrow_batches",
    "body_size",
    "message_row",
    "plan_write",
]

READ_COLUMNS = (
    ("body", "STRING"),
    ("body_bytes", "BINARY"),
    ("message_id", "STRING"),
    ("destination", "STRING"),
    ("timestamp", "LONG"),
    ("correlation_id", "STRING"),
    ("type", "STRING"),
    ("priority", "INT"),
    ("delivery_mode", "INT"),
    ("redelivered", "BOOLEAN"),
    ("expiration", "LONG"),
    ("delivery_count", "INT"),
    ("group", "STRING"),
    ("group_seq", "LONG"),
    ("properties", "MAP<STRING, STRING>"),
    ("offset", "LONG"),
)
READ_SCHEMA = ", ".join(f"`{name}` {kind}" for name, kind in READ_COLUMNS)
"""What a read gives: the body (text, or bytes for a BytesMessage), the JMS headers,
the group and its sequence (ORD-20), every other property as a string, and the row's
position (batch read: in the destination; streaming: jmslike's durable offset)."""

_PROPERTY_KINDS = {
    "StringType": "string",
    "BooleanType": "boolean",
    "ByteType": "byte",
    "ShortType": "short",
    "IntegerType": "int",
    "LongType": "long",
    "FloatType": "float",
    "DoubleType": "double",
    "TimestampType": "timestamp",
    "TimestampNTZType": "timestamp",
    "DateType": "date",
}
"""Spark column type -> JMS property type. Timestamps travel as epoch milliseconds
(long, as JMSTimestamp does), dates as ISO strings."""
_GROUP_KINDS = {"StringType", "IntegerType", "LongType", "ShortType", "ByteType"}
_ORDER_KINDS = {
    *_GROUP_KINDS,
    "FloatType",
    "DoubleType",
    "TimestampType",
    "TimestampNTZType",
    "DateType",
    "DecimalType",
}


def _millis(value: datetime.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return int(value.timestamp() * 1000)


@dataclass(frozen=True)
class WritePlan:
    """Column indexes and property kinds; picklable, built once per write."""

    body_index: int
    body_is_binary: bool
    group_index: int | None
    group_column: str | None
    order_index: int | None
    order_column: str | None
    properties: tuple[tuple[int, str, str], ...]
    """(index, property name, JMS kind) for every other column."""

    def message(self, session: Session, row: Sequence[Any]) -> Message:
        body = row[self.body_index]
        message: Message
        if self.body_is_binary:
            message = session.create_bytes_message(bytes(body) if body is not None else b"")
        else:
            message = session.create_text_message(body)
        for index, name, kind in self.properties:
            value = row[index]
            if value is None:
                continue
            _SETTERS[kind](message, name, value)
        return message

    def group(self, row: Sequence[Any]) -> str | None:
        if self.group_index is None:
            return None
        value = row[self.group_index]
        if value is None or value == "":
            raise InvalidOrderingGroupError(
                f"row {tuple(row)!r}: group column {self.group_column!r} is empty; every "
                "row needs a group name (ORD-1)"
            )
        return str(value)

    def order(self, row: Sequence[Any]) -> Any:
        if self.order_index is None:
            return None
        value = row[self.order_index]
        if value is None:
            raise ConfigurationError(
                f"row {tuple(row)!r}: order column {self.order_column!r} is null, so its "
                "place in the group cannot be known"
            )
        return value


_SETTERS: dict[str, Callable[[Message, str, Any], None]] = {
    "string": lambda m, n, v: m.set_string_property(n, v),
    "boolean": lambda m, n, v: m.set_boolean_property(n, v),
    "byte": lambda m, n, v: m.set_byte_property(n, v),
    "short": lambda m, n, v: m.set_short_property(n, v),
    "int": lambda m, n, v: m.set_int_property(n, v),
    "long": lambda m, n, v: m.set_long_property(n, v),
    "float": lambda m, n, v: m.set_float_property(n, v),
    "double": lambda m, n, v: m.set_double_property(n, v),
    "timestamp": lambda m, n, v: m.set_long_property(n, _millis(v)),
    "date": lambda m, n, v: m.set_string_property(n, v.isoformat()),
}


def _check_property_name(name: str) -> None:
    """The JMS rules (``check_property_name``), plus no ``JMS`` or ``jmslike`` prefix at
    all: a column must not pass for a header or for jmslike's own bookkeeping."""
    check_property_name(name)
    if name.startswith(("JMS", "jmslike")):
        raise MessageFormatError(
            f"column {name!r} cannot be a JMS property: names starting with JMS or jmslike "
            "are headers or jmslike's own; rename the column (df.withColumnRenamed) or drop it"
        )


def plan_write(
    fields: Sequence[tuple[str, str]],
    body_column: str,
    group_column: str | None,
    order_column: str | None,
) -> WritePlan:
    """The plan for a schema given as (column name, Spark type class name) pairs.

    Raises ``ConfigurationError`` (or ``MessageFormatError`` for a bad property name)
    naming the column, before anything is sent.
    """
    names = [name for name, _ in fields]
    kinds = dict(fields)
    for role, column in (
        ("bodyColumn", body_column),
        ("groupColumn", group_column),
        ("orderColumn", order_column),
    ):
        if column is not None and column not in kinds:
            raise ConfigurationError(
                f"option {role}={column!r}: no such column (the columns are {names})"
            )
    if kinds[body_column] not in ("StringType", "BinaryType"):
        raise ConfigurationError(
            f"body column {body_column!r} is {kinds[body_column]}: need a string (TextMessage) "
            "or binary (BytesMessage) column; cast it first"
        )
    if group_column is not None and kinds[group_column] not in _GROUP_KINDS:
        raise ConfigurationError(
            f"group column {group_column!r} is {kinds[group_column]}: need a string or "
            "integer column (a group is named by a string, ORD-1)"
        )
    if order_column is not None and kinds[order_column] not in _ORDER_KINDS:
        raise ConfigurationError(
            f"order column {order_column!r} is {kinds[order_column]}: need a number, string, "
            "date or timestamp column"
        )
    properties: list[tuple[int, str, str]] = []
    for index, (name, kind) in enumerate(fields):
        if name in (body_column, group_column):
            continue
        jms_kind = _PROPERTY_KINDS.get(kind)
        if jms_kind is None:
            raise ConfigurationError(
                f"column {name!r} is {kind}, which no JMS property type holds: the types that "
                f"map are {sorted(_PROPERTY_KINDS)}; cast the column or drop it"
            )
        _check_property_name(name)
        properties.append((index, name, jms_kind))
    return WritePlan(
        body_index=names.index(body_column),
        body_is_binary=kinds[body_column] == "BinaryType",
        group_index=None if group_column is None else names.index(group_column),
        group_column=group_column,
        order_index=None if order_column is None else names.index(order_column),
        order_column=order_column,
        properties=tuple(properties),
    )


_HIDDEN = ("JMSXGroupID", "JMSXGroupSeq", "JMSXDeliveryCount")


def body_size(message: Message) -> int:
    """What a message's body weighs in a batch: its bytes, or its text's characters."""
    body = message.body
    return len(body) if isinstance(body, (bytes, bytearray, str)) else 0


def message_row(message: Message, offset: int) -> tuple[Any, ...]:
    """One row of :data:`READ_SCHEMA` for ``message``."""
    text: str | None = None
    data: bytes | None = None
    if isinstance(message, BytesMessage):
        data = message.body
    elif isinstance(message, TextMessage):
        text = message.text
    elif message.body is not None:
        text = str(message.body)
    properties = {
        name: str(message.get_object_property(name))
        for name in message.property_names()
        if name not in _HIDDEN
    }
    return (
        text,
        data,
        message.jms_message_id,
        str(message.jms_destination) if message.jms_destination is not None else None,
        message.jms_timestamp,
        message.jms_correlation_id,
        message.jms_type,
        message.jms_priority,
        message.jms_delivery_mode,
        message.jms_redelivered,
        message.jms_expiration,
        message.get_int_property("JMSXDeliveryCount"),
        message.ordering_group,
        message.get_long_property("JMSXGroupSeq"),
        properties,
        offset,
    )


_ARROW_TYPES = {
    "STRING": "string",
    "BINARY": "binary",
    "LONG": "int64",
    "INT": "int32",
    "BOOLEAN": "bool",
}


@functools.cache
def _arrow_schema() -> Any:
    """The Arrow schema PySpark derives from READ_SCHEMA, which it checks a batch
    against; made once per process."""
    import pyarrow as pa  # the spark extra's; imported where a read runs

    return pa.schema(
        [
            pa.field(
                name,
                pa.map_(pa.string(), pa.string())
                if kind.startswith("MAP")
                else pa.type_for_alias(_ARROW_TYPES[kind]),
            )
            for name, kind in READ_COLUMNS
        ]
    )


def arrow_batches(rows: Sequence[tuple[Any, ...]], size: int = 10_000) -> Iterator[Any]:
    """``rows`` of :data:`READ_SCHEMA` as ``pyarrow.RecordBatch`` es of up to ``size``.

    Why: a reader that yields tuples has PySpark check and convert every value in Python
    (about 50 µs a row here: a quarter of a streaming micro-batch's time); pyarrow builds
    the columns in C (5 µs a row)."""
    import pyarrow as pa

    schema = _arrow_schema()
    for first in range(0, len(rows), size):
        columns = zip(*rows[first : first + size], strict=True)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(column, type=field.type)
                for column, field in zip(columns, schema, strict=True)
            ],
            schema=schema,
        )
