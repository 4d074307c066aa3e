"""Where a partitioned destination's messages live, and which partition a group is on.

A partitioned queue ``orders`` with ``N`` partitions is ``N`` ordinary queues on the
broker, ``orders.p0`` to ``orders.p<N-1>``. A group always lands on the same partition:

    partition = CRC-32(UTF-8 bytes of the group name) mod N

CRC-32 is the one of zlib, PNG and Ethernet (``zlib.crc32`` in Python,
``java.util.zip.CRC32`` in Java, ``crc32`` in most languages), read as an unsigned 32-bit
number. It was picked because every language has it built in, so a producer written in
any of them can find a group's partition without jmslike, and because it never changes
with a version of anything: the same name gives the same partition in every process,
language and release. Messages in no group carry no order, so a producer spreads them
over the partitions in turn.

The layout is pure arithmetic on names: no broker, no state. It is what every process
must agree on, so it is kept small enough to read in a minute and to copy into another
language (docs/partitions.md shows the Java lines).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from jmslike.destination import Destination, Queue
from jmslike.errors import ConfigurationError

__all__ = [
    "MAX_PARTITIONS",
    "PartitionSpec",
    "group_hash",
    "partition_name",
    "partition_of",
]

MAX_PARTITIONS = 1024
"""A partition is a queue and, while consumed, a subscription in some process: more than
a thousand of them is a configuration mistake rather than a design."""


def group_hash(group: str) -> int:
    """CRC-32 of the group name's UTF-8 bytes, unsigned: the one hash every placement of
    a group by number uses (destination partitions, a Spark read's input partitions)."""
    return zlib.crc32(group.encode("utf-8"))


def partition_of(group: str, count: int) -> int:
    """The partition of ``group`` among ``count``: CRC-32 of its UTF-8 bytes, mod count."""
    return group_hash(group) % count


def partition_name(base: str, index: int) -> str:
    """``orders``, 3 -> ``orders.p3``: the broker queue behind partition 3."""
    return f"{base}.p{index}"


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """One partitioned destination: its logical queue, partition count and consumer group.

    ``consumer_group`` names the processes that share the partitions among themselves
    (their heart-beats meet on a topic named after it); by default it is the queue's name,
    so every process that consumes ``queue://orders`` is in one group.
    """

    destination: Queue
    count: int
    consumer_group: str

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_PARTITIONS:
            raise ConfigurationError(
                f"partitions = {self.count} for {self.destination}: need 1 to {MAX_PARTITIONS}"
            )

    def partition(self, index: int) -> Queue:
        """The broker queue of partition ``index``."""
        return Queue(partition_name(self.destination.name, index))

    def partition_for_group(self, group: str) -> int:
        return partition_of(group, self.count)

    def index_of(self, destination: Destination) -> int | None:
        """Which partition ``destination`` is, or None if it is none of them."""
        prefix = self.destination.name + ".p"
        name = destination.name
        if destination.is_topic or not name.startswith(prefix):
            return None
        digits = name[len(prefix) :]
        if not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
            return None
        index = int(digits)
        return index if index < self.count else None

    @property
    def heartbeat_topic(self) -> str:
        """Where the group's processes announce themselves (not a partition, not ordered)."""
        return f"topic://jmslike.partitions.{self.consumer_group}"

    def entry(self) -> str:
        """The setting's form: ``queue://orders=16``, with ``@group`` if not the default."""
        group = "" if self.consumer_group == self.destination.name else f"@{self.consumer_group}"
        return f"{self.destination.key}={self.count}{group}"
