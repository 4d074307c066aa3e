"""Destinations: queues, topics, temporary ones, and the ``queue://name`` string form.

Destinations are small immutable values, so they can be dict keys (the ordering engine
keys groups by destination, ORD-3) and be compared across sessions and connections.
Temporary destinations remember the connection that created them, because only that
connection may consume from them and they vanish with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jmslike.errors import InvalidDestinationError

__all__ = [
    "Destination",
    "Queue",
    "TemporaryQueue",
    "TemporaryTopic",
    "Topic",
    "name_for",
    "parse_destination",
]

_MAX_NAME = 255


@dataclass(frozen=True, slots=True)
class Destination:
    """A named place messages are sent to; compare and hash by kind and name."""

    name: str
    key: str = field(init=False, repr=False, compare=False)
    """``kind://name``, computed once: brokers key their tables by it on every send."""

    kind = "destination"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or len(self.name) > _MAX_NAME:
            raise InvalidDestinationError(
                f"invalid {self.kind} name {self.name!r}: need a non-empty str of at most "
                f"{_MAX_NAME} characters"
            )
        if any(ch in self.name for ch in "\n\r\0"):
            raise InvalidDestinationError(
                f"invalid {self.kind} name {self.name!r}: control characters are not allowed"
            )
        object.__setattr__(self, "key", f"{self.kind}://{self.name}")

    @property
    def is_topic(self) -> bool:
        return False

    @property
    def is_temporary(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Queue(Destination):
    """Point-to-point: each message goes to one consumer."""

    kind = "queue"

    @property
    def queue_name(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Topic(Destination):
    """Publish/subscribe: each subscription gets its own copy of every message."""

    kind = "topic"

    @property
    def is_topic(self) -> bool:
        return True

    @property
    def topic_name(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class TemporaryQueue(Queue):
    """A queue that lives as long as the connection that created it."""

    kind = "temp-queue"
    owner: str = field(default="", compare=False)

    @property
    def is_temporary(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class TemporaryTopic(Topic):
    """A topic that lives as long as the connection that created it."""

    kind = "temp-topic"
    owner: str = field(default="", compare=False)

    @property
    def is_temporary(self) -> bool:
        return True


_KINDS: dict[str, type[Destination]] = {
    "queue": Queue,
    "topic": Topic,
    "temp-queue": TemporaryQueue,
    "temp-topic": TemporaryTopic,
}


def parse_destination(value: Destination | str | None) -> Destination:
    """Accept a Destination or its string form ``queue://name`` / ``topic://name``.

    A bare name without a scheme is rejected rather than guessed: a queue and a topic of
    the same name are different things, and guessing wrong loses messages silently.
    """
    if isinstance(value, Destination):
        return value
    if not isinstance(value, str):
        raise InvalidDestinationError(
            f"invalid destination {value!r}: need a Queue, a Topic or a string such as "
            "'queue://orders' or 'topic://prices'"
        )
    kind, sep, name = value.partition("://")
    cls = _KINDS.get(kind) if sep else None
    if cls is None:
        raise InvalidDestinationError(
            f"invalid destination {value!r}: write 'queue://<name>' or 'topic://<name>'"
        )
    return cls(name)


def name_for(kind: str, name: str) -> str:
    """The broker name that ``session.create_queue(name)`` (``kind`` "queue") or
    ``create_topic`` means.

    JMS takes the bare name; jmslike's own string form of the same kind
    (``queue://orders``) names the same queue, since producers, consumers and the docs
    take that form everywhere, and it made a queue literally called ``queue://orders``.
    The form of another kind (``topic://prices`` given to ``create_queue``) is refused:
    which one was meant cannot be known. Names a broker sends (a reply-to address) do
    not come through here.
    """
    if isinstance(name, str):
        scheme, sep, rest = name.partition("://")
        if sep and scheme in _KINDS:
            if scheme == kind:
                return rest
            raise InvalidDestinationError(
                f"create_{kind}({name!r}): that names a {scheme}; give create_{kind} the "
                f"{kind}'s name alone, or pass {name!r} where a destination is taken"
            )
    return name
