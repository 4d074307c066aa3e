"""AMQP 1.0 messages read from a transfer's bytes, on the connection's thread.

Why not only Proton's decoder: ``proton.Message.decode`` plus reading its fields back
through their C getters cost about 12 us of a 1 KiB message, and the connection's thread,
which every send and receive of a connection shares, is the busiest thread when one
process sends and receives at once (docs/performance.md). The messages brokers hand
jmslike are nearly always of one simple shape: the standard sections in order, with
values of the common types. :func:`read` reads that shape directly (about half the
time) and leaves everything else to Proton, so the library still decides about any
message this module does not fully understand: an unusual type (a decimal, an array, a
described value, a char), a footer, a sequence body, a field of a type the standard
does not allow, or broken bytes. Proton then accepts or refuses it as it always did.

A message read here has the same fields, with the same Python types, as the Proton
message would (:class:`Incoming`; ``tests/unit/test_fuzz_codecs.py`` checks it on
random messages), except that binary values are ``bytes`` rather than views.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Protocol

import proton

from jmslike_amqp.codec import IncomingMessage
from jmslike_amqp.encoding import F32, F64, I8, I16, I32, I64, U16, U32, U64

__all__ = ["Incoming", "ReceivedMessage", "read"]


class Incoming(Protocol):
    """What jmslike reads of a received AMQP message (a ``proton.Message`` has it too)."""

    @property
    def durable(self) -> bool: ...
    @property
    def priority(self) -> int: ...
    @property
    def first_acquirer(self) -> bool: ...
    @property
    def delivery_count(self) -> int: ...
    @property
    def id(self) -> Any: ...
    @property
    def correlation_id(self) -> Any: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def reply_to(self) -> str | None: ...
    @property
    def expiry_time(self) -> float: ...
    @property
    def creation_time(self) -> float: ...
    @property
    def group_id(self) -> str | None: ...
    @property
    def group_sequence(self) -> int: ...
    @property
    def annotations(self) -> dict[Any, Any] | None: ...
    @property
    def properties(self) -> dict[Any, Any] | None: ...
    @property
    def body(self) -> Any: ...


class ReceivedMessage:
    """A message :func:`read` read itself; fields as :class:`Incoming` names them."""

    __slots__ = (
        "annotations",
        "body",
        "correlation_id",
        "creation_time",
        "delivery_count",
        "durable",
        "expiry_time",
        "first_acquirer",
        "group_id",
        "group_sequence",
        "id",
        "instructions",
        "priority",
        "properties",
        "reply_to",
        "subject",
    )

    def __init__(self) -> None:
        self.durable = False
        self.priority = 4
        self.first_acquirer = False
        self.delivery_count = 0
        self.id: Any = None
        self.correlation_id: Any = None
        self.subject: str | None = None
        self.reply_to: str | None = None
        self.expiry_time = 0.0
        self.creation_time = 0.0
        self.group_id: str | None = None
        self.group_sequence = 0
        self.instructions: dict[Any, Any] | None = None
        self.annotations: dict[Any, Any] | None = None
        self.properties: dict[Any, Any] | None = None
        self.body: Any = None


class _ShapeError(Exception):
    """Not the simple shape (or not a shape this module knows): Proton reads this one."""


_HEADER, _INSTRUCTIONS, _ANNOTATIONS, _PROPERTIES, _APPLICATION = 0x70, 0x71, 0x72, 0x73, 0x74
_DATA, _VALUE = 0x75, 0x77
_SHORT_COMPOUND = (0xC0, 0xC1)  # list8, map8: one-byte size and count
_COMPOUND = (0xC0, 0xC1, 0xD0, 0xD1)  # and list32, map32
_MAPS = (0xC1, 0xD1)
_BINARY = (0xA0, 0xB0)  # vbin8, vbin32
_LONG_TEXT = (0xB1, 0xB3)  # str32, sym32
_BROKEN = (IndexError, struct.error, UnicodeDecodeError, ValueError, TypeError, RecursionError)
"""What reading broken bytes raises here (a TypeError: a list as a map's key): Proton
is then asked, and says why."""


def read(payload: bytes) -> ReceivedMessage | IncomingMessage:
    """The message a transfer carried: read here if it has the simple shape, else by
    Proton (which raises ``proton.MessageException`` or ``DataException`` on garbage)."""
    try:
        return _read(payload if type(payload) is bytes else bytes(payload))
    except (_ShapeError, *_BROKEN):
        message = IncomingMessage()
        message.decode(payload)
        return message


def _read(buf: bytes) -> ReceivedMessage:
    message = ReceivedMessage()
    position, end, last = 0, len(buf), 0
    while position < end:
        if buf[position] != 0 or buf[position + 1] != 0x53:
            raise _ShapeError  # a descriptor other than a small ulong
        section = buf[position + 2]
        if section <= last:
            raise _ShapeError  # out of order, twice, or a second body section
        last = section
        if section == _ANNOTATIONS:
            message.annotations, position = _annotations(buf, position + 3)
            continue
        value, position = _value(buf, position + 3)
        if section == _PROPERTIES:
            _properties(message, value)
        elif section == _HEADER:
            _header(message, value)
        elif section in (_APPLICATION, _INSTRUCTIONS):
            if type(value) is not dict:
                raise _ShapeError
            if section == _APPLICATION:
                message.properties = value
            else:
                message.instructions = value
        elif section == _DATA:
            if type(value) is not bytes:
                raise _ShapeError
            message.body = value
            last = 0xFF  # the body ends the message here (no footer, no second section)
        elif section == _VALUE:
            message.body = value
            last = 0xFF
        else:
            raise _ShapeError  # a sequence body or a footer
    return message


_SEEN_ANNOTATIONS: dict[bytes, dict[Any, Any]] = {}
"""Message annotations read before, by their bytes: a producer's messages to one
destination all carry the same ones (the JMS type and destination codes), and reading
them is a quarter of :func:`read`. Only maps of plain values are kept (a copy of the
map is handed out, so nothing shared can change); at most ``_SEEN_KEPT``."""
_SEEN_KEPT = 256


def _annotations(buf: bytes, at: int) -> tuple[dict[Any, Any], int]:
    if buf[at] == 0xC1:  # map8, as jmslike writes them; a map32 is read every time
        stop = at + 2 + buf[at + 1]
        raw = buf[at:stop]
        seen = _SEEN_ANNOTATIONS.get(raw)
        if seen is not None:
            return dict(seen), stop
    annotations, end = _value(buf, at)
    if type(annotations) is not dict:
        raise _ShapeError
    if buf[at] == 0xC1 and not any(type(v) in (list, dict) for v in annotations.values()):
        if len(_SEEN_ANNOTATIONS) >= _SEEN_KEPT:
            _SEEN_ANNOTATIONS.clear()
        _SEEN_ANNOTATIONS[buf[at:end]] = dict(annotations)
    return annotations, end


def _header(message: ReceivedMessage, fields: Any) -> None:
    if type(fields) is not list or len(fields) > 5:
        raise _ShapeError
    durable, priority, ttl, first, count = fields + [None] * (5 - len(fields))
    if durable is not None:
        message.durable = _checked(durable, bool)
    if priority is not None:
        message.priority = int(_checked(priority, proton.ubyte))
    if first is not None:
        message.first_acquirer = _checked(first, bool)
    if count is not None:
        message.delivery_count = int(_checked(count, proton.uint))
    if ttl is not None:
        _checked(ttl, proton.uint)  # not read by jmslike (the expiry time is), but checked


def _properties(message: ReceivedMessage, fields: Any) -> None:
    if type(fields) is not list or len(fields) > 13:
        raise _ShapeError
    (
        message_id, user_id, to, subject, reply_to, correlation_id, content_type,
        content_encoding, expiry, creation, group_id, sequence, reply_group,
    ) = fields + [None] * (13 - len(fields))  # fmt: skip
    message.id = _id(message_id)
    message.correlation_id = _id(correlation_id)
    message.subject = _text(subject)
    message.reply_to = _text(reply_to)
    message.group_id = _text(group_id)
    if expiry is not None:
        message.expiry_time = int(_checked(expiry, proton.timestamp)) / 1000.0
    if creation is not None:
        message.creation_time = int(_checked(creation, proton.timestamp)) / 1000.0
    if sequence is not None:
        message.group_sequence = int(_checked(sequence, proton.uint))
    for text in (to, reply_group):
        _text(text)
    for binary in (user_id,):
        if binary is not None:
            _checked(binary, bytes)
    for symbolic in (content_type, content_encoding):
        if symbolic is not None:
            _checked(symbolic, proton.symbol)


def _checked(value: Any, kind: type) -> Any:
    """``value`` if it has the type the standard gives its field, else Proton decides."""
    if type(value) is not kind:
        raise _ShapeError
    return value


def _text(value: Any) -> str | None:
    return None if value is None else _checked(value, str)


def _id(value: Any) -> Any:
    """A message or correlation id: ulong (read as int, as Proton's getter gives it),
    uuid, binary or string."""
    kind = type(value)
    if kind is proton.ulong:
        return int(value)
    if value is None or kind is str or kind is bytes or kind is uuid.UUID:
        return value
    raise _ShapeError


def _value(buf: bytes, at: int) -> tuple[Any, int]:
    """The value whose constructor is at ``at``, and where the next one starts. The types
    a JMS message uses most come first; each is typed as ``proton.Data.get_object``
    types it."""
    code = buf[at]
    at += 1
    if code == 0xA1:  # str8
        size = buf[at]
        at += 1
        return buf[at : at + size].decode("utf-8"), _within(buf, at + size)
    if code == 0x40:
        return None, at
    if code == 0xA3:  # sym8
        size = buf[at]
        at += 1
        return proton.symbol(buf[at : at + size].decode("ascii")), _within(buf, at + size)
    if code in _COMPOUND:
        if code in _SHORT_COMPOUND:
            size, count, first = buf[at], buf[at + 1], at + 2
            stop = at + 1 + size
        else:
            size, count = U32.unpack_from(buf, at)[0], U32.unpack_from(buf, at + 4)[0]
            first = at + 8
            stop = at + 4 + size
        value: Any
        if code in _MAPS:
            value, at = _map(buf, first, count)
        else:
            value, at = _list(buf, first, count)
        if at != stop:
            raise _ShapeError  # the size disagrees with the elements: Proton decides
        return value, at
    if code in _BINARY:
        if code == 0xA0:
            size, at = buf[at], at + 1
        else:
            size, at = U32.unpack_from(buf, at)[0], at + 4
        return buf[at : at + size], _within(buf, at + size)
    if code in _LONG_TEXT:
        size = U32.unpack_from(buf, at)[0]
        at += 4
        text = buf[at : at + size].decode("utf-8" if code == 0xB1 else "ascii")
        return (text if code == 0xB1 else proton.symbol(text)), _within(buf, at + size)
    fixed = _FIXED.get(code)
    if fixed is None:
        raise _ShapeError  # decimals, char, arrays, described values
    width, convert = fixed
    return convert(buf, at), _within(buf, at + width)


def _map(buf: bytes, at: int, count: int) -> tuple[dict[Any, Any], int]:
    if count % 2:
        raise _ShapeError
    items, at = _list(buf, at, count)
    return dict(zip(items[::2], items[1::2], strict=True)), at


def _list(buf: bytes, at: int, count: int) -> tuple[list[Any], int]:
    """``count`` values from ``at``. The ones a message has most of (the null fields of
    its properties, short strings and symbols) are read here without a call each."""
    items: list[Any] = []
    append = items.append
    size_of = len(buf)
    for _ in range(count):
        code = buf[at]
        if code == 0x40:
            append(None)
            at += 1
        elif code == 0xA1 or code == 0xA3:  # noqa: PLR1714 (the faster test here)
            stop = at + 2 + buf[at + 1]
            if stop > size_of:
                raise IndexError(stop)
            text = buf[at + 2 : stop].decode("utf-8" if code == 0xA1 else "ascii")
            append(text if code == 0xA1 else proton.symbol(text))
            at = stop
        else:
            item, at = _value(buf, at)
            append(item)
    return items, at


def _within(buf: bytes, end: int) -> int:
    """``end``, after checking the value did not run past the bytes (slicing would not)."""
    if end > len(buf):
        raise IndexError(end)
    return end


_FIXED: dict[int, tuple[int, Any]] = {
    0x41: (0, lambda buf, at: True),
    0x42: (0, lambda buf, at: False),
    0x56: (1, lambda buf, at: _boolean(buf[at])),
    0x45: (0, lambda buf, at: []),
    0x50: (1, lambda buf, at: proton.ubyte(buf[at])),
    0x60: (2, lambda buf, at: proton.ushort(U16.unpack_from(buf, at)[0])),
    0x70: (4, lambda buf, at: proton.uint(U32.unpack_from(buf, at)[0])),
    0x52: (1, lambda buf, at: proton.uint(buf[at])),
    0x43: (0, lambda buf, at: proton.uint(0)),
    0x80: (8, lambda buf, at: proton.ulong(U64.unpack_from(buf, at)[0])),
    0x53: (1, lambda buf, at: proton.ulong(buf[at])),
    0x44: (0, lambda buf, at: proton.ulong(0)),
    0x51: (1, lambda buf, at: proton.byte(I8.unpack_from(buf, at)[0])),
    0x61: (2, lambda buf, at: proton.short(I16.unpack_from(buf, at)[0])),
    0x71: (4, lambda buf, at: proton.int32(I32.unpack_from(buf, at)[0])),
    0x54: (1, lambda buf, at: proton.int32(I8.unpack_from(buf, at)[0])),
    0x81: (8, lambda buf, at: I64.unpack_from(buf, at)[0]),
    0x55: (1, lambda buf, at: I8.unpack_from(buf, at)[0]),
    0x72: (4, lambda buf, at: proton.float32(F32.unpack_from(buf, at)[0])),
    0x82: (8, lambda buf, at: F64.unpack_from(buf, at)[0]),
    0x83: (8, lambda buf, at: proton.timestamp(I64.unpack_from(buf, at)[0])),
    0x98: (16, lambda buf, at: uuid.UUID(bytes=bytes(buf[at : at + 16]))),
}
"""Fixed-width types: (width, reader)."""


def _boolean(octet: int) -> bool:
    if octet > 1:
        raise _ShapeError  # neither false (0) nor true (1): Proton decides
    return octet == 1
