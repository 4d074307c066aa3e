"""JMS messages to STOMP frames and back, per broker dialect.

STOMP carries headers as strings and a body as bytes. The mapping follows what the
brokers themselves do for Java JMS clients on the same queue (docs/providers.md,
"On the wire"): ``correlation-id``, ``expires``, ``priority``, ``persistent``, ``reply-to``
and ``type`` are the JMS headers, every other header is a property, and a frame without
``content-length`` is a TextMessage for a Java consumer while one with it is a
BytesMessage. jmslike adds a few headers of its own, all without ``-`` so that broker
selectors can read them: the message type (Map messages travel as JSON), the JMS types of
properties (STOMP has only strings), the JMSMessageID where the broker replaces it on
every delivery (RabbitMQ), and the group and its sequence where the broker does not
echo them (ActiveMQ Classic), ORD-4.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any
from urllib.parse import unquote

from jmslike.destination import (
    Destination,
    Queue,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
)
from jmslike.errors import MessageFormatError
from jmslike.message import (
    DELIVERY_COUNT,
    GROUP_ID,
    GROUP_SEQ,
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    PropertyValue,
    TextMessage,
)
from jmslike.spi.messages import (
    GROUP_SEQ_PROPERTY,
    declare_property_type,
    previous_expiration,
    set_map_body,
    set_previous_expiration,
    update_provider_properties,
)
from jmslike.spi.temporary import is_made_up_topic
from jmslike_stomp.dialect import ID_HEADER, PRIORITY_HEADER, TIMESTAMP_HEADER, Dialect
from jmslike_stomp.wire import header_line_length

__all__ = [
    "RESERVED",
    "decode",
    "destination_name",
    "encode",
    "parse_destination_name",
    "remember_wire_name",
]

TYPE_HEADER = "jmslikeType"
NO_TEXT = "text-null"
"""The type header's value for a TextMessage whose text is None (not "")."""
TYPES_HEADER = "jmslikeTypes"
GROUP_HEADER = "jmslikeGroupID"
SEQ_HEADER = GROUP_SEQ_PROPERTY
DELIVERY_TIME_HEADER = "jmslikeDeliveryTime"
REPLY_TO_HEADER = "jmslikeReplyTo"
REPLY_TO_TOPIC_HEADER = "jmslikeReplyToTopic"
"""Set where the broker's names do not tell a topic from a queue (Artemis over STOMP
names both bare): the ``reply-to`` is a topic. Without it a topic came back a queue."""
PREV_EXPIRATION_HEADER = "jmslikeGroupPrevExpires"

_TEMPORARY_WIRE_NAMES: dict[str, str] = {}
"""Temporary queue name as its creator knows it -> the name other connections must use.
ActiveMQ Classic rewrites ``reply-to:/temp-queue/x`` into ``/remote-temp-queue/ID:...``
for everyone but the creator; jmslike hands the application the creator's name (so
``msg.jms_reply_to == temp_queue`` holds) and sends to the broker's.

Kept to the ``_WIRE_NAMES_KEPT`` most recently used (:func:`_keep_wire_name`): a service
that replies to temporary queues learns one per requester, and nothing says when a
requester's queue is gone; unbounded, it grew by an entry per request for the process's
life (the soak found it, docs/reliability.md)."""
_WIRE_NAMES_KEPT = 4096
_WIRE_NAMES_LOCK = threading.Lock()

_AMQP_TYPE_HEADER = "JMS_AMQP_MA_x-opt-jms-msg-type"
_AMQP_KINDS = {"0": "message", "3": "bytes", "5": "text"}
"""x-opt-jms-msg-type codes whose bodies Artemis hands to STOMP as they are (a Map body
arrives in Artemis' own encoding and stays a BytesMessage)."""
_NOT_PROPERTIES = ("x-", "X-", "JMS_AMQP_")
"""Header prefixes that are broker bookkeeping (Artemis keeps AMQP sections as JMS_AMQP_*)."""

_DESTINATIONS: dict[tuple[str, bool], tuple[Dialect, Destination]] = {}
"""``destination`` header -> parsed destination: a consumer sees the same few names on
every frame, and destinations are immutable values."""
_DESTINATIONS_KEPT = 1024

RESERVED = frozenset(
    {
        "destination",
        "message-id",
        "subscription",
        "ack",
        "content-length",
        "content-type",
        "receipt",
        "receipt-id",
        "transaction",
        "redelivered",
        "expires",
        "priority",
        "timestamp",
        "persistent",
        "correlation-id",
        "reply-to",
        "type",
        "id",
        "selector",
        "server",
        "session",
        "version",
        "heart-beat",
        "destination-type",
        "subscription-type",
        "original-destination",
        "x-delivery-count",
        "expiration",
        TYPE_HEADER,
        TYPES_HEADER,
        ID_HEADER,
        GROUP_HEADER,
        SEQ_HEADER,
        DELIVERY_TIME_HEADER,
        REPLY_TO_HEADER,
        REPLY_TO_TOPIC_HEADER,
        PRIORITY_HEADER,
        TIMESTAMP_HEADER,
        PREV_EXPIRATION_HEADER,
        "JMSXGroupID",
        "JMSXGroupSeq",
        "JMSXUserID",
        "_AMQ_GROUP_ID",
        "_AMQ_GROUP_SEQUENCE",
        "AMQ_SCHEDULED_DELAY",
        "AMQ_SCHEDULED_TIME",
    }
)
"""Headers that are not application properties (STOMP's, the brokers', jmslike's)."""


def remember_wire_name(name: str, wire: str) -> None:
    """Frames for the temporary queue ``name`` go to the broker's ``wire`` name (RabbitMQ's
    ``/reply-queue/amq.gen-...``: it refuses a SEND to ``/temp-queue/x``, even from the
    queue's creator)."""
    _keep_wire_name(name, wire)


def _keep_wire_name(name: str, wire: str) -> None:
    """Remember ``name`` -> ``wire`` as the most recently used; forget the least
    recently used beyond ``_WIRE_NAMES_KEPT`` (dicts keep insertion order). Receiver
    threads of several connections and senders call it at once: under a lock."""
    with _WIRE_NAMES_LOCK:
        _TEMPORARY_WIRE_NAMES.pop(name, None)
        _TEMPORARY_WIRE_NAMES[name] = wire
        while len(_TEMPORARY_WIRE_NAMES) > _WIRE_NAMES_KEPT:
            del _TEMPORARY_WIRE_NAMES[next(iter(_TEMPORARY_WIRE_NAMES))]


def destination_name(destination: Destination, dialect: Dialect) -> str:
    """The STOMP ``destination`` header for a jmslike destination."""
    if isinstance(destination, TemporaryQueue):
        # already the broker's own name (e.g. /temp-queue/x), unless another connection's
        wire = _TEMPORARY_WIRE_NAMES.get(destination.name)
        if wire is None:
            return destination.name
        _keep_wire_name(destination.name, wire)  # in use: the last to forget
        return wire
    if isinstance(destination, TemporaryTopic):
        return destination.name
    prefix = dialect.topic_prefix if destination.is_topic else dialect.queue_prefix
    if dialect.percent_names and "/" in destination.name:
        # RabbitMQ reads %2F in a name as "/" (and refuses a bare one); its MESSAGE
        # frames name the queue percent-encoded (decoded in ``decode``).
        return prefix + destination.name.replace("/", "%2F")
    return prefix + destination.name


def parse_destination_name(name: str, dialect: Dialect, topic_hint: bool = False) -> Destination:
    """A jmslike destination for a ``destination`` / ``reply-to`` header value."""
    if "::" in name:  # Artemis' fully qualified queue of a shared subscription: the topic
        return Topic(name.partition("::")[0])
    if is_made_up_topic(name):  # a temporary topic jmslike made (jmslike.spi.temporary)
        return TemporaryTopic(name)
    for prefix, kind in (
        ("/temp-queue/", TemporaryQueue),
        ("/reply-queue/", TemporaryQueue),
        ("/temp-topic/", TemporaryTopic),
    ):
        if name.startswith(prefix):
            return kind(name)
    if dialect.topic_prefix and name.startswith(dialect.topic_prefix):
        return Topic(name[len(dialect.topic_prefix) :])
    if dialect.queue_prefix and name.startswith(dialect.queue_prefix):
        return Queue(name[len(dialect.queue_prefix) :])
    if name.startswith("/amq/queue/"):
        return Queue(name[len("/amq/queue/") :])
    return Topic(name) if topic_hint else Queue(name)


def encode(
    message: Message, destination: Destination, dialect: Dialect
) -> tuple[dict[str, str], bytes]:
    """(headers, body) of a SEND frame for ``message``, headers already set by the API."""
    headers: dict[str, str] = {}
    types: list[str] = []
    for name, value in message.properties.items():
        if name in RESERVED or name == DELIVERY_COUNT:
            if name in (GROUP_ID, GROUP_SEQ):
                continue
            raise MessageFormatError(
                f"property {name!r} cannot travel over STOMP: the name is a STOMP or broker "
                "header; rename the property"
            )
        headers[name] = _to_text(value)
        jms_type = message.property_type(name)
        if jms_type != "string":
            types.append(f"{name}:{jms_type}")
    if types:
        headers[TYPES_HEADER] = ",".join(types)
    if message.jms_message_id:
        headers[ID_HEADER] = message.jms_message_id
    if message.jms_correlation_id is not None:
        headers["correlation-id"] = message.jms_correlation_id
    if message.jms_type is not None:
        headers["type"] = message.jms_type
    if message.jms_reply_to is not None:
        headers["reply-to"] = destination_name(message.jms_reply_to, dialect)
        if message.jms_reply_to.is_temporary:
            headers[REPLY_TO_HEADER] = message.jms_reply_to.name
        elif message.jms_reply_to.is_topic and not dialect.topic_prefix:
            headers[REPLY_TO_TOPIC_HEADER] = "true"
    if message.jms_expiration:
        headers["expires"] = str(message.jms_expiration)
        if dialect.relative_ttl_header and message.jms_timestamp:
            ttl = max(1, message.jms_expiration - message.jms_timestamp)
            headers[dialect.relative_ttl_header] = str(ttl)
    if dialect.priority:
        headers["priority"] = str(message.jms_priority)
    elif message.jms_priority != 4:
        # Where the broker would let priority reorder a group (ORD-12), it never sees one;
        # the receiver still reads the priority the sender set.
        headers[PRIORITY_HEADER] = str(message.jms_priority)
    if message.jms_timestamp:
        # Where the broker overwrites ``timestamp`` with its own, only jmslike's header
        # carries the sender's: every header costs throughput (docs/performance.md).
        stamp_header = "timestamp" if dialect.keeps_timestamp else TIMESTAMP_HEADER
        headers[stamp_header] = str(message.jms_timestamp)
    if message.jms_delivery_mode == DeliveryMode.PERSISTENT:
        headers["persistent"] = "true"
    elif dialect.persistent_false:
        headers["persistent"] = "false"
    delay = message.jms_delivery_time - message.jms_timestamp if message.jms_timestamp else 0
    if delay > 0 and dialect.delivery_delay_header:
        headers[dialect.delivery_delay_header] = str(delay)
        headers[DELIVERY_TIME_HEADER] = str(message.jms_delivery_time)
    group = message.ordering_group
    if group is not None:
        headers["JMSXGroupID"] = group  # what the broker (and Java JMS clients) read, ORD-4
        if dialect.group_back_header is None:  # the broker keeps it to itself
            headers[GROUP_HEADER] = group
        sequence = message.group_sequence
        if sequence is not None:
            headers[dialect.group_seq_header] = str(sequence)
        expires = previous_expiration(message)
        if expires:
            headers[PREV_EXPIRATION_HEADER] = str(expires)
    if dialect.routing_type_headers:
        headers["destination-type"] = "MULTICAST" if destination.is_topic else "ANYCAST"
    body = _encode_body(message, headers)
    if (
        not isinstance(message, TextMessage)
        or "content-length" in headers
        or not dialect.text_without_length
    ):
        # A frame that arrives without a type header and without content-length is a
        # TextMessage, as in the broker's own JMS mapping; where the broker keeps that
        # absence, the commonest message needs no type header (each header costs speed).
        headers[TYPE_HEADER] = message.type_name
    if isinstance(message, TextMessage) and message.text is None:
        # A frame's body cannot say "no text" (JMS getText() gives null): the type says
        # it; others read the empty body as empty text.
        headers[TYPE_HEADER] = NO_TEXT
    if dialect.max_header_line is not None:
        _check_header_limits(headers, dialect.name, dialect.max_header_line, dialect.max_headers)
    return headers, body


_ROOM = 16
"""Headers the provider adds to a frame after ``encode`` (destination, receipt,
transaction and the like), counted against ``Dialect.max_headers``."""


def _check_header_limits(
    headers: dict[str, str], broker: str, longest: int, most: int | None
) -> None:
    """Refuse, before anything is sent, a frame the broker would drop the connection
    for (``Dialect.max_header_line``): properties travel as headers over STOMP."""
    if most is not None and len(headers) + _ROOM > most:
        raise MessageFormatError(
            f"a message with {len(headers)} properties and headers cannot travel over STOMP "
            f"to {broker}, which reads at most {most} headers a frame (it would drop the "
            "connection): carry them in the body, or use AMQP"
        )
    for name, value in headers.items():
        # Each character is at most 4 bytes, escaped or not: most lines need no count.
        if (len(name) + len(value)) * 4 + 1 > longest:
            size = header_line_length(name, value)
            if size > longest:
                raise MessageFormatError(
                    f"property {name!r} is {size:,} bytes as a STOMP header; {broker} reads "
                    f"header lines of at most {longest:,} bytes (it would drop the "
                    "connection): carry the value in the body, or use AMQP"
                )


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _encode_body(message: Message, headers: dict[str, str]) -> bytes:
    if isinstance(message, TextMessage):
        text = message.text or ""
        data = text.encode("utf-8")
        if b"\0" in data:  # STOMP ends a frame without content-length at the first NUL
            headers["content-length"] = str(len(data))
        return data
    if isinstance(message, BytesMessage):
        headers["content-length"] = str(len(message.body))
        return message.body
    if isinstance(message, MapMessage):
        entries = {
            name: ["b", base64.b64encode(value).decode("ascii")]
            if isinstance(value, bytes)
            else ["v", value]
            for name, value in message.body.items()
        }
        data = json.dumps(entries, separators=(",", ":")).encode("utf-8")
        headers["content-length"] = str(len(data))
        headers["content-type"] = "application/json"
        return data
    return b""


def decode(
    headers: dict[str, str], body: bytes, dialect: Dialect, topic_hint: bool = False
) -> Message:
    """The message a MESSAGE frame carries (redelivery flag and count are set by the caller)."""
    # jmslike's type header, else the JMS type an AMQP sender gave (Artemis shows it)
    kind = headers.get(TYPE_HEADER) or _AMQP_KINDS.get(headers.get(_AMQP_TYPE_HEADER, ""))
    message: Message
    if kind == "map":
        message = MapMessage()
        set_map_body(message, _map_entries(body, headers))
    elif kind == "bytes" or (kind is None and "content-length" in headers):
        message = BytesMessage(body)
    elif kind == "message":
        message = Message()
    elif kind == NO_TEXT:
        message = TextMessage(None)
    else:
        message = TextMessage(body.decode("utf-8", errors="replace"))
    # jmslike's own id first: the broker's ``message-id`` is its own on Classic and Artemis
    # and new on every delivery on RabbitMQ; only a foreign producer's message lacks ours.
    message.jms_message_id = headers.get(ID_HEADER) or headers.get("message-id")
    message.jms_correlation_id = headers.get("correlation-id")
    message.jms_type = headers.get("type")
    reply_to = headers.get("reply-to")
    if reply_to:
        original = headers.get(REPLY_TO_HEADER)
        if original and original != reply_to:
            _keep_wire_name(original, reply_to)
            message.jms_reply_to = TemporaryQueue(original)
        else:
            if dialect.percent_names:  # as written by the sender (destination_name)
                reply_to = reply_to.replace("%2F", "/")
            message.jms_reply_to = parse_destination_name(
                reply_to, dialect, headers.get(REPLY_TO_TOPIC_HEADER) == "true"
            )
    destination = headers.get("destination")
    if destination:
        known = _DESTINATIONS.get((destination, topic_hint))
        if known is None or known[0] is not dialect:
            name = unquote(destination) if dialect.percent_names else destination
            known = (dialect, parse_destination_name(name, dialect, topic_hint))
            if len(_DESTINATIONS) >= _DESTINATIONS_KEPT:
                _DESTINATIONS.clear()
            _DESTINATIONS[(destination, topic_hint)] = known
        message.jms_destination = known[1]
    message.jms_expiration = _int(headers.get("expires"))
    message.jms_priority = _int(headers.get(PRIORITY_HEADER) or headers.get("priority"), 4)
    message.jms_timestamp = _int(headers.get(TIMESTAMP_HEADER) or headers.get("timestamp"))
    message.jms_delivery_time = _int(headers.get(DELIVERY_TIME_HEADER), message.jms_timestamp)
    persistent = headers.get("persistent", "").lower()
    message.jms_delivery_mode = (
        DeliveryMode.PERSISTENT if persistent in ("true", "1") else DeliveryMode.NON_PERSISTENT
    )
    types = _types(headers.get(TYPES_HEADER, ""))
    props: dict[str, PropertyValue] = {}
    for name, value in headers.items():
        if name in RESERVED or not name.isidentifier() or name.startswith(_NOT_PROPERTIES):
            continue
        props[name] = _typed(value, types.get(name))
        if name in types and types[name] not in ("int", "double", "boolean"):
            declare_property_type(message, name, types[name])
    group = (
        headers.get(GROUP_HEADER)
        or (headers.get(dialect.group_back_header) if dialect.group_back_header else None)
        or headers.get("JMSXGroupID")
    )
    if group:
        props[GROUP_ID] = group
        sequence = (
            headers.get(SEQ_HEADER)
            or headers.get("JMSXGroupSeq")
            or headers.get("_AMQ_GROUP_SEQUENCE")  # Artemis, for a sender of another protocol
        )
        if sequence and sequence.lstrip("-").isdigit():
            props[GROUP_SEQ] = int(sequence)
        set_previous_expiration(message, _int(headers.get(PREV_EXPIRATION_HEADER)))
    update_provider_properties(message, props)
    return message


def _map_entries(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """A Map message's entries from the JSON ``encode`` writes: ``{name: [tag, value]}``.

    The body comes from the broker, and may come from another client or be cut short:
    anything else is a MessageFormatError naming the message, not a ValueError or
    TypeError on stomp.py's receiver thread (tests/unit/test_fuzz_codecs.py found them).
    """
    try:
        entries = json.loads(body.decode("utf-8")) if body else {}
        if not isinstance(entries, dict):
            raise TypeError(f"a JSON {type(entries).__name__}, not an object")
        out: dict[str, Any] = {}
        for name, entry in entries.items():
            tag, value = entry
            out[name] = base64.b64decode(value, validate=True) if tag == "b" else value
        return out
    except (ValueError, TypeError) as exc:  # JSON, UTF-8 and base64 errors are ValueErrors
        raise MessageFormatError(
            f"STOMP message {headers.get(ID_HEADER) or headers.get('message-id')!r} has a "
            f"Map body jmslike cannot read ({exc.__class__.__name__}: {exc})"
        ) from None


def _int(value: str | None, default: int = 0) -> int:
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        return default


def _types(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(","):
        name, _, jms_type = item.partition(":")
        if name and jms_type:
            out[name] = jms_type
    return out


def _typed(value: str, jms_type: str | None) -> bool | int | float | str:
    try:
        if jms_type == "boolean":
            return value == "true"
        if jms_type in ("byte", "short", "int", "long"):
            return int(value)
        if jms_type in ("float", "double"):
            return float(value)
    except ValueError:
        pass
    return value
