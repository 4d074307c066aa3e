"""Opening ActiveMQ Classic's prefetch window without consuming: "delivered" acknowledgements.

A STOMP subscription on Classic gets at most ``activemq.prefetchSize`` messages that are
not acknowledged yet. A CLIENT_ACKNOWLEDGE or transacted session may hold more than that
(receive three, then acknowledge), and with prefetch 1, the only setting that keeps a
consumer from taking a group's next message ahead of time (ORD-9), its second receive()
would wait for itself. Classic treats an ACK inside a transaction as "delivered": the
window opens by one, and the message stays the subscription's until the transaction
ends. jmslike keeps one such *window transaction* per connection, never committed:

* ``extend(tokens)``: ACK the messages the application holds in the window transaction,
  when its consumer asks for more than the window lets through;
* ``suspended(finished)``: around anything that ends a transaction or acknowledges for
  real (a plain ACK, a session's COMMIT or ABORT, dead-lettering, UNSUBSCRIBE): ABORT the
  window transaction first (the messages go back to "delivered, not acknowledged", as
  seen running the broker), do the work, then extend again what is still held.

Why one transaction per connection and the ABORT around every other transaction end:
Classic's STOMP layer keeps one list of transacted acknowledgements per subscription and
clears it on any COMMIT or ABORT of the connection; a message whose transacted ACK was
cleared that way can no longer be acknowledged ("Unexpected ACK received for
message-id"), which the window must never let happen.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["WindowExtension"]


class _Transport(Protocol):
    def frame(
        self, command: str, headers: dict[str, str], body: bytes = b"", *, confirm: bool
    ) -> None: ...


class WindowExtension:
    """The window transaction of one STOMP connection to ActiveMQ Classic."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._tx: str | None = None
        self._extended: dict[str, Any] = {}  # ack id -> token, in the order extended

    def __bool__(self) -> bool:
        return bool(self._extended)

    def is_extended(self, token: Any) -> bool:
        return token.ack_id in self._extended

    def extend(self, transport: _Transport, tokens: Iterable[Any]) -> None:
        """Open the window by one message per token (tokens the application holds)."""
        with self.lock:
            for token in tokens:
                ack_id = token.ack_id
                if not ack_id or ack_id in self._extended:
                    continue
                if self._tx is None:
                    self._tx = f"window-{uuid.uuid4().hex[:12]}"
                    transport.frame("BEGIN", {"transaction": self._tx}, confirm=False)
                transport.frame("ACK", {"id": ack_id, "transaction": self._tx}, confirm=False)
                self._extended[ack_id] = token

    @contextmanager
    def suspended(self, transport: _Transport, finished: Iterable[Any] = ()) -> Iterator[None]:
        """Run the block with the window transaction aborted; afterwards extend again the
        tokens that were extended, except ``finished`` ones and those of a lost
        connection."""
        with self.lock:
            held = list(self._extended.values())
            if self._tx is not None:
                transport.frame("ABORT", {"transaction": self._tx}, confirm=False)
                self._tx = None
            self._extended.clear()
            try:
                yield
            finally:
                done = {id(token) for token in finished}
                self.extend(transport, [t for t in held if id(t) not in done])

    def forget(self) -> None:
        """The connection was lost: its transaction with it."""
        with self.lock:
            self._tx = None
            self._extended.clear()
