"""JMS messages to AMQP 1.0 messages and back, the way Qpid JMS and Artemis map them.

A Java application using Qpid JMS on the same broker must read what jmslike sends and the
other way round, so the mapping is the one of the OASIS "AMQP JMS Mapping" drafts that
Qpid JMS and Artemis implement (docs/providers.md, "On the wire"):

* the message type travels as the message annotation ``x-opt-jms-msg-type`` (0 Message,
  2 Map, 3 Bytes, 5 Text) and the body as that type's section: Text an ``amqp-value``
  string, Bytes a ``data`` section with content type ``application/octet-stream``, Map an
  ``amqp-value`` map, a plain Message an ``amqp-value`` null;
* the destination kind as ``x-opt-jms-dest`` / ``x-opt-jms-reply-to`` (0 queue, 1 topic,
  2 temporary queue, 3 temporary topic), JMSType as ``subject``, the delivery mode as
  ``durable``, expiry as ``absolute-expiry-time`` plus ``ttl``, the delivery time as
  ``x-opt-delivery-time``;
* the group as ``group-id`` and ``group-sequence``, a uint: JMSXGroupSeq -1 (close the
  group) is sent as 0xFFFFFFFF, as Qpid JMS does;
* application properties keep their JMS types through AMQP's typed encoding (int32,
  short, byte, float32...), so nothing extra is needed, unlike over STOMP.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import proton
from cproton import (
    pn_message_annotations,
    pn_message_body,
    pn_message_instructions,
    pn_message_properties,
)

from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.errors import MessageFormatError
from jmslike.message import (
    DELIVERY_COUNT,
    GROUP_ID,
    GROUP_SEQ,
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    PropertyValue,
    TextMessage,
)
from jmslike.spi.messages import (
    GROUP_SEQ_PROPERTY,
    declare_property_type,
    previous_expiration,
    set_map_body,
    set_previous_expiration,
    update_provider_properties,
)
from jmslike_amqp import encoding

if TYPE_CHECKING:
    from jmslike_amqp.received import Incoming

__all__ = ["DEST_TYPE", "MSG_TYPE", "REPLY_TO_TYPE", "decode", "encode", "kind_of"]

MSG_TYPE = proton.symbol("x-opt-jms-msg-type")
DEST_TYPE = proton.symbol("x-opt-jms-dest")
REPLY_TO_TYPE = proton.symbol("x-opt-jms-reply-to")
DELIVERY_TIME = proton.symbol("x-opt-delivery-time")
PREV_EXPIRATION = proton.symbol("x-opt-jmslike-group-prev-expires")
"""When the producer's previous message of the group expires (epoch ms): the client gate
need not wait for a predecessor that has expired (ORD-13; the STOMP provider's
``jmslikeGroupPrevExpires`` header)."""
OCTET_STREAM = proton.symbol("application/octet-stream")
_OCTET_STREAM = encoding.encoded(OCTET_STREAM)
_NULL = encoding.encoded(None)
_TRUE = encoding.encoded(True)

_TYPE_CODES = {"message": 0, "map": 2, "bytes": 3, "text": 5}
_UINT_MAX = 0xFFFFFFFF
_BODY_SHAPES: dict[int, type | tuple[type, ...]] = {
    5: str,
    3: (bytes, bytearray, memoryview),
    2: dict,
}
"""What the body of each x-opt-jms-msg-type must be, when it has one."""
_MISMATCH = -1
"""A type code whose body has another shape: no JMS message."""
_PROPERTY_ENCODERS: dict[str, Any] = {
    "byte": proton.byte,
    "short": proton.short,
    "int": proton.int32,
    "long": int,
    "float": proton.float32,
    "double": float,
    "boolean": bool,
    "string": str,
}
PRIORITY_PROPERTY = "jmslikePriority"
"""The JMS priority, where the header must stay at 4 (see ``encode``)."""
SEQ_PROPERTY = GROUP_SEQ_PROPERTY  # where ``group-sequence`` must stay unset (see ``encode``)
_RESERVED = frozenset({GROUP_ID, GROUP_SEQ, DELIVERY_COUNT})
"""JMSX properties that travel in AMQP's own fields, never as application properties."""


class OutgoingMessage:
    """An AMQP message encoded for sending (:func:`encode`), with the body it carries.

    It can be given to a Proton sender as a ``proton.Message`` can (``sender.send``), so
    raw Proton code, tests among it, sends what jmslike would."""

    __slots__ = ("body", "data")

    def __init__(self, data: bytes, body: object) -> None:
        self.data = data
        self.body = body

    def encode(self) -> bytes:
        return self.data

    def send(self, sender: proton.Sender, tag: str | None = None) -> proton.Delivery:
        """As ``proton.Message.send``: one delivery on ``sender``, settled at once on a
        link that settles on sending."""
        delivery = sender.delivery(tag or sender.delivery_tag())
        sender.stream(self.data)
        sender.advance()
        if sender.snd_settle_mode == proton.Link.SND_SETTLED:
            delivery.settle()
        return delivery


class IncomingMessage(proton.Message):
    """A Proton message read from the wire. Proton's ``decode`` passes the annotations
    it read through ``AnnotationDict``, which checks every key again (they came off the
    wire, so they are symbols already): a tenth of a receive's time on the connection's
    thread. This one keeps the map as it was read."""

    def _post_decode(self) -> None:
        message = self._msg
        instructions = proton.Data(pn_message_instructions(message))
        annotations = proton.Data(pn_message_annotations(message))
        properties = proton.Data(pn_message_properties(message))
        body = proton.Data(pn_message_body(message))
        self.instructions = instructions.get_object() if instructions.next() else None
        self.annotation_dict = annotations.get_object() if annotations.next() else None  # type: ignore[assignment]
        self.properties = properties.get_object() if properties.next() else None
        self.body = body.get_object() if body.next() else None


def kind_of(destination: Destination) -> int:
    """The ``x-opt-jms-dest`` code of a destination (Qpid JMS' AmqpDestinationHelper)."""
    if isinstance(destination, TemporaryQueue):
        return 2
    if isinstance(destination, TemporaryTopic):
        return 3
    return 1 if destination.is_topic else 0


def encode(
    message: Message,
    address: str,
    reply_to: str | None = None,
    *,
    wire_priority: bool = True,
    wire_group_seq: bool = True,
) -> OutgoingMessage:
    """The AMQP message for ``message`` sent to the node ``address``; ``reply_to`` is the
    address of its JMSReplyTo, if it has one. Without ``wire_priority`` (a broker that
    would let a higher priority overtake within a group, ORD-12) the header says 4 and
    the JMS priority travels in ``jmslikePriority``, as over STOMP. Without
    ``wire_group_seq`` (ActiveMQ Classic, which hands a group to whichever consumer takes
    a message with sequence 1, even while the group's owner still holds earlier ones:
    every new binding of a producer starts at 1, ORD-8a) ``group-sequence`` stays unset
    and the sequence travels in ``jmslikeGroupSeq``, as over STOMP (ORD-4).

    The sections are written by :mod:`jmslike_amqp.encoding`, not through a Proton message,
    which cost a quarter of a send (docs/performance.md)."""
    timestamp = message.jms_timestamp
    expiration = message.jms_expiration
    priority = message.jms_priority if wire_priority else 4
    ttl = max(1, expiration - timestamp) if expiration and timestamp else 0
    header = encoding.described(
        encoding.HEADER,
        [
            _TRUE if message.jms_delivery_mode == DeliveryMode.PERSISTENT else _NULL,
            encoding.encoded(proton.ubyte(priority)) if priority != 4 else _NULL,
            # A TTL that does not fit AMQP's uint (49 days) is left to the absolute
            # expiry time, as Qpid JMS leaves it.
            encoding.encoded(proton.uint(ttl)) if 0 < ttl <= _UINT_MAX else _NULL,
        ],
    )
    annotations = [_MSG_TYPES[_TYPE_CODES.get(message.type_name, 0)]]
    if message.jms_destination is not None:
        annotations.append(_DEST_TYPES[kind_of(message.jms_destination)])
    if message.jms_reply_to is None:
        reply_to = None
    elif reply_to is not None:
        annotations.append(_REPLY_TO_TYPES[kind_of(message.jms_reply_to)])
    if timestamp and message.jms_delivery_time > timestamp:
        annotations.append(_pair(DELIVERY_TIME, message.jms_delivery_time))
    expires = previous_expiration(message) if message.ordering_group is not None else 0
    if expires:
        annotations.append(_pair(PREV_EXPIRATION, proton.ulong(expires)))
    properties: dict[Any, Any] = {}
    for name, value in message.properties.items():
        if name in _RESERVED:
            continue
        jms_type = message.property_type(name) or "string"
        properties[name] = _PROPERTY_ENCODERS[jms_type](value)
    if not wire_priority and message.jms_priority != 4:
        properties[PRIORITY_PROPERTY] = proton.int32(message.jms_priority)
    group = message.ordering_group
    group_sequence = _NULL
    if group is not None:
        sequence = message.group_sequence
        if sequence is not None:
            if wire_group_seq:
                group_sequence = encoding.encoded(proton.uint(sequence & _UINT_MAX))
            elif -(2**31) <= sequence < 2**31:
                properties[SEQ_PROPERTY] = proton.int32(sequence)  # getIntProperty in Java
            else:
                properties[SEQ_PROPERTY] = sequence  # a long run of one binding: a long
    body, body_section, content_type = _encode_body(message)
    sections = [
        header,
        encoding.MESSAGE_ANNOTATIONS + encoding.map_of(annotations),
        encoding.described(
            encoding.PROPERTIES,
            [
                _text_or_null(message.jms_message_id or None),  # "ID:..." read back as is
                _NULL,  # user-id
                encoding.encoded(address),
                _text_or_null(message.jms_type),
                _text_or_null(reply_to),
                _text_or_null(message.jms_correlation_id),
                content_type,
                _NULL,  # content-encoding
                _timestamp(expiration),
                _timestamp(timestamp),
                _text_or_null(group),
                group_sequence,
            ],
        ),
    ]
    if properties:
        sections.append(encoding.APPLICATION_PROPERTIES + encoding.encoded(properties))
    sections.append(body_section)
    return OutgoingMessage(b"".join(sections), body)


def _pair(key: proton.symbol, value: object) -> bytes:
    return encoding.encoded(key) + encoding.encoded(value)


_MSG_TYPES = {code: _pair(MSG_TYPE, proton.byte(code)) for code in _TYPE_CODES.values()}
_DEST_TYPES = [_pair(DEST_TYPE, proton.byte(kind)) for kind in range(4)]
_REPLY_TO_TYPES = [_pair(REPLY_TO_TYPE, proton.byte(kind)) for kind in range(4)]
"""The fixed annotations, each encoded once (indexed by their code)."""


def _text_or_null(text: str | None) -> bytes:
    return _NULL if text is None else encoding.encoded(text)


def _timestamp(millis: int) -> bytes:
    return encoding.encoded(proton.timestamp(millis)) if millis else _NULL


def _encode_body(message: Message) -> tuple[object, bytes, bytes]:
    """(body, its section, the content type field) of ``message``."""
    if isinstance(message, TextMessage):
        text = message.text
        return text, encoding.VALUE + encoding.encoded(text), _NULL
    if isinstance(message, BytesMessage):
        # bytes as a data section, not an amqp-value binary, typed as Qpid JMS types it
        body = bytes(message.body)
        return body, encoding.DATA + encoding.encoded(body), _OCTET_STREAM
    if isinstance(message, MapMessage):
        mapping = message.body
        return mapping, encoding.VALUE + encoding.encoded(mapping), _NULL
    # No body at all is not a valid AMQP message (RabbitMQ drops it without a word): an
    # empty data section; the type annotation (0, plain JMS message) says what it is.
    return b"", encoding.DATA + encoding.encoded(b""), _NULL


def decode(
    incoming: Incoming, destination: Destination | None, reply_to: Destination | None
) -> Message:
    """The jmslike message for a received AMQP message (redelivery flag and delivery count
    are set by the caller, which also knows ``first-acquirer``)."""
    annotations: dict[Any, Any] = incoming.annotations or {}
    code = annotations.get(MSG_TYPE)
    if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
        code = _MISMATCH  # a list, a string...: no JMS message type
    body: Any = incoming.body  # proton types the body as every AMQP value
    message: Message
    # A type annotation with a body of another shape (a map "Map message" with a binary
    # body) is refused like a body of no JMS shape, not a TypeError on the connection's
    # thread (tests/unit/test_fuzz_codecs.py found it).
    binary = isinstance(body, (bytes, bytearray, memoryview))
    if code in _BODY_SHAPES and body is not None and not isinstance(body, _BODY_SHAPES[code]):
        code = _MISMATCH
    if code == 5 or (code is None and isinstance(body, str)):
        message = TextMessage(body if isinstance(body, str) else None)
    elif code == 3 or (code is None and binary):
        message = BytesMessage(bytes(body) if body is not None else b"")
    elif code == 2 or (code is None and isinstance(body, dict)):
        message = MapMessage()
        set_map_body(message, {str(k): _plain(v) for k, v in (body or {}).items()})  # type: ignore[misc]
    elif code == 0 or (code is None and body is None):
        message = Message()
    else:
        raise MessageFormatError(
            f"AMQP message {incoming.id!r} has a body jmslike cannot map to a JMS message "
            f"(x-opt-jms-msg-type {code!r}, body {type(body).__name__})"
        )
    message.jms_message_id = _id_text(incoming.id)
    message.jms_correlation_id = _id_text(incoming.correlation_id)
    message.jms_type = incoming.subject
    message.jms_destination = destination
    message.jms_reply_to = reply_to
    message.jms_delivery_mode = (
        DeliveryMode.PERSISTENT if incoming.durable else DeliveryMode.NON_PERSISTENT
    )
    message.jms_priority = int(incoming.priority if incoming.priority is not None else 4)
    message.jms_timestamp = round((incoming.creation_time or 0) * 1000)
    message.jms_expiration = round((incoming.expiry_time or 0) * 1000)
    delivery_time = annotations.get(DELIVERY_TIME)
    message.jms_delivery_time = (
        int(delivery_time) if isinstance(delivery_time, int) else message.jms_timestamp
    )
    props: dict[str, PropertyValue] = {}
    properties: dict[Any, Any] = incoming.properties or {}
    sequence_property = None
    for name, value in properties.items():
        if name == PRIORITY_PROPERTY and isinstance(value, int):
            message.jms_priority = int(value)
            continue
        if name == SEQ_PROPERTY and isinstance(value, int) and incoming.group_id:
            sequence_property = int(value)
            continue
        jms_type, plain = _property(value)
        if jms_type is None:
            continue  # not a JMS property type (a list, a map...): Qpid JMS skips them too
        props[str(name)] = plain  # type: ignore[assignment]
        if jms_type != _inferred(plain):
            declare_property_type(message, str(name), jms_type)
    if incoming.group_id:
        props[GROUP_ID] = str(incoming.group_id)
        sequence = incoming.group_sequence
        if sequence:
            props[GROUP_SEQ] = -1 if sequence == _UINT_MAX else int(sequence)
        elif sequence_property is not None:
            props[GROUP_SEQ] = sequence_property
        expires = annotations.get(PREV_EXPIRATION)
        if isinstance(expires, int):
            set_previous_expiration(message, int(expires))
    update_provider_properties(message, props)
    return message


def message_key(incoming: Incoming) -> str:
    """The key jmslike counts deliveries by: the JMS message id, as :func:`decode` reads it."""
    return _id_text(incoming.id) or ""


def _id_text(value: object) -> str | None:
    """JMSMessageID / JMSCorrelationID text of an AMQP id, as Qpid JMS writes it."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):  # Proton's getter gives a view
        return "ID:AMQP_BINARY:" + bytes(value).hex().upper()
    if isinstance(value, int):  # proton decodes a ulong id as int
        return f"ID:AMQP_ULONG:{value}"
    if isinstance(value, uuid.UUID):
        return f"ID:AMQP_UUID:{value}"
    return f"ID:{value}"


def _property(value: object) -> tuple[str | None, object]:
    """(JMS type, Python value) of an application property as proton decoded it."""
    if isinstance(value, bool):
        return "boolean", value
    if isinstance(value, proton.byte):
        return "byte", int(value)
    if isinstance(value, proton.short):
        return "short", int(value)
    if isinstance(value, proton.int32):
        return "int", int(value)
    if isinstance(value, (proton.ubyte, proton.ushort)):
        return "int", int(value)
    if isinstance(value, (proton.uint, proton.ulong)):
        return "long", int(value)
    if isinstance(value, proton.timestamp):
        return "long", int(value)
    if isinstance(value, int):
        return "long", value
    if isinstance(value, proton.float32):
        return "float", float(value)
    if isinstance(value, float):
        return "double", value
    if isinstance(value, proton.symbol):
        return "string", str(value)
    if isinstance(value, str):
        return "string", value
    return None, value


def _inferred(value: object) -> str:
    """The JMS type jmslike infers for a plain Python value (jmslike.message rules)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int" if -(2**31) <= value < 2**31 else "long"
    return "double" if isinstance(value, float) else "string"


def _plain(value: object) -> object:
    """A Map message entry as jmslike keeps it (bytes stay bytes; symbols become str)."""
    if isinstance(value, proton.symbol):
        return str(value)
    if isinstance(value, memoryview):  # Proton decodes AMQP binary inside a map so
        return value.tobytes()
    if isinstance(value, bool):
        return value
    if isinstance(value, (proton.byte, proton.short, proton.int32)):
        return int(value)
    return value


def destination_for(kind: int | None, name: str, topic_hint: bool = False) -> Destination:
    """The jmslike destination for an address and its ``x-opt-jms-*`` code."""
    if kind == 1 or (kind is None and topic_hint):
        return Topic(name)
    if kind == 2:
        return TemporaryQueue(name)
    if kind == 3:
        return TemporaryTopic(name)
    return Queue(name)
