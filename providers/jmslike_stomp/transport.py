"""One STOMP connection over stomp.py: frames out, frames in, receipts, errors.

stomp.py runs one receiver thread per connection and calls its listener there. This
class is that listener, and it does only bookkeeping on that thread: a MESSAGE frame is
decoded and pushed to its subscription's sink (which only appends to a buffer), a RECEIPT
wakes the caller waiting for it, an ERROR fails the waiter it names or goes to the
exception callback. No user code ever runs on stomp.py's thread (DESIGN.md).

A call that must be confirmed (persistent SEND, COMMIT, ABORT, UNSUBSCRIBE) carries a
``receipt`` header and waits for the RECEIPT; an ERROR naming the receipt raises in the
caller, mapped to the jmslike error tree, so nothing is lost silently.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

import stomp
from stomp.exception import ConnectFailedException, NotConnectedException, StompException

from jmslike.config import ParsedURL
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidDestinationError,
    JMSException,
    JMSSecurityError,
)

__all__ = ["FrameHandler", "StompTransport"]

log = logging.getLogger("jmslike.stomp")

FrameHandler = Callable[[dict[str, str], bytes], None]

_SECURITY_WORDS = (
    "authenticat",
    "password",
    "login",
    "access refused",
    "not authorized",
    "security",
)
_DESTINATION_WORDS = ("destination", "queue", "not_found", "not found", "no exchange")


def error_for(what: str, message: str, detail: str = "") -> JMSException:
    """Map an ERROR frame's ``message`` header to the jmslike error tree."""
    text = f"{what}: {message}" + (f" ({detail.strip()[:300]})" if detail.strip() else "")
    lowered = (message + " " + detail).lower()
    if any(word in lowered for word in _SECURITY_WORDS):
        return JMSSecurityError(text)
    if any(word in lowered for word in _DESTINATION_WORDS):
        return InvalidDestinationError(text)
    return JMSException(text)


class _Waiter:
    __slots__ = ("error", "event")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.error: JMSException | None = None


class StompTransport(stomp.ConnectionListener):  # type: ignore[misc]
    """A connected STOMP 1.2 session with receipts and per-subscription dispatch."""

    def __init__(
        self,
        url: ParsedURL,
        user: str | None,
        password: str | None,
        *,
        client_id: str | None,
        heartbeat_ms: int,
        timeout: float,
        on_exception: Callable[[JMSException], None],
    ) -> None:
        members = url.members or (url,)
        self.address = ",".join(f"{m.host}:{m.port or 61613}" for m in members)
        self._timeout = timeout
        self._on_exception = on_exception
        self._subscriptions: dict[str, FrameHandler] = {}
        self._waiters: dict[str, _Waiter] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.server = ""
        self.closing = False
        self.connected = False
        ssl = any(m.scheme.endswith("+ssl") for m in members)
        self._conn = stomp.Connection12(
            host_and_ports=[(m.host or "127.0.0.1", m.port or 61613) for m in members],
            heartbeats=(heartbeat_ms, heartbeat_ms),
            auto_decode=False,
            auto_content_length=False,
            reconnect_attempts_max=1,
            timeout=timeout,
            # STOMP's host header names the virtual host: RabbitMQ refuses one it does not
            # know, so send the URL's path (stomp://h:61614/vhost), "/" by default.
            vhost=(url.path or "/").removeprefix("/") or "/",
        )
        if ssl:
            for member in members:
                self._conn.set_ssl(for_hosts=[(member.host, member.port or 61613)])
        self._conn.set_listener("jmslike", self)
        headers = {"client-id": client_id} if client_id else {}
        try:
            self._conn.connect(user, password, wait=True, headers=headers)
        except ConnectFailedException as exc:
            raise self._connect_error(exc) from None
        except (OSError, StompException) as exc:
            raise ConnectionFailedError(
                f"cannot connect to STOMP broker {self.address}: {exc}"
            ) from exc
        if not self.connected:
            raise self._connect_error(None)

    def _connect_error(self, exc: BaseException | None) -> JMSException:
        reason = getattr(self, "_connect_refusal", "") or (str(exc) if exc else "no CONNECTED")
        error = error_for(f"STOMP broker {self.address} refused the connection", reason)
        if type(error) is JMSException or isinstance(error, InvalidDestinationError):
            return ConnectionFailedError(str(error))
        return error

    # ------------------------------------------------------------- listener
    def on_connected(self, frame: Any) -> None:
        self.server = frame.headers.get("server", "")
        self.connected = True

    def on_message(self, frame: Any) -> None:
        handler = self._subscriptions.get(frame.headers.get("subscription", ""))
        if handler is None:
            log.debug("MESSAGE for unknown subscription %s", frame.headers.get("subscription"))
            return
        try:
            handler(frame.headers, frame.body or b"")
        except Exception:  # never let a decoding bug kill stomp.py's receiver thread
            log.exception("STOMP %s: delivery failed", self.address)

    def on_receipt(self, frame: Any) -> None:
        waiter = self._waiters.pop(frame.headers.get("receipt-id", ""), None)
        if waiter is not None:
            waiter.event.set()

    def on_error(self, frame: Any) -> None:
        message = frame.headers.get("message", "error")
        body = frame.body.decode("utf-8", "replace") if isinstance(frame.body, bytes) else ""
        if not self.connected:
            self._connect_refusal = f"{message} {body}".strip()
            return
        error = error_for(f"STOMP broker {self.address}", message, body)
        waiter = self._waiters.pop(frame.headers.get("receipt-id", ""), None)
        if waiter is not None:
            waiter.error = error
            waiter.event.set()
            return
        # An ERROR that names no receipt (RabbitMQ's, for one) still ends the frame that
        # caused it, and the broker closes the connection after it: whoever waits for a
        # receipt now would wait in vain, so every waiter gets the error at once.
        with self._lock:
            waiters, self._waiters = list(self._waiters.values()), {}
        for pending in waiters:
            pending.error = error
            pending.event.set()
        self._on_exception(error)

    def on_disconnected(self) -> None:
        was = self.connected
        self.connected = False
        with self._lock:
            waiters, self._waiters = list(self._waiters.values()), {}
        for waiter in waiters:
            waiter.error = ConnectionFailedError(f"STOMP connection to {self.address} was lost")
            waiter.event.set()
        if was and not self.closing:
            self._on_exception(
                ConnectionFailedError(f"STOMP connection to {self.address} was lost")
            )

    # --------------------------------------------------------------- frames
    def next_id(self) -> str:
        return str(next(self._ids))

    def frame(
        self, command: str, headers: dict[str, str], body: bytes = b"", *, confirm: bool
    ) -> None:
        """Send a frame; with ``confirm`` wait for its RECEIPT and raise an ERROR's error."""
        if not self.connected:
            raise ConnectionFailedError(f"STOMP connection to {self.address} is closed")
        waiter = None
        if confirm:
            receipt = f"r{self.next_id()}"
            headers = {**headers, "receipt": receipt}
            waiter = self._waiters[receipt] = _Waiter()
        try:
            self._conn.send_frame(command, headers, body)
        except (NotConnectedException, OSError) as exc:
            raise ConnectionFailedError(f"STOMP {command} to {self.address} failed: {exc}") from exc
        if waiter is not None:
            if not waiter.event.wait(self._timeout):
                self._waiters.pop(headers["receipt"], None)
                raise ConnectionFailedError(
                    f"STOMP broker {self.address} did not confirm {command} within "
                    f"{self._timeout} s"
                )
            if waiter.error is not None:
                raise waiter.error

    def subscribe(self, sub_id: str, headers: dict[str, str], handler: FrameHandler) -> None:
        self._subscriptions[sub_id] = handler
        destination = headers.get("destination", "")
        if destination.startswith("/temp-queue/"):
            # RabbitMQ delivers replies to a temporary queue under the queue's name as the
            # subscription, whatever id the SUBSCRIBE had.
            self._subscriptions[destination] = handler
        try:
            self.frame("SUBSCRIBE", {**headers, "id": sub_id}, confirm=True)
        except JMSException:
            self._subscriptions.pop(sub_id, None)
            raise

    def listen(self, name: str, handler: FrameHandler) -> None:
        """Dispatch MESSAGE frames whose ``subscription`` is ``name`` (no SUBSCRIBE sent)."""
        self._subscriptions[name] = handler

    def unlisten(self, name: str) -> None:
        self._subscriptions.pop(name, None)

    def unsubscribe(self, sub_id: str, headers: dict[str, str] | None = None) -> None:
        try:
            self.frame("UNSUBSCRIBE", {**(headers or {}), "id": sub_id}, confirm=True)
        finally:
            self._subscriptions.pop(sub_id, None)

    def close(self) -> None:
        self.closing = True
        if self.connected:
            with contextlib.suppress(StompException, OSError):
                self._conn.disconnect(receipt=f"bye{self.next_id()}")
        self.connected = False

    def check_open(self) -> None:
        if not self.connected:
            raise IllegalStateError(f"STOMP connection to {self.address} is closed")
