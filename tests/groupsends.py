"""Grouped messages sent the way most integration tests need them: group after group,
each through a producer bound to it (ORD-5), every message's text naming its group and
place (``g3:7``), so that a test can check order from the texts alone."""

from __future__ import annotations

from jmslike import Session

__all__ = ["send_grouped_texts"]


def send_grouped_texts(
    session: Session, queue: str, groups: int, per_group: int, prefix: str = "g"
) -> None:
    """``groups`` groups named ``<prefix><n>``, ``per_group`` messages each, group after
    group; texts ``<group>:<index>``."""
    for g in range(groups):
        producer = session.create_producer(queue)
        producer.enable_ordering_group(f"{prefix}{g}")
        for index in range(per_group):
            producer.send(session.create_text_message(f"{prefix}{g}:{index}"))
