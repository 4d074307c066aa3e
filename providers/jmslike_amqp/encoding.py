"""AMQP 1.0 bytes for the message sections jmslike sends, written without a Proton message.

Why not ``proton.Message``: filling one costs a SWIG call per field and its encoder walks
the message again, about 10 us of the application thread for a 1 KiB message, a quarter
of an AMQP send (docs/performance.md). The sections jmslike writes are few and their
fields simple (strings, timestamps, the JMS property types), so they are written here
directly: about a third of that.

Only the common value types are encoded here. Anything else (a UUID, a decimal, a
described value or an array, which no JMS message holds but a map body could in theory)
goes through ``proton.Data``, so the encoding stays the library's where this module has
no rule of its own. Receivers read every section with Proton's decoder as before, and
``tests/unit/test_amqp_encoding.py`` checks that Proton reads back exactly what Proton's own
encoder would have written.

Encodings (AMQP 1.0 part 1, "Types"): each section is a described value, ``0x00`` then
its descriptor as a small ulong (``0x53 code``); lists and maps use the 8-bit width
where they fit, else 32 bits; integers use their one-byte forms where they fit, as
Proton does.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import proton

__all__ = [
    "APPLICATION_PROPERTIES",
    "DATA",
    "F32",
    "F64",
    "HEADER",
    "I8",
    "I16",
    "I32",
    "I64",
    "MESSAGE_ANNOTATIONS",
    "PROPERTIES",
    "U16",
    "U32",
    "U64",
    "VALUE",
    "described",
    "encoded",
    "map_of",
]

HEADER = b"\x00\x53\x70"
MESSAGE_ANNOTATIONS = b"\x00\x53\x72"
PROPERTIES = b"\x00\x53\x73"
APPLICATION_PROPERTIES = b"\x00\x53\x74"
DATA = b"\x00\x53\x75"
VALUE = b"\x00\x53\x77"

_NULL = b"\x40"
_TRUE = b"\x41"
_FALSE = b"\x42"
U16, U32, U64, I8, I16, I32, I64, F32, F64 = (struct.Struct(">" + c) for c in "HIQbhiqfd")
"""AMQP's fixed-width numbers (network order), for writing here and reading
(``received.py``)."""

Encoder = Callable[[Any], bytes]


def _variable(small: int, large: int, raw: bytes) -> bytes:
    """A string, symbol or binary: a one-byte length where it fits, else four."""
    size = len(raw)
    if size < 256:
        return bytes((small, size)) + raw
    return bytes((large,)) + U32.pack(size) + raw


def _string(value: str) -> bytes:
    return _variable(0xA1, 0xB1, value.encode("utf-8"))


def _symbol(value: str) -> bytes:
    return _variable(0xA3, 0xB3, value.encode("ascii"))


def _binary(value: bytes | bytearray | memoryview) -> bytes:
    return _variable(0xA0, 0xB0, bytes(value))


def _long(value: int) -> bytes:
    if -128 <= value < 128:
        return b"\x55" + I8.pack(value)
    return b"\x81" + I64.pack(value)


def _int(value: int) -> bytes:
    if -128 <= value < 128:
        return b"\x54" + I8.pack(value)
    return b"\x71" + I32.pack(value)


def _uint(value: int) -> bytes:
    if value == 0:
        return b"\x43"
    if value < 256:
        return b"\x52" + bytes((value,))
    return b"\x70" + U32.pack(value)


def _ulong(value: int) -> bytes:
    if value == 0:
        return b"\x44"
    if value < 256:
        return b"\x53" + bytes((value,))
    return b"\x80" + U64.pack(value)


def _float(value: float) -> bytes:
    try:
        return b"\x72" + F32.pack(value)
    except OverflowError:  # too large for 32 bits: infinity, as C's conversion in Proton
        return b"\x72" + F32.pack(math.copysign(math.inf, value))


def _compound(small: int, large: int, count: int, body: bytes) -> bytes:
    """A list or a map: its byte size (counting the count field) and element count."""
    if len(body) + 1 < 256 and count < 256:
        return bytes((small, len(body) + 1, count)) + body
    return bytes((large,)) + U32.pack(len(body) + 4) + U32.pack(count) + body


def _list(values: list[Any] | tuple[Any, ...]) -> bytes:
    if not values:
        return b"\x45"
    return _compound(0xC0, 0xD0, len(values), b"".join(map(encoded, values)))


def _map(mapping: dict[Any, Any]) -> bytes:
    return map_of([encoded(key) + encoded(value) for key, value in mapping.items()])


def map_of(entries: list[bytes]) -> bytes:
    """A map of already encoded key-value pairs (a fixed key's pair is encoded once)."""
    return _compound(0xC1, 0xD1, 2 * len(entries), b"".join(entries))


def _by_proton(value: Any) -> bytes:
    """A value of a type this module has no rule for, encoded by the library."""
    data = proton.Data()
    data.put_object(value)
    return data.encode()


_ENCODERS: dict[type, Encoder] = {
    type(None): lambda _value: _NULL,
    bool: lambda value: _TRUE if value else _FALSE,
    str: _string,
    proton.symbol: _symbol,
    bytes: _binary,
    bytearray: _binary,
    memoryview: _binary,
    int: _long,  # as Proton maps a Python int: an AMQP long
    proton.int32: _int,
    proton.short: lambda value: b"\x61" + I16.pack(value),
    proton.byte: lambda value: b"\x51" + I8.pack(value),
    proton.ubyte: lambda value: b"\x50" + bytes((value,)),
    proton.ushort: lambda value: b"\x60" + U16.pack(value),
    proton.uint: _uint,
    proton.ulong: _ulong,
    proton.timestamp: lambda value: b"\x83" + I64.pack(value),
    float: lambda value: b"\x82" + F64.pack(value),
    proton.float32: _float,
    list: _list,
    tuple: _list,
    dict: _map,
}


def encoded(value: Any) -> bytes:
    """The AMQP encoding of one value, typed as ``proton.Data.put_object`` types it."""
    return _ENCODERS.get(type(value), _by_proton)(value)


def described(descriptor: bytes, fields: list[bytes]) -> bytes:
    """A section whose value is a list of already encoded fields. Fields left unset at
    the end are left out, as the specification allows (they read as their defaults)."""
    while fields and fields[-1] == _NULL:
        fields.pop()
    if not fields:
        return descriptor + b"\x45"
    return descriptor + _compound(0xC0, 0xD0, len(fields), b"".join(fields))
