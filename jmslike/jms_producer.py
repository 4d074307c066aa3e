"""JMSProducer: JMS 2.0's fluent producer, over one anonymous MessageProducer.

Every setting is held by (or checked through) the MessageProducer underneath, so a
JMSProducer accepts exactly what ``MessageProducer`` accepts and its ordering group is the
same binding (ORD-5), not a second implementation. What JMS 2.0 adds, message properties
and headers set on the producer, is written onto each message at send time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jmslike.completion import CompletionListener, check_completion_listener
from jmslike.destination import Destination, parse_destination
from jmslike.errors import InvalidArgumentError
from jmslike.message import (
    GROUP_ID,
    BytesMessage,
    MapMessage,
    MapValue,
    Message,
    PropertyValue,
    TextMessage,
)
from jmslike.ordering import validate_group_name

if TYPE_CHECKING:
    from jmslike.producer import MessageProducer

__all__ = ["Body", "JMSProducer", "as_message"]

Body = str | bytes | bytearray | memoryview | Mapping[str, MapValue] | Message
"""What ``JMSProducer.send`` takes: a body of the three JMS 2.0 kinds, or a Message."""


def as_message(body: object) -> Message:
    """The message JMS 2.0 sends for ``body``: str a TextMessage, bytes a BytesMessage,
    a mapping a MapMessage; a Message as it is."""
    if isinstance(body, Message):
        return body
    if isinstance(body, str):
        return TextMessage(body)
    if isinstance(body, bytes | bytearray | memoryview):
        return BytesMessage(body)
    if isinstance(body, Mapping):
        return MapMessage(body)
    raise InvalidArgumentError(
        f"send body {body!r:.60} ({type(body).__name__}): need str, bytes, a dict or a Message"
    )


def _attribute(get: Callable[[JMSProducer], Any], set_: Callable[[JMSProducer, Any], Any]) -> Any:
    """A property over a fluent setter (which returns the producer, as no property
    setter may)."""

    def assign(producer: JMSProducer, value: Any) -> None:
        set_(producer, value)

    return property(get, assign)


class JMSProducer:
    """Sends bodies or messages to any destination, with settings kept between sends.

    Made by ``JMSContext.create_producer()``. Every setter returns the producer, so
    ``producer.set_priority(7).set_property("region", "EU").send(queue, "hi")`` reads as
    in Java. It belongs to its context's thread (docs/threading.md).
    """

    __slots__ = (
        "__weakref__",
        "_completion_listener",
        "_correlation_id",
        "_producer",
        "_properties",
        "_reply_to",
        "_type",
    )
    """No other attribute: ``producer.prioirty = 7`` raises instead of making an
    attribute no send reads (the attribute spellings below are the ones that work)."""

    def __init__(self, producer: MessageProducer) -> None:
        self._producer = producer
        self._properties = Message()  # its property checks are the ones a send applies
        self._correlation_id: str | None = None
        self._type: str | None = None
        self._reply_to: Destination | None = None
        self._completion_listener: CompletionListener | None = None

    def __repr__(self) -> str:
        group = self._producer.ordering_group
        return f"<JMSProducer{'' if group is None else f' group={group!r}'}>"

    # ----------------------------------------------------------------- send
    def send(self, destination: Destination | str, body: Body) -> JMSProducer:
        """Send ``body`` to ``destination`` with this producer's settings.

        The producer's properties and headers are written onto the message first, so a
        Message passed here carries them too (a received one cannot: it is read-only).
        """
        message = as_message(body)
        for name, value in self._properties.properties.items():
            message.set_object_property(name, value)
        if self._correlation_id is not None:
            message.jms_correlation_id = self._correlation_id
        if self._type is not None:
            message.jms_type = self._type
        if self._reply_to is not None:
            message.jms_reply_to = self._reply_to
        self._producer.send(
            message, destination=destination, completion_listener=self._completion_listener
        )
        return self

    def set_async(self, completion_listener: CompletionListener | None) -> JMSProducer:
        """Make later sends asynchronous, answered to ``completion_listener`` in send order
        on the context's completion thread (:mod:`jmslike.completion`); None: synchronous
        again (JMS 2.0 ``setAsync``)."""
        if completion_listener is not None:
            completion_listener = check_completion_listener(completion_listener)
        self._completion_listener = completion_listener
        return self

    def get_async(self) -> CompletionListener | None:
        return self._completion_listener

    # -------------------------------------------------------- QoS settings
    def set_delivery_mode(self, delivery_mode: int) -> JMSProducer:
        self._producer.delivery_mode = delivery_mode
        return self

    def get_delivery_mode(self) -> int:
        return self._producer.delivery_mode

    def set_priority(self, priority: int) -> JMSProducer:
        self._producer.priority = priority
        return self

    def get_priority(self) -> int:
        return self._producer.priority

    def set_time_to_live(self, seconds: float) -> JMSProducer:
        """Seconds a message stays deliverable (0: for ever); Java's is milliseconds."""
        self._producer.time_to_live = seconds
        return self

    def get_time_to_live(self) -> float:
        return self._producer.time_to_live

    def set_delivery_delay(self, seconds: float) -> JMSProducer:
        """Seconds before a message may be delivered; Java's is milliseconds."""
        self._producer.delivery_delay = seconds
        return self

    def get_delivery_delay(self) -> float:
        return self._producer.delivery_delay

    def set_disable_message_id(self, value: bool) -> JMSProducer:
        self._producer.disable_message_id = _check_bool("disable_message_id", value)
        return self

    def get_disable_message_id(self) -> bool:
        return self._producer.disable_message_id

    def set_disable_message_timestamp(self, value: bool) -> JMSProducer:
        self._producer.disable_message_timestamp = _check_bool("disable_message_timestamp", value)
        return self

    def get_disable_message_timestamp(self) -> bool:
        return self._producer.disable_message_timestamp

    # --------------------------------------------------------------- groups
    def set_ordering_group(self, name: str | None) -> JMSProducer:
        """Put every later message into group ``name`` (ORD-5); None ends the binding.

        Naming the group it is already bound to keeps the binding and its sequence count,
        unlike ``MessageProducer.enable_ordering_group`` (ORD-8a): fluent code repeats
        the setter before each send, and the group's JMSXGroupSeq must keep counting.
        """
        if name is None:
            self._producer.disable_ordering_group()
        elif name != self._producer.ordering_group:
            self._producer.enable_ordering_group(name)
        return self

    def get_ordering_group(self) -> str | None:
        return self._producer.ordering_group

    # ----------------------------------------------------------- properties
    def set_property(self, name: str, value: PropertyValue) -> JMSProducer:
        """A property for every later message; a bad name or value raises here, not at
        send (the checks of ``Message.set_object_property``, and ORD-1 for JMSXGroupID)."""
        if name == GROUP_ID:
            validate_group_name(value, what="JMSXGroupID property")
        self._properties.set_object_property(name, value)
        return self

    def get_property(self, name: str) -> PropertyValue | None:
        return self._properties.get_object_property(name)

    def property_exists(self, name: str) -> bool:
        return self._properties.property_exists(name)

    def get_property_names(self) -> list[str]:
        return self._properties.property_names()

    def clear_properties(self) -> JMSProducer:
        self._properties.clear_properties()
        return self

    # -------------------------------------------------------------- headers
    def set_jms_correlation_id(self, correlation_id: str | None) -> JMSProducer:
        if correlation_id is not None and not isinstance(correlation_id, str):
            raise InvalidArgumentError(f"JMSCorrelationID {correlation_id!r}: need a str or None")
        self._correlation_id = correlation_id
        return self

    def get_jms_correlation_id(self) -> str | None:
        return self._correlation_id

    def set_jms_type(self, jms_type: str | None) -> JMSProducer:
        if jms_type is not None and not isinstance(jms_type, str):
            raise InvalidArgumentError(f"JMSType {jms_type!r}: need a str or None")
        self._type = jms_type
        return self

    def get_jms_type(self) -> str | None:
        return self._type

    def set_jms_reply_to(self, reply_to: Destination | str | None) -> JMSProducer:
        self._reply_to = None if reply_to is None else parse_destination(reply_to)
        return self

    def get_jms_reply_to(self) -> Destination | None:
        return self._reply_to

    # The attribute spellings of MessageProducer and Message, for code that writes
    # ``producer.priority = 7`` as it would there: the same checks as the setters.
    delivery_mode = _attribute(get_delivery_mode, set_delivery_mode)
    priority = _attribute(get_priority, set_priority)
    time_to_live = _attribute(get_time_to_live, set_time_to_live)
    delivery_delay = _attribute(get_delivery_delay, set_delivery_delay)
    disable_message_id = _attribute(get_disable_message_id, set_disable_message_id)
    disable_message_timestamp = _attribute(
        get_disable_message_timestamp, set_disable_message_timestamp
    )
    ordering_group = _attribute(get_ordering_group, set_ordering_group)
    jms_correlation_id = _attribute(get_jms_correlation_id, set_jms_correlation_id)
    jms_type = _attribute(get_jms_type, set_jms_type)
    jms_reply_to = _attribute(get_jms_reply_to, set_jms_reply_to)


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name}={value!r}: need True or False")
    return value
