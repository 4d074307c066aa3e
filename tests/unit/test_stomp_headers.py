"""jmslike_stomp's faster header parser gives what stomp.py's own gives."""

from __future__ import annotations

import pytest

pytest.importorskip("stomp")

from stomp import utils

from jmslike_stomp import transport, wire

FRAMES = [
    ["MESSAGE", "destination:/queue/x", "message-id:ID:a:1:1", "ack:ID:a:1:1"],
    ["MESSAGE", "k\\cey:v\\na\\\\l\\rue", "k\\cey:second", "plain:x:y:z"],
    ["MESSAGE", "nocolon", ":nokey", "empty:", "a:1", "a:2", "b:\\q"],
    ["", "", "RECEIPT", "receipt-id:r1"],
]


@pytest.mark.parametrize("lines", FRAMES)
def test_same_headers_as_stomp_py(lines: list[str]) -> None:
    for offset in range(len(lines)):
        ours = wire.parse_header_lines(lines, offset)
        assert ours == transport._STOMP_PARSE_HEADERS(lines, offset)


def test_stomp_py_parses_frames_with_it() -> None:
    assert transport.stomp.utils.parse_headers is wire.parse_header_lines
    frame = utils.parse_frame(b"MESSAGE\ndestination:/queue/x\nk\\cey:v\\nal\n\nbody")
    assert frame.headers == {"destination": "/queue/x", "k:ey": "v\nal"}
    assert frame.body == b"body"


def test_temporary_wire_names_are_bounded_and_keep_the_ones_in_use() -> None:
    """A service replying to temporary queues learns one wire name per requester
    (Classic's /remote-temp-queue/..., RabbitMQ's /reply-queue/...); the soak
    (docs/reliability.md) found the table growing by one per request for ever."""
    from jmslike import TemporaryQueue
    from jmslike_stomp import codec
    from jmslike_stomp.dialect import ACTIVEMQ

    kept = codec._WIRE_NAMES_KEPT
    codec.remember_wire_name("/temp-queue/busy", "/remote-temp-queue/busy")
    for number in range(kept + 500):
        codec.decode(
            {"reply-to": f"/remote-temp-queue/{number}", "jmslikeReplyTo": f"/temp-queue/{number}"},
            b"",
            ACTIVEMQ,
        )
        if number % 1000 == 0:  # in use: never the one forgotten
            assert codec.destination_name(TemporaryQueue("/temp-queue/busy"), ACTIVEMQ) == (
                "/remote-temp-queue/busy"
            )
    assert len(codec._TEMPORARY_WIRE_NAMES) == kept
    assert codec.destination_name(TemporaryQueue("/temp-queue/busy"), ACTIVEMQ) == (
        "/remote-temp-queue/busy"
    )
    newest = f"/temp-queue/{kept + 499}"
    assert codec.destination_name(TemporaryQueue(newest), ACTIVEMQ) == (
        f"/remote-temp-queue/{kept + 499}"
    )
    assert codec.destination_name(TemporaryQueue("/temp-queue/0"), ACTIVEMQ) == "/temp-queue/0"


@pytest.mark.parametrize("name", ["activemq", "artemis", "rabbitmq"])
def test_a_non_persistent_send_carries_no_persistent_header(name: str) -> None:
    """Every known broker stores a SEND without ``persistent`` as non-persistent, and a
    header is work for the broker (RabbitMQ even reads ``persistent:false`` as a queue
    declaration); the contract suite's round trip of both delivery modes checks the
    broker's side."""
    from jmslike import DeliveryMode, Queue, TextMessage
    from jmslike_stomp import codec, dialect

    chosen = {"activemq": dialect.ACTIVEMQ, "artemis": dialect.ARTEMIS}.get(name, dialect.RABBITMQ)
    message = TextMessage("x")
    message.jms_delivery_mode = DeliveryMode.NON_PERSISTENT
    headers, _ = codec.encode(message, Queue("q"), chosen)
    assert "persistent" not in headers
    message.jms_delivery_mode = DeliveryMode.PERSISTENT
    headers, _ = codec.encode(message, Queue("q"), chosen)
    assert headers["persistent"] == "true"


@pytest.mark.parametrize("name", ["activemq", "artemis", "rabbitmq", "stomp"])
def test_the_group_travels_once_where_the_broker_gives_it_back(name: str) -> None:
    """ORD-4: the broker reads ``JMSXGroupID``; jmslike's own copy goes only where the
    broker does not give it back (Classic, and a broker jmslike does not know). The
    MESSAGE frame each broker was seen to deliver is rebuilt here from the SEND's
    headers; the contract suite's group scenarios check the brokers themselves."""
    from jmslike import Queue, TextMessage
    from jmslike.message import GROUP_ID, GROUP_SEQ
    from jmslike_stomp import codec, dialect

    chosen = {
        "activemq": dialect.ACTIVEMQ,
        "artemis": dialect.ARTEMIS,
        "rabbitmq": dialect.RABBITMQ,
    }.get(name, dialect.GENERIC)
    message = TextMessage("x")
    message._properties[GROUP_ID] = "orders-7"
    message._properties[GROUP_SEQ] = 3
    headers, body = codec.encode(message, Queue("q"), chosen)
    assert headers["JMSXGroupID"] == "orders-7"
    assert (codec.GROUP_HEADER in headers) == (name in ("activemq", "stomp"))
    delivered = dict(headers)
    if name == "activemq":  # Classic keeps the group to itself
        del delivered["JMSXGroupID"]
    elif name == "artemis":  # and Artemis gives it back under its own name
        delivered["_AMQ_GROUP_ID"] = delivered.pop("JMSXGroupID")
    got = codec.decode(delivered, body, chosen)
    assert (got.ordering_group, got.group_sequence) == ("orders-7", 3)
