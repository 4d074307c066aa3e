"""Failures explained in one line: the wrong port's protocol, a message over a broker's size.

A client pointed at the wrong port of a broker sees only the other protocol's bytes:
stomp.py logged twenty lines of "unknown response frame type" for ActiveMQ's OpenWire
port, and Proton waited the whole connect timeout on a STOMP port, which stays silent
until it gets a whole STOMP frame. Only after a connection attempt failed does a provider
call :func:`spoken_protocol`; it opens one short-lived socket of its own and never
affects a working connection.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
from typing import NamedTuple

__all__ = [
    "CLASSIC_BROWSE_PAGE",
    "Inequivalent",
    "clip",
    "inequivalent",
    "inequivalent_note",
    "note_capped_browse",
    "size_note",
    "spoken_protocol",
    "wrong_port_hint",
]

_STOMP_CONNECT = b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00"

# Default ports, to name in the hint (a broker may be configured otherwise).
_PORTS = {
    "STOMP": "61613 on ActiveMQ Classic, Artemis and RabbitMQ's STOMP plugin",
    "AMQP 1.0": "5672 on RabbitMQ, Artemis and ActiveMQ Classic's amqp connector",
}


def _classify(answer: bytes) -> str | None:
    if answer.startswith(b"AMQP"):
        return "AMQP"
    if answer.startswith((b"CONNECTED", b"ERROR", b"\n")):
        return "STOMP"  # (before OpenWire: ActiveMQ's CONNECTED names ActiveMQ too)
    if b"ActiveMQ" in answer[:32]:
        return "OpenWire (ActiveMQ's native protocol)"
    if answer.startswith(b"HTTP/"):
        return "HTTP"
    if answer.startswith(b"\x16\x03"):
        return "TLS"
    return None


def spoken_protocol(host: str, port: int, timeout: float = 1.0) -> str | None:
    """The protocol the peer at ``host:port`` answers in, or None if it cannot be told.

    First it listens (OpenWire speaks first), then it sends a STOMP CONNECT frame: a STOMP
    broker answers CONNECTED or ERROR, an AMQP broker its protocol header, an HTTP server
    an error status."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout) as sock:
        sock.settimeout(min(timeout, 0.3))
        answer = b""
        with contextlib.suppress(TimeoutError, socket.timeout):
            answer = sock.recv(64)
        if not answer:
            sock.settimeout(timeout)
            sock.sendall(_STOMP_CONNECT)
            with contextlib.suppress(TimeoutError, socket.timeout):
                answer = sock.recv(64)
        return _classify(answer)
    return None


def wrong_port_hint(host: str, port: int, wanted: str) -> str | None:
    """A sentence naming the protocol the port speaks when it is not ``wanted`` ("STOMP"
    or "AMQP 1.0"), with the usual port of the wanted one; None when the port speaks
    ``wanted`` or nothing recognisable."""
    spoken = spoken_protocol(host, port)
    if spoken is None or wanted.startswith(spoken):
        return None
    return (
        f"port {port} speaks {spoken}, not {wanted}: use the broker's {wanted} port "
        f"(by default {_PORTS.get(wanted, 'see its documentation')})"
    )


def clip(text: str, limit: int = 1000) -> str:
    """A broker's error text, cut to ``limit`` characters: Artemis names the whole refused
    message in its reason, properties included (2 MB of error text for a 1 MiB property,
    seen over STOMP), which no log line or exception should carry."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters in all)"


def size_note(size: int) -> str:
    """For a send whose connection failed: the message's size, when it may be why (over
    1 MiB). Brokers answer an oversize message by closing the connection with a reason
    that names no size (ActiveMQ over AMQP: "decode-error: Could not process AMQP
    commands"), so the caller learns it here."""
    if size <= 1 << 20:
        return ""
    return (
        f" (the message was {size / (1 << 20):.1f} MiB: brokers refuse messages over their "
        "limit, e.g. ActiveMQ Classic's wireFormat.maxFrameSize, RabbitMQ's "
        "max_message_size, Artemis' journal-buffer/large-message settings)"
    )


CLASSIC_BROWSE_PAGE = 400
"""ActiveMQ Classic's default ``maxBrowsePageSize``: the most messages it lists to a
browser, over STOMP, AMQP and OpenWire alike (a browse of a 3,000-message queue listed
400 over both protocols here)."""

_capped: set[tuple[str, str]] = set()
"""(broker address, queue) already warned about, so a monitor that browses every few
seconds logs once."""


def note_capped_browse(log: logging.Logger, address: str, queue: str, count: int) -> None:
    """Warn, once per queue, when a browse on ActiveMQ Classic listed exactly
    :data:`CLASSIC_BROWSE_PAGE` messages: the broker may hold more than it shows, and only
    its configuration can change that."""
    if count != CLASSIC_BROWSE_PAGE or (address, queue) in _capped:
        return
    if len(_capped) < 10_000:
        _capped.add((address, queue))
    log.warning(
        "ActiveMQ Classic at %s listed %d messages of %s to a browser, as many as its "
        "default maxBrowsePageSize lets it: the queue may hold more. Raise "
        "maxBrowsePageSize in the queue's policy entry (activemq.xml) to browse further",
        address,
        count,
        queue,
    )


_INEQUIVALENT = re.compile(
    r"inequivalent arg '(?P<arg>[^']+)' for queue '(?P<queue>[^']+)'.*?"
    r"received (?P<asked>'[^']*'|none|the value '[^']*')"
    r" but current is (?P<current>'[^']*'|none|the value '[^']*')"
)
"""E.g. ``received 'false' but current is 'true'``, or for an argument ``received none but
current is the value '1000' of type 'long'``."""


class Inequivalent(NamedTuple):
    """RabbitMQ's "inequivalent arg" refusal, read: the queue exists with ``arg`` set to
    ``current``, and the client declared it with ``asked``."""

    arg: str
    queue: str
    asked: str
    current: str


def inequivalent(text: str) -> Inequivalent | None:
    """The refusal in ``text``, if it is RabbitMQ's "inequivalent arg"."""
    match = _INEQUIVALENT.search(text)
    if match is None:
        return None
    return Inequivalent(
        match["arg"], match["queue"], _value(match["asked"]), _value(match["current"])
    )


def _value(said: str) -> str:
    """``'true'`` -> ``true``, ``the value '1000'`` -> ``1000``, ``none`` stays."""
    return said.removeprefix("the value ").strip("'")


def inequivalent_note(text: str) -> str:
    """For RabbitMQ's "inequivalent arg" refusal: what it means and what to do. A queue
    keeps the arguments it was first declared with; a client that declares it otherwise
    is refused, and the broker's words do not say how to get out."""
    found = inequivalent(text)
    if found is None:
        return ""
    arg, queue = found.arg, found.queue
    return (
        f" (queue {queue!r} exists with {arg}={found.current} and this client declares it "
        f"with {arg}={found.asked}: a RabbitMQ queue keeps what it was first declared "
        f"with; delete it (rabbitmqctl delete_queue {queue}) or declare it alike from every "
        "client: jmslike declares queues durable over STOMP and AMQP 1.0 (over AMQP it uses "
        "a queue that exists as it is), Qpid JMS over AMQP 1.0 non-durable; a Java client "
        "reaches a queue that exists as /amq/queue/<name>)"
    )
