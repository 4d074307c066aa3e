"""The partition layout, the assignment and the settings (ORD-16, docs/partitions.md).

No broker here: the hash every process and language must agree on, the assignment
every process computes alone (Hypothesis checks its promises on arbitrary member sets),
and how a partitioned queue is declared and refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike import ConfigurationError, ConnectionFactory, Queue, Topic
from jmslike.config import resolve_settings
from jmslike.partitions.assignment import assign, spread
from jmslike.partitions.layout import PartitionSpec, partition_name, partition_of

# ------------------------------------------------------------------------ the layout


def test_partition_of_is_crc32_of_utf8_mod_count() -> None:
    """ORD-16: the documented hash, with values a Java producer reproduces with
    java.util.zip.CRC32 (the Java interop test sends with exactly that)."""
    assert partition_of("joe", 16) == 1706849627 % 16 == 11
    assert partition_of("orders-1", 16) == 870120902 % 16
    assert partition_of("Zürich", 16) == 3540756798 % 16  # UTF-8, not Latin-1
    assert partition_of("anything", 1) == 0
    assert partition_name("orders", 3) == "orders.p3"


@given(st.text(min_size=1, max_size=255), st.integers(1, 1024))
def test_a_group_always_lands_on_one_partition(group: str, count: int) -> None:
    """ORD-16: stable, in range, and independent of anything but the name and count."""
    index = partition_of(group, count)
    assert 0 <= index < count
    assert partition_of(group, count) == index


def test_spec_knows_its_partitions() -> None:
    spec = PartitionSpec(Queue("orders"), 4, "orders")
    assert spec.partition(2) == Queue("orders.p2")
    assert spec.index_of(Queue("orders.p3")) == 3
    for other in (Queue("orders.p4"), Queue("orders.p03"), Queue("orders"), Topic("orders.p1")):
        assert spec.index_of(other) is None
    assert spec.heartbeat_topic == "topic://jmslike.partitions.orders"
    assert spec.entry() == "queue://orders=4"
    assert PartitionSpec(Queue("orders"), 4, "billing").entry() == "queue://orders=4@billing"


# -------------------------------------------------------------------- the assignment

members_st = st.dictionaries(
    st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=12),
    st.integers(1, 8),
    min_size=1,
    max_size=12,
)


@given(st.integers(1, 128), members_st)
def test_assignment_gives_every_partition_one_owner_within_shares(
    count: int, members: dict[str, int]
) -> None:
    """Every partition has exactly one owner, every member owns its share (in proportion
    to its capacity) rounded down or up, and the answer does not depend on the order in
    which a process heard of the members."""
    owned = assign(count, members)
    flat = sorted(p for ps in owned.values() for p in ps)
    assert flat == list(range(count))
    total = sum(members.values())
    for member, partitions in owned.items():
        share = count * members[member]
        assert share // total <= len(partitions) <= -(-share // total), (member, owned)
    assert assign(count, dict(reversed(list(members.items())))) == owned


def test_no_live_member_idles_while_another_owns_two() -> None:
    """Three equal processes on four partitions own 2, 1 and 1. With every share rounded
    up (2 each) the first two ranked could take all four and leave the third idle: 40%
    of random member sets did (75 of these 200), and the take-over benchmark then killed
    a process that owned nothing (ORD-16)."""
    for seed in range(200):
        names = [f"process-{seed}-{i}" for i in range(3)]
        sizes = sorted(len(ps) for ps in assign(4, dict.fromkeys(names, 1)).values())
        assert sizes == [1, 1, 2], names


@given(
    st.integers(1, 128),
    st.lists(
        st.text(alphabet="abcdef0123", min_size=1, max_size=8), min_size=1, max_size=8, unique=True
    ),
)
def test_a_joining_member_moves_few_partitions(count: int, names: list[str]) -> None:
    """A join is not a reshuffle: with equal capacities, at most twice the newcomer's
    share plus one per member changes owner (a reshuffle would move most of them)."""
    members = dict.fromkeys(names, 1)
    before = assign(count, members)
    after = assign(count, {**members, "newcomer": 1})
    owner_before = {p: m for m, ps in before.items() for p in ps}
    owner_after = {p: m for m, ps in after.items() for p in ps}
    moved = sum(1 for p in range(count) if owner_before[p] != owner_after[p])
    assert moved <= 2 * -(-count // (len(names) + 1)) + len(names)


@given(st.lists(st.integers(0, 63), unique=True, max_size=64), st.integers(1, 8))
def test_spread_over_local_consumers_is_even(partitions: list[int], consumers: int) -> None:
    holders = [f"c{i}" for i in range(consumers)]
    owned = spread(partitions, holders)
    assert sorted(p for ps in owned.values() for p in ps) == sorted(partitions)
    sizes = [len(ps) for ps in owned.values()]
    assert max(sizes) - min(sizes) <= 1


# ---------------------------------------------------------------------- the settings


def test_declared_by_keyword_url_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ORD-6 for partitions: a keyword (dict or string), the URL query, or the config
    file's destination table; the file's consumer_group travels with it."""
    monkeypatch.delenv("JMSLIKE_CONFIG", raising=False)
    kw = resolve_settings("embedded://", {"partitioned_destinations": {"queue://a": 4}})
    assert kw.partitions_for("queue://a") == PartitionSpec(Queue("a"), 4, "a")
    url = resolve_settings("embedded://?partitionedDestinations=queue%3A%2F%2Fb%3D2")
    assert url.partitions_for("queue://b") == PartitionSpec(Queue("b"), 2, "b")
    config = tmp_path / "jmslike.toml"
    config.write_text(
        '[destinations."queue://orders"]\npartitions = 16\nconsumer_group = "billing"\n'
    )
    monkeypatch.setenv("JMSLIKE_CONFIG", str(config))
    factory = ConnectionFactory("embedded://")
    assert factory.settings.partitions_for("queue://orders") == PartitionSpec(
        Queue("orders"), 16, "billing"
    )
    assert factory.settings.partitions_for("queue://other") is None


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("topic://t=4", "only queues can be partitioned"),
        ("queue://q=0", "from 1 to 1024"),
        ("queue://q=2000", "from 1 to 1024"),
        ("queue://q=four", "whole number"),
        ("orders=4", "queue://<name>=<partitions>"),
        ("queue://q=4@bad group", "consumer group"),
        ({"queue://q": "4"}, "must be an int"),
    ],
)
def test_bad_partition_settings_are_refused(value: object, said: str) -> None:
    """Bad input: refused when the factory is made, naming the entry and the fix."""
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory("embedded://", partitioned_destinations=value)
    assert said in str(info.value)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("partitions = 0", "from 1 to 1024"),
        ("partitions = true", "from 1 to 1024"),
        ('consumer_group = "x"', "add partitions"),
    ],
)
def test_bad_partition_tables_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, said: str
) -> None:
    config = tmp_path / "jmslike.toml"
    config.write_text(f'[destinations."queue://orders"]\n{table}\n')
    monkeypatch.setenv("JMSLIKE_CONFIG", str(config))
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory("embedded://")
    assert said in str(info.value)
    assert "jmslike.toml:2" in str(info.value)


def test_heartbeat_settings_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="partition_heartbeat"):
        ConnectionFactory("embedded://", partition_heartbeat=0)
    with pytest.raises(ConfigurationError, match="twice partition_heartbeat"):
        ConnectionFactory("embedded://", partition_heartbeat=2.0, partition_timeout=3.0)
