"""Spark reads split into input partitions by group (ORD-9, ORD-17).

A streaming micro-batch: the split itself (``jmslike/spark/_rows.py``) is checked
property-based against its definition; ``JmsStreamReader`` is then driven as Spark's
driver would drive it, on a real embedded broker with a partitioned queue. A batch read
of a partitioned queue: ``JmsBatchReader`` reads each partition in a Spark partition of
its own. (tests/integration/test_spark_pipeline.py runs both reads in a real Spark session
on real brokers.)
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike import ConfigurationError, ConnectionFactory
from jmslike.partitions.layout import partition_of
from jmslike.spark._mapping import READ_COLUMNS
from jmslike.spark._options import parse_options
from jmslike.spark._read import JmsBatchReader
from jmslike.spark._rows import decode, encode, split_lines, split_rows
from jmslike.spark._stream import JmsStreamReader

pytestmark = pytest.mark.embedded

_COLUMNS = [name for name, _kind in READ_COLUMNS]


def _row(offset: int, group: str | None, body: str | bytes) -> tuple[Any, ...]:
    values: dict[str, Any] = dict.fromkeys(_COLUMNS)
    values.update(
        body=body if isinstance(body, str) else None,
        body_bytes=body if isinstance(body, bytes) else None,
        group=group,
        properties={"note": 'a, "quoted" ] value,'},  # commas and brackets inside a line
        offset=offset,
    )
    return tuple(values[name] for name in _COLUMNS)


def _where(row: tuple[Any, ...], count: int) -> int:
    """The definition: a group's partition by CRC-32, a row in no group by its offset."""
    group, offset = row[_COLUMNS.index("group")], row[_COLUMNS.index("offset")]
    return partition_of(group, count) if group else offset % count


_GROUPS = st.one_of(st.none(), st.sampled_from(["g0", "g1", "Zürich", "a,b", 'q"]', "x" * 40]))
_BODIES = st.one_of(st.text(max_size=20), st.binary(max_size=20))


@given(
    cells=st.lists(st.tuples(_GROUPS, _BODIES), max_size=60),
    count=st.integers(min_value=1, max_value=9),
)
def test_every_row_lands_where_its_group_says_in_delivery_order(
    cells: list[tuple[str | None, str | bytes]], count: int
) -> None:
    rows = [_row(offset, group, body) for offset, (group, body) in enumerate(cells, 1)]
    lines = [json.dumps(encode(row)) for row in rows]
    unkeyed = [json.dumps(encode(row)[: len(_COLUMNS)]) for row in rows]  # before 2026-12-06
    want = [[row for row in rows if _where(row, count) == index] for index in range(count)]
    for split in (
        split_lines(lines, count),
        split_lines(unkeyed, count),
        [
            [json.dumps(row) for row in part]
            for part in split_rows(json.loads(f"[{','.join(lines)}]"), count)
        ],
    ):
        assert [[decode(json.loads(line)) for line in part] for part in split] == want


def _options(url: str, state: Path, **extra: str) -> Any:
    return parse_options({"url": url, "destination": "queue://in", "stateDir": str(state), **extra})


def _send(url: str, groups: int, per_group: int, **settings: Any) -> None:
    with ConnectionFactory(url, **settings).create_connection() as connection:
        session = connection.create_session()
        for g in range(groups):
            producer = session.create_producer("queue://in")
            producer.enable_ordering_group(f"g{g}")
            for n in range(per_group):
                producer.send(session.create_text_message(f"g{g}:{n}"))
        plain = session.create_producer("queue://in")
        for n in range(per_group):
            plain.send(session.create_text_message(f"-:{n}"))


def _read_all(reader: JmsStreamReader, total: int) -> list[list[list[tuple[int, str, str]]]]:
    """Each batch's input partitions, each its (offset, body, group) rows, until ``total``
    rows came."""
    batches: list[list[list[tuple[int, str, str]]]] = []
    start, seen = 0, 0
    while seen < total:
        end = reader.latestOffset()["seq"]
        assert end > start, f"no rows after {seen} of {total}"
        parts = []
        for partition in reader.partitions({"seq": start, "tick": 0}, {"seq": end, "tick": 0}):
            rows = [
                (row["offset"], row["body"], row["group"])
                for batch in reader.read(partition)
                for row in batch.to_pylist()
            ]
            parts.append(rows)
            seen += len(rows)
        batches.append(parts)
        reader.commit({"seq": end, "tick": 0})
        start = end
    return batches


@pytest.mark.parametrize(
    ("settings", "count"),
    [
        pytest.param({}, 1, id="plain queue: one partition"),
        pytest.param({"partitioned_destinations": "queue://in=4"}, 4, id="partitioned queue"),
        pytest.param({"numPartitions": "3"}, 3, id="numPartitions"),
    ],
)
def test_a_batch_is_split_by_group_and_each_group_stays_in_order(
    tmp_path: Path, settings: dict[str, str], count: int
) -> None:
    url = f"embedded://split-{uuid.uuid4().hex}"
    groups, per_group = 12, 25
    total = (groups + 1) * per_group
    with ConnectionFactory(url).create_connection():  # keeps the broker alive
        _send(url, groups, per_group, **{k: v for k, v in settings.items() if "_" in k})
        reader = JmsStreamReader(
            _options(url, tmp_path / "state", receiveTimeout="0.5", **settings)
        )
        try:
            reader.initialOffset()
            batches = _read_all(reader, total)
        finally:
            reader.stop()
    rows = sorted(row for parts in batches for part in parts for row in part)
    assert [offset for offset, _body, _group in rows] == list(range(1, total + 1))
    assert sorted(body for _offset, body, _group in rows) == sorted(
        [f"g{g}:{n}" for g in range(groups) for n in range(per_group)]
        + [f"-:{n}" for n in range(per_group)]
    )
    # every batch in `count` input partitions, and rows in each of them
    assert all(len(parts) == count for parts in batches)
    assert all(any(parts[index] for parts in batches) for index in range(count))
    steps: dict[str, list[int]] = {}
    for parts in batches:
        for index, part in enumerate(parts):
            homes = {_where(_row(offset, group, body), count) for offset, body, group in part}
            assert homes <= {index}, f"input partition {index} held rows of partitions {homes}"
            for _offset, body, group in part:
                if group is not None:
                    steps.setdefault(group, []).append(int(body.split(":")[1]))
    assert steps == {f"g{g}": list(range(per_group)) for g in range(groups)}


@pytest.mark.parametrize("raw", ["0", "1025", "many"])
def test_num_partitions_is_checked(tmp_path: Path, raw: str) -> None:
    with pytest.raises(
        ConfigurationError, match=rf"numPartitions='{raw}': need an integer from 1 to 1024"
    ):
        _options("embedded://x", tmp_path, numPartitions=raw)


# ------------------------------------------------------------------------- batch read


@pytest.mark.parametrize("mode", ["browse", "drain"])
@pytest.mark.parametrize(("extra", "count"), [({}, 4), ({"numPartitions": "1"}, 1)])
def test_a_batch_read_of_a_partitioned_queue_reads_each_partition_in_a_task(
    mode: str, extra: dict[str, str], count: int
) -> None:
    """Spark's partition i is the queue's partition i (numPartitions=1: one task reading
    them all), each group whole and in order, offsets from 0 in each; a drain takes every
    message, a browse leaves them."""
    url = f"embedded://batch-split-{uuid.uuid4().hex}"
    declared = {"partitioned_destinations": "queue://in=4"}
    groups, per_group = 12, 25
    with ConnectionFactory(url).create_connection():  # keeps the broker alive
        _send(url, groups, per_group, **declared)
        options = {"url": url, "destination": "queue://in", "readMode": mode, **declared}
        reader = JmsBatchReader(parse_options({**options, "receiveTimeout": "0.3", **extra}))
        parts = [
            [(row[_COLUMNS.index("body")], row[_COLUMNS.index("group")]) for row in rows]
            for rows in ([*reader.read(partition)] for partition in reader.partitions())
        ]
        offsets = [
            [row[_COLUMNS.index("offset")] for row in reader.read(partition)]
            for partition in reader.partitions()
        ]
    assert len(parts) == count
    bodies = sorted(body for part in parts for body, _group in part)
    assert bodies == sorted(
        [f"g{g}:{n}" for g in range(groups) for n in range(per_group)]
        + [f"-:{n}" for n in range(per_group)]
    )
    steps: dict[str, list[int]] = {}
    for index, part in enumerate(parts):
        for body, group in part:
            if group is not None:
                assert count == 1 or partition_of(group, 4) == index, (group, index)
                steps.setdefault(group, []).append(int(body.split(":")[1]))
    assert steps == {f"g{g}": list(range(per_group)) for g in range(groups)}
    if count > 1:  # messages in no group go to the partitions in turn
        assert all(any(group is None for _body, group in part) for part in parts)
    # read again: a browse finds every message in its place, a drain left nothing
    again = sum(len(part) for part in offsets)
    assert again == (0 if mode == "drain" else len(bodies))
    assert all(part == list(range(len(part))) for part in offsets)


@pytest.mark.parametrize(
    ("settings", "raw", "message"),
    [
        ({"partitioned_destinations": "queue://in=4"}, "3", "reads its 4 partitions"),
        ({}, "2", "not partitioned, is one ordered line"),
    ],
)
def test_num_partitions_of_a_batch_read_is_checked_on_the_driver(
    settings: dict[str, str], raw: str, message: str
) -> None:
    options = {"url": "embedded://x", "destination": "queue://in", **settings}
    reader = JmsBatchReader(parse_options({**options, "numPartitions": raw}))
    with pytest.raises(ConfigurationError, match=rf"numPartitions={raw}: .*{message}"):
        reader.partitions()
