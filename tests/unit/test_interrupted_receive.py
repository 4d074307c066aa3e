"""Ctrl-C inside ``receive()`` on the embedded broker, in every acknowledge mode: in
memory, with a file store, and with the client gate as on RabbitMQ (docs/reliability.md,
"Ctrl-C in a receive loop"). The contract suite runs the same scenario on every provider
case."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import jmslike
from jmslike.testing.suite.test_ack_modes import interrupted_receive_loses_nothing

URLS = [
    "embedded://interrupted",
    "embedded://interrupted-gate?nativeGroups=false",
    "embedded:///{tmp}/store.db",
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("mode", ["auto", "dups_ok", "client", "transacted"])
def test_an_interrupted_receive_loses_nothing(url: str, mode: str, tmp_path: Path) -> None:
    connection = jmslike.ConnectionFactory(url.format(tmp=tmp_path)).create_connection()
    with connection:
        queue = f"queue://interrupted-{uuid.uuid4().hex[:8]}"
        interrupted_receive_loses_nothing(connection, queue, mode)
