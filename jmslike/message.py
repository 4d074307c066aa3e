"""JMS messages: headers, typed properties and the four body types.

Java JMS has typed properties (byte, short, int, long, float, double, boolean, String)
and conversion rules between them (JMS 2.0, table 3-4). Python has fewer number types,
so a message keeps each property's Python value plus, where a typed setter asked for one,
the JMS type; that is what lets ``get_int_property`` refuse a long as Java does, and what
the AMQP provider needs to put an int32 rather than an int64 on the wire for Java peers.

Header timestamps (``jms_timestamp``, ``jms_expiration``, ``jms_delivery_time``) are epoch
milliseconds as in JMS, so they round-trip with Java; durations elsewhere in the API
are float seconds.

A message that was received is read-only (JMS ``MessageNotWriteableException``) until
``clear_properties`` / ``clear_body``; senders may reuse a message after ``send``, because
providers that keep a message in memory copy it first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from jmslike.destination import Destination
from jmslike.errors import MessageFormatError, MessageNotWriteableError
from jmslike.javadata import JavaDataStream

if TYPE_CHECKING:
    from typing import Self

__all__ = [
    "BytesMessage",
    "DeliveryMode",
    "MapMessage",
    "Message",
    "PropertyValue",
    "TextMessage",
    "check_property_name",
]

PropertyValue = bool | int | float | str
MapValue = bool | int | float | str | bytes

GROUP_ID = "JMSXGroupID"
GROUP_SEQ = "JMSXGroupSeq"
DELIVERY_COUNT = "JMSXDeliveryCount"

_NO_TYPES: dict[str, str] = {}
_NO_PROPERTIES: dict[str, PropertyValue] = {}
"""The property table of a stored copy whose original had none (``Message._copy``)."""
"""The property type table of every copy whose original had none: shared, never written
(writes go through ``Message._own_prop_types``), so a stored or delivered copy costs one
object fewer, and the garbage collector runs that much less often under a backlog."""


class DeliveryMode:
    """JMS delivery modes, with the JMS integer values for wire compatibility."""

    NON_PERSISTENT = 1
    PERSISTENT = 2


_RESERVED = frozenset(
    {"NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"}
)
_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
# Which stored JMS type each getter accepts (JMS 2.0 table 3-4); "string" is parsed.
_READABLE_AS = {
    "boolean": {"boolean", "string"},
    "byte": {"byte", "string"},
    "short": {"byte", "short", "string"},
    "int": {"byte", "short", "int", "string"},
    "long": {"byte", "short", "int", "long", "string"},
    "float": {"float", "string"},
    "double": {"float", "double", "string"},
}
_valid_names: set[str] = set()
_VALID_NAMES_CAP = 10_000


def check_property_name(name: object) -> str:
    """Raise MessageFormatError unless ``name`` is a legal JMS property name.

    Legal means: a Java identifier, not a selector keyword (a selector could never name
    it), and not starting with ``JMS`` unless it is a ``JMSX``/``JMS_`` name. Checked
    names are remembered, so the check costs one set lookup on the hot path.
    """
    if name in _valid_names:
        return name
    if not isinstance(name, str) or not name:
        raise MessageFormatError(f"invalid property name {name!r}: need a non-empty str")
    first, rest = name[0], name[1:]
    if not (first.isalpha() or first in "_$") or not all(ch.isalnum() or ch in "_$" for ch in rest):
        raise MessageFormatError(
            f"invalid property name {name!r}: not a Java identifier "
            "(letters, digits, '_' and '$', not starting with a digit)"
        )
    if name.upper() in _RESERVED:
        raise MessageFormatError(
            f"invalid property name {name!r}: reserved word of the selector language"
        )
    if name.startswith("JMS") and not name.startswith(("JMSX", "JMS_")):
        raise MessageFormatError(
            f"invalid property name {name!r}: names starting with 'JMS' are reserved for "
            "headers (use a JMSX or JMS_ name, or another prefix)"
        )
    if len(_valid_names) < _VALID_NAMES_CAP:
        _valid_names.add(name)
    return name


def _infer_type(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        low, high = _RANGES["long"]
        if not low <= value <= high:
            raise MessageFormatError(
                f"property {name!r}: {value!r} does not fit a JMS long (64 bits)"
            )
        return "int" if _RANGES["int"][0] <= value <= _RANGES["int"][1] else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    raise MessageFormatError(
        f"property {name!r}: value {value!r} of type {type(value).__name__} is not a JMS "
        "property type (bool, int, float or str)"
    )


class _Acknowledger(Protocol):
    def _acknowledge_from(self, message: Message) -> None: ...


class Message:
    """A JMS message with headers, properties and no body."""

    __slots__ = (
        "_ack",
        "_group_prev_expiration",
        "_prop_types",
        "_properties",
        "_read_only",
        "_read_only_body",
        "jms_correlation_id",
        "jms_delivery_mode",
        "jms_delivery_time",
        "jms_destination",
        "jms_expiration",
        "jms_message_id",
        "jms_priority",
        "jms_redelivered",
        "jms_reply_to",
        "jms_timestamp",
        "jms_type",
    )

    type_name: ClassVar[str] = "message"
    _shared_body: ClassVar[str | None] = None
    """The slot of an immutable body (str, bytes) that a copy may share: ``_copy`` then
    copies the reference itself instead of calling ``_copy_body_to`` (two copies per
    message on the embedded broker's hot path)."""

    def __init__(self) -> None:
        self._properties: dict[str, PropertyValue] = {}
        self._prop_types: dict[str, str] = {}
        self._read_only = False
        self._read_only_body = False
        self._ack: _Acknowledger | None = None
        self._group_prev_expiration = 0
        """When the producer's previous message of this group expires (0: never, or no
        such message): a receiver gating by sequence (ORD-16) need not wait for a
        predecessor that expired on the broker (ORD-13)."""
        self.jms_message_id: str | None = None
        self.jms_timestamp = 0
        self.jms_correlation_id: str | None = None
        self.jms_reply_to: Destination | None = None
        self.jms_destination: Destination | None = None
        self.jms_delivery_mode = DeliveryMode.PERSISTENT
        self.jms_redelivered = False
        self.jms_type: str | None = None
        self.jms_expiration = 0
        self.jms_priority = 4
        self.jms_delivery_time = 0

    # ----------------------------------------------------------------- body
    @property
    def body(self) -> Any:
        """The body as a Python value (None for a plain message)."""
        return None

    def clear_body(self) -> None:
        """Make the body writable again (and empty), as JMS clearBody."""
        self._read_only_body = False

    # ----------------------------------------------------------- properties
    @property
    def properties(self) -> Mapping[str, PropertyValue]:
        """Read-only view of the properties; change them through the ``set_*`` methods."""
        return MappingProxyType(self._properties)

    def property_names(self) -> list[str]:
        return list(self._properties)

    def property_exists(self, name: str) -> bool:
        return name in self._properties

    def clear_properties(self) -> None:
        """Remove every property and make properties writable again (JMS clearProperties)."""
        self._properties = {}
        self._prop_types = {}
        self._read_only = False

    def _check_writable(self) -> None:
        if self._read_only:
            raise MessageNotWriteableError(
                f"message {self.jms_message_id} was received and is read-only; call "
                "clear_properties() first"
            )

    def _set(self, name: str, value: object, jms_type: str) -> None:
        self._check_writable()
        check_property_name(name)
        self._own_properties()[name] = value  # type: ignore[assignment]
        if jms_type == _infer_type(name, value):
            self._prop_types.pop(name, None)
        else:
            self._own_prop_types()[name] = jms_type

    def _set_integral(self, name: str, value: object, jms_type: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise MessageFormatError(
                f"property {name!r}: {value!r} is not an int (set_{jms_type}_property)"
            )
        low, high = _RANGES[jms_type]
        if not low <= value <= high:
            raise MessageFormatError(
                f"property {name!r}: {value} is outside the JMS {jms_type} range [{low}, {high}]"
            )
        self._set(name, value, jms_type)

    def set_string_property(self, name: str, value: str) -> None:
        if not isinstance(value, str):
            raise MessageFormatError(f"property {name!r}: {value!r} is not a str")
        self._set(name, value, "string")

    def set_boolean_property(self, name: str, value: bool) -> None:
        if not isinstance(value, bool):
            raise MessageFormatError(f"property {name!r}: {value!r} is not a bool")
        self._set(name, value, "boolean")

    def set_byte_property(self, name: str, value: int) -> None:
        self._set_integral(name, value, "byte")

    def set_short_property(self, name: str, value: int) -> None:
        self._set_integral(name, value, "short")

    def set_int_property(self, name: str, value: int) -> None:
        self._set_integral(name, value, "int")

    def set_long_property(self, name: str, value: int) -> None:
        self._set_integral(name, value, "long")

    def set_float_property(self, name: str, value: float) -> None:
        self._set_floating(name, value, "float")

    def set_double_property(self, name: str, value: float) -> None:
        self._set_floating(name, value, "double")

    def _set_floating(self, name: str, value: object, jms_type: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise MessageFormatError(f"property {name!r}: {value!r} is not a float")
        self._set(name, float(value), jms_type)

    def set_object_property(self, name: str, value: PropertyValue) -> None:
        """Set a property whose JMS type follows from the Python type (int -> int or long)."""
        self._check_writable()
        check_property_name(name)
        jms_type = _infer_type(name, value)
        self._own_properties()[name] = value
        if jms_type == "long":
            self._own_prop_types()[name] = "long"
        else:
            self._prop_types.pop(name, None)

    def set_properties(self, values: Mapping[str, PropertyValue]) -> None:
        """Set several properties at once, each as set_object_property would."""
        for name, value in values.items():
            self.set_object_property(name, value)

    def property_type(self, name: str) -> str | None:
        """The JMS type of a property: boolean, byte, short, int, long, float, double, string."""
        if name not in self._properties:
            return None
        return self._prop_types.get(name) or _infer_type(name, self._properties[name])

    def get_object_property(self, name: str) -> PropertyValue | None:
        return self._properties.get(name)

    def get_string_property(self, name: str) -> str | None:
        value = self._properties.get(name)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def _get_as(self, name: str, wanted: str) -> PropertyValue | None:
        value = self._properties.get(name)
        if value is None:
            return None
        stored = self.property_type(name)
        if stored not in _READABLE_AS[wanted]:
            raise MessageFormatError(
                f"property {name!r} is a JMS {stored} and cannot be read as {wanted}"
            )
        return value

    def get_boolean_property(self, name: str) -> bool | None:
        value = self._get_as(name, "boolean")
        if isinstance(value, str):
            return value.lower() == "true"
        return value  # type: ignore[return-value]

    def _get_integral(self, name: str, wanted: str) -> int | None:
        value = self._get_as(name, wanted)
        if isinstance(value, str):
            try:
                parsed = int(value.strip())
            except ValueError:
                raise MessageFormatError(
                    f"property {name!r}: {value!r} cannot be read as {wanted}"
                ) from None
            low, high = _RANGES[wanted]
            if not low <= parsed <= high:
                raise MessageFormatError(f"property {name!r}: {value!r} overflows {wanted}")
            return parsed
        return value  # type: ignore[return-value]

    def get_byte_property(self, name: str) -> int | None:
        return self._get_integral(name, "byte")

    def get_short_property(self, name: str) -> int | None:
        return self._get_integral(name, "short")

    def get_int_property(self, name: str) -> int | None:
        return self._get_integral(name, "int")

    def get_long_property(self, name: str) -> int | None:
        return self._get_integral(name, "long")

    def _get_floating(self, name: str, wanted: str) -> float | None:
        value = self._get_as(name, wanted)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise MessageFormatError(
                    f"property {name!r}: {value!r} cannot be read as {wanted}"
                ) from None
        return value

    def get_float_property(self, name: str) -> float | None:
        return self._get_floating(name, "float")

    def get_double_property(self, name: str) -> float | None:
        return self._get_floating(name, "double")

    # ---------------------------------------------------------------- groups
    @property
    def ordering_group(self) -> str | None:
        """The ordering group this message belongs to (ORD-20), or None."""
        value = self._properties.get(GROUP_ID)
        return value if isinstance(value, str) else None

    @property
    def group_sequence(self) -> int | None:
        """The message's sequence number in its group from its producer (ORD-4), or None."""
        value = self._properties.get(GROUP_SEQ)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def delivery_count(self) -> int:
        """How many times this message has been delivered, this time included."""
        value = self._properties.get(DELIVERY_COUNT)
        return value if isinstance(value, int) else 1

    # ------------------------------------------------------------ ack, copy
    def acknowledge(self) -> None:
        """Acknowledge every message the session has consumed so far (CLIENT_ACKNOWLEDGE).

        A no-op in the other acknowledge modes and on a message that was never received,
        as in JMS.
        """
        if self._ack is not None:
            self._ack._acknowledge_from(self)

    def _copy(self, *, stored: bool = False) -> Self:
        """An independent copy: what a provider stores, so the sender may reuse the original.

        ``stored``: a copy that only a broker keeps, and copies again before anyone sees
        it; an empty property table is then shared, not copied (one object fewer per
        stored message, fewer garbage collections under a backlog). Such a copy's table
        is never written in place: the ``set_*_property`` calls take their own first.
        """
        cls = type(self)
        new = cls.__new__(cls)
        props = self._properties
        new._properties = dict(props) if props or not stored else _NO_PROPERTIES
        new._prop_types = dict(self._prop_types) if self._prop_types else _NO_TYPES
        new._read_only = False
        new._read_only_body = False
        new._ack = None
        new._group_prev_expiration = self._group_prev_expiration
        new.jms_message_id = self.jms_message_id
        new.jms_timestamp = self.jms_timestamp
        new.jms_correlation_id = self.jms_correlation_id
        new.jms_reply_to = self.jms_reply_to
        new.jms_destination = self.jms_destination
        new.jms_delivery_mode = self.jms_delivery_mode
        new.jms_redelivered = self.jms_redelivered
        new.jms_type = self.jms_type
        new.jms_expiration = self.jms_expiration
        new.jms_priority = self.jms_priority
        new.jms_delivery_time = self.jms_delivery_time
        shared = cls._shared_body
        if shared is not None:
            setattr(new, shared, getattr(self, shared))
        else:
            self._copy_body_to(new)
        return new

    def _own_properties(self) -> dict[str, PropertyValue]:
        """This message's own property table, made on the first write to a stored copy's
        shared empty one (``_copy(stored=True)``)."""
        if self._properties is _NO_PROPERTIES:
            self._properties = {}
        return self._properties

    def _own_prop_types(self) -> dict[str, str]:
        """This message's own type table, made on the first write to a copy's shared
        empty one."""
        if self._prop_types is _NO_TYPES:
            self._prop_types = {}
        return self._prop_types

    def _copy_body_to(self, other: Self) -> None:
        """Body types copy their body here; a plain message has none."""

    def _received(self, ack: _Acknowledger | None) -> None:
        """Called by the API layer when handing this message to the application."""
        self._read_only = True
        self._read_only_body = True
        self._ack = ack

    def _check_body_writable(self) -> None:
        if self._read_only_body:
            raise MessageNotWriteableError(
                f"message {self.jms_message_id} was received (or reset) and its body is "
                "read-only; "
                "call clear_body() first"
            )

    def _body_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        group = self.ordering_group
        parts = [f"id={self.jms_message_id!r}"]
        if self.jms_destination is not None:
            parts.append(f"destination='{self.jms_destination}'")
        if group is not None:
            parts.append(f"group={group!r} seq={self.group_sequence}")
        if self.jms_redelivered:
            parts.append(f"redelivered count={self.delivery_count}")
        body = self._body_repr()
        if body:
            parts.append(body)
        return f"<{type(self).__name__} {' '.join(parts)}>"

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__


class TextMessage(Message):
    """A message whose body is a str."""

    __slots__ = ("_text",)

    type_name: ClassVar[str] = "text"
    _shared_body: ClassVar[str | None] = "_text"

    def __init__(self, text: str | None = None) -> None:
        Message.__init__(self)  # not super(): one object fewer per message
        if text is not None and not isinstance(text, str):
            raise MessageFormatError(
                f"text message body must be a str, not {type(text).__name__}: {text!r:.60}"
            )
        self._text = text

    @property
    def text(self) -> str | None:
        return self._text

    @text.setter
    def text(self, value: str | None) -> None:
        self._check_body_writable()
        if value is not None and not isinstance(value, str):
            raise MessageFormatError(f"text must be a str, not {type(value).__name__}")
        self._text = value

    @property
    def body(self) -> str | None:
        return self._text

    def clear_body(self) -> None:
        self._text = None
        self._read_only_body = False

    def _copy_body_to(self, other: TextMessage) -> None:
        other._text = self._text

    def _body_repr(self) -> str:
        return f"text={self._text!r:.40}"


class BytesMessage(Message, JavaDataStream):
    """A message whose body is bytes; ``read_int()``, ``write_utf()`` and the other
    typed reads and writes use the layout of a Java client's BytesMessage
    (:mod:`jmslike.javadata`)."""

    __slots__ = ("_data", "_pos")

    type_name: ClassVar[str] = "bytes"
    _shared_body: ClassVar[str | None] = "_data"

    def __init__(self, data: bytes | bytearray | memoryview | None = None) -> None:
        Message.__init__(self)  # not super(): one object fewer per message
        self._data = self._coerce(data)

    @staticmethod
    def _coerce(data: object) -> bytes:
        if data is None:
            return b""
        if isinstance(data, bytes):
            return data
        if isinstance(data, bytearray | memoryview):
            return bytes(data)
        raise MessageFormatError(
            f"bytes message body must be bytes-like, not {type(data).__name__}: {data!r:.60}"
        )

    @property
    def body(self) -> bytes:
        return self._data

    @body.setter
    def body(self, value: bytes) -> None:
        self._check_body_writable()
        self._data = self._coerce(value)
        self._pos = 0

    @property
    def body_length(self) -> int:
        return len(self._data)

    def clear_body(self) -> None:
        self._data = b""
        self._pos = 0
        self._read_only_body = False

    def _copy_body_to(self, other: BytesMessage) -> None:
        other._data = self._data

    def _body_repr(self) -> str:
        return f"bytes={len(self._data)}"


def _check_map_value(name: str, value: object) -> MapValue:
    if isinstance(value, bool | str | bytes):
        return value
    if isinstance(value, int):
        _infer_type(name, value)
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise MessageFormatError(
        f"map entry {name!r}: {value!r:.60} of type {type(value).__name__} is not a JMS map "
        "value (bool, int, float, str or bytes)"
    )


class MapMessage(Message):
    """A message whose body maps str names to bool, int, float, str or bytes values."""

    __slots__ = ("_map",)

    type_name: ClassVar[str] = "map"

    def __init__(self, mapping: Mapping[str, MapValue] | None = None) -> None:
        Message.__init__(self)  # not super(): one object fewer per message
        self._map: dict[str, MapValue] = {}
        if mapping is not None:
            if not isinstance(mapping, Mapping):
                raise MessageFormatError(
                    f"map message body must be a mapping, not {type(mapping).__name__}"
                )
            for name, value in mapping.items():
                self.set_object(name, value)

    @property
    def body(self) -> dict[str, MapValue]:
        """A copy of the map (changing it does not change the message)."""
        return dict(self._map)

    def set_object(self, name: str, value: MapValue) -> None:
        self._check_body_writable()
        if not isinstance(name, str) or not name:
            raise MessageFormatError(f"map entry name {name!r} must be a non-empty str")
        self._map[name] = _check_map_value(name, value)

    def get_object(self, name: str) -> MapValue | None:
        return self._map.get(name)

    def item_exists(self, name: str) -> bool:
        return name in self._map

    def map_names(self) -> Iterable[str]:
        return list(self._map)

    def clear_body(self) -> None:
        self._map = {}
        self._read_only_body = False

    def _copy_body_to(self, other: MapMessage) -> None:
        other._map = dict(self._map)

    def _body_repr(self) -> str:
        return f"map={len(self._map)} entries"


def require_message(message: object) -> Message:
    """Check that ``message`` is a jmslike message; raise a JMSException naming it if not."""
    if not isinstance(message, Message):
        raise MessageFormatError(
            f"cannot send {message!r:.60} of type {type(message).__name__}: create messages "
            "with session.create_text_message() and friends"
        )
    return message
