"""BytesMessage's typed reads and writes (jmslike/javadata.py): Java's byte layout, the
read position, and the values refused before anything is written.

The expected bytes below are what ``java.io.DataOutputStream`` writes (JDK documentation
of ``DataOutput``); the same layout read and written by real Java clients is checked in
tests/interop/test_java_messages.py. Run:
``.venv/bin/python -m pytest tests/unit/test_javadata.py -v``.
"""

from __future__ import annotations

import math
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

import jmslike
from jmslike.javadata import decode_modified_utf8, encode_modified_utf8


def test_each_type_in_javas_layout() -> None:
    message = jmslike.BytesMessage()
    message.write_boolean(True)
    message.write_byte(-2)
    message.write_short(-300)
    message.write_char("\u00e9")
    message.write_int(-70_000)
    message.write_long(1 << 40)
    message.write_float(0.25)
    message.write_double(-1.5)
    message.write_utf("a\x00\U0001f600")
    message.write_bytes(b"\x00\xff")
    assert message.body.hex(" ") == (
        "01 fe fe d4 00 e9 ff fe ee 90 00 00 01 00 00 00 00 00 3e 80 00 00 "
        "bf f8 00 00 00 00 00 00 00 09 61 c0 80 ed a0 bd ed b8 80 00 ff"
    )
    message.reset()
    assert [
        message.read_boolean(),
        message.read_byte(),
        message.read_short(),
        message.read_char(),
        message.read_int(),
        message.read_long(),
        message.read_float(),
        message.read_double(),
        message.read_utf(),
        message.read_bytes(),
    ] == [True, -2, -300, "\u00e9", -70_000, 1 << 40, 0.25, -1.5, "a\x00\U0001f600", b"\x00\xff"]
    assert message.read_bytes() == b""


def test_unsigned_reads_and_write_object() -> None:
    message = jmslike.BytesMessage(b"\xff\xff\xff")
    assert (message.read_unsigned_byte(), message.read_unsigned_short()) == (255, 65535)
    out = jmslike.BytesMessage()
    for value in (False, 7, 2.5, "x", b"y"):
        out.write_object(value)
    assert out.body == b"\x00" + (7).to_bytes(8, "big") + bytes.fromhex("4004000000000000") + (
        b"\x00\x01x" + b"y"
    )
    with pytest.raises(jmslike.MessageFormatError, match="write_object"):
        out.write_object(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "value", "named"),
    [
        ("write_byte", 128, "128"),
        ("write_short", -32_769, "-32769"),
        ("write_int", 2**31, "2147483648"),
        ("write_long", 2**63, "9223372036854775808"),
        ("write_int", True, "bool"),
        ("write_int", 1.5, "1.5"),
        ("write_float", 1e300, "1e+300"),
        ("write_boolean", 1, "need a bool"),
        ("write_char", "\U0001f600", "Java char"),
        ("write_char", "ab", "'ab'"),
        ("write_utf", b"x", "need a str"),
        ("write_utf", "\u00e9" * 40_000, "80000 bytes"),
        ("write_bytes", "text", "need bytes"),
    ],
)
def test_a_value_java_cannot_hold_is_named_and_nothing_is_written(
    call: str, value: object, named: str
) -> None:
    message = jmslike.BytesMessage(b"kept")
    with pytest.raises(jmslike.MessageFormatError, match=named.replace("+", r"\+")):
        getattr(message, call)(value)
    assert message.body == b"kept"


def test_a_read_past_the_end_keeps_the_position() -> None:
    message = jmslike.BytesMessage(b"\x00\x05abc")
    with pytest.raises(jmslike.MessageEOFError, match="5 bytes needed at byte 2"):
        message.read_utf()
    with pytest.raises(jmslike.MessageEOFError):
        message.read_long()
    assert message.read_short() == 5
    assert message.read_bytes(2) == b"ab"
    assert isinstance(jmslike.MessageEOFError("x"), jmslike.JMSException)


def test_bad_modified_utf8_is_a_format_error() -> None:
    message = jmslike.BytesMessage(b"\x00\x01\xff")
    with pytest.raises(jmslike.MessageFormatError, match="not modified UTF-8"):
        message.read_utf()
    assert message.read_unsigned_short() == 1  # the position stayed at the length


def test_a_received_message_reads_from_its_start_and_is_read_only() -> None:
    factory = jmslike.ConnectionFactory(f"embedded://javadata-{uuid.uuid4().hex[:8]}")
    with factory.create_connection() as connection:
        session = connection.create_session()
        sent = session.create_bytes_message()
        sent.write_int(42)
        sent.write_utf("caf\u00e9")
        assert sent.read_int() == 42  # reading as it is written is allowed (Java: reset first)
        producer = session.create_producer("queue://javadata")
        producer.send(sent)
        producer.send(sent)
        connection.start()
        consumer = session.create_consumer("queue://javadata")
        for _ in range(2):
            got = consumer.receive(5.0)
            assert isinstance(got, jmslike.BytesMessage)
            assert (got.read_int(), got.read_utf()) == (42, "caf\u00e9")
            with pytest.raises(jmslike.MessageNotWriteableError):
                got.write_int(1)
        got.clear_body()
        got.write_int(7)
        got.reset()
        assert got.read_int() == 7
        with pytest.raises(jmslike.MessageNotWriteableError, match="reset"):
            got.write_int(8)


@given(st.text())
def test_modified_utf8_round_trips(text: str) -> None:
    encoded = encode_modified_utf8(text)
    assert b"\x00" not in encoded  # Java's form never holds a zero byte
    assert decode_modified_utf8(encoded) == text.encode("utf-16-le", "surrogatepass").decode(
        "utf-16-le", "surrogatepass"
    )


@given(
    st.lists(
        st.one_of(
            st.booleans(),
            st.integers(-(2**63), 2**63 - 1),
            st.floats(allow_nan=False),
            st.text(max_size=50),
            st.binary(max_size=20),
        ),
        max_size=20,
    )
)
def test_typed_writes_read_back(values: list[object]) -> None:
    message = jmslike.BytesMessage()
    readers = []
    for value in values:
        message.write_object(value)  # type: ignore[arg-type]
        if isinstance(value, bool):
            readers.append(message.read_boolean)
        elif isinstance(value, int):
            readers.append(message.read_long)
        elif isinstance(value, float):
            readers.append(message.read_double)
        elif isinstance(value, str):
            readers.append(message.read_utf)
    message.reset()
    got = []
    for value in values:
        if isinstance(value, bytes):
            got.append(message.read_bytes(len(value)))
        else:
            got.append(readers.pop(0)())
    for value, back in zip(values, got, strict=True):
        if isinstance(value, float) and math.isinf(value):
            assert back == value
        elif isinstance(value, str):
            assert back == value.encode("utf-16-le", "surrogatepass").decode(
                "utf-16-le", "surrogatepass"
            )
        else:
            assert back == value
