"""Fencing a silent member of a consumer group (jmslike/partitions/membership.py).

Each heart-beat names the client ends of the process's connections; a member silent for
``partition_timeout`` is reported to ``on_silent`` with the addresses it last named, so
that the coordinator can have the broker close them (RabbitMQ never closes a frozen
AMQP 1.0 peer's connection by itself; tests/integration/test_partitions_processes.py
freezes a real process on every broker). A member that says goodbye is not fenced.
Runs on the embedded broker: the heart-beats go through a real topic.
"""

from __future__ import annotations

import time

from jmslike import ConnectionFactory, Queue
from jmslike.partitions.layout import PartitionSpec
from jmslike.partitions.membership import Member, Membership


def _member(factory: ConnectionFactory, addresses: list[str], silent: list[Member]) -> Membership:
    return Membership(
        factory.create_connection,
        PartitionSpec(Queue("fenced"), 4, "fenced"),
        interval=0.1,
        timeout=0.5,
        on_change=lambda _view: None,
        on_conflict=lambda _exc: None,
        addresses=lambda: addresses,
        on_silent=silent.append,
    )


def _wait(condition, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(condition())


def test_a_silent_member_is_reported_with_the_addresses_it_named() -> None:
    factory = ConnectionFactory("embedded://fencing-silent")
    seen: list[Member] = []
    watcher = _member(factory, [], seen)
    quiet: list[Member] = []
    frozen = _member(factory, ["127.0.0.1:40001", "127.0.0.1:40002"], quiet)
    try:
        assert _wait(lambda: frozen.id in watcher._view)
        assert watcher._view[frozen.id].addresses == ("127.0.0.1:40001", "127.0.0.1:40002")
        # Freeze it: its thread stops beating, without a goodbye.
        frozen._stop.set()
        frozen._beat_now.set()
        frozen._thread.join(2.0)
        assert _wait(lambda: any(m.id == frozen.id for m in seen))
        gone = next(m for m in seen if m.id == frozen.id)
        assert gone.addresses == ("127.0.0.1:40001", "127.0.0.1:40002")
        assert frozen.id not in watcher._view
    finally:
        watcher.close()
        frozen._connection.close()


def test_a_member_that_leaves_is_not_fenced() -> None:
    factory = ConnectionFactory("embedded://fencing-leaves")
    seen: list[Member] = []
    watcher = _member(factory, [], seen)
    leaving = _member(factory, ["127.0.0.1:40003"], [])
    try:
        assert _wait(lambda: leaving.id in watcher._view)
        leaving.close()
        assert _wait(lambda: leaving.id not in watcher._view)
        time.sleep(1.0)  # past the timeout: a dropped member would be reported by now
        assert not seen
    finally:
        watcher.close()
