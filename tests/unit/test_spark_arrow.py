"""The streaming read's rows as Arrow record batches (``jmslike.spark._mapping``).

PySpark takes a reader's ``pyarrow.RecordBatch`` as it is, after checking that its
schema equals the one PySpark derives from the source's schema (a mismatch fails the
task): so the batches are compared with that derivation here, for every column kind,
with values and nulls as a message gives them.
"""

from __future__ import annotations

from inspect import signature

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from jmslike.spark._mapping import READ_COLUMNS, arrow_batches

_KINDS: dict[str, DataType] = {
    "STRING": StringType(),
    "BINARY": BinaryType(),
    "LONG": LongType(),
    "INT": IntegerType(),
    "BOOLEAN": BooleanType(),
    "MAP<STRING, STRING>": MapType(StringType(), StringType()),
}


def test_batches_have_the_schema_pyspark_checks_and_keep_every_value() -> None:
    schema = StructType([StructField(name, _KINDS[kind]) for name, kind in READ_COLUMNS])
    # PySpark 4.3 derives it with timezone="UTC" (no timestamp column here); 4.0 has no
    # such argument.
    zone = {"timezone": "UTC"} if "timezone" in signature(to_arrow_schema).parameters else {}
    expected = to_arrow_schema(schema, **zone)
    text_row = ("t", None, "ID:1", "queue://q", 1, None, None, 4, 2, False, 0, 1, "g", 1, {}, 1)
    bytes_row = (None, b"\x00\xff", "ID:2", "queue://q", 2, "c", "k", 9, 1, True, 5, 2, None,
                 None, {"a": "1", "b": "x"}, 2)  # fmt: skip
    rows = [text_row, bytes_row] * 3
    batches = list(arrow_batches(rows, size=4))
    assert [batch.num_rows for batch in batches] == [4, 2]
    for batch in batches:
        assert batch.schema.equals(expected), batch.schema
    back = [
        tuple(
            dict(value) if name == "properties" else value
            for name, value in zip(batch.schema.names, values, strict=True)
        )
        for batch in batches
        for values in zip(*(column.to_pylist() for column in batch.columns), strict=True)
    ]
    assert back == rows
    assert list(arrow_batches([])) == []
