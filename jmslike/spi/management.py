"""What jmslike asks of brokers' management APIs, for every provider.

Some of what jmslike needs cannot be said over STOMP or AMQP 1.0, but can be asked of
the broker's HTTP management API, with the connection's own credentials:

* **Artemis** (Jolokia, ``/console/jolokia``, served by every ``artemis create``
  instance): browsing a queue in delivery order (its STOMP has no browsers), asking
  whether a durable subscription exists, and making a queue *exclusive* (one consumer
  active at a time, whatever process or protocol it uses), which strictly ordered
  destinations (ORD-18) and partitioned queues need across processes. Used when the
  factory's ``managementUrl`` setting names the endpoint, or where ``artemis create``
  puts it if that is the connected broker's (jmslike.spi.console).
* **RabbitMQ** (the management plugin, ``http://host:15672``): declaring a
  *single-active-consumer* queue, the same promise. Neither STOMP nor AMQP 1.0 can
  declare one on RabbitMQ 3.10; the HTTP API can (``PUT /api/queues/<vhost>/<name>``).
  ``managementUrl`` defaults to port 15672 of the broker's host.

What the Artemis management API returns for a browse is the message as the broker
stores it: properties, header fields, and the body up to the broker's
``management-message-attribute-size-limit`` (256 bytes by default; ``-1`` lifts it). A
body the broker cut short is reported with an error rather than handed over truncated.

Every failure names the ``managementUrl`` setting, since that is what a user changes
when the API is unreachable or refuses the credentials. No password is ever part of a
message.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlsplit

from jmslike.errors import (
    ConfigurationError,
    ConnectionFailedError,
    IllegalStateError,
    JMSException,
    JMSSecurityError,
)

__all__ = ["ArtemisManagement", "RabbitManagement"]

log = logging.getLogger("jmslike.management")


class _Http:
    """JSON over HTTP with Basic authentication; errors name ``managementUrl``."""

    product = "management API"

    def __init__(self, url: str, user: str | None, password: str | None, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.username:  # credentials in the URL are the management API's own
            user, password = parts.username, parts.password
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        self.url = f"{parts.scheme}://{netloc}{parts.path}".rstrip("/") + "/"
        """The endpoint without credentials: safe for messages."""
        self._origin = f"{parts.scheme}://{parts.hostname}"  # Jolokia's CORS check
        self._auth = (
            "Basic " + base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            if user
            else None
        )
        self._timeout = timeout

    def _request(
        self, method: str, path: str, payload: Any = None, *, allow: tuple[int, ...] = ()
    ) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json", "Origin": self._origin}
        if self._auth:
            headers["Authorization"] = self._auth
        data = json.dumps(payload).encode() if payload is not None else None
        http = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(http, timeout=self._timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw.strip() else None
        except urllib.error.HTTPError as exc:
            with exc:  # it holds the socket
                raw = exc.read() if exc.code in allow else b""
            if exc.code in allow:
                try:
                    return exc.code, json.loads(raw) if raw.strip() else None
                except ValueError:
                    return exc.code, {"reason": raw.decode(errors="replace")}
            if exc.code in (401, 403, 429):
                # 429: Artemis' console throttles a client after failed logins.
                raise JMSSecurityError(
                    f"{self.product} at {self.url} refused the credentials (HTTP {exc.code}): "
                    "give managementUrl a user allowed to manage the broker "
                    "(http://user:password@host:port/...), or the connection's user "
                    "the management rights"
                ) from None
            raise ConnectionFailedError(
                f"{self.product} at {self.url}: HTTP {exc.code} {exc.reason} "
                "(setting managementUrl)"
            ) from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionFailedError(
                f"{self.product} at {self.url} cannot be reached ({reason}): set "
                "managementUrl to where the broker's management API listens"
            ) from None


BROWSE_PAGE = 500
"""Messages asked of Artemis' management API per call of a browse."""


class ArtemisManagement(_Http):
    """Calls Artemis management operations over Jolokia."""

    product = "Artemis management"

    def __init__(
        self,
        url: str,
        user: str | None,
        password: str | None,
        timeout: float,
        *,
        broker: str | None = None,
    ) -> None:
        super().__init__(url, user, password, timeout)
        self._broker = broker
        """The broker's name in its MBeans: asked for once (one search), or given by
        whoever asked already (jmslike.spi.console)."""

    def _call(self, request: dict[str, Any]) -> Any:
        _status, reply = self._request("POST", "", request)
        if not isinstance(reply, dict) or reply.get("status") != 200:
            error = reply.get("error", "failed") if isinstance(reply, dict) else reply
            raise JMSException(f"Artemis management at {self.url}: {error}")
        return reply.get("value")

    def declare_exclusive(self, queue: str) -> None:
        """Make the anycast queue ``queue`` exclusive: one consumer active at a time, of
        any process or protocol; created if missing, updated if it exists (its messages
        stay)."""
        broker = f"org.apache.activemq.artemis:broker={self.broker_name()}"
        config = {
            "name": queue,
            "address": queue,
            "routing-type": "ANYCAST",
            "durable": True,
            "exclusive": True,
        }
        self._call(
            {
                "type": "exec",
                "mbean": broker,
                "operation": "createQueue(java.lang.String,boolean)",
                "arguments": [json.dumps(config), True],
            }
        )
        # createQueue answers with the configuration it was given, even when the queue
        # existed already (made by a first send, say): update it to be sure.
        update = {"name": queue, "routing-type": "ANYCAST", "exclusive": True}
        self._call(
            {
                "type": "exec",
                "mbean": broker,
                "operation": "updateQueue(java.lang.String)",
                "arguments": [json.dumps(update)],
            }
        )
        log.info("Artemis queue %s made exclusive", queue)

    def _anycast_queue(self, queue: str) -> str:
        """The MBean name of the anycast queue ``queue`` on its own address (how jmslike's
        queues are laid out), its name quoted so that ``*`` or ``"`` in it stays itself."""
        return (
            f"org.apache.activemq.artemis:broker={self.broker_name()},component=addresses,"
            f'address={_quoted(queue)},subcomponent=queues,routing-type="anycast",'
            f"queue={_quoted(queue)}"
        )

    def declare_queue(self, queue: str) -> str:
        """Create the anycast queue ``queue``, durable, as an application's own (not
        auto-created: Artemis deletes an auto-created queue once it has no consumer and
        no message); a queue that exists already is left as it is."""
        mbean = self._anycast_queue(queue)
        if self._call({"type": "search", "mbean": mbean}):
            return "exists already: left as it is"
        config = {"name": queue, "address": queue, "routing-type": "ANYCAST", "durable": True}
        self._call(
            {
                "type": "exec",
                "mbean": f"org.apache.activemq.artemis:broker={self.broker_name()}",
                "operation": "createQueue(java.lang.String,boolean)",
                "arguments": [json.dumps(config), True],
            }
        )
        log.info("Artemis queue %s created", queue)
        return "a durable anycast queue, through Artemis' management API"

    def declare_exclusive_address(self, address: str) -> None:
        """Make every queue created on ``address`` from now on exclusive, whatever
        protocol creates it: a topic's subscription queues are made by the SUBSCRIBE or
        the attach, which cannot ask for it (address settings, merged with the broker's
        own for that address)."""
        self._call(
            {
                "type": "exec",
                "mbean": f"org.apache.activemq.artemis:broker={self.broker_name()}",
                "operation": "addAddressSettings(java.lang.String,java.lang.String)",
                "arguments": [address, json.dumps({"defaultExclusiveQueue": True})],
            }
        )
        log.info("Artemis address %s: its queues made exclusive from now on", address)

    def listens_on(self, port: int) -> bool:
        """Whether one of this broker's acceptors listens on ``port``: how a management
        API found at the default address is known to be the broker's that jmslike
        connected to, and not another broker's on the same host."""
        pattern = (
            f"org.apache.activemq.artemis:broker={self.broker_name()},component=acceptors,name=*"
        )
        found = self._call({"type": "read", "mbean": pattern, "attribute": "Parameters"})
        acceptors = found.values() if isinstance(found, dict) else ()
        return any(
            str((acceptor or {}).get("Parameters", {}).get("port")) == str(port)
            for acceptor in acceptors
        )

    def broker_name(self) -> str:
        """The broker's name in its MBeans (one search the first time)."""
        if self._broker is None:
            found = self._call({"type": "search", "mbean": "org.apache.activemq.artemis:broker=*"})
            if not found:
                raise JMSException(f"Artemis management at {self.url} lists no broker")
            self._broker = str(found[0]).split("broker=", 1)[1]
        return self._broker

    def browse(self, queue: str, core_filter: str | None) -> list[tuple[dict[str, str], bytes]]:
        """The queue's messages as (STOMP-like headers, body), in delivery order; [] if the
        queue does not exist yet (Artemis creates queues on first use).

        Page by page (``BROWSE_PAGE`` messages each): Artemis' ``browse(filter)`` lists
        at most the address's ``management-browse-page-size`` messages (200 by default),
        so a browser saw the first 200 of a longer queue. Pages are read one after
        another, not as one snapshot (a JMS browser need not be one): a message taken
        from the queue meanwhile moves the later ones up, so one may be missed, and one
        seen twice is listed once. A broker without the paged operation is asked the
        old way.

        The queue's executor is flushed first: Artemis puts a message it has just routed
        on a list that its executor moves into the queue a moment later, and its paged
        browse no longer flushes it (older versions did), so a browser opened right
        after a confirmed send could list nothing (seen here over STOMP)."""
        mbean = self._anycast_queue(queue)
        if not self._flush(mbean):
            return []
        entries: list[Any] = []
        seen: set[Any] = set()
        page = 1
        while True:
            try:
                found = self._call(
                    {
                        "type": "exec",
                        "mbean": mbean,
                        "operation": "browse(int,int,java.lang.String)",
                        "arguments": [page, BROWSE_PAGE, core_filter or ""],
                    }
                )
            except JMSException as exc:
                if "InstanceNotFound" in str(exc):
                    return []
                if page == 1 and "No operation" in str(exc):
                    return self._browse_unpaged(mbean, core_filter)
                raise
            found = found or []
            for entry in found:
                key = entry.get("messageID") if isinstance(entry, dict) else None
                if key is None or key not in seen:
                    seen.add(key)
                    entries.append(entry)
            if len(found) < BROWSE_PAGE:
                return [_as_frame(entry) for entry in entries]
            page += 1

    def _flush(self, mbean: str) -> bool:
        """Run the queue's ``flushExecutor``; False if the queue does not exist. A broker
        without the operation is browsed without it."""
        try:
            self._call({"type": "exec", "mbean": mbean, "operation": "flushExecutor()"})
        except JMSException as exc:
            if "InstanceNotFound" in str(exc):
                return False
            if "No operation" not in str(exc):
                raise
        return True

    def _browse_unpaged(
        self, mbean: str, core_filter: str | None
    ) -> list[tuple[dict[str, str], bytes]]:
        entries = self._call(
            {
                "type": "exec",
                "mbean": mbean,
                "operation": "browse(java.lang.String)",
                "arguments": [core_filter or ""],
            }
        )
        return [_as_frame(entry) for entry in entries or []]

    def queue_depths(self, prefix: str) -> dict[str, int]:
        """Messages (waiting and delivered) of every anycast queue named ``prefix...``."""
        pattern = (
            f"org.apache.activemq.artemis:broker={self.broker_name()},component=addresses,"
            f'address=*,subcomponent=queues,routing-type="anycast",queue={_quoted(prefix)[:-1]}*"'
        )
        found: dict[str, int] = {}
        for mbean in self._call({"type": "search", "mbean": pattern}) or []:
            match = re.search(r'queue="((?:[^"\\]|\\.)*)"', str(mbean))
            name = match.group(1) if match else ""
            if name.startswith(prefix):
                count = self._call({"type": "read", "mbean": mbean, "attribute": "MessageCount"})
                found[name] = int(count or 0)
        return found

    def consumer_count(self, queue: str) -> int:
        """How many consumers the anycast queue ``queue`` has (0 if it does not exist)."""
        mbean = self._anycast_queue(queue)
        try:
            count = self._call({"type": "read", "mbean": mbean, "attribute": "ConsumerCount"})
        except JMSException as exc:
            if "InstanceNotFound" in str(exc):
                return 0
            raise
        return int(count)

    def _multicast_queue(self, queue: str) -> str | None:
        """The MBean name of the multicast queue ``queue``, on any address (None: none)."""
        pattern = (
            f"org.apache.activemq.artemis:broker={self.broker_name()},component=addresses,"
            f'address=*,subcomponent=queues,routing-type="multicast",queue={_quoted(queue)}'
        )
        found = self._call({"type": "search", "mbean": pattern})
        return str(found[0]) if found else None

    def subscription_queue(self, queue: str) -> tuple[str, str | None, int] | None:
        """The multicast queue ``queue``'s address, filter and consumer count (None if
        there is no such queue)."""
        found = self._multicast_queue(queue)
        if found is None:
            return None
        request = {"type": "read", "mbean": found, "attribute": ["Address", "Filter"]}
        attributes = self._call(request) or {}
        count = self._call({"type": "read", "mbean": found, "attribute": "ConsumerCount"})
        return str(attributes.get("Address")), attributes.get("Filter"), int(count or 0)

    def delete_subscription_queue(self, queue: str) -> bool:
        """Delete the subscription queue ``queue`` (multicast, any address) with its
        messages; False if there is none. A queue with consumers is refused, by any
        process's (IllegalStateError): JMS lets nobody unsubscribe an active
        subscription."""
        if self._multicast_queue(queue) is None:
            return False
        try:
            self._call(
                {
                    "type": "exec",
                    "mbean": f"org.apache.activemq.artemis:broker={self.broker_name()}",
                    "operation": "destroyQueue(java.lang.String)",
                    "arguments": [queue],
                }
            )
        except JMSException as exc:
            if "consumers" in str(exc).lower():
                raise IllegalStateError(
                    f"subscription queue {queue!r} has an active consumer (perhaps in another "
                    f"process): close it first ({exc})"
                ) from None
            raise
        log.info("Artemis subscription queue %s deleted", queue)
        return True

    def delete_queue(self, queue: str) -> bool:
        """Delete the queue ``queue`` (any routing type) with its messages, closing its
        consumers; False if there is none. For tools that must not leave a test broker
        full (Artemis keeps every message of a queue nobody reads, and pages, then runs
        out of heap, once they pass its global size)."""
        return self._delete("destroyQueue", queue, "does not exist")

    def delete_address(self, address: str) -> bool:
        """Delete the address ``address`` with its queues and their messages; False if
        there is none. What stands for a temporary queue over STOMP (an address and its
        anycast queue, both made by the first SEND or SUBSCRIBE): deleting only the queue
        left the address behind, one per temporary queue."""
        return self._delete("deleteAddress", address, "AMQ229203")  # Address Does Not Exist

    def _delete(self, operation: str, name: str, missing: str) -> bool:
        """The broker's ``operation(name, true)`` (forced: consumers closed, queues and
        messages dropped); False if the broker says ``missing`` (there is no such thing)."""
        try:
            self._call(
                {
                    "type": "exec",
                    "mbean": f"org.apache.activemq.artemis:broker={self.broker_name()}",
                    "operation": f"{operation}(java.lang.String,boolean)",
                    "arguments": [name, True],
                }
            )
        except JMSException as exc:
            if missing in str(exc):
                return False
            raise
        log.debug("Artemis %s(%s) done", operation, name)
        return True

    def has_subscription_queue(self, client_id: str, name: str) -> bool:
        """Whether the durable subscription ``name`` of ``client_id`` exists: Artemis keeps
        it as the multicast queue ``<client id>.<name>`` and, over STOMP, says nothing
        when asked to delete one that does not (JMS wants an error)."""
        pattern = (
            f"org.apache.activemq.artemis:broker={self.broker_name()},component=addresses,"
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
    # Jolokia writes the preview as Java bytes, signed: a body byte 0xff came as -1, and
    # bytes() refused it (browsing a Java client's BytesMessage over STOMP raised).
    preview = entry.get("BodyPreview") or []
    body = text.encode("utf-8") if isinstance(text, str) else bytes(b & 0xFF for b in preview)
    length = headers.get("content-length")
    if length and length.isdigit() and int(length) > len(body):
        raise JMSException(
            f"Artemis management returned {len(body)} of the {length} body bytes of message "
            f"{headers['message-id']}: raise the broker's management-message-attribute-size-limit"
        )
    return headers, body


SELECTOR_MARK = "x-jmslike-selector"
"""The binding argument that records a RabbitMQ durable subscription's selector
(:meth:`RabbitManagement.mark_selector`)."""


class RabbitManagement(_Http):
    """Calls RabbitMQ's management plugin (``/api/...``)."""

    product = "RabbitMQ management"

    def declare_single_active(
        self, vhost: str, queue: str, *, expires_ms: int | None = None
    ) -> None:
        """Declare ``queue`` a durable quorum queue with ``x-single-active-consumer``
        (idempotent). A queue that exists without it cannot be changed: that is a
        ConfigurationError saying so, and nothing is touched. ``expires_ms``: RabbitMQ
        deletes the queue once nobody has used it that long (``x-expires``).

        Quorum, not classic: RabbitMQ before 3.10.13 and 3.11.5 crashes a classic
        single-active-consumer queue when a message is published just as a waiting
        consumer takes over with messages still queued (rabbitmq-server issue 5460; seen
        here on 3.10.8: ``{badmatch,false}`` in ``attempt_delivery``, taking every link to
        the queue down with it). A quorum queue has no such path, and it also counts
        deliveries (``x-delivery-count``)."""
        path = f"api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}"
        arguments: dict[str, Any] = {"x-single-active-consumer": True, "x-queue-type": "quorum"}
        if expires_ms is not None:
            arguments["x-expires"] = expires_ms
        body = {"durable": True, "auto_delete": False, "arguments": arguments}
        status, reply = self._request("PUT", path, body, allow=(400,))
        if status == 400:
            reason = reply.get("reason", reply) if isinstance(reply, dict) else reply
            raise ConfigurationError(
                f"RabbitMQ queue {queue!r} (vhost {vhost!r}) already exists as an ordinary "
                f"queue, so it cannot be made single-active-consumer ({reason}); a "
                "strictly ordered or partitioned queue must be declared as such before "
                "anything else uses it: drain and delete it (rabbitmqctl delete_queue), then "
                "start again"
            )

    def declare_queue(self, vhost: str, queue: str, *, expires_ms: int | None = None) -> str:
        """Declare ``queue`` durable (as RabbitMQ's STOMP plugin declares a durable
        subscription's queue from jmslike's SUBSCRIBE headers, so that the two
        protocols' declarations agree); ``expires_ms``: deleted once nobody has used it
        that long (``x-expires``). Returns ``"created"``, ``"existed"`` (the same way), or
        ``"differs"``, and nothing touched, if it exists otherwise (a strictly ordered
        subscription's single-active-consumer queue, say): it is then used as it is."""
        path = f"api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}"
        arguments = {} if expires_ms is None else {"x-expires": expires_ms}
        body = {"durable": True, "auto_delete": False, "arguments": arguments}
        status, _reply = self._request("PUT", path, body, allow=(400,))
        return {400: "differs", 201: "created"}.get(status, "existed")  # 204: it existed

    def bind_to_topic(self, vhost: str, queue: str, topic: str) -> None:
        """Bind ``queue`` to ``amq.topic`` with the routing key ``topic``, where RabbitMQ's
        STOMP plugin sends what goes to ``/topic/<topic>`` (idempotent)."""
        path = f"api/bindings/{quote(vhost, safe='')}/e/amq.topic/q/{quote(queue, safe='')}"
        self._request("POST", path, {"routing_key": topic})

    def queue_depths(self, vhost: str, prefix: str) -> dict[str, int]:
        """Messages (ready and unacknowledged) of every queue of ``vhost`` whose name
        starts with ``prefix``."""
        status, reply = self._request("GET", f"api/queues/{quote(vhost, safe='')}", allow=(404,))
        if status != 200 or not isinstance(reply, list):
            return {}
        return {
            str(q["name"]): int(q.get("messages") or 0)
            for q in reply
            if isinstance(q, dict) and str(q.get("name", "")).startswith(prefix)
        }

    def delete_queue(self, vhost: str, queue: str, *, if_unused: bool = False) -> bool:
        """Delete ``queue`` with its messages; False if it does not exist. ``if_unused``:
        refuse (IllegalStateError) while it has consumers, whichever process holds them;
        RabbitMQ cannot say so for a quorum queue (it refuses ``if-unused`` there, seen
        on 3.10), which is then deleted as it is."""
        path = f"api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}"
        status, reply = self._request(
            "DELETE", path + ("?if-unused=true" if if_unused else ""), allow=(400, 404)
        )
        reason = reply.get("reason", reply) if isinstance(reply, dict) else reply
        if status == 400 and "quorum" in str(reason):
            status, reply = self._request("DELETE", path, allow=(404,))
        if status == 400:
            raise IllegalStateError(
                f"RabbitMQ queue {queue!r} (vhost {vhost!r}) has an active consumer (perhaps "
                f"in another process): close it first ({reason})"
            )
        return status != 404

    def subscription_bindings(self, vhost: str, queue: str) -> tuple[list[str], str | None] | None:
        """Where durable subscription ``queue`` is bound through ``amq.topic`` (where the
        STOMP plugin binds a topic subscription) and the selector jmslike marked it with
        ("" for none; None: no mark); None if the queue does not exist (RabbitMQ 3.10
        answers a missing queue's bindings with an empty list: ``([], None)``). RabbitMQ
        keeps no selector with a queue, so jmslike records it as a second binding to the
        topic whose arguments carry it (:meth:`mark_selector`): a topic exchange routes by
        key alone, and a queue bound twice gets each message once."""
        path = f"api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}/bindings"
        status, reply = self._request("GET", path, allow=(404,))
        if status != 200 or not isinstance(reply, list):
            return None
        topics: list[str] = []
        selector: str | None = None
        for binding in reply:
            if not isinstance(binding, dict) or binding.get("source") != "amq.topic":
                continue
            mark = (binding.get("arguments") or {}).get(SELECTOR_MARK)
            if isinstance(mark, str):
                selector = mark
            else:
                topics.append(str(binding.get("routing_key", "")))
        return topics, selector

    def mark_selector(self, vhost: str, queue: str, topic: str, selector: str) -> None:
        """Record ``selector`` ("" for none) with durable subscription ``queue`` of
        ``topic`` (see :meth:`subscription_bindings`; idempotent)."""
        path = f"api/bindings/{quote(vhost, safe='')}/e/amq.topic/q/{quote(queue, safe='')}"
        self._request("POST", path, {"routing_key": topic, "arguments": {SELECTOR_MARK: selector}})

    def queue(self, vhost: str, queue: str) -> dict[str, Any] | None:
        """The queue as the management API describes it (None if it does not exist)."""
        path = f"api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}"
        status, reply = self._request("GET", path, allow=(404,))
        return reply if status == 200 and isinstance(reply, dict) else None
