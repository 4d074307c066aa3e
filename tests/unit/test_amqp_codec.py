"""The JMS <-> AMQP 1.0 mapping of providers/jmslike_amqp/codec.py, through proton's own
encoder: every message is encoded to bytes and decoded again, as on the wire.

What Qpid JMS and Artemis expect (docs/providers.md, "On the wire") is checked field
by field: type annotations, body sections, typed properties, groups with the unsigned
wrap of sequence -1 (ORD-4, ORD-20)."""

from __future__ import annotations

import proton
import pytest

from jmslike import BytesMessage, DeliveryMode, MapMessage, Message, TextMessage
from jmslike.destination import Queue, TemporaryQueue, Topic
from jmslike_amqp.codec import (
    DEST_TYPE,
    MSG_TYPE,
    REPLY_TO_TYPE,
    IncomingMessage,
    decode,
    encode,
)
from jmslike_amqp.received import ReceivedMessage, read


def _wire(message: proton.Message) -> proton.Message:
    """Encode and decode with proton, as a broker in between would."""
    again = proton.Message()
    again.decode(message.encode())
    return again


def _headers(message: Message) -> None:
    message.jms_message_id = "ID:abc-1:7"
    message.jms_timestamp = 1_700_000_000_123
    message.jms_expiration = 1_700_000_060_123
    message.jms_delivery_time = message.jms_timestamp
    message.jms_destination = Queue("orders")
    message.jms_delivery_mode = DeliveryMode.PERSISTENT
    message.jms_priority = 7


def test_text_message_fields_and_typed_properties() -> None:
    """Text is an amqp-value string with x-opt-jms-msg-type 5; each JMS property type
    keeps its type (AMQP encodes types, unlike STOMP)."""
    sent = TextMessage("place")
    _headers(sent)
    sent.jms_type = "order"
    sent.jms_correlation_id = "c-1"
    sent.set_int_property("count", 3)
    sent.set_long_property("big", 5)
    sent.set_short_property("s", 2)
    sent.set_byte_property("b", 1)
    sent.set_float_property("f", 1.5)
    sent.set_double_property("d", 2.5)
    sent.set_boolean_property("flag", True)
    sent.set_string_property("region", "EU")
    wire = _wire(encode(sent, "orders"))
    assert wire.annotations[MSG_TYPE] == 5
    assert wire.annotations[DEST_TYPE] == 0
    assert (wire.durable, wire.priority, wire.subject, wire.id) == (True, 7, "order", "ID:abc-1:7")
    assert isinstance(wire.properties["count"], proton.int32)
    assert isinstance(wire.properties["s"], proton.short)
    got = decode(wire, Queue("orders"), None)
    assert isinstance(got, TextMessage)
    assert got.text == "place"
    assert (got.jms_message_id, got.jms_correlation_id) == ("ID:abc-1:7", "c-1")
    assert got.jms_type == "order"
    assert (got.jms_timestamp, got.jms_expiration, got.jms_priority) == (
        sent.jms_timestamp,
        sent.jms_expiration,
        7,
    )
    assert got.jms_delivery_mode == DeliveryMode.PERSISTENT
    for name in ("count", "big", "s", "b", "f", "d", "flag", "region"):
        assert got.property_type(name) == sent.property_type(name), name
        assert got.get_object_property(name) == sent.get_object_property(name), name


def test_bytes_message_is_a_data_section() -> None:
    """Bytes travel as a data section with content type application/octet-stream, as Qpid
    JMS sends and expects them."""
    sent = BytesMessage(b"\x00\x01binary")
    _headers(sent)
    wire = _wire(encode(sent, "orders"))
    assert wire.annotations[MSG_TYPE] == 3
    assert wire.content_type == "application/octet-stream"
    assert wire.inferred  # a data section, not an amqp-value
    got = decode(wire, Queue("orders"), None)
    assert isinstance(got, BytesMessage)
    assert got.body == b"\x00\x01binary"


def test_map_and_plain_messages() -> None:
    sent = MapMessage({"name": "joe", "qty": 2, "raw": b"\x01"})
    _headers(sent)
    got = decode(_wire(encode(sent, "orders")), Queue("orders"), None)
    assert isinstance(got, MapMessage)
    assert got.body == {"name": "joe", "qty": 2, "raw": b"\x01"}
    plain = Message()
    _headers(plain)
    wire = _wire(encode(plain, "orders"))
    assert wire.annotations[MSG_TYPE] == 0
    assert type(decode(wire, Queue("orders"), None)) is Message


@pytest.mark.parametrize(("sequence", "on_wire"), [(1, 1), (42, 42), (-1, 0xFFFFFFFF)])
def test_group_and_sequence_with_unsigned_wrap(sequence: int, on_wire: int) -> None:
    """ORD-4/ORD-20: the group is group-id, the sequence group-sequence, a uint: -1 (which
    closes a group on Artemis and Classic) is sent as 0xFFFFFFFF, as Qpid JMS does."""
    sent = TextMessage("g")
    _headers(sent)
    sent.set_string_property("JMSXGroupID", "joe")
    sent.set_int_property("JMSXGroupSeq", sequence)
    wire = _wire(encode(sent, "orders"))
    assert (wire.group_id, wire.group_sequence) == ("joe", on_wire)
    assert "JMSXGroupID" not in (wire.properties or {})
    got = decode(wire, Queue("orders"), None)
    assert got.ordering_group == "joe"
    assert got.group_sequence == sequence


def test_destination_kinds_and_reply_to() -> None:
    """x-opt-jms-dest and x-opt-jms-reply-to carry the destination kinds (0 queue, 1 topic,
    2 temporary queue)."""
    sent = TextMessage("ask")
    _headers(sent)
    sent.jms_destination = Topic("news")
    sent.jms_reply_to = TemporaryQueue("tmp-1")
    wire = _wire(encode(sent, "news", reply_to="tmp-1"))
    assert (wire.annotations[DEST_TYPE], wire.annotations[REPLY_TO_TYPE]) == (1, 2)
    assert wire.reply_to == "tmp-1"


def test_foreign_ids_read_as_qpid_jms_reads_them() -> None:
    """A non-string message id (another AMQP client's) becomes the JMSMessageID text Qpid
    JMS would show for it."""
    incoming = proton.Message(body="x")
    incoming.id = proton.ulong(12)
    assert decode(_wire(incoming), None, None).jms_message_id == "ID:AMQP_ULONG:12"


@pytest.mark.parametrize("reader", ["jmslike", "proton"])
def test_binary_ids_read_as_qpid_jms_reads_them(reader: str) -> None:
    """A binary id reads as Qpid JMS shows it, whether jmslike's reader or Proton's
    (which gives a memory view, once shown as ``ID:<memory at ...>``) read it."""
    sent = proton.Message(body="x", id=b"\x01\xab", correlation_id=b"\xff")
    data = bytes(sent.encode())
    incoming = read(data) if reader == "jmslike" else IncomingMessage()
    if reader == "proton":
        incoming.decode(data)
    assert isinstance(incoming, ReceivedMessage) == (reader == "jmslike")
    got = decode(incoming, None, None)
    assert (got.jms_message_id, got.jms_correlation_id) == (
        "ID:AMQP_BINARY:01AB",
        "ID:AMQP_BINARY:FF",
    )


@pytest.mark.parametrize("sequence", [1, 42, -1, 2**31, 2**40])
def test_sequence_in_a_property_where_group_sequence_would_repin(sequence: int) -> None:
    """ORD-4 on ActiveMQ Classic (``wire_group_seq=False``): the group is group-id, but the
    sequence travels in jmslikeGroupSeq and group-sequence stays unset, since Classic
    re-pins a group on a sequence of 1; a receiver reads the same group_sequence back,
    beyond 32 bits too (a long producer run)."""
    sent = TextMessage("g")
    _headers(sent)
    sent.set_string_property("JMSXGroupID", "joe")
    sent._properties["JMSXGroupSeq"] = sequence  # as a producer's GroupBinding stamps it
    wire = _wire(encode(sent, "orders", wire_group_seq=False))
    assert wire.group_id == "joe"
    assert not wire.group_sequence
    assert wire.properties["jmslikeGroupSeq"] == sequence
    got = decode(wire, Queue("orders"), None)
    assert (got.ordering_group, got.group_sequence) == ("joe", sequence)
    assert "jmslikeGroupSeq" not in got.properties
