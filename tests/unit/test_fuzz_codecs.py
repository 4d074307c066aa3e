"""Fuzzing the two wire codecs with what a broken or hostile broker could deliver.

A MESSAGE frame's headers and body (STOMP) and an AMQP message's annotations,
application properties and body come from the broker, so the codecs must turn anything
into a jmslike ``Message`` or a typed ``JMSException`` (``MessageFormatError``); a bare
``ValueError`` or ``AttributeError`` would be logged and lost on the connection's thread
instead of reaching the application. The AMQP messages go through Proton's own encoder
and decoder first, so they are what the wire can carry (near-valid, not arbitrary
Python objects).

``EXAMPLES`` counts what ran (docs/reliability.md quotes it; ``pytest -s`` prints it).
"""

from __future__ import annotations

import math
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import proton
import pytest
from amqpvalues import amqp_values
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import jmslike
from jmslike.destination import Queue
from jmslike_amqp import codec as amqp_codec
from jmslike_amqp.received import ReceivedMessage, read
from jmslike_stomp import codec as stomp_codec
from jmslike_stomp.dialect import ACTIVEMQ, ARTEMIS, GENERIC, RABBITMQ

EXAMPLES: Counter[str] = Counter()
FUZZ = settings(
    max_examples=int(os.environ.get("JMSLIKE_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    print(f"\nexamples run: {dict(EXAMPLES)}")


def _outcome(decode: Any, *args: Any, **kwargs: Any) -> None:
    """Run a decode; only a Message or a typed error may come out."""
    try:
        message = decode(*args, **kwargs)
    except jmslike.JMSException:
        EXAMPLES[f"{decode.__module__} refused"] += 1
        return
    assert isinstance(message, jmslike.Message)
    repr(message)  # what a log line does with it
    for name in message.property_names():
        message.get_object_property(name)
    EXAMPLES[f"{decode.__module__} decoded"] += 1


# ------------------------------------------------------------------------------------ STOMP

_HEADER_NAMES = st.one_of(
    st.sampled_from(
        [
            "jmslikeType", "jmslikeTypes", "jmslikeMessageID", "jmslikeGroupID",
            "jmslikeGroupSeq", "jmslikeDeliveryTime", "jmslikeReplyTo", "jmslikePriority",
            "jmslikeTimestamp", "jmslikeGroupPrevExpires", "content-length", "destination",
            "reply-to", "expires", "priority", "persistent", "timestamp", "message-id",
            "JMSXGroupID", "JMSXGroupSeq", "_AMQ_GROUP_SEQUENCE", "JMS_AMQP_TYPE",
            "correlation-id", "type", "amqp-type", "prop",
        ]
    ),
    st.text(max_size=10),
)  # fmt: skip
_HEADER_VALUES = st.one_of(
    st.sampled_from(
        ["map", "bytes", "text", "message", "1", "-1", "99999999999999999999999", "true",
         "/temp-queue/x", "/queue/a::b", "a:int,b:boolean,c:double,d:long", "x:byte", "nan"]
    ),
    st.text(max_size=20),
)  # fmt: skip
_BODIES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"{}", b"[]", b"null", b'{"a":["b","!!"]}', b'{"a":1}', b'{"a":["x"]}']),
    st.text(max_size=30).map(lambda t: t.encode("utf-8")),
)


@FUZZ
@given(
    headers=st.dictionaries(_HEADER_NAMES, _HEADER_VALUES, max_size=8),
    body=_BODIES,
    dialect=st.sampled_from([ACTIVEMQ, ARTEMIS, RABBITMQ, GENERIC]),
    topic=st.booleans(),
)
@example(headers={"jmslikeType": "map"}, body=b"\xff", dialect=ARTEMIS, topic=False)
@example(headers={"jmslikeType": "map"}, body=b"[]", dialect=ARTEMIS, topic=False)
@example(headers={"jmslikeType": "map"}, body=b'{"a":1}', dialect=ARTEMIS, topic=False)
@example(headers={"jmslikeType": "map"}, body=b'{"a":["b","!!"]}', dialect=ARTEMIS, topic=False)
def test_stomp_decode_gives_a_message_or_a_typed_error(
    headers: dict[str, str], body: bytes, dialect: Any, topic: bool
) -> None:
    _outcome(stomp_codec.decode, headers, body, dialect, topic)


# ------------------------------------------------------------------------------------- AMQP

_SCALARS = amqp_values(text_size=12, container_size=0, leaves=1)
_VALUES = amqp_values(text_size=12, container_size=3, leaves=6)
_ANNOTATION_KEYS = st.one_of(
    st.sampled_from(
        [amqp_codec.MSG_TYPE, amqp_codec.DEST_TYPE, amqp_codec.REPLY_TO_TYPE,
         amqp_codec.DELIVERY_TIME]
    ),
    st.text(max_size=8).map(lambda t: proton.symbol("x-opt-" + t)),
)  # fmt: skip
_TYPE_CODES = st.one_of(st.integers(-3, 8).map(proton.byte), _SCALARS)


@st.composite
def amqp_messages(draw: st.DrawFn) -> proton.Message:
    message = proton.Message()
    annotations = draw(st.dictionaries(_ANNOTATION_KEYS, _VALUES, max_size=3))
    if draw(st.booleans()):
        annotations[amqp_codec.MSG_TYPE] = draw(_TYPE_CODES)
    message.annotations = annotations or None
    message.properties = draw(
        st.dictionaries(
            st.one_of(st.text(max_size=8), st.sampled_from(["jmslikePriority", "JMSXGroupID"])),
            _VALUES,
            max_size=4,
        )
    )
    message.body = draw(_VALUES)
    message.id = draw(st.one_of(st.none(), st.text(max_size=8), st.binary(max_size=8),
                                st.integers(0, 2**64 - 1).map(proton.ulong),
                                st.just(uuid.UUID(int=3))))  # fmt: skip
    message.correlation_id = draw(st.one_of(st.none(), st.text(max_size=8)))
    message.subject = draw(st.one_of(st.none(), st.text(max_size=8)))
    message.priority = draw(st.integers(0, 255))
    message.durable = draw(st.booleans())
    message.group_id = draw(st.one_of(st.none(), st.text(max_size=8)))
    message.group_sequence = draw(st.integers(0, 2**32 - 1))
    message.creation_time = draw(st.floats(-1e12, 1e12))
    message.expiry_time = draw(st.floats(-1e12, 1e12))
    return message


def _wire(message: proton.Message) -> proton.Message:
    """Through Proton's encoder and the provider's decoder, as on the wire; a value the
    encoder refuses cannot come from a broker, so the example is not used."""
    try:
        data = message.encode()
    except (proton.MessageException, proton.DataException, KeyError, TypeError, ValueError):
        assume(False)
    return read(data)


def _typed_body(code: int, body: object) -> proton.Message:
    return proton.Message(annotations={amqp_codec.MSG_TYPE: proton.byte(code)}, body=body)


@FUZZ
@given(message=amqp_messages())
@example(message=_typed_body(2, b"\x00"))
@example(message=_typed_body(3, "text"))
@example(message=_typed_body(3, 5))
@example(message=_typed_body(5, {"a": 1}))
@example(message=proton.Message(annotations={amqp_codec.MSG_TYPE: []}))
def test_amqp_decode_gives_a_message_or_a_typed_error(message: proton.Message) -> None:
    _outcome(amqp_codec.decode, _wire(message), Queue("q"), None)


@FUZZ
@given(data=st.binary(max_size=200))
def test_amqp_bytes_decode_to_a_message_or_a_proton_error(data: bytes) -> None:
    """What the connection's thread does with a transfer's bytes before the codec sees
    them: Proton refuses garbage with its own errors (the transport turns them into a
    lost connection, tests/integration/test_fuzz_brokers.py), or the codec maps it."""
    try:
        incoming = read(data)
    except (proton.MessageException, proton.DataException):
        EXAMPLES["proton refused bytes"] += 1
        return
    _outcome(amqp_codec.decode, incoming, Queue("q"), None)


# The provider reads the common shape of message itself (providers/jmslike_amqp/received.py)
# and leaves the rest to Proton: what it reads must be what Proton reads, field by field,
# and it must never accept bytes that Proton refuses.

_FIELDS = (
    "durable", "priority", "first_acquirer", "delivery_count", "id", "correlation_id",
    "subject", "reply_to", "expiry_time", "creation_time", "group_id", "group_sequence",
    "annotations", "properties", "body",
)  # fmt: skip


_C_STRINGS = frozenset({"subject", "reply_to", "group_id"})
"""Fields Proton hands out as C strings, cut at the first NUL, where AMQP (and jmslike's
``read``) keep it: a subject of b'\\x00' read as '' through Proton (found by this test)."""


def _same(value: Any) -> Any:
    """A decoded value as compared here: views as bytes, NaN by name, types kept."""
    if isinstance(value, memoryview):
        return (bytes, value.tobytes())
    if isinstance(value, dict):
        return (dict, {_same(k): _same(v) for k, v in value.items()})
    if isinstance(value, list):
        return (list, [_same(item) for item in value])
    if isinstance(value, float) and math.isnan(value):
        return (type(value), "nan")
    return (type(value), value)


def _read_both(data: bytes) -> None:
    """``read`` against Proton's own decoder on the same bytes: the same refusal (Proton
    raises more than its own errors on some bytes: a UnicodeDecodeError, a TypeError
    for a list as a map key), or the same fields."""
    ours: Any = None
    try:
        ours = read(data)
    except Exception as exc:
        refused: BaseException | None = exc
    else:
        refused = None
    theirs = amqp_codec.IncomingMessage()
    try:
        theirs.decode(data)
    except Exception as exc:
        assert type(refused) is type(exc), f"Proton refused ({exc!r}), read gave {ours!r}"
        EXAMPLES["both refused"] += 1
        return
    assert refused is None, refused
    EXAMPLES["read by jmslike" if isinstance(ours, ReceivedMessage) else "read by Proton"] += 1
    for field in _FIELDS:
        mine = _field(ours, field)
        if field in _C_STRINGS and isinstance(ours, ReceivedMessage) and mine[0] is str:
            mine = (str, mine[1].partition("\0")[0])
        assert mine == _field(theirs, field), field


def _field(message: Any, name: str) -> Any:
    """A field as compared: Proton reads some fields only when asked, and may raise then
    (a subject that is not UTF-8); a message read by jmslike then came from Proton."""
    try:
        return _same(getattr(message, name))
    except Exception as exc:
        return ("raised", type(exc))


@FUZZ
@given(message=amqp_messages(), header=st.booleans(), delivery_count=st.integers(0, 2**32 - 1))
def test_amqp_read_gives_what_proton_reads(
    message: proton.Message, header: bool, delivery_count: int
) -> None:
    if header:
        message.delivery_count = delivery_count
        message.first_acquirer = True
    try:
        data = message.encode()
    except (proton.MessageException, proton.DataException, KeyError, TypeError, ValueError):
        assume(False)
    _read_both(data)


@FUZZ
@given(
    message=amqp_messages(),
    cuts=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=3),
    truncate=st.booleans(),
)
def test_amqp_read_of_damaged_bytes_agrees_with_proton(
    message: proton.Message, cuts: list[tuple[int, int]], truncate: bool
) -> None:
    """A valid message with bytes changed (or cut short): both refuse, or both read the
    same fields."""
    try:
        data = bytearray(message.encode())
    except (proton.MessageException, proton.DataException, KeyError, TypeError, ValueError):
        assume(False)
    for where, octet in cuts:
        data[where % len(data)] = octet
    if truncate:
        del data[cuts[0][0] % len(data) :]
    _read_both(bytes(data))


def test_amqp_read_keeps_a_nul_in_a_string_field() -> None:
    """AMQP strings may hold NUL; Proton's C accessors cut them there (see _C_STRINGS),
    jmslike's reader does not."""
    data = proton.Message(subject="a~b", reply_to="r~s", group_id="g~h", body="x").encode()
    ours = read(data.replace(b"~", b"\0"))  # Proton's setters would cut them too
    assert isinstance(ours, ReceivedMessage)
    assert (ours.subject, ours.reply_to, ours.group_id) == ("a\0b", "r\0s", "g\0h")
