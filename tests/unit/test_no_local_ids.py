"""``jmslike.spi.nolocal``: what a connection remembers of its topic messages, for the
no-local consumers of brokers that do not keep no local themselves (the contract
scenarios ``test_no_local_*`` check it on the real brokers)."""

from __future__ import annotations

from jmslike.destination import Queue, Topic
from jmslike.message import TextMessage
from jmslike.selector import Selector, message_lookup
from jmslike.spi.nolocal import NoLocalFilter, PublishedIds


def _message(message_id: str, k: int = 1) -> TextMessage:
    message = TextMessage("x")
    message.jms_message_id = message_id
    message.set_int_property("k", k)
    return message


def test_nothing_is_kept_before_the_first_no_local_consumer() -> None:
    published = PublishedIds()
    published.note(Topic("t"), _message("ID:1"))
    assert "ID:1" not in published
    published.keep()
    published.note(Topic("t"), _message("ID:2"))
    assert "ID:2" in published


def test_only_topic_messages_are_kept_and_only_the_latest() -> None:
    published = PublishedIds(kept=2)
    published.keep()
    published.note(Queue("q"), _message("ID:q"))
    for n in range(3):
        published.note(Topic("t"), _message(f"ID:{n}"))
    assert [f"ID:{n}" in published for n in range(3)] == [False, True, True]
    assert "ID:q" not in published


def test_the_filter_drops_own_messages_then_applies_the_selector() -> None:
    published = PublishedIds()
    published.keep()
    published.note(Topic("t"), _message("ID:own"))
    plain = NoLocalFilter(published, None)
    selective = NoLocalFilter(published, Selector("k = 1"))
    assert not plain.matches(message_lookup(_message("ID:own")))
    assert plain.matches(message_lookup(_message("ID:other", k=2)))
    assert selective.matches(message_lookup(_message("ID:other", k=1)))
    assert not selective.matches(message_lookup(_message("ID:other", k=2)))
    assert not selective.matches(message_lookup(_message("ID:own", k=1)))
