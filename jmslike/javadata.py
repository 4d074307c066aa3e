"""BytesMessage's typed reads and writes, in the byte layout a Java JMS client uses.

A Java producer that writes ``writeInt(42); writeUTF("café")`` into a BytesMessage
writes Java's ``DataOutputStream`` format: big-endian numbers, and strings as a 2-byte
length then *modified* UTF-8 (U+0000 as two bytes ``C0 80``, a character beyond U+FFFF as
its two UTF-16 surrogates, three bytes each). ActiveMQ's OpenWire client, Artemis' core
client and Qpid JMS all do. A Python consumer that unpacks with ``struct`` gets the numbers
right and the strings wrong exactly when they hold an emoji or a NUL, so the layout lives
here once, in a mixin of :class:`jmslike.BytesMessage`, and both directions are tested
against a real Java client (tests/interop/test_java_messages.py).

The read position is per message object, from the start of the body: a received message
reads from its first byte, a message being written reads from where ``reset()`` put it.
Unlike Java, reading does not require ``reset()`` first, and ``body`` is always the whole
body. A read past the end raises :class:`MessageEOFError` and leaves the position where
it was. Where Python's types are wider than Java's, a value that does not fit is refused
with an error naming it, before anything is written.
"""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING, Any

from jmslike.errors import MessageEOFError, MessageFormatError

__all__ = ["JavaDataStream", "decode_modified_utf8", "encode_modified_utf8"]

_BOOL = struct.Struct(">?")
_BYTE = struct.Struct(">b")
_UBYTE = struct.Struct(">B")
_SHORT = struct.Struct(">h")
_USHORT = struct.Struct(">H")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_FLOAT = struct.Struct(">f")
_DOUBLE = struct.Struct(">d")

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_UTF_LIMIT = 65_535
"""writeUTF's 2-byte length: Java refuses a longer string (UTFDataFormatException)."""


def _surrogates(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def encode_modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8 (``DataOutput.writeUTF`` without the length)."""
    if text.isascii() and "\x00" not in text:
        return text.encode("ascii")
    cesu = _ASTRAL.sub(_surrogates, text).encode("utf-8", "surrogatepass")
    return cesu.replace(b"\x00", b"\xc0\x80")


def decode_modified_utf8(data: bytes) -> str:
    """The inverse of :func:`encode_modified_utf8` (``C0 80`` never starts anything else)."""
    text = data.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    if text.isascii():
        return text
    # Pairs of surrogates (an astral character written by Java) become one character.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


class JavaDataStream:
    """The read/write methods of JMS ``BytesMessage``, on ``self._data`` (the body).

    The host class provides ``_data`` (bytes), ``_check_body_writable()`` and a
    ``_pos`` slot, which a copy made without ``__init__`` may leave unset (then 0).
    """

    if TYPE_CHECKING:  # the attributes live in the host's slots, which mypy cannot see
        _data: bytes
        _pos: int
        _read_only_body: bool

        def _check_body_writable(self) -> None: ...

    else:
        __slots__ = ()  # no __dict__ on BytesMessage

    # ------------------------------------------------------------------ reading
    def _position(self) -> int:
        try:
            return self._pos
        except AttributeError:
            return 0

    def _take(self, size: int, what: str) -> bytes:
        start = self._position()
        end = start + size
        data = self._data
        if end > len(data):
            raise MessageEOFError(
                f"{what}: {size} bytes needed at byte {start} of a {len(data)}-byte body"
            )
        self._pos = end
        return data[start:end]

    def _read(self, fmt: struct.Struct, what: str) -> Any:
        return fmt.unpack(self._take(fmt.size, what))[0]

    def reset(self) -> None:
        """Make the body read-only and read it from its first byte (JMS ``reset``)."""
        self._read_only_body = True
        self._pos = 0

    def read_boolean(self) -> bool:
        return bool(self._read(_BOOL, "read_boolean"))

    def read_byte(self) -> int:
        return int(self._read(_BYTE, "read_byte"))

    def read_unsigned_byte(self) -> int:
        return int(self._read(_UBYTE, "read_unsigned_byte"))

    def read_short(self) -> int:
        return int(self._read(_SHORT, "read_short"))

    def read_unsigned_short(self) -> int:
        return int(self._read(_USHORT, "read_unsigned_short"))

    def read_char(self) -> str:
        """One UTF-16 code unit, as a one-character str (Java's ``char``)."""
        return chr(self._read(_USHORT, "read_char"))

    def read_int(self) -> int:
        return int(self._read(_INT, "read_int"))

    def read_long(self) -> int:
        return int(self._read(_LONG, "read_long"))

    def read_float(self) -> float:
        return float(self._read(_FLOAT, "read_float"))

    def read_double(self) -> float:
        return float(self._read(_DOUBLE, "read_double"))

    def read_utf(self) -> str:
        """A string written by Java's ``writeUTF`` (or :meth:`write_utf`)."""
        start = self._position()
        size = self._read(_USHORT, "read_utf")
        try:
            return decode_modified_utf8(self._take(size, "read_utf"))
        except MessageEOFError:
            self._pos = start
            raise
        except UnicodeDecodeError as exc:
            self._pos = start
            raise MessageFormatError(
                f"read_utf: the {size} bytes at byte {start + 2} are not modified UTF-8: {exc}"
            ) from exc

    def read_bytes(self, length: int | None = None) -> bytes:
        """Up to ``length`` bytes from the read position (all that is left if None);
        ``b""`` at the end of the body (Java's ``readBytes`` returns -1 there)."""
        start = self._position()
        left = len(self._data) - start
        count = left if length is None else max(0, min(length, left))
        self._pos = start + count
        return self._data[start : start + count]

    # ------------------------------------------------------------------ writing
    def _write(self, fmt: struct.Struct, value: object, what: str, *, numeric: bool) -> None:
        self._check_body_writable()
        if numeric and isinstance(value, bool):
            raise MessageFormatError(f"{what}({value!r}): a bool is not a number here")
        try:
            packed = fmt.pack(value)
        except (struct.error, OverflowError) as exc:
            raise MessageFormatError(f"{what}({value!r:.60}): {exc}") from exc
        self._data += packed

    def write_boolean(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise MessageFormatError(f"write_boolean({value!r:.60}): need a bool")
        self._write(_BOOL, value, "write_boolean", numeric=False)

    def write_byte(self, value: int) -> None:
        """A signed byte, -128..127 (Java's ``byte``)."""
        self._write(_BYTE, value, "write_byte", numeric=True)

    def write_short(self, value: int) -> None:
        self._write(_SHORT, value, "write_short", numeric=True)

    def write_char(self, value: str) -> None:
        """One character of the Basic Multilingual Plane (Java's ``char``)."""
        if not isinstance(value, str) or len(value) != 1 or ord(value) > 0xFFFF:
            raise MessageFormatError(
                f"write_char({value!r:.60}): need one character up to U+FFFF (a Java char)"
            )
        self._write(_USHORT, ord(value), "write_char", numeric=True)

    def write_int(self, value: int) -> None:
        self._write(_INT, value, "write_int", numeric=True)

    def write_long(self, value: int) -> None:
        self._write(_LONG, value, "write_long", numeric=True)

    def write_float(self, value: float) -> None:
        self._write(_FLOAT, value, "write_float", numeric=True)

    def write_double(self, value: float) -> None:
        self._write(_DOUBLE, value, "write_double", numeric=True)

    def write_utf(self, value: str) -> None:
        """A 2-byte length, then ``value`` in modified UTF-8 (Java's ``writeUTF``)."""
        if not isinstance(value, str):
            raise MessageFormatError(f"write_utf({value!r:.60}): need a str")
        encoded = encode_modified_utf8(value)
        if len(encoded) > _UTF_LIMIT:
            raise MessageFormatError(
                f"write_utf: {len(encoded)} bytes encoded, more than {_UTF_LIMIT} "
                "(Java's limit); write the text with write_bytes instead"
            )
        self._check_body_writable()
        self._data += _USHORT.pack(len(encoded)) + encoded

    def write_bytes(self, value: bytes | bytearray | memoryview) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise MessageFormatError(f"write_bytes({value!r:.60}): need bytes")
        self._check_body_writable()
        self._data += bytes(value)

    def write_object(self, value: bool | int | float | str | bytes) -> None:
        """By the value's type: bool, int (as a Java long, as everywhere in jmslike),
        float (a double), str (``write_utf``) or bytes."""
        if isinstance(value, bool):
            self.write_boolean(value)
        elif isinstance(value, int):
            self.write_long(value)
        elif isinstance(value, float):
            self.write_double(value)
        elif isinstance(value, str):
            self.write_utf(value)
        elif isinstance(value, bytes | bytearray | memoryview):
            self.write_bytes(value)
        else:
            raise MessageFormatError(
                f"write_object({value!r:.60}): a {type(value).__name__} is not a bool, "
                "int, float, str or bytes"
            )
