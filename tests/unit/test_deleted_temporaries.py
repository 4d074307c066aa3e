"""jmslike.spi.temporary: the names of deleted temporary queues are bounded, oldest first
(a request/reply server makes one per request, for the life of the process)."""

from jmslike.spi.temporary import DeletedTemporaries


def test_names_are_remembered_up_to_the_limit_oldest_forgotten_first() -> None:
    deleted = DeletedTemporaries(limit=3)
    deleted.update(["a", "b", "c"])
    deleted.add("a")  # seen again: now the newest
    deleted.add("d")
    assert len(deleted) == 3
    assert "b" not in deleted
    assert all(name in deleted for name in ("a", "c", "d"))
