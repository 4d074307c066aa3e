"""No local (``no_local=True``) kept by jmslike, where the broker does not keep it.

A topic consumer created with no local must get no message its own connection published.
ActiveMQ Classic and Artemis keep that over STOMP (a SUBSCRIBE header); RabbitMQ
ignores the header (the consumer got its own connection's messages, seen here), and no
broker here takes Qpid JMS's no-local filter over AMQP 1.0 from jmslike's links. So the
provider's connection remembers the JMSMessageID of every message it publishes to a
topic (``PublishedIds``), from the first no-local consumer it makes, and such a
consumer acknowledges and drops each message it receives whose id is one of them
(``NoLocalFilter``), as the providers drop what a client-side selector does not match.
That takes nothing from anyone: a topic subscriber's messages are its own copies.

JMS also keeps a durable subscription's no local across connections of one client id;
jmslike keeps it for the connection that publishes, while it is open.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

from jmslike.destination import Destination
from jmslike.message import Message
from jmslike.selector import Lookup

__all__ = ["PUBLISHED_KEPT", "MessageFilter", "NoLocalFilter", "PublishedIds"]

PUBLISHED_KEPT = 100_000
"""How many of its latest topic messages' ids a connection remembers (about 20 MB at
most): a message of its own that comes back after that many later ones is delivered."""


class MessageFilter(Protocol):
    """What a provider's consumer asks of a message before handing it on (a selector
    evaluated on the client, no local, or both)."""

    def matches(self, lookup: Lookup) -> bool: ...


class PublishedIds:
    """The ids of the messages one connection published to topics, once asked to keep
    them (:meth:`keep`); the connection's sending threads add, its consumers' reading
    threads look up."""

    def __init__(self, kept: int = PUBLISHED_KEPT) -> None:
        self._kept = kept
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.keeping = False
        """Set by the connection's first no-local consumer: before it, nothing is kept
        (a topic message published before its subscriber existed never reaches it)."""

    def keep(self) -> None:
        self.keeping = True

    def note(self, destination: Destination, message: Message) -> None:
        """Before a send: remember the message if it goes to a topic (and ids are kept)."""
        if self.keeping and destination.is_topic and message.jms_message_id:
            with self._lock:
                self._ids[message.jms_message_id] = None
                if len(self._ids) > self._kept:
                    self._ids.popitem(last=False)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids


class NoLocalFilter:
    """Drops the connection's own messages, then applies the selector, if any."""

    __slots__ = ("_published", "_selector")

    def __init__(self, published: PublishedIds, selector: MessageFilter | None) -> None:
        self._published = published
        self._selector = selector

    def matches(self, lookup: Lookup) -> bool:
        if lookup("JMSMessageID") in self._published:
            return False
        return self._selector is None or self._selector.matches(lookup)
