"""The embedded broker: destinations, subscriptions, timers and the per-process registry.

Every ``ConnectionFactory("embedded://name")`` in a process reaches the same ``Broker``
(like ``vm://`` in Java), so producers and consumers on different connections meet.
Messages outlive the connections that sent them: a broker is forgotten only when its last
connection closes while it holds no message and no durable subscription.

One lock guards the whole broker. It is held only for bookkeeping (no I/O, no user
code), which keeps the broker simple and lets a topic publish touch many subscriptions
atomically; what that costs is measured in docs/performance.md.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jmslike.destination import (
    Destination,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
    parse_destination,
)
from jmslike.embedded.channel import (
    INFLIGHT,
    Channel,
    ConsumerSlot,
    Entry,
    StrictChannel,
    make_strict,
)
from jmslike.embedded.store import FileStore, StoredSubscription
from jmslike.errors import (
    ConfigurationError,
    IllegalStateError,
    InvalidClientIDError,
    InvalidDestinationError,
)
from jmslike.message import DELIVERY_COUNT, DeliveryMode, Message
from jmslike.ordering import refuse_strict_consumer
from jmslike.selector import Selector, message_lookup, parse_selector
from jmslike.spi.messages import DLQ_REASON

__all__ = [
    "DLQ_REASON",
    "Broker",
    "Routed",
    "Subscription",
    "drop_broker",
    "get_broker",
    "release_broker",
]

log = logging.getLogger("jmslike.embedded")

DLQ_ORIGIN = "JMS_jmslike_OriginalDestination"


@dataclass(eq=False)
class Subscription:
    """A topic subscription: its own channel, fed a copy of every matching publish."""

    key: Hashable
    topic: str
    channel: Channel
    selector: Selector | None
    no_local_origin: Hashable | None
    durable: bool
    shared: bool
    consumers: int = 0


class Routed:
    """How far a transaction's send got in a commit (``Broker.commit``): the store rows
    written for it and the channels that queued it, by channel name."""

    __slots__ = ("queued", "rows")

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.queued: set[str] = set()


class Broker:
    """An in-process JMS broker with strict, session-pinned ordering groups."""

    def __init__(
        self, name: str, native_groups: bool = True, store: FileStore | None = None
    ) -> None:
        self.name = name
        self.store = store
        """The file store (``embedded:///path``): persistent messages on queues and
        durable subscriptions, and the durable subscriptions themselves."""
        self.native_groups = native_groups
        """False: a broker that ignores groups and priorities (jmslike gates on the client,
        ORD-16). Lets the contract suite exercise the client gate without a server."""
        self.lock = threading.Lock()
        self._queues: dict[str, Channel] = {}
        self._subscriptions: dict[Hashable, Subscription] = {}
        self._by_topic: dict[str, list[Subscription]] = {}
        self._temporary: dict[str, Hashable] = {}
        self._client_ids: set[str] = set()
        self._ids = itertools.count(1)
        self._timers: list[tuple[float, int, Channel]] = []
        self._timer_wake = threading.Condition(self.lock)
        self._timer_thread: threading.Thread | None = None
        self.connections = 0
        if store is not None:
            self._recover(store)

    def queue_depths(self, prefix: str) -> dict[str, int]:
        """Messages waiting or in flight on each queue whose name starts with ``prefix``."""
        with self.lock:
            return {
                key.removeprefix("queue://"): channel.pending + channel.inflight
                for key, channel in self._queues.items()
                if key.startswith("queue://" + prefix)
            }

    def is_empty(self) -> bool:
        """No messages anywhere, and no subscription that outlives its consumers."""
        with self.lock:
            if any(sub.durable for sub in self._subscriptions.values()):
                return False
            return all(not (c.pending or c.inflight) for c in self._all_channels())

    def close(self) -> None:
        """Close the file store, if any (the broker is no longer in the registry)."""
        with self.lock:
            if self.store is not None:
                self.store.close()
                self.store = None
                for channel in self._all_channels():
                    channel.store = None

    def __repr__(self) -> str:
        return f"<Broker {self.name!r} queues={len(self._queues)} subs={len(self._subscriptions)}>"

    # ---------------------------------------------------------------- naming
    def next_id(self) -> int:
        return next(self._ids)

    def claim_client_id(self, client_id: str) -> None:
        with self.lock:
            if client_id in self._client_ids:
                raise InvalidClientIDError(
                    f"client id {client_id!r} is already in use on embedded broker {self.name!r}"
                )
            self._client_ids.add(client_id)

    def release_client_id(self, client_id: str) -> None:
        with self.lock:
            self._client_ids.discard(client_id)

    # ------------------------------------------------------------ channels
    def _new_channel(self, name: str, durable: bool = False) -> Channel:
        """A channel; ``durable`` ones keep their persistent messages in the file store."""
        channel = Channel(name, self._schedule, group_blind=not self.native_groups)
        if durable:
            channel.store = self.store
        return channel

    def _enqueue(
        self,
        channel: Channel,
        message: Message,
        origin: Hashable,
        now: float,
        done: Routed | None = None,
    ) -> None:
        """Store a persistent message first (a failed write sends nothing), then queue it.
        ``done``: a commit's record for this send (``commit``), so that a commit Ctrl-C
        stopped and carried on neither stores nor queues it twice (each step noted with
        no call after it)."""
        if done is not None and channel.name in done.queued:
            return
        row = None
        if channel.store is not None and message.jms_delivery_mode == DeliveryMode.PERSISTENT:
            row = None if done is None else done.rows.get(channel.name)
            if row is None:
                row = channel.store.add(channel.name, message)
                if done is not None:
                    done.rows[channel.name] = row
        channel.enqueue(message, origin, now, row)
        if done is not None:
            done.queued.add(channel.name)
        if channel.waiting:
            channel.dispatch(now)

    def _transaction(self) -> contextlib.AbstractContextManager[None]:
        """One store commit for several writes (a JMS commit, a dead-lettering)."""
        return self.store.transaction() if self.store is not None else contextlib.nullcontext()

    def _recover(self, store: FileStore) -> None:
        """Rebuild durable subscriptions and stored messages, in their original order;
        messages that were in flight come back flagged, with their delivery count."""
        channels: dict[str, Channel] = {}
        for stored_sub in store.subscriptions():
            sub = self._subscription(
                Topic(stored_sub.topic.removeprefix("topic://")),
                None,
                stored_sub.client_id,
                parse_selector(stored_sub.selector),
                False,
                stored_sub.name,
                True,
                stored_sub.shared,
            )
            channels[sub.channel.name] = sub.channel
        now = time.time()
        loaded = 0
        for stored in store.load():
            channel = channels.get(stored.channel)
            if channel is None:
                channel = self._queue(parse_destination(stored.channel))
            entry = channel.enqueue(stored.message, None, now, stored.row)
            entry.count = stored.delivered
            loaded += 1
        log.info("embedded broker %s: %d stored messages recovered", store.path, loaded)

    def _queue(self, destination: Destination, origin: Hashable | None = None) -> Channel:
        key = destination.key
        channel = self._queues.get(key)
        if channel is None:
            if destination.is_temporary:
                raise InvalidDestinationError(
                    f"temporary destination {destination} no longer exists (its connection closed)"
                )
            channel = self._queues[key] = self._new_channel(key, durable=True)
        return channel

    def _check_temporary_owner(self, destination: Destination, origin: Hashable) -> None:
        if destination.is_temporary:
            owner = self._temporary.get(str(destination))
            if owner is None:
                raise InvalidDestinationError(
                    f"temporary destination {destination} no longer exists"
                )
            if owner != origin:
                raise InvalidDestinationError(
                    f"{destination} belongs to another connection; only its creator may consume"
                )

    # ------------------------------------------------------------------ send
    def send(self, destination: Destination, message: Message, origin: Hashable) -> None:
        now = time.time()
        # acquire/try/release rather than "with": the same, for about a third of the
        # interpreter's work per lock (the send and receive hot paths take it once each).
        lock = self.lock
        lock.acquire()
        try:
            if isinstance(destination, Topic):
                self._route(destination, message, origin, now)
                return
            # A queue: _route, _queue and _enqueue inlined (the send hot path).
            channel = self._queues.get(destination.key)
            if channel is None:
                channel = self._queue(destination)
            if channel.store is not None:
                self._enqueue(channel, message, origin, now)
                return
            channel.enqueue(message, origin, now)
            if channel.waiting:
                channel.dispatch(now)
        finally:
            lock.release()

    def _route(
        self,
        destination: Destination,
        message: Message,
        origin: Hashable,
        now: float,
        done: Routed | None = None,
    ) -> None:
        if destination.is_topic:
            if destination.is_temporary and str(destination) not in self._temporary:
                raise InvalidDestinationError(
                    f"temporary destination {destination} no longer exists"
                )
            lookup = None
            first = True
            for sub in self._by_topic.get(destination.key, ()):
                if sub.no_local_origin is not None and sub.no_local_origin == origin:
                    continue
                if sub.selector is not None:
                    lookup = lookup or message_lookup(message)
                    if not sub.selector.matches(lookup):
                        continue
                # Each subscription hands its message object to a consumer: share none.
                copy = message if first else message._copy(stored=True)
                self._enqueue(sub.channel, copy, origin, now, done)
                first = False
            return
        self._enqueue(self._queue(destination), message, origin, now, done)

    def commit(
        self,
        sends: deque[tuple[Destination, Message, Routed]],
        acks: Iterable[Entry],
        origin: Hashable,
    ) -> None:
        """A transaction's sends and acknowledgements, applied at once (ORD-8). Each send
        is taken off ``sends`` once routed, so that a commit a KeyboardInterrupt stopped
        is finished by the next call with the same deque, routing none twice (each send's
        record says which channels have it: ``_enqueue``; an acknowledgement finished
        twice is finished once: ``Channel.finish``)."""
        now = time.time()
        with self.lock:
            for destination, _message, _done in sends:  # check first: all or nothing
                if destination.is_temporary and str(destination) not in self._temporary:
                    raise InvalidDestinationError(
                        f"temporary destination {destination} no longer exists"
                    )
            with self._transaction():
                while sends:
                    destination, message, done = sends[0]
                    self._route(destination, message, origin, now, done)
                    sends.popleft()  # (no call since the route: see FileStore.transaction)
                self._finish_locked(acks, now)

    # ------------------------------------------------------- acknowledgement
    def acknowledge(self, entries: Sequence[Entry]) -> None:
        now = time.time()
        lock = self.lock  # acquire/try/release: see send()
        lock.acquire()
        try:
            if self.store is None:
                if len(entries) == 1:  # one message (AUTO_ACKNOWLEDGE): _finish_locked inlined
                    entry = entries[0]
                    channel = entry.channel
                    channel.finish(entry, now)
                    if channel.waiting:
                        channel.dispatch(now)
                else:
                    self._finish_locked(entries, now)
                return
            with self.store.transaction():  # several acknowledgements: one store commit
                self._finish_locked(entries, now)
        finally:
            lock.release()

    def _finish_locked(self, entries: Iterable[Entry], now: float) -> None:
        touched: list[Channel] = []
        for entry in entries:
            channel = entry.channel
            channel.finish(entry, now)
            if channel.waiting and channel not in touched:
                touched.append(channel)
        for channel in touched:
            channel.dispatch(now)

    def redeliver(self, entry: Entry) -> Message:
        """Count another delivery of a held entry and return the copy to hand out."""
        with self.lock:
            entry.count += 1
            if entry.row is not None and entry.channel.store is not None:
                entry.channel.store.set_delivered(entry.row, entry.count)
            return entry.delivered_copy()

    def dead_letter(self, entry: Entry, reason: str, queue: Destination) -> None:
        """Finish ``entry`` and put a copy on the dead-letter queue (ORD-13)."""
        now = time.time()
        with self.lock:
            if entry.state != INFLIGHT:
                return
            copy = entry.message._copy()
            copy._properties[DLQ_REASON] = reason
            copy._properties[DLQ_ORIGIN] = entry.channel.name
            copy.jms_expiration = 0
            copy.jms_delivery_time = 0
            with self._transaction():
                entry.channel.finish(entry, now)
                self._route(queue, copy, None, now)
            if entry.channel.waiting:
                entry.channel.dispatch(now)
        log.warning("message %s dead-lettered to %s: %s", copy.jms_message_id, queue, reason)

    # ------------------------------------------------------------- consumers
    def attach(
        self,
        destination: Destination,
        *,
        holder: Hashable,
        origin: Hashable,
        client_id: str | None,
        sink: Callable[[Message, Any], None],
        selector: str | None,
        no_local: bool,
        subscription: str | None,
        durable: bool,
        shared: bool,
        exclusive: bool = False,
        standby: bool = False,
    ) -> tuple[ConsumerSlot, Subscription | None]:
        """Attach a consumer to a queue, or to a topic subscription (made if need be).

        ``exclusive`` declares the queue or subscription strictly ordered (ORD-18, sticky);
        ``standby`` lets the consumer wait behind an active one there instead of being
        refused. Every refusal comes before anything changes.
        """
        parsed = parse_selector(selector)
        with self.lock:
            self._check_temporary_owner(destination, origin)
            existing = self._existing_channel(destination, client_id, subscription, durable, shared)
            if exclusive or standby or isinstance(existing, StrictChannel):
                self._check_strict(destination, subscription, existing, exclusive, standby)
            if not destination.is_topic:
                channel = self._queue(destination)
                if exclusive:
                    make_strict(channel)
                slot = ConsumerSlot(channel, holder, origin, sink, parsed, no_local=False)
                channel.attach(slot)
                return slot, None
            sub = self._subscription(
                destination,
                origin,
                client_id,
                parsed,
                no_local,
                subscription,
                durable,
                shared,
                standby=standby,
            )
            sub.consumers += 1
            if exclusive:
                make_strict(sub.channel)
            slot = ConsumerSlot(sub.channel, holder, origin, sink, None, no_local=False)
            sub.channel.attach(slot)
            return slot, sub

    def _existing_channel(
        self,
        destination: Destination,
        client_id: str | None,
        name: str | None,
        durable: bool,
        shared: bool,
    ) -> Channel | None:
        """The channel a consumer would attach to, if it exists already; creates nothing."""
        if not destination.is_topic:
            return self._queues.get(destination.key)
        key = _subscription_key(client_id, name, durable, shared)
        sub = None if key is None else self._subscriptions.get(key)
        return sub.channel if sub is not None and sub.topic == destination.key else None

    @staticmethod
    def _check_strict(
        destination: Destination,
        subscription: str | None,
        channel: Channel | None,
        exclusive: bool,
        standby: bool,
    ) -> None:
        """ORD-18: refuse a consumer that would make a second active one, naming the
        destination and the way to wait instead.

        A declaration is refused while undeclared consumers are attached, so that every
        consumer of a strictly ordered channel was created knowing it (its prefetch is 1,
        its ``strictly_ordered`` is True) and nothing changes under a live consumer.
        """
        what = (
            str(destination)
            if subscription is None
            else f"subscription {subscription!r} of {destination}"
        )
        refuse_strict_consumer(
            what,
            declared=isinstance(channel, StrictChannel),
            exclusive=exclusive,
            standby=standby,
            attached=len(channel.slots) if channel is not None else 0,
        )

    def _subscription(
        self,
        topic: Destination,
        origin: Hashable,
        client_id: str | None,
        selector: Selector | None,
        no_local: bool,
        name: str | None,
        durable: bool,
        shared: bool,
        standby: bool = False,
    ) -> Subscription:
        if durable and not shared and not client_id:
            raise IllegalStateError(
                f"durable subscription {name!r} needs a client id: set connection.client_id "
                "or the factory's client_id setting first"
            )
        key = _subscription_key(client_id, name, durable, shared)
        if key is None:
            key = ("consumer", self.next_id())
        sub = self._subscriptions.get(key)
        if sub is not None:
            if sub.topic != str(topic) or (sub.selector and sub.selector.text) != (
                selector and selector.text
            ):
                if sub.consumers:
                    raise IllegalStateError(
                        f"subscription {name!r} is active with another topic or selector"
                    )
                self._drop_subscription(sub)
                sub = None
            # A standby (allowed by _check_strict only on a strictly ordered subscription)
            # waits behind the active consumer, so there is still one at a time.
            elif durable and not shared and sub.consumers and not standby:
                raise IllegalStateError(
                    f"durable subscription {name!r} of client {client_id!r} already has an "
                    "active consumer (use a shared durable subscription for several)"
                )
        if sub is None:
            channel_name = (
                f"subscription://{'' if shared else client_id or ''}/{name}"
                if durable
                else f"{topic}#{name or self.next_id()}"
            )
            sub = Subscription(
                key=key,
                topic=str(topic),
                channel=self._new_channel(channel_name, durable=durable),
                selector=selector,
                no_local_origin=origin if no_local else None,
                durable=durable,
                shared=shared,
            )
            self._subscriptions[key] = sub
            self._by_topic.setdefault(sub.topic, []).append(sub)
            if durable and self.store is not None and name is not None:
                self.store.save_subscription(
                    StoredSubscription(
                        channel_name,
                        sub.topic,
                        selector.text if selector is not None else None,
                        None if shared else client_id,
                        name,
                        shared,
                    )
                )
        return sub

    def _drop_subscription(self, sub: Subscription) -> None:
        self._subscriptions.pop(sub.key, None)
        subs = self._by_topic.get(sub.topic, [])
        if sub in subs:
            subs.remove(sub)
        if sub.durable and self.store is not None:
            self.store.drop_subscription(sub.channel.name)

    def acknowledge_and_flow(
        self, entries: Sequence[Entry], slot: ConsumerSlot, credit: int
    ) -> None:
        now = time.time()
        lock = self.lock  # acquire/try/release: see send()
        lock.acquire()
        try:
            self._finish_few(entries, now)
            slot.channel.flow(slot, credit, now)
        finally:
            lock.release()

    def acknowledge_and_take(
        self, entries: Sequence[Entry], slot: ConsumerSlot
    ) -> tuple[Message, Entry] | None:
        """Finish ``entries``, then deliver ``slot``'s next message straight to the caller
        (a ``receive()`` with nothing buffered), or None if it may take none now. Consumers
        waiting with credit are served first, as on any acknowledgement."""
        now = time.time()
        lock = self.lock  # acquire/try/release: see send()
        lock.acquire()
        try:
            self._finish_few(entries, now)
            if slot.closed:
                return None
            return slot.channel.hand_out(slot, now)
        finally:
            lock.release()

    def _finish_few(self, entries: Sequence[Entry], now: float) -> None:
        """``_finish_locked``, with the AUTO_ACKNOWLEDGE receive loop's one entry inlined."""
        if len(entries) == 1:
            entry = entries[0]
            channel = entry.channel
            channel.finish(entry, now)
            if channel.waiting:
                channel.dispatch(now)
        elif entries:
            self._finish_locked(entries, now)

    def flow(self, slot: ConsumerSlot, credit: int) -> None:
        now = time.time()
        with self.lock:
            slot.channel.flow(slot, credit, now)

    def detach(
        self,
        slot: ConsumerSlot,
        sub: Subscription | None,
        delivered: Sequence[Entry],
        undelivered: Sequence[Entry],
    ) -> None:
        """A consumer closed: give back what it held, in order (ORD-10), and detach.

        On a strictly ordered channel the oldest standby is promoted first (ORD-18), so
        the dispatch below hands it what this consumer left unfinished, in order.
        """
        now = time.time()
        with self.lock:
            channel = slot.channel
            channel.detach(slot)
            channel.give_back(undelivered, delivered=False, now=now)
            channel.give_back(delivered, delivered=True, now=now)
            if sub is not None:
                sub.consumers -= 1
                if sub.consumers == 0 and not sub.durable:
                    self._drop_subscription(sub)
            if channel.waiting:
                channel.dispatch(now)

    def release(self, entries: Sequence[Entry], *, delivered: bool = True) -> None:
        """Give entries back (their consumer is gone), in order: redelivered if
        ``delivered`` (the application saw them), else as they were."""
        now = time.time()
        with self.lock:
            by_channel: dict[int, tuple[Channel, list[Entry]]] = {}
            for entry in entries:
                by_channel.setdefault(id(entry.channel), (entry.channel, []))[1].append(entry)
            for channel, returned in by_channel.values():
                channel.give_back(returned, delivered=delivered, now=now)
                if channel.waiting:
                    channel.dispatch(now)

    def forget_holder(self, holder: Hashable) -> None:
        with self.lock:
            for channel in self._all_channels():
                channel.forget_holder(holder)

    def _all_channels(self) -> list[Channel]:
        return [*self._queues.values(), *(s.channel for s in self._subscriptions.values())]

    def unsubscribe(self, client_id: str | None, name: str) -> None:
        with self.lock:
            sub = self._subscriptions.get(("durable", client_id, name)) or self._subscriptions.get(
                ("durable", None, name)
            )
            if sub is None:
                raise InvalidDestinationError(
                    f"no durable subscription {name!r} for client id {client_id!r}"
                )
            if sub.consumers:
                raise IllegalStateError(
                    f"durable subscription {name!r} has an active consumer; close it first"
                )
            self._drop_subscription(sub)

    # ------------------------------------------------------------- browsing
    def browse(self, destination: Destination, selector: str | None) -> list[Message]:
        parsed = parse_selector(selector)
        now = time.time()
        with self.lock:
            channel = self._queues.get(str(destination))
            if channel is None:
                return []
            out = []
            for entry in channel.browse_order(now):
                if parsed is None or parsed.matches(message_lookup(entry.message)):
                    msg = entry.message._copy()
                    if entry.count:  # as it will be delivered next
                        msg.jms_redelivered = True
                        msg._properties[DELIVERY_COUNT] = entry.count + 1
                    msg._received(None)
                    out.append(msg)
            return out

    # ----------------------------------------------------------- temporaries
    def create_temporary(self, kind: type[Destination], owner: Hashable) -> Destination:
        with self.lock:
            name = f"jmslike.tmp.{self.name or 'default'}.{self.next_id()}"
            destination: Destination = kind(name)
            if isinstance(destination, TemporaryQueue):
                self._queues[str(destination)] = self._new_channel(str(destination))
            elif not isinstance(destination, TemporaryTopic):
                raise TypeError(kind)
            self._temporary[str(destination)] = owner
            return destination

    def delete_temporary(self, destination: Destination) -> None:
        with self.lock:
            key = str(destination)
            self._temporary.pop(key, None)
            channel = self._queues.get(key)
            if channel is not None and destination.is_temporary:
                if channel.slots:
                    raise IllegalStateError(f"{destination} still has consumers; close them first")
                del self._queues[key]

    # ---------------------------------------------------------------- timers
    def _schedule(self, channel: Channel, due: float) -> None:
        """Called under the lock when a channel holds a message that becomes due later."""
        heapq.heappush(self._timers, (due, next(self._ids), channel))
        if self._timer_thread is None:
            self._timer_thread = threading.Thread(
                target=self._run_timers, name=f"jmslike-embedded-timer-{self.name}", daemon=True
            )
            self._timer_thread.start()
        elif self._timers[0][0] == due:
            self._timer_wake.notify()

    def _run_timers(self) -> None:
        """The broker's timer thread: moves delayed messages to their queues on time.

        It ends when nothing is scheduled (the next delayed send starts another), so an
        idle or forgotten broker keeps no thread.
        """
        with self.lock:
            while self._timers:
                now = time.time()
                while self._timers and self._timers[0][0] <= now:
                    _due, _id, channel = heapq.heappop(self._timers)
                    channel.promote_due(now)
                    if channel.waiting:
                        channel.dispatch(now)
                if self._timers:
                    self._timer_wake.wait(self._timers[0][0] - now)
            self._timer_thread = None


def _subscription_key(
    client_id: str | None, name: str | None, durable: bool, shared: bool
) -> Hashable | None:
    """How the broker files a named subscription; None for an unnamed (per-consumer) one."""
    if name is None:
        return None
    if durable:
        return ("durable", client_id if not shared else None, name)
    return ("shared", client_id, name)


_registry: dict[str, Broker] = {}
_registry_lock = threading.Lock()


def get_broker(
    name: str, native_groups: bool = True, path: str | None = None, sync: str = "normal"
) -> Broker:
    """The process's broker of that name (or file ``path``), created on first use;
    counts a connection."""
    with _registry_lock:
        if path is not None:
            name = str(Path(path).resolve())
        broker = _registry.get(name)
        if broker is None:
            store = FileStore(path, sync) if path is not None else None
            broker = _registry[name] = Broker(name, native_groups, store)
        elif broker.native_groups != native_groups:
            raise ConfigurationError(
                f"embedded broker {name!r} already runs with nativeGroups="
                f"{str(broker.native_groups).lower()}; one broker cannot do both"
            )
        elif broker.store is not None and broker.store.sync != sync:
            raise ConfigurationError(
                f"embedded broker {name!r} already runs with storeSync={broker.store.sync}; "
                "one broker cannot do both"
            )
        broker.connections += 1
        return broker


def release_broker(broker: Broker) -> None:
    """A connection closed. A broker nobody uses and that holds nothing is forgotten, so
    per-test brokers (``embedded://test-<uuid>``) do not accumulate in a long process;
    one that still holds messages or durable subscriptions stays for the next connection.
    """
    with _registry_lock:
        broker.connections -= 1
        if broker.connections > 0 or _registry.get(broker.name) is not broker:
            return
        if broker.store is not None:  # everything is on disk: free the file for others
            del _registry[broker.name]
            broker.close()
        elif broker.is_empty():
            del _registry[broker.name]


def drop_broker(name: str) -> bool:
    """Forget a broker and everything in it (tests, tools); False if there was none.

    A file broker keeps its persistent messages in its file; only memory is forgotten.
    """
    with _registry_lock:
        broker = _registry.pop(name, None)
    if broker is not None:
        broker.close()
    return broker is not None
