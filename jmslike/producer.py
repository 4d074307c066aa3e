"""MessageProducer: sends, with the producer's defaults and its ordering-group binding.

Everything that can be wrong with a send is checked before the provider sees it
(destination, delivery mode, priority, durations, the group name of ORD-1), so a bad
call raises and sends nothing.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING

from jmslike.completion import CompletionListener, check_completion_listener
from jmslike.destination import Destination, parse_destination
from jmslike.durations import warn_if_milliseconds
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidDestinationError,
)
from jmslike.message import (
    GROUP_ID,
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    TextMessage,
    require_message,
)
from jmslike.middleware import SendContext
from jmslike.ordering import (
    GroupBinding,
    check_message_group,
    generate_group_name,
    validate_group_name,
)

if TYPE_CHECKING:
    from jmslike.session import Session

__all__ = ["MessageProducer"]

_MESSAGE_CLASSES = frozenset({Message, TextMessage, BytesMessage, MapMessage})
"""send() accepts these at a glance; anything else goes through require_message."""

_DELIVERY_MODES = (DeliveryMode.NON_PERSISTENT, DeliveryMode.PERSISTENT)
_MAX_SECONDS = 10.0**11
"""About 3,000 years: larger durations overflow the JMS millisecond headers."""


def _check_delivery_mode(value: object) -> int:
    if isinstance(value, bool) or value not in _DELIVERY_MODES:
        raise InvalidArgumentError(
            f"delivery mode {value!r}: use DeliveryMode.PERSISTENT (2) or NON_PERSISTENT (1)"
        )
    return value


def _check_priority(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 9:
        raise InvalidArgumentError(f"priority {value!r}: need an int from 0 to 9")
    return value


def _check_seconds(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value < _MAX_SECONDS
    ):
        raise InvalidArgumentError(f"{name} {value!r}: need finite seconds >= 0 (0 means none)")
    warn_if_milliseconds(name, value)
    return float(value)


class MessageProducer:
    """Sends messages to a destination (JMS MessageProducer), optionally in a group."""

    __slots__ = (
        "__weakref__",
        "_binding",
        "_closed",
        "_counter",
        "_delivery_delay",
        "_delivery_mode",
        "_id_prefix",
        "_priority",
        "_provider",
        "_session",
        "_time_to_live",
        "destination",
        "disable_message_id",
        "disable_message_timestamp",
    )
    """No other attribute: ``producer.time_to_life = 60`` (or Java's ``timeToLive``)
    raises instead of being kept where no send reads it."""

    def __init__(self, session: Session, destination: Destination | None) -> None:
        self._session = session
        self._provider = session._provider
        self.destination = destination
        self._delivery_mode = DeliveryMode.PERSISTENT
        self._priority = 4
        self._time_to_live = 0.0
        self._delivery_delay = 0.0
        self.disable_message_id = False
        self.disable_message_timestamp = False
        self._binding: GroupBinding | None = None
        self._closed = False
        # "ID:<connection>:<session>:<producer>:<n>", the shape of an OpenWire message id:
        # ActiveMQ Classic keeps an AMQP sender's message id and parses it when a STOMP
        # or OpenWire client acknowledges the message (any other shape made it drop that
        # client's connection: NumberFormatException). Everything before the last colon
        # names the producer (the client gate relies on that).
        self._id_prefix = (
            f"ID:{session._connection._id_prefix}:{session._id}:{session._connection._next_id()}:"
        )
        self._counter = itertools.count(1)

    def __repr__(self) -> str:
        group = f" group={self.ordering_group!r}" if self._binding else ""
        return f"<MessageProducer {self.destination or '(anonymous)'}{group}>"

    def __enter__(self) -> MessageProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- defaults
    @property
    def delivery_mode(self) -> int:
        return self._delivery_mode

    @delivery_mode.setter
    def delivery_mode(self, value: int) -> None:
        self._check_open()
        self._delivery_mode = _check_delivery_mode(value)

    @property
    def priority(self) -> int:
        return self._priority

    @priority.setter
    def priority(self, value: int) -> None:
        self._check_open()
        self._priority = _check_priority(value)

    @property
    def time_to_live(self) -> float:
        """Seconds a message stays deliverable; 0 means forever."""
        return self._time_to_live

    @time_to_live.setter
    def time_to_live(self, value: float) -> None:
        self._check_open()
        self._time_to_live = _check_seconds("time_to_live", value)

    @property
    def delivery_delay(self) -> float:
        """Seconds before a sent message may be delivered (JMS 2.0); 0 means at once."""
        return self._delivery_delay

    @delivery_delay.setter
    def delivery_delay(self, value: float) -> None:
        self._check_open()
        self._delivery_delay = _check_seconds("delivery_delay", value)

    # --------------------------------------------------------------- groups
    def enable_ordering_group(self, name: str | None = None) -> str:
        """Bind every later message to group ``name`` (None: a generated name), ORD-5.

        Calling again replaces the binding, and the sequence count restarts at 1
        (ORD-8a). Returns the group name, useful when it was generated.
        """
        self._check_open()
        group = generate_group_name() if name is None else validate_group_name(name)
        self._bind(group)
        return group

    def set_unit_of_order(self, name: str | None = None) -> str:
        """WebLogic's name for :meth:`enable_ordering_group`."""
        return self.enable_ordering_group(name)

    def disable_ordering_group(self) -> None:
        """Later messages belong to no group (unless they carry JMSXGroupID themselves)."""
        self._check_open()
        self._binding = None

    @property
    def ordering_group(self) -> str | None:
        """The group this producer is bound to, or None (ORD-5)."""
        return self._binding.name if self._binding is not None else None

    @property
    def unit_of_order(self) -> str | None:
        return self.ordering_group

    def _bind(self, name: str) -> None:
        self._binding = GroupBinding(name)

    # ----------------------------------------------------------------- send
    def send(
        self,
        message: Message,
        delivery_mode: int | None = None,
        priority: int | None = None,
        time_to_live: float | None = None,
        *,
        destination: Destination | str | None = None,
        delivery_delay: float | None = None,
        completion_listener: CompletionListener | None = None,
    ) -> None:
        """Send ``message``; arguments left None take the producer's defaults.

        On return the message's JMS headers (id, timestamp, destination, expiration...)
        are set on ``message``, which the caller may reuse. A persistent send returns once
        the broker has the message (in a transacted session: at commit).

        With ``completion_listener`` the send is asynchronous (JMS 2.0): it may return
        before the broker answered, and the listener's ``on_completion(message)`` or
        ``on_exception(message, error)`` runs later on the session's completion thread,
        in send order. The caller must leave ``message`` alone until then
        (:mod:`jmslike.completion`).
        """
        if self._closed:
            raise IllegalStateError("producer is closed")
        session = self._session
        if session._closed:
            raise IllegalStateError("session is closed")
        connection = session._connection
        if connection._closed:
            raise IllegalStateError("connection is closed")
        if connection._failed is not None:
            # Before anything is written: part of a lost connection may still work (over
            # STOMP on RabbitMQ a consumer has a socket of its own), and a send through
            # it reached the broker and then raised, in doubt.
            raise ConnectionFailedError(
                f"send to {destination or self.destination}: {connection._failed}"
            ) from connection._failed
        if message.__class__ not in _MESSAGE_CLASSES:  # else a subclass, or no message
            if isinstance(delivery_mode, Message):
                raise InvalidArgumentError(_java_order(message, delivery_mode))
            message = require_message(message)
        target = (
            self.destination
            if destination is None and self.destination is not None
            else self._target(destination)
        )
        mode = self._delivery_mode if delivery_mode is None else _check_delivery_mode(delivery_mode)
        prio = self._priority if priority is None else _check_priority(priority)
        ttl = (
            self._time_to_live
            if time_to_live is None
            else _check_seconds("time_to_live", time_to_live)
        )
        delay = (
            self._delivery_delay
            if delivery_delay is None
            else _check_seconds("delivery_delay", delivery_delay)
        )
        if delay and not connection.capabilities.delivery_delay:
            raise IllegalStateError(
                f"delivery_delay={delay}: {connection.capabilities.broker} cannot "
                "delay delivery while keeping group order (capability delivery_delay)"
            )
        if completion_listener is not None:
            completion_listener = check_completion_listener(completion_listener)
        binding = self._binding
        if binding is None and GROUP_ID in message._properties:
            check_message_group(message)
        now = connection._sent_at = int(time.time() * 1000)
        message.jms_destination = target
        message.jms_delivery_mode = mode
        message.jms_priority = prio
        message.jms_timestamp = 0 if self.disable_message_timestamp else now
        message.jms_expiration = now + int(ttl * 1000) if ttl else 0
        message.jms_delivery_time = now + int(delay * 1000)
        message.jms_redelivered = False
        message.jms_message_id = (
            None if self.disable_message_id else f"{self._id_prefix}{next(self._counter)}"
        )
        if binding is not None:
            # Stamped and sent as one step: threads sharing a grouped producer
            # (docs/threading.md) then send the group in its sequence numbers' order.
            binding.lock.acquire()
            binding.stamp(message)
        try:
            chain = connection._send_chain
            if completion_listener is not None:
                self._send_async(target, message, completion_listener)
            elif chain is None:
                self._provider.send(target, message)
            else:
                chain(SendContext(connection, session, target, message))
        finally:
            if binding is not None:
                binding.lock.release()
        connection._sent_done = time.monotonic()

    def _send_async(
        self, target: Destination, message: Message, listener: CompletionListener
    ) -> None:
        session = self._session
        connection = session._connection
        completions = session._completions_for()
        entry = completions.add(message, listener)
        try:
            chain = connection._send_chain
            if chain is not None:  # interceptors see a send as one call: answered on return
                chain(SendContext(connection, session, target, message))
                completions.finisher(entry)(None)
            elif session.transacted or message.jms_delivery_mode != DeliveryMode.PERSISTENT:
                # Nothing to wait for now: the commit confirms a transaction's sends, and
                # a non-persistent send asks for no answer.
                self._provider.send(target, message)
                completions.finisher(entry)(None)
            else:
                self._provider.send_async(target, message, completions.finisher(entry))
        except BaseException:
            completions.withdraw(entry)  # raised here, so the listener is not called
            raise

    def _target(self, destination: Destination | str | None) -> Destination:
        if destination is None:
            if self.destination is None:
                raise InvalidDestinationError(
                    "send with no destination: this producer has none, so pass destination="
                )
            return self.destination
        if self.destination is not None:
            raise InvalidArgumentError(
                f"this producer sends to {self.destination}; create an anonymous producer "
                f"(create_producer(None)) to send to {destination}"
            )
        return parse_destination(destination)

    # ---------------------------------------------------------------- close
    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("producer is closed")
        self._session._check_open()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close; the ordering-group binding ends with it (ORD-5)."""
        self._closed = True
        self._binding = None
        self._session._producers.discard(self)


def _java_order(first: object, second: Message) -> str:
    """The error for Java's ``send(destination, message)`` written as it reads: here
    the message comes first (the destination is a keyword)."""
    return (
        f"send({first!r:.60}, <{type(second).__name__}>) is Java's order; write "
        f"send(message, destination={first!r:.60}): the message comes first"
    )
