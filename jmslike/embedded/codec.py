"""Messages to bytes and back, for the embedded broker's file store.

Headers, properties and their JMS types go into a small JSON document (JSON keeps bool,
int, float and str apart, which is all JMS properties need); the body is stored as raw
bytes beside it, so a 1 MiB BytesMessage is not inflated by base64. Map bodies, whose
values may be bytes, are JSON with typed entries. Nothing is pickled: a store file written
by one version of jmslike stays readable by the next.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from jmslike.destination import parse_destination
from jmslike.errors import MessageFormatError
from jmslike.message import BytesMessage, MapMessage, Message, TextMessage

__all__ = ["decode", "encode"]

_TYPES: dict[str, type[Message]] = {
    "message": Message,
    "text": TextMessage,
    "bytes": BytesMessage,
    "map": MapMessage,
}


def encode(message: Message) -> tuple[str, bytes]:
    """(metadata JSON, body bytes) of ``message``."""
    meta = {
        "t": message.type_name,
        "id": message.jms_message_id,
        "ts": message.jms_timestamp,
        "cid": message.jms_correlation_id,
        "rt": str(message.jms_reply_to) if message.jms_reply_to is not None else None,
        "dst": str(message.jms_destination) if message.jms_destination is not None else None,
        "dm": message.jms_delivery_mode,
        "ty": message.jms_type,
        "exp": message.jms_expiration,
        "pri": message.jms_priority,
        "dt": message.jms_delivery_time,
        "p": message._properties,
        "pt": message._prop_types,
    }
    return json.dumps(meta, separators=(",", ":")), _encode_body(message)


def _encode_body(message: Message) -> bytes:
    if isinstance(message, TextMessage):
        return b"" if message.text is None else b"\x01" + message.text.encode("utf-8")
    if isinstance(message, BytesMessage):
        return message.body
    if isinstance(message, MapMessage):
        entries = {
            name: ["b", base64.b64encode(value).decode("ascii")]
            if isinstance(value, bytes)
            else ["v", value]
            for name, value in message._map.items()
        }
        return json.dumps(entries, separators=(",", ":")).encode("utf-8")
    return b""


def decode(meta_json: str, body: bytes) -> Message:
    """The message :func:`encode` was given (a fresh, writable object)."""
    try:
        meta: dict[str, Any] = json.loads(meta_json)
        cls = _TYPES[meta["t"]]
    except (ValueError, KeyError) as exc:
        raise MessageFormatError(f"stored message cannot be read: {exc}") from exc
    message = cls.__new__(cls)
    Message.__init__(message)
    message.jms_message_id = meta["id"]
    message.jms_timestamp = meta["ts"]
    message.jms_correlation_id = meta["cid"]
    message.jms_reply_to = parse_destination(meta["rt"]) if meta["rt"] else None
    message.jms_destination = parse_destination(meta["dst"]) if meta["dst"] else None
    message.jms_delivery_mode = meta["dm"]
    message.jms_type = meta["ty"]
    message.jms_expiration = meta["exp"]
    message.jms_priority = meta["pri"]
    message.jms_delivery_time = meta["dt"]
    message._properties = meta["p"]
    message._prop_types = meta["pt"]
    _decode_body(message, body)
    return message


def _decode_body(message: Message, body: bytes) -> None:
    if isinstance(message, TextMessage):
        message._text = body[1:].decode("utf-8") if body else None
    elif isinstance(message, BytesMessage):
        message._data = bytes(body)
    elif isinstance(message, MapMessage):
        entries = json.loads(body.decode("utf-8")) if body else {}
        message._map = {
            name: base64.b64decode(value) if tag == "b" else value
            for name, (tag, value) in entries.items()
        }
