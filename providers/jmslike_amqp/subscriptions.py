"""Durable and shared topic subscriptions, and temporary queues, as Qpid JMS makes them.

Artemis keeps a subscription as a queue named from the client id and the *link name*,
so jmslike names its links exactly as Qpid JMS does (``AmqpSubscriptionTracker``): a
Java and a Python subscriber of one durable or shared subscription then share one queue.

* durable, unshared: the subscription name (a client id is required, as in JMS 1.1);
* durable, shared: ``name``, then ``name|2``, ``name|3``... for more consumers on one
  connection; without a client id ``name|global``, ``name|global2``...;
* non-durable, shared: ``name|volatile1``, ``name|volatile2``...; without a client id
  ``name|global-volatile1``...

The source says the rest: capabilities ``topic`` (+ ``shared``, + ``global`` without a
client id), and for a durable subscription a durable terminus that never expires. A
durable consumer that closes *detaches* its link (the subscription stays); unsubscribing
re-attaches the name with no source (Artemis looks the queue up) and *closes* the link,
which deletes the queue. RabbitMQ 3.10 keeps none of this (its AMQP 1.0 plugin drops a
topic link's queue on detach, and refuses dynamic nodes): there a subscription is a queue
jmslike declares (jmslike.spi.rabbit_subscriptions), and a temporary queue one it
declares and deletes (``AmqpConnection``), as docs/providers.md shows.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from proton import Link, Terminus, symbol
from proton.reactor import DurableSubscription, LinkOption

__all__ = ["NullSource", "SubscriptionNames", "TemporaryTarget"]


class NullSource(LinkOption):
    """No source at all: Artemis then finds the subscription queue by the link's name."""

    def apply(self, link: Link) -> None:
        link.source.type = Terminus.UNSPECIFIED


class TemporaryTarget(LinkOption):
    """A dynamic target: the broker makes a temporary queue (or topic: ``kind``) and
    names it in its reply."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def apply(self, link: Link) -> None:
        link.target.dynamic = True
        link.target.capabilities.put_symbol(symbol(self.kind))


class SubscriptionNames:
    """Link names and source options for named subscriptions, per connection."""

    def __init__(self) -> None:
        self._used: Counter[str] = Counter()
        self.active: Counter[str] = Counter()
        """Durable subscription name -> consumers of it open on this connection."""

    def link(
        self, name: str, *, client_id: str | None, durable: bool, shared: bool
    ) -> tuple[str, list[Any], tuple[str, ...]]:
        """The link name, source options and source capabilities (beyond ``topic``) of
        one more consumer of ``name``."""
        options: list[Any] = [DurableSubscription()] if durable else []
        if not shared:
            return name, options, ()
        capabilities = ("shared", "global") if client_id is None else ("shared",)
        key = f"{name}|{'durable' if durable else 'volatile'}|{client_id is None}"
        self._used[key] += 1
        count = self._used[key]
        number = "" if count == 1 else str(count)
        if not durable:
            link = f"{name}|{'global-' if client_id is None else ''}volatile{count}"
        elif client_id is None:
            link = f"{name}|global{number}"
        else:
            link = f"{name}|{number}" if number else name
        return link, options, capabilities

    @staticmethod
    def lookups(name: str, client_id: str | None) -> list[str]:
        """Link names under which Artemis finds an existing durable subscription."""
        return [name] if client_id is not None else [f"{name}|global"]
