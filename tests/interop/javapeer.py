"""The Java side of the interop tests, seen from Python: building it, running it, and
comparing what one side sent with what the other side read.

The Java program (``tests/interop/java``, one class) is a plain JMS application over Qpid
JMS, Artemis' core client or ActiveMQ's OpenWire client. It prints every message it sends
or receives as a JSON *record*; :func:`record` makes the same record of a jmslike message,
and :func:`build` makes the same messages as the Java producer, so both directions are
checked by one comparison (:func:`problems`), aspect by aspect, which lets a test name
exactly what does not cross a protocol.

The jar is built by Maven the first time a session needs it and kept in
``tests/interop/java/target`` next to a hash of the pom and the sources: a fresh clone (CI)
builds once, later runs reuse it, an edited source rebuilds. A failed build fails the test
with Maven's output; it never skips.
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from jmslike import BytesMessage, JMSException, MapMessage, Message, TextMessage
from jmslike_bench import javabuild

__all__ = [
    "ASPECTS",
    "BUILD_TIMEOUT",
    "JAVA_DIR",
    "Endpoint",
    "build",
    "build_jar",
    "java_url",
    "problems",
    "record",
    "run_java",
]

JAVA_DIR = Path(__file__).parent / "java"
BUILD_TIMEOUT = javabuild.BUILD_TIMEOUT
"""Seconds for a cold build: Maven downloads the three clients and the shade plugin."""

KINDS = ("text", "bytes", "map")
ASPECTS = ("bodies", "map", "properties", "property_text", "groups", "group_seq", "headers")
"""What the tests compare, each on its own so that one gap does not hide the others:
Text and Bytes types and bodies; Map type and entries; application properties with their
JMS types; the same properties' values read as text (what JMS' conversion table lets a
receiver read back where only strings travel, ``getIntProperty("index")`` on ``"1"``);
JMSXGroupID and each group's order; JMSXGroupSeq; JMSType, JMSCorrelationID,
JMSDeliveryMode, JMSPriority."""

# ----------------------------------------------------------------------- the jar


def build_jar(java_dir: Path = JAVA_DIR) -> Path:
    """The interop jar, built with one ``mvn package`` unless an up-to-date one is there
    (jmslike_bench.javabuild, shared with ``jmslike bench``); a failed build fails the test
    with Maven's output."""
    try:
        return javabuild.build_jar(java_dir)
    except javabuild.JavaBuildError as exc:
        pytest.fail(str(exc))


# --------------------------------------------------------------------- endpoints


class Endpoint:
    """One broker and protocol as both sides address it: the jmslike URL (from
    tests/brokerenv.py) and what the Java client needs (its protocol and URL)."""

    def __init__(self, jmslike_url: str, java_protocol: str, java_url: str) -> None:
        self.jmslike_url = jmslike_url
        self.java_protocol = java_protocol
        self.java_url = java_url
        parts = urlsplit(jmslike_url)
        self.user = parts.username
        self.password = parts.password

    def java_args(self) -> list[str]:
        args = ["--protocol", self.java_protocol, "--url", self.java_url]
        if self.user is not None:
            args += ["--user", self.user, "--password", self.password or ""]
        return args


def java_url(protocol: str, broker_url: str) -> str:
    """The Java client's URL for a broker whose jmslike URL is ``broker_url``."""
    parts = urlsplit(broker_url)
    scheme = {"amqp": "amqp", "core": "tcp", "openwire": "tcp"}[protocol]
    return f"{scheme}://{parts.hostname}:{parts.port}"


def run_java(
    jar: Path, mode: str, endpoint: Endpoint, *args: str, timeout: float = 60.0
) -> list[dict[str, Any]]:
    """Runs the Java CLI to the end and returns its JSON records; fails the test, with the
    Java output, if it exits non-zero."""
    command = ["java", "-jar", str(jar), mode, *endpoint.java_args(), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited with {done.returncode}:\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def java_process(jar: Path, mode: str, endpoint: Endpoint, *args: str) -> list[str]:
    """The command line of a Java process the caller runs itself (the bookstore)."""
    return ["java", "-jar", str(jar), mode, *endpoint.java_args(), *args]


# ---------------------------------------------------------- messages and records


def group_name(run: str, g: int) -> str:
    return f"{run}-group-{g}"


def build(session: Any, run: str, g: int, index: int) -> Message:
    """The message the Java producer sends as number ``index`` of group ``g`` (Interop.build),
    made with jmslike: the group itself comes from the producer's binding (ORD-5)."""
    kind = KINDS[(index - 1 + g) % len(KINDS)]
    message: Message
    if kind == "text":
        message = session.create_text_message(f"text #{index} of group {g} \u2014 caf\u00e9 \u2713")
    elif kind == "bytes":
        message = session.create_bytes_message()
        message.write_int(index)
        message.write_utf(f"g{g} caf\u00e9 \u2713 \x00 \U0001f600")
        message.write_long((1 << 40) + index)
        message.write_double(index + 0.5)
        message.write_boolean(index % 2 == 0)
        message.write_short(-(100 + index))
        message.write_char("\u00e9")
        message.write_float(index * 0.25)
        message.write_byte(-index)
        message.write_bytes(bytes([0, 1, 2, 0xFF, g, index, 0]))
    else:
        message = session.create_map_message(
            {
                "name": f"g{g}",
                "seq": index,
                "big": (1 << 40) + index,
                "price": index + 0.5,
                "flag": index % 2 == 0,
                "raw": b"\x00\x01\xfe",
            }
        )
    message.set_string_property("run", run)
    message.set_int_property("index", index)
    message.set_string_property("label", f"g{g}-{index} \u00fcn\u00ef")
    message.set_long_property("big", (1 << 40) + index)
    message.set_double_property("price", index + 0.5)
    message.set_boolean_property("flag", index % 2 == 0)
    message.set_short_property("small", 100 + index)
    message.set_byte_property("tiny", index)
    message.set_float_property("ratio", index * 0.25)
    message.jms_type = "interop"
    message.jms_correlation_id = f"corr-{g}-{index}"
    return message


def send_groups(
    url: str, queue: str, run: str, groups: int = 3, per_group: int = 6
) -> list[dict[str, Any]]:
    """jmslike's side of the Java producer: the same messages, interleaved across
    ``groups`` groups, one producer bound to each group (ORD-5); returns the records of
    what was sent."""
    from jmslike import ConnectionFactory

    sent: list[dict[str, Any]] = []
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        producers = []
        for g in range(groups):
            producer = session.create_producer(f"queue://{queue}")
            producer.enable_ordering_group(group_name(run, g))
            producers.append(producer)
        for index in range(1, per_group + 1):
            for g, producer in enumerate(producers):
                message = build(session, run, g, index)
                producer.send(message)
                sent.append(record(message))
    return sent


def receive_all(url: str, queue: str, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    """Records of the first ``count`` messages a jmslike consumer receives from ``queue``."""
    from jmslike import ConnectionFactory

    got: list[dict[str, Any]] = []
    with ConnectionFactory(url).create_connection() as connection:
        consumer = connection.create_session().create_consumer(f"queue://{queue}")
        connection.start()
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.receive(min(1.0, max(0.0, deadline - time.monotonic())))
            if message is not None:
                got.append(record(message))
    return got


def _typed(value: object) -> list[Any]:
    """A map entry as [JMS type, JSON value], the types jmslike infers (no typed maps)."""
    if isinstance(value, bool):
        return ["boolean", value]
    if isinstance(value, int):
        return ["int" if -(2**31) <= value < 2**31 else "long", value]
    if isinstance(value, float):
        return ["double", value]
    if isinstance(value, (bytes, bytearray)):
        return ["bytes", base64.b64encode(bytes(value)).decode("ascii")]
    if value is None:
        return ["null", None]
    return ["string", str(value)]


def _read_typed(message: BytesMessage) -> list[Any]:
    """The values ``build`` wrote into a Bytes message, read back (Interop.readTyped)."""
    message.reset()
    try:
        return [
            message.read_int(),
            message.read_utf(),
            message.read_long(),
            message.read_double(),
            message.read_boolean(),
            message.read_short(),
            message.read_char(),
            message.read_float(),
            message.read_byte(),
            base64.b64encode(message.read_bytes(7)).decode("ascii"),
        ]
    except JMSException as exc:
        return ["unreadable", str(exc)]


def record(message: Message) -> dict[str, Any]:
    """A jmslike message as the Java program prints one (Interop.record)."""
    rec: dict[str, Any] = {}
    if isinstance(message, TextMessage):
        rec["type"], rec["body"] = "text", message.text
    elif isinstance(message, BytesMessage):
        rec["type"], rec["body"] = "bytes", base64.b64encode(message.body).decode("ascii")
        rec["typed"] = _read_typed(message)
    elif isinstance(message, MapMessage):
        rec["type"] = "map"
        rec["body"] = {name: _typed(value) for name, value in sorted(message.body.items())}
    else:
        rec["type"], rec["body"] = "message", None
    properties: dict[str, list[Any]] = {}
    vendor: list[str] = []
    for name in sorted(message.property_names()):
        if name.startswith(("JMSX", "JMS_", "_AMQ", "__AMQ")):
            vendor.append(name)
            continue
        value = message.get_object_property(name)
        properties[name] = [message.property_type(name), value]
    rec["properties"] = properties
    rec["vendor_properties"] = vendor
    rec["group"] = message.ordering_group
    rec["group_seq"] = message.group_sequence
    rec["jms_type"] = message.jms_type
    rec["correlation_id"] = message.jms_correlation_id
    rec["delivery_mode"] = int(message.jms_delivery_mode)
    rec["priority"] = message.jms_priority
    rec["redelivered"] = bool(message.jms_redelivered)
    rec["message_id"] = message.jms_message_id
    rec["delivery_count"] = message.delivery_count
    return rec


# -------------------------------------------------------------------- comparison

_NUMBER_CLASSES = {
    "byte": "integer",
    "short": "integer",
    "int": "integer",
    "long": "integer",
    "float": "real",
    "double": "real",
}


def _entry_class(entry: Sequence[Any]) -> tuple[str, Any]:
    """A map entry compared by kind: jmslike's Map messages carry no JMS number types, so
    an int set in Java may come back as a long, and the other way round."""
    return (_NUMBER_CLASSES.get(entry[0], entry[0]), entry[1])


def problems(sent: list[dict[str, Any]], received: list[dict[str, Any]], aspect: str) -> list[str]:
    """What ``received`` got wrong of ``sent`` in one aspect (see ASPECTS); empty: right.

    One producer, one consumer, no redelivery: the consumer gets the messages in send
    order (JMS 2.0 section 6.2.9), so sent and received pair up by position; the
    ``groups`` aspect checks each group's order on its own too (ORD-8, ORD-9)."""
    if len(received) != len(sent):
        return [f"sent {len(sent)} messages, received {len(received)}"]
    out: list[str] = []
    pairs = list(zip(sent, received, strict=True))
    if aspect == "bodies":
        for i, (s, r) in enumerate(pairs):
            if s["type"] in ("text", "bytes") and (r["type"], r["body"]) != (s["type"], s["body"]):
                out.append(f"#{i}: sent {s['type']} {s['body']!r}, got {r['type']} {r['body']!r}")
            elif s["type"] == "bytes" and r.get("typed") != s.get("typed"):
                # Each side read the values with its own typed reads: Java's DataOutput
                # layout, encoded by one side and decoded by the other.
                out.append(f"#{i}: typed values sent {s.get('typed')}, read {r.get('typed')}")
    elif aspect == "map":
        for i, (s, r) in enumerate(pairs):
            if s["type"] != "map":
                continue
            if r["type"] != "map" or not isinstance(r["body"], dict):
                out.append(f"#{i}: sent map {s['body']}, got {r['type']} {r['body']!r}")
                continue
            want = {k: _entry_class(v) for k, v in s["body"].items()}
            got = {k: _entry_class(v) for k, v in r["body"].items()}
            if want != got:
                out.append(f"#{i}: sent map {s['body']}, got {r['body']}")
    elif aspect == "properties":
        for i, (s, r) in enumerate(pairs):
            for name, typed in s["properties"].items():
                if r["properties"].get(name) != typed:
                    out.append(
                        f"#{i}: property {name} sent {typed}, got {r['properties'].get(name)}"
                    )
    elif aspect == "property_text":
        for i, (s, r) in enumerate(pairs):
            for name, (_, value) in s["properties"].items():
                got = r["properties"].get(name)
                if got is None or _text(got[1]) != _text(value):
                    out.append(f"#{i}: property {name} sent {value!r}, got {got}")
    elif aspect == "groups":
        out += _group_problems(sent, received)
    elif aspect == "group_seq":
        for i, (s, r) in enumerate(pairs):
            if r["group_seq"] != s["group_seq"]:
                out.append(
                    f"#{i} of group {s['group']}: sent JMSXGroupSeq {s['group_seq']!r}, "
                    f"got {r['group_seq']!r}"
                )
    elif aspect == "headers":
        for i, (s, r) in enumerate(pairs):
            for field in ("jms_type", "correlation_id", "delivery_mode", "priority"):
                if s[field] != r[field]:
                    out.append(f"#{i}: {field} sent {s[field]!r}, got {r[field]!r}")
    else:
        raise ValueError(aspect)
    return out


def _text(value: object) -> str:
    """A property value as JMS converts it to a String (Java's spelling of booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _group_problems(sent: list[dict[str, Any]], received: list[dict[str, Any]]) -> list[str]:
    """JMSXGroupID read as sent (ORD-4, ORD-20) and each group's messages in send order
    (ORD-8), told apart by their JMSCorrelationID."""
    out: list[str] = []
    for i, (s, r) in enumerate(zip(sent, received, strict=True)):
        if r["group"] != s["group"]:
            out.append(f"#{i}: sent group {s['group']!r}, got group {r['group']!r}")
    order_sent: dict[str, list[Any]] = defaultdict(list)
    order_got: dict[str, list[Any]] = defaultdict(list)
    for s in sent:
        order_sent[s["group"]].append(s["correlation_id"])
    for r in received:
        order_got[str(r["group"])].append(r["correlation_id"])
    for group, ids in order_sent.items():
        if order_got.get(group) != ids:
            out.append(f"group {group}: sent {ids}, received {order_got.get(group)}")
    return out
