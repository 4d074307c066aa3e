"""Client ids held by this process's connections, per broker address.

JMS allows one connection per client id. Artemis refuses a second one itself, but
RabbitMQ and ActiveMQ Classic over STOMP do not, so every network provider also keeps
the ids its process holds, here, and refuses a second claim before it reaches the broker.
One table for all providers: a STOMP and an AMQP connection to one broker have
different addresses (ports), so they never meet in it.
"""

from __future__ import annotations

import threading

from jmslike.errors import InvalidClientIDError

__all__ = ["CLIENT_IDS", "ClientIds"]


class ClientIds:
    """(address, client id) -> the connection object holding it."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], object] = {}
        self._lock = threading.Lock()

    def claim(self, address: str, client_id: str, holder: object) -> None:
        """Hold ``client_id`` at ``address`` for ``holder`` (again: no change), or raise
        InvalidClientIDError if another connection of this process holds it."""
        with self._lock:
            current = self._held.get((address, client_id))
            if current is not None and current is not holder:
                raise InvalidClientIDError(
                    f"client id {client_id!r} is in use by another connection to {address}"
                )
            self._held[(address, client_id)] = holder

    def release(self, address: str, client_id: str | None, holder: object) -> None:
        """Let go of ``client_id`` if ``holder`` holds it (a no-op otherwise)."""
        if client_id is None:
            return
        with self._lock:
            if self._held.get((address, client_id)) is holder:
                del self._held[(address, client_id)]


CLIENT_IDS = ClientIds()
"""The process's table, shared by the STOMP and AMQP providers."""
