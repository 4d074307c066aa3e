"""jmslike writes its AMQP messages without a Proton message (providers/jmslike_amqp/encoding.py,
docs/performance.md): what it writes must read back, through Proton's decoder as every
broker and Qpid JMS decode it, as exactly what Proton's own encoder would have written.

* every value type, nested in lists and maps, against ``proton.Data.put_object``;
* every JMS message jmslike can send (type, body, headers, typed properties, group and
  sequence, the provider's flags) against a Proton message built with the same fields.

That raw Proton can send what ``codec.encode`` returns (``sender.send(...)``), and that a
real broker reads it, is tests/integration/test_amqp_codec_artemis.py.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import proton
from amqpvalues import amqp_values
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from jmslike import BytesMessage, DeliveryMode, MapMessage, Message, TextMessage
from jmslike.destination import Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike_amqp import codec, encoding

_VALUES = amqp_values(text_size=300, container_size=40, leaves=60)


def _proton_bytes(value: Any) -> bytes:
    data = proton.Data()
    data.put_object(value)
    return data.encode()  # type: ignore[no-any-return]


def _read(encoded: bytes) -> Any:
    data = proton.Data()
    data.decode(encoded)
    data.next()
    return _copied(data.get_object())


def _copied(value: Any) -> Any:
    """Binary values copied out: Proton reads them as views into the ``Data`` object's
    memory, which is freed with it."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {_copied(k): _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


@settings(max_examples=400, deadline=None)
@given(value=_VALUES)
@example(value=proton.float32(1e300))
@example(value="x" * 255)
@example(value=[0] * 200)
def test_a_value_reads_back_as_protons_own_encoding(value: Any) -> None:
    """Proton reads our bytes as the value it would itself have written: re-encoded by
    Proton, both are the same bytes (which compares types too, and NaN by its bits)."""
    try:
        theirs = _proton_bytes(value)
    except UnicodeEncodeError:
        assume(False)  # a symbol Proton refuses (not ASCII): nobody sends it
    ours = encoding.encoded(value)
    assert _proton_bytes(_read(ours)) == _proton_bytes(_read(theirs))


# ---------------------------------------------------------------- whole messages

_DESTINATIONS = st.sampled_from(
    [Queue("orders"), Topic("news"), TemporaryQueue("tmp-q"), TemporaryTopic("tmp-t")]
)
_NAMES = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6).map(
    lambda name: "p" + name  # never a selector keyword ("true", "and"...)
)
_PROPERTIES = st.lists(
    st.one_of(
        st.tuples(st.just("string"), st.text(max_size=20)),
        st.tuples(st.just("boolean"), st.booleans()),
        st.tuples(st.just("byte"), st.integers(-128, 127)),
        st.tuples(st.just("short"), st.integers(-(2**15), 2**15 - 1)),
        st.tuples(st.just("int"), st.integers(-(2**31), 2**31 - 1)),
        st.tuples(st.just("long"), st.integers(-(2**63), 2**63 - 1)),
        st.tuples(st.just("float"), st.floats(width=32, allow_nan=False)),
        st.tuples(st.just("double"), st.floats(allow_nan=False)),
    ),
    max_size=5,
)
_MAP_VALUES = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)


@st.composite
def _messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["text", "none-text", "bytes", "map", "plain"]))
    message: Message
    if kind == "text":
        message = TextMessage(draw(st.text(max_size=400)))
    elif kind == "none-text":
        message = TextMessage(None)
    elif kind == "bytes":
        message = BytesMessage(draw(st.binary(max_size=400)))
    elif kind == "map":
        message = MapMessage(draw(st.dictionaries(_NAMES, _MAP_VALUES, max_size=5)))
    else:
        message = Message()
    message.jms_message_id = draw(st.sampled_from(["", "ID:" + str(uuid.UUID(int=3))]))
    message.jms_correlation_id = draw(st.none() | st.text(max_size=10))
    message.jms_type = draw(st.none() | st.text(max_size=10))
    message.jms_destination = draw(st.none() | _DESTINATIONS)
    message.jms_reply_to = draw(st.none() | _DESTINATIONS)
    message.jms_delivery_mode = draw(
        st.sampled_from([DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT])
    )
    message.jms_priority = draw(st.integers(0, 9))
    timestamp = draw(st.sampled_from([0, 1_700_000_000_123]))
    message.jms_timestamp = timestamp
    message.jms_expiration = draw(
        st.sampled_from([0, timestamp + 1, timestamp + 60_000, timestamp + 60 * 86_400_000])
    )
    message.jms_delivery_time = timestamp + draw(st.sampled_from([0, 5_000]))
    names = draw(st.lists(_NAMES, unique=True, max_size=5))
    for name, (jms_type, value) in zip(names, draw(_PROPERTIES), strict=False):
        getattr(message, f"set_{jms_type}_property")(name, value)
    if draw(st.booleans()):
        message.set_string_property("JMSXGroupID", draw(_NAMES))
        sequence = draw(st.none() | st.integers(-1, 2**31 - 1) | st.just(2**40))
        if sequence is not None:
            message.set_long_property("JMSXGroupSeq", sequence)
    return message


def _by_proton_message(
    message: Message, address: str, reply_to: str | None, wire_priority: bool, wire_seq: bool
) -> bytes:
    """The message as a ``proton.Message`` would carry it (the mapping in codec.py's
    docstring, written field by field with Proton's setters)."""
    out = proton.Message()
    out.address = address
    out.durable = message.jms_delivery_mode == DeliveryMode.PERSISTENT
    out.priority = message.jms_priority if wire_priority else 4
    out.id = message.jms_message_id or None
    out.correlation_id = message.jms_correlation_id
    out.subject = message.jms_type
    if message.jms_timestamp:
        out.creation_time = message.jms_timestamp / 1000.0
    annotations: dict[Any, Any] = {codec.MSG_TYPE: proton.byte(_TYPE_CODE[message.type_name])}
    if message.jms_destination is not None:
        annotations[codec.DEST_TYPE] = proton.byte(codec.kind_of(message.jms_destination))
    if message.jms_reply_to is not None and reply_to is not None:
        out.reply_to = reply_to
        annotations[codec.REPLY_TO_TYPE] = proton.byte(codec.kind_of(message.jms_reply_to))
    if message.jms_expiration:
        out.expiry_time = message.jms_expiration / 1000.0
        ttl = message.jms_expiration - message.jms_timestamp
        if message.jms_timestamp and ttl <= 0xFFFFFFFF:
            out.ttl = max(1, ttl) / 1000.0
    if message.jms_timestamp and message.jms_delivery_time > message.jms_timestamp:
        annotations[codec.DELIVERY_TIME] = message.jms_delivery_time
    out.annotations = annotations
    properties: dict[str, Any] = {}
    for name in message.property_names():
        if not name.startswith("JMSX"):
            value = message.get_object_property(name)
            properties[name] = _TYPED[message.property_type(name) or "string"](value)
    if not wire_priority and message.jms_priority != 4:
        properties[codec.PRIORITY_PROPERTY] = proton.int32(message.jms_priority)
    if message.ordering_group is not None:
        out.group_id = message.ordering_group
        sequence = message.group_sequence
        if sequence is not None and wire_seq:
            out.group_sequence = sequence & 0xFFFFFFFF
        elif sequence is not None:
            in_int = -(2**31) <= sequence < 2**31
            properties[codec.SEQ_PROPERTY] = proton.int32(sequence) if in_int else sequence
    out.properties = properties or None
    if isinstance(message, BytesMessage):
        out.content_type = "application/octet-stream"
        out.inferred, out.body = True, bytes(message.body)
    elif isinstance(message, (TextMessage, MapMessage)):
        out.body = message.text if isinstance(message, TextMessage) else message.body
    else:
        out.inferred, out.body = True, b""
    return out.encode()  # type: ignore[no-any-return]


_TYPE_CODE = {"message": 0, "map": 2, "bytes": 3, "text": 5}
_TYPED: dict[str, Any] = {
    "byte": proton.byte, "short": proton.short, "int": proton.int32, "long": int,
    "float": proton.float32, "double": float, "boolean": bool, "string": str,
}  # fmt: skip
_FIELDS = (
    "id", "user_id", "address", "subject", "reply_to", "correlation_id", "content_type",
    "content_encoding", "expiry_time", "creation_time", "group_id", "group_sequence",
    "reply_to_group_id", "durable", "priority", "ttl", "first_acquirer", "delivery_count",
    "inferred", "instructions",
)  # fmt: skip


def _typed(value: Any) -> Any:
    """A decoded value with its AMQP type kept, for a comparison that sees the types."""
    if isinstance(value, dict):
        return {_typed(k): _typed(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return (type(value), "nan")
    return (type(value), value)


@settings(max_examples=300, deadline=None)
@given(
    message=_messages(),
    reply_to=st.none() | st.just("reply-here"),
    wire_priority=st.booleans(),
    wire_seq=st.booleans(),
)
def test_a_message_reads_back_as_a_proton_message_would(
    message: Message, reply_to: str | None, wire_priority: bool, wire_seq: bool
) -> None:
    """Every field and section a broker or Qpid JMS reads is the one a Proton message with
    the same fields carries: the header, properties, annotations, application properties
    and body, each with its AMQP type."""
    ours = codec.encode(
        message, "orders", reply_to, wire_priority=wire_priority, wire_group_seq=wire_seq
    )
    theirs = proton.Message()
    theirs.decode(_by_proton_message(message, "orders", reply_to, wire_priority, wire_seq))
    got = proton.Message()
    got.decode(ours.encode())
    for field in _FIELDS:
        assert _typed(getattr(got, field)) == _typed(getattr(theirs, field)), field
    for section in ("annotations", "properties", "body"):
        mine, proton_s = (_copied(getattr(m, section)) for m in (got, theirs))
        assert _typed(mine) == _typed(proton_s), section
