"""Strictly ordered destinations kept by the client (ORD-18): one active consumer at a
time. Written for STOMP; any provider whose broker cannot keep ORD-18 may use it.

No STOMP broker here can be asked "is this queue strictly ordered, and who consumes it"
over STOMP itself, so the rules are kept by jmslike for every connection of the process
to one broker (the same scope as the client gate, ORD-16): the declaration sticks for
the life of the process, a second consumer is refused, and standbys wait, unsubscribed,
in the order they were created. A standby subscribes only once the active consumer has
given its messages back (its UNSUBSCRIBE, or its own connection on RabbitMQ, confirmed;
after its transaction ended), so it starts with what that one left unfinished, in order.

Across processes the broker's own exclusivity is added where STOMP reaches it: ActiveMQ
Classic's ``activemq.exclusive`` subscription header (a standby in another process gets
nothing until the active one goes). Artemis and RabbitMQ keep exclusivity only as a
queue attribute set through their management APIs; docs/providers.md says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from jmslike.ordering import refuse_strict_consumer
from jmslike.spi.perbroker import PerBroker

__all__ = ["Claim", "Promotion", "StrictRegistry", "registry_for"]


@dataclass
class _Place:
    """One queue or subscription: who is active, who waits, how many plain consumers."""

    active: object | None = None
    standbys: list[tuple[object, Callable[[], None]]] = field(default_factory=list)
    plain: int = 0


@dataclass(frozen=True, eq=False)
class Claim:
    """What ``StrictRegistry.attach`` decided for one consumer; it also stands for that
    consumer in the registry (compared by identity)."""

    place: tuple[str, str | None]
    strict: bool
    """The destination is strictly ordered: the consumer is held to it (ORD-18)."""
    waiting: bool
    """A standby: subscribe only when ``promote`` is called."""


class StrictRegistry:
    """ORD-18's bookkeeping for one broker, shared by the process's connections to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._declared: set[str] = set()
        self._places: dict[tuple[str, str | None], _Place] = {}

    def attach(
        self,
        destination: str,
        subscription: str | None,
        *,
        exclusive: bool,
        standby: bool,
        promote: Callable[[], None],
        what: str,
    ) -> Claim:
        """Register a consumer of ``destination`` (and for a topic, ``subscription``);
        raise IllegalStateError, changing nothing, where ORD-18 refuses it."""
        key = (destination, subscription)
        with self._lock:
            place = self._places.get(key) or _Place()
            strict = destination in self._declared
            refuse_strict_consumer(
                what,
                declared=strict,
                exclusive=exclusive,
                standby=standby,
                attached=(place.active is not None) if strict else place.plain,
            )
            if not (exclusive or strict):
                place.plain += 1
                self._places[key] = place
                return Claim(key, strict=False, waiting=False)
            claim = Claim(key, strict=True, waiting=place.active is not None)
            self._declared.add(destination)
            self._places[key] = place
            if claim.waiting:
                place.standbys.append((claim, promote))
            else:
                place.active = claim
            return claim

    def detach(self, claim: Claim) -> None:
        """The consumer of ``claim`` is gone (its messages given back): the oldest standby
        takes over."""
        promote: Callable[[], None] | None = None
        with self._lock:
            place = self._places.get(claim.place)
            if place is None:
                return
            if not claim.strict:
                place.plain = max(0, place.plain - 1)
            elif place.active is claim:
                place.active = None
                if place.standbys:
                    place.active, promote = place.standbys.pop(0)
            else:
                place.standbys = [(c, p) for c, p in place.standbys if c is not claim]
            if place.active is None and not place.standbys and not place.plain:
                del self._places[claim.place]
        if promote is not None:
            promote()


class Promotion:
    """The ``promote`` callback of a standby that is still being made.

    ``attach`` needs the callback before the provider's consumer exists, and the active
    consumer may detach (on another thread) in between: the call is then kept and made
    once the consumer is bound, instead of failing or being lost.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: Callable[[], None] | None = None
        self._early = False

    def __call__(self) -> None:
        with self._lock:
            target = self._target
            if target is None:
                self._early = True
                return
        target()

    def bind(self, promote: Callable[[], None]) -> None:
        with self._lock:
            self._target = promote
            early = self._early
        if early:
            promote()


registry_for = PerBroker(StrictRegistry)
"""The process's registry for the broker at an address (``host:port``, or a failover list)."""
