"""A tiny broker that lies: it answers the connection handshake properly, then sends
what a test tells it to (garbage, truncated or oversized frames, malformed messages).

Real brokers never send such bytes, so a client's handling of them is only reachable
through a peer like this one: a socket server on 127.0.0.1 in a thread of its own, one
client connection at a time. ``FakeStompBroker`` speaks STOMP 1.2 as far as CONNECTED,
RECEIPTs and noticing a SUBSCRIBE; ``FakeAmqpBroker`` runs Proton's engine on the server
side as far as SASL, open, begin and attach, and then either writes raw bytes on the
socket or sends a delivery whose payload it was given (built with Proton's encoder, so
near-valid).

Used by tests/integration/test_fuzz_brokers.py.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self

__all__ = ["AmqpPayload", "FakeAmqpBroker", "FakeStompBroker", "StompPayload"]

log = logging.getLogger("jmslike.tests.fakebroker")


@dataclass(frozen=True)
class StompPayload:
    """What the fake STOMP broker sends once the client subscribes, and then."""

    data: bytes
    close_after: bool
    """Close the socket once ``data`` is sent (else it stays open, silent)."""
    mute: bool = False
    """Answer nothing after ``data`` (no RECEIPT, DISCONNECT included): a broker that
    froze, or whose RECEIPT a frame of ``data`` swallows (a ``content-length`` too long)."""


@dataclass(frozen=True)
class AmqpPayload:
    """What the fake AMQP broker sends once the client's receiver has credit."""

    raw: bytes = b""
    """Bytes written on the socket as they are, past Proton (garbage frames)."""
    delivery: bytes | None = None
    """A transfer's payload, sent through Proton as a delivery (malformed sections)."""
    close_after: bool = False


class _Server:
    """Accepts one client at a time on an ephemeral port and serves it in a thread."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._clients: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="fakebroker", daemon=True)
        self.errors: list[BaseException] = []
        self.client_gone = threading.Event()
        """Set once the client of the latest connection closed its socket (the server
        read EOF, or a reset): cleared when the next client connects. Not set when the
        server hung up first (``close_after``) or stopped."""
        self.accepted = 0
        """Clients served so far."""
        self._hung_up = False

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        for client in list(self._clients):
            with contextlib.suppress(OSError):
                client.close()
        self._thread.join(5.0)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.client_gone.clear()
            self._hung_up = False
            self.accepted += 1
            self._clients.append(client)
            client.settimeout(0.2)
            try:
                self.serve(client)
                if not self._hung_up:
                    for _ in self._chunks(client):  # until the client closes its end
                        pass
            except (ConnectionResetError, BrokenPipeError):
                self.client_gone.set()  # the client closed with bytes unread: a reset
            except OSError:
                pass  # the client went away: what a test may well cause
            except Exception as exc:  # a bug of the fake broker itself: the test says so
                log.exception("fake broker failed")
                self.errors.append(exc)
            finally:
                with contextlib.suppress(OSError):
                    client.close()
                self._clients.remove(client)

    def _chunks(self, client: socket.socket) -> Iterator[bytes]:
        """What the client sends, until it closes or the server stops."""
        while not self._stop.is_set():
            try:
                data = client.recv(65536)
            except TimeoutError:
                yield b""
                continue
            if not data:
                self.client_gone.set()
                return
            yield data

    def _hang_up(self, client: socket.socket) -> None:
        """Close the connection from the server's side (a broker that drops it)."""
        self._hung_up = True
        client.shutdown(socket.SHUT_RDWR)

    def serve(self, client: socket.socket) -> None:
        raise NotImplementedError


# ------------------------------------------------------------------------------------ STOMP


def stomp_frame(command: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """A well-formed STOMP 1.2 frame (header values escaped as the spec says)."""

    def escape(text: str) -> str:
        return (
            text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace(":", "\\c")
        )

    lines = [command, *(f"{escape(k)}:{escape(v)}" for k, v in headers.items())]
    return ("\n".join(lines) + "\n\n").encode("utf-8") + body + b"\x00"


@dataclass
class FakeStompBroker(_Server):
    """STOMP as far as CONNECTED, RECEIPT and SUBSCRIBE; then ``payload``."""

    payload: StompPayload
    server_header: str = "ActiveMQ/5.18.3"

    def __post_init__(self) -> None:
        _Server.__init__(self)

    def serve(self, client: socket.socket) -> None:
        buffer = b""
        sent = False
        for chunk in self._chunks(client):
            buffer += chunk
            while b"\x00" in buffer:
                raw, buffer = buffer.split(b"\x00", 1)
                command, headers = _parse_stomp(raw)
                if command in ("CONNECT", "STOMP"):
                    client.sendall(
                        stomp_frame(
                            "CONNECTED",
                            {"version": "1.2", "heart-beat": "0,0", "server": self.server_header},
                        )
                    )
                    continue
                if "receipt" in headers and not (sent and self.payload.mute):
                    client.sendall(stomp_frame("RECEIPT", {"receipt-id": headers["receipt"]}))
                if command == "DISCONNECT":
                    return  # and wait for the client to close (the server answered, or not)
                if command == "SUBSCRIBE" and not sent:
                    sent = True
                    client.sendall(self.payload.data.replace(b"@SUB@", headers["id"].encode()))
                    if self.payload.close_after:
                        self._hang_up(client)
                        return


def _parse_stomp(raw: bytes) -> tuple[str, dict[str, str]]:
    head = raw.lstrip(b"\r\n").split(b"\n\n", 1)[0].decode("utf-8", "replace")
    lines = head.split("\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers.setdefault(key, value.replace("\\c", ":"))
    return lines[0].strip(), headers


# ------------------------------------------------------------------------------------- AMQP


@dataclass
class FakeAmqpBroker(_Server):
    """AMQP 1.0 through Proton's server-side engine: SASL (ANONYMOUS or PLAIN, any
    login), open, begin, attach; then ``payload`` once a receiver has credit."""

    payload: AmqpPayload

    def __post_init__(self) -> None:
        _Server.__init__(self)

    def serve(self, client: socket.socket) -> None:
        from proton import SASL, Collector, Connection, Endpoint, Event, Transport

        transport = Transport(Transport.SERVER)
        sasl = SASL(transport)
        sasl.allowed_mechs("ANONYMOUS PLAIN")
        sasl.done(SASL.OK)
        connection = Connection()
        collector = Collector()
        connection.collect(collector)
        transport.bind(connection)
        sent = False
        local_active = Endpoint.LOCAL_ACTIVE
        for chunk in self._chunks(client):
            if chunk:
                transport.push(chunk)
            elif transport.capacity() < 0:
                return
            while (event := collector.peek()) is not None:
                kind = event.type
                if kind == Event.CONNECTION_REMOTE_OPEN and not (connection.state & local_active):
                    connection.container = "fakebroker"
                    connection.open()
                elif kind == Event.SESSION_REMOTE_OPEN and not (event.session.state & local_active):
                    event.session.open()
                elif kind == Event.LINK_REMOTE_OPEN and not (event.link.state & local_active):
                    link = event.link
                    link.source.copy(link.remote_source)
                    link.target.copy(link.remote_target)
                    link.open()
                elif kind == Event.LINK_FLOW and event.link.is_sender and not sent:
                    if event.link.credit > 0:
                        sent = True
                        if self.payload.delivery is not None:
                            delivery = event.link.delivery(b"fuzz")
                            event.link.send(self.payload.delivery)
                            event.link.advance()
                            del delivery
                        self._flush(transport, client)
                        if self.payload.raw:
                            client.sendall(self.payload.raw)
                        if self.payload.close_after:
                            self._hang_up(client)
                            return
                elif kind in (Event.CONNECTION_REMOTE_CLOSE,):
                    connection.close()
                collector.pop()
            self._flush(transport, client)

    @staticmethod
    def _flush(transport: object, client: socket.socket) -> None:
        pending = transport.pending()  # type: ignore[attr-defined]
        if pending > 0:
            client.sendall(transport.peek(pending))  # type: ignore[attr-defined]
            transport.pop(pending)  # type: ignore[attr-defined]
