"""The streaming read's write-ahead spool (``acknowledge=stored``), without Spark.

``JmsStreamReader`` is driven directly, as Spark's driver process would call it, on a
real embedded broker: a reader that dies after acknowledging part of a batch must leave
those rows on disk, and the next reader must serve them, in order, before anything new.
(tests/integration/test_spark_pipeline.py runs both modes in a real Spark session.)
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jmslike import ConfigurationError, Connection, ConnectionFactory
from jmslike.spark._options import parse_options
from jmslike.spark._stream import JmsStreamReader

pytestmark = pytest.mark.embedded

GROUPS, PER_GROUP = 3, 10


class _DiedError(Exception):
    """Stands for the driver process dying at that point."""


def _options(url: str, state: Path, **extra: str) -> Any:
    return parse_options({"url": url, "destination": "queue://in", "stateDir": str(state), **extra})


def _rows(reader: JmsStreamReader, start: int, end: int) -> list[str]:
    (partition,) = reader.partitions({"seq": start, "tick": 0}, {"seq": end, "tick": 0})
    # read() gives pyarrow record batches, as Spark's executors take them
    return [text for batch in reader.read(partition) for text in batch.column("body").to_pylist()]


def test_a_reader_that_dies_mid_batch_leaves_its_acknowledged_rows_to_the_next(
    tmp_path: Path,
) -> None:
    url = f"embedded://spool-{uuid.uuid4().hex}"
    state = tmp_path / "state"
    sent = [f"g{g}:{n}" for n in range(PER_GROUP) for g in range(GROUPS)]
    with ConnectionFactory(url).create_connection() as keeper:  # keeps the broker alive
        session = keeper.create_session()
        producers = []
        for g in range(GROUPS):
            producer = session.create_producer("queue://in")
            producer.enable_ordering_group(f"g{g}")
            producers.append(producer)
        for text in sent:
            producers[int(text[1])].send(session.create_text_message(text))

        first = JmsStreamReader(_options(url, state, drainAckEvery="7"))

        def die(*_args: object) -> None:
            raise _DiedError

        first._state.promote_spool = die  # type: ignore[method-assign]
        with pytest.raises(_DiedError):
            first.latestOffset()
        first.stop()
        assert [p.name for p in state.glob("spool-*")] == ["spool-0.jsonl"]
        assert not list(state.glob("batch-*")), "the batch file was never written"

        # Spark also makes a reader where it plans a batch's read; that one leaves the
        # state dir alone (the driver's reader may be writing a spool at that moment).
        JmsStreamReader(_options(url, state))
        assert [p.name for p in state.glob("spool-*")] == ["spool-0.jsonl"]

        second = JmsStreamReader(_options(url, state))
        assert second.initialOffset() == {"seq": 0, "tick": 0}
        assert not list(state.glob("spool-*")), "the spool became a batch"
        end = second.latestOffset()
        assert end["seq"] == len(sent), end
        assert _rows(second, 0, end["seq"]) == sent
        second.commit(end)
        assert not list(state.glob("batch-*"))
        second.stop()
        # Everything was acknowledged as it was spooled: the broker has nothing left.
        leftover = keeper.create_session().create_consumer("queue://in")
        keeper.start()
        assert leftover.receive(0.3) is None


def test_stored_batches_are_acknowledged_before_spark_commits(tmp_path: Path) -> None:
    """The point of ``stored``: the broker forgets a batch once it is on disk, so the next
    batch is not held back by it; a batch Spark fails comes again from the file."""
    url = f"embedded://spool-{uuid.uuid4().hex}"
    state = tmp_path / "state"
    with ConnectionFactory(url).create_connection() as keeper:
        _send_group(keeper, 10)
        reader = JmsStreamReader(_options(url, state, maxMessagesPerBatch="4"))
        offsets = [reader.latestOffset() for _ in range(3)]
        assert [o["seq"] for o in offsets] == [4, 8, 10]
        reader.stop()  # Spark failed before committing anything
        again = JmsStreamReader(_options(url, state))
        assert again.initialOffset()["seq"] == 0
        assert _rows(again, 0, 4) == [f"g:{n}" for n in range(4)]
        assert _rows(again, 4, 10) == [f"g:{n}" for n in range(4, 10)]
        assert again.latestOffset()["seq"] == 10  # nothing new: the broker forgot them
        again.stop()


def test_the_next_batch_is_spooled_while_spark_runs_the_current_one(tmp_path: Path) -> None:
    """The receiver thread (``jmslike/spark/_spooler.py``) spools and acknowledges the
    next batch before Spark asks for it, and with ``maxBatchesAhead=1`` never more than
    one batch ahead; a reader Spark makes meanwhile to plan a read leaves that spool
    alone."""
    url = f"embedded://spool-{uuid.uuid4().hex}"
    state = tmp_path / "state"
    with ConnectionFactory(url).create_connection() as keeper:
        _send_group(keeper, 10)
        options = _options(
            url, state, maxMessagesPerBatch="4", drainAckEvery="2", maxBatchesAhead="1"
        )
        reader = JmsStreamReader(options)
        try:
            assert reader.latestOffset()["seq"] == 4
            spool = state / "spool-4.jsonl"
            _wait_lines(spool, 4)
            time.sleep(0.3)
            assert _lines(spool) == 4, "one batch ahead, no more"
            assert not (state / "spool-8.jsonl").exists()
            JmsStreamReader(_options(url, state))  # as Spark's planning worker makes one
            assert spool.exists()
            assert reader.latestOffset()["seq"] == 8
            assert _rows(reader, 4, 8) == [f"g:{n}" for n in range(4, 8)]
            assert reader.latestOffset()["seq"] == 10
        finally:
            reader.stop()


def test_full_batches_wait_up_to_max_batches_ahead_and_outlive_their_reader(
    tmp_path: Path,
) -> None:
    """By default the receiver spools up to three full batches ahead of Spark, each in a
    spool of its own (Spark's first micro-batch takes seconds to start; the broker need
    not wait for it), and stops there. A reader that dies then leaves the three spools
    to the next reader as three batches, served in order before anything new."""
    url = f"embedded://spool-{uuid.uuid4().hex}"
    state = tmp_path / "state"
    with ConnectionFactory(url).create_connection() as keeper:
        _send_group(keeper, 20)
        reader = JmsStreamReader(_options(url, state, maxMessagesPerBatch="4", drainAckEvery="2"))
        assert reader.latestOffset()["seq"] == 4
        spools = [state / f"spool-{start}.jsonl" for start in (4, 8, 12)]
        for spool in spools:
            _wait_lines(spool, 4)
        time.sleep(0.3)
        assert [_lines(spool) for spool in spools] == [4, 4, 4]
        assert not (state / "spool-16.jsonl").exists(), "three full batches ahead, no more"
        reader.stop()  # the driver died before Spark asked for them

        again = JmsStreamReader(_options(url, state, maxMessagesPerBatch="4"))
        try:
            assert again.initialOffset()["seq"] == 0
            assert not list(state.glob("spool-*")), "each spool became a batch"
            assert sorted(again._state.batches()) == [4, 8, 12, 16]
            assert _rows(again, 0, 16) == [f"g:{n}" for n in range(16)]
            assert again.latestOffset()["seq"] == 20
            assert _rows(again, 16, 20) == [f"g:{n}" for n in range(16, 20)]
        finally:
            again.stop()


def _send_group(keeper: Connection, count: int) -> None:
    """``count`` messages of group ``g`` to ``queue://in``, bodies ``g:0``, ``g:1``..."""
    session = keeper.create_session()
    producer = session.create_producer("queue://in")
    producer.enable_ordering_group("g")
    for n in range(count):
        producer.send(session.create_text_message(f"g:{n}"))


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def _wait_lines(path: Path, count: int) -> None:
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and _lines(path) < count:
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("option", "field"),
    [("maxBytesPerBatch", "max_bytes_per_batch"), ("maxBatchesAhead", "max_batches_ahead")],
)
def test_the_spools_limits_are_options_of_the_read(option: str, field: str) -> None:
    """Not factory settings: they are the read's, checked like the others."""
    parsed = _options("embedded://x", Path("/tmp/unused"), **{option: "1024"})
    assert getattr(parsed, field) == 1024
    assert option.lower() not in parsed.settings
    with pytest.raises(ConfigurationError, match=rf"{option}='0'"):
        _options("embedded://x", Path("/tmp/unused"), **{option: "0"})


def test_a_batch_ends_at_max_bytes_per_batch(tmp_path: Path) -> None:
    """Bodies of 10 characters, 25 allowed: each batch ends with the row that reaches it."""
    url = f"embedded://spool-{uuid.uuid4().hex}"
    with ConnectionFactory(url).create_connection() as keeper:
        session = keeper.create_session()
        producer = session.create_producer("queue://in")
        for n in range(7):
            producer.send(session.create_text_message(f"body-{n:05d}"))
        reader = JmsStreamReader(_options(url, tmp_path / "state", maxBytesPerBatch="25"))
        try:
            assert [reader.latestOffset()["seq"] for _ in range(3)] == [3, 6, 7]
        finally:
            reader.stop()


def test_a_batch_is_its_spool_renamed_and_older_batch_files_still_serve(tmp_path: Path) -> None:
    """A cut renames the spool ``batch-<end>.jsonl`` (no row encoded twice on
    ``latestOffset``'s path); a state dir written before that, with ``batch-<end>.json``,
    is served and committed alike."""
    url = f"embedded://spool-{uuid.uuid4().hex}"
    state = tmp_path / "state"
    with ConnectionFactory(url).create_connection() as keeper:
        _send_group(keeper, 6)
        reader = JmsStreamReader(_options(url, state, maxMessagesPerBatch="3"))
        try:
            assert [reader.latestOffset()["seq"] for _ in range(2)] == [3, 6]
        finally:
            reader.stop()
        assert sorted(p.name for p in state.glob("batch-*")) == ["batch-3.jsonl", "batch-6.jsonl"]
        assert not list(state.glob("spool-*"))
        older = state / "batch-6.jsonl"
        rows = [json.loads(line) for line in older.read_text(encoding="utf-8").splitlines()]
        (state / "batch-6.json").write_text(json.dumps({"start": 3, "end": 6, "rows": rows}))
        older.unlink()

        again = JmsStreamReader(_options(url, state))
        try:
            assert again.initialOffset()["seq"] == 0
            assert _rows(again, 0, 6) == [f"g:{n}" for n in range(6)]
            again.commit({"seq": 6, "tick": 0})
            assert not list(state.glob("batch-*"))
        finally:
            again.stop()
