"""The file store's message codec: every message type, header and property type survives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike import BytesMessage, MapMessage, Message, Queue, TemporaryQueue, TextMessage
from jmslike.embedded.codec import decode, encode

names = st.from_regex(r"[a-z][A-Za-z0-9_]{0,10}", fullmatch=True).filter(
    lambda n: n.upper() not in {"NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "IN", "IS"}
)
values = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)


def roundtrip(message: Message) -> Message:
    return decode(*encode(message))


@given(props=st.dictionaries(names, values, max_size=8), text=st.one_of(st.none(), st.text()))
def test_text_message_and_properties(props: dict[str, object], text: str | None) -> None:
    message = TextMessage(text)
    message.set_properties(props)  # type: ignore[arg-type]
    message.set_short_property("small", 7)
    message.set_float_property("ratio", 0.5)
    back = roundtrip(message)
    assert isinstance(back, TextMessage)
    assert back.text == text
    assert dict(back.properties) == dict(message.properties)
    assert {n: back.property_type(n) for n in back.property_names()} == {
        n: message.property_type(n) for n in message.property_names()
    }


@given(data=st.binary(max_size=2048))
def test_bytes_message(data: bytes) -> None:
    back = roundtrip(BytesMessage(data))
    assert isinstance(back, BytesMessage) and back.body == data


@given(entries=st.dictionaries(names, st.one_of(values, st.binary(max_size=20)), max_size=8))
def test_map_message(entries: dict[str, object]) -> None:
    back = roundtrip(MapMessage(entries))  # type: ignore[arg-type]
    assert isinstance(back, MapMessage) and back.body == entries


def test_headers() -> None:
    message = Message()
    message.jms_message_id = "ID:1"
    message.jms_timestamp = 1_700_000_000_000
    message.jms_correlation_id = "corr"
    message.jms_reply_to = TemporaryQueue("reply-1")
    message.jms_destination = Queue("orders")
    message.jms_delivery_mode = 1
    message.jms_type = "order"
    message.jms_expiration = 1_700_000_060_000
    message.jms_priority = 7
    message.jms_delivery_time = 1_700_000_001_000
    back = roundtrip(message)
    for header in (
        "jms_message_id",
        "jms_timestamp",
        "jms_correlation_id",
        "jms_reply_to",
        "jms_destination",
        "jms_delivery_mode",
        "jms_type",
        "jms_expiration",
        "jms_priority",
        "jms_delivery_time",
    ):
        assert getattr(back, header) == getattr(message, header), header
    assert not back.jms_redelivered


def test_decoded_message_is_writable() -> None:
    back = roundtrip(TextMessage("x"))
    back.set_string_property("later", "fine")
    assert back.get_string_property("later") == "fine"


def test_unreadable_metadata_is_a_jms_error() -> None:
    from jmslike import MessageFormatError

    with pytest.raises(MessageFormatError):
        decode('{"t": "nonsense"}', b"")
