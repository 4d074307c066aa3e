"""What a provider may do to a message beyond the application's API, in one place.

A codec fills a message it decodes without the checks the application's setters make
(names such as ``JMSXDeliveryCount`` are the provider's to set, a property's declared
JMS type comes from the wire, a received map body is set whole), and a provider copies
what it stores so that the sender may reuse the original. Providers call these
functions instead of reaching into ``Message``'s private fields, so that ``Message`` can
change its insides without breaking a provider, and a third-party provider has the same
means as the built-in ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from jmslike.message import MapMessage, MapValue, Message, PropertyValue

__all__ = [
    "DLQ_REASON",
    "GROUP_SEQ_PROPERTY",
    "copy_message",
    "declare_property_type",
    "mark_read_only",
    "previous_expiration",
    "set_map_body",
    "set_previous_expiration",
    "set_provider_property",
    "update_provider_properties",
]

M = TypeVar("M", bound=Message)

DLQ_REASON = "dlqDeliveryFailureCause"
"""The property that says why a message was dead-lettered, set by every provider (ActiveMQ
Classic's name, so that its users and its own DLQ tools find it)."""

GROUP_SEQ_PROPERTY = "jmslikeGroupSeq"
"""Where a provider carries a group's sequence when the broker must not see it as
``JMSXGroupSeq``: ActiveMQ Classic hands a group to whichever consumer takes a message
with sequence 1 (ORD-4), over STOMP and AMQP alike."""


def copy_message(message: M) -> M:
    """An independent, writable copy (headers, properties, body), unacknowledgeable."""
    return message._copy()


def set_provider_property(message: Message, name: str, value: PropertyValue) -> None:
    """Set a property the provider owns (``JMSXDeliveryCount``, a dead-letter reason), on
    a received, read-only message too, without the application's name check."""
    message._own_properties()[name] = value


def update_provider_properties(message: Message, values: Mapping[str, PropertyValue]) -> None:
    """Set decoded properties at once (a codec, before the application sees the message)."""
    message._own_properties().update(values)


def declare_property_type(message: Message, name: str, jms_type: str) -> None:
    """The JMS type a decoded property had on the wire ("byte", "short", "float"...) where
    the Python value alone cannot tell it (``property_type`` then reports it)."""
    message._own_prop_types()[name] = jms_type


def set_map_body(message: MapMessage, values: Mapping[str, MapValue]) -> None:
    """A decoded map body, whole (values already of JMS map types)."""
    message._map = dict(values)


def previous_expiration(message: Message) -> int:
    """When the producer's previous message of this group expires (0: never, or none):
    carried on the wire so a receiver gating by sequence need not wait for an expired
    predecessor (ORD-13, ORD-16)."""
    return message._group_prev_expiration


def set_previous_expiration(message: Message, when: int) -> None:
    """The decoded form of :func:`previous_expiration`."""
    message._group_prev_expiration = when


def mark_read_only(message: Message) -> None:
    """Make a message read-only as a received one is, without an acknowledger (a browsed
    copy: the application may read it, not change or acknowledge it)."""
    message._received(None)
