"""Browsing an Artemis queue through its management API, since Artemis' STOMP has none
(and asking it whether a durable subscription exists, which its STOMP does not say).

Artemis ignores STOMP's ``browser`` header (a "browsing" subscription consumes), but its
management API lists a queue's messages in delivery order without touching them: the
queue control's ``browse(filter)`` operation, reached over Jolokia's HTTP/JSON bridge
that every ``artemis create`` instance serves (``/console/jolokia``). jmslike calls it
with the connection's own credentials, when the factory names the endpoint in the
``managementUrl`` setting; without it, ``capabilities.browsers`` is False on Artemis.

What the management API returns is the message as the broker stores it: properties,
header fields, and the body up to the broker's ``management-message-attribute-size-limit``
(256 bytes by default; ``-1`` lifts it). A body the broker cut short is reported with an
error rather than handed over truncated.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from jmslike.errors import ConnectionFailedError, JMSException, JMSSecurityError

__all__ = ["ArtemisManagement"]

log = logging.getLogger("jmslike.stomp")


class ArtemisManagement:
    """Calls Artemis queue-control operations over Jolokia."""

    def __init__(self, url: str, user: str | None, password: str | None, timeout: float) -> None:
        self.url = url.rstrip("/") + "/"
        parts = urlsplit(self.url)
        self._origin = f"{parts.scheme}://{parts.hostname}"  # Jolokia's CORS check
        self._auth = (
            "Basic " + base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            if user
            else None
        )
        self._timeout = timeout
        self._broker: str | None = None

    def _call(self, request: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Origin": self._origin}
        if self._auth:
            headers["Authorization"] = self._auth
        http = urllib.request.Request(
            self.url, data=json.dumps(request).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(http, timeout=self._timeout) as response:
                reply = json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise JMSSecurityError(
                    f"Artemis management at {self.url} refused the credentials (HTTP {exc.code})"
                ) from None
            raise ConnectionFailedError(
                f"Artemis management at {self.url}: HTTP {exc.code}"
            ) from None
        except (OSError, ValueError) as exc:
            raise ConnectionFailedError(f"Artemis management at {self.url}: {exc}") from None
        if reply.get("status") != 200:
            raise JMSException(f"Artemis management at {self.url}: {reply.get('error', 'failed')}")
        return reply.get("value")

    def _broker_name(self) -> str:
        if self._broker is None:
            found = self._call({"type": "search", "mbean": "org.apache.activemq.artemis:broker=*"})
            if not found:
                raise JMSException(f"Artemis management at {self.url} lists no broker")
            self._broker = str(found[0]).split("broker=", 1)[1]
        return self._broker

    def browse(self, queue: str, core_filter: str | None) -> list[tuple[dict[str, str], bytes]]:
        """The queue's messages as (STOMP-like headers, body), in delivery order; [] if the
        queue does not exist yet (Artemis creates queues on first use)."""
        mbean = (
            f"org.apache.activemq.artemis:broker={self._broker_name()},component=addresses,"
            f'address="{queue}",subcomponent=queues,routing-type="anycast",queue="{queue}"'
        )
        request = {
            "type": "exec",
            "mbean": mbean,
            "operation": "browse(java.lang.String)",
            "arguments": [core_filter or ""],
        }
        try:
            entries = self._call(request) or []
        except JMSException as exc:
            if "InstanceNotFound" in str(exc):
                return []
            raise
        return [_as_frame(entry) for entry in entries]

    def has_subscription_queue(self, client_id: str, name: str) -> bool:
        """Whether the durable subscription ``name`` of ``client_id`` exists: Artemis keeps
        it as the multicast queue ``<client id>.<name>`` and, over STOMP, says nothing
        when asked to delete one that does not (JMS wants an error)."""
        pattern = (
            f"org.apache.activemq.artemis:broker={self._broker_name()},component=addresses,"
            f"address=*,subcomponent=queues,routing-type=*,queue={_quoted(f'{client_id}.{name}')}"
        )
        return bool(self._call({"type": "search", "mbean": pattern}))


def _quoted(value: str) -> str:
    """``value`` as a quoted ObjectName value that matches only itself in a search."""
    escaped = "".join("\\" + ch if ch in '\\"*?' else ch for ch in value)
    return '"' + escaped.replace("\n", "\\n") + '"'


def _as_frame(entry: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    headers: dict[str, str] = {}
    for kind in ("String", "Int", "Long", "Short", "Byte", "Double", "Float", "Boolean"):
        for name, value in (entry.get(f"{kind}Properties") or {}).items():
            headers[name] = "true" if value is True else "false" if value is False else str(value)
    headers["message-id"] = str(entry.get("messageID", ""))
    headers["priority"] = str(entry.get("priority", 4))
    headers.setdefault("timestamp", str(entry.get("timestamp", 0)))  # the sender's, if kept
    headers["expires"] = str(entry.get("expiration", 0))
    headers["persistent"] = "true" if entry.get("durable") else "false"
    text = entry.get("text")  # a TextMessage (a STOMP frame without content-length)
    body = text.encode("utf-8") if isinstance(text, str) else bytes(entry.get("BodyPreview") or [])
    length = headers.get("content-length")
    if length and length.isdigit() and int(length) > len(body):
        raise JMSException(
            f"Artemis management returned {len(body)} of the {length} body bytes of message "
            f"{headers['message-id']}: raise the broker's management-message-attribute-size-limit"
        )
    return headers, body
