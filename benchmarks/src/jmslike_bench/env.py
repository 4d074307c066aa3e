"""Where the brokers listen: the ``JMSLIKE_TEST_*`` variables the test suite uses.

The bench reads the same settings as the broker tests (``tests/brokerenv.py``), so that
``scripts/brokers.sh start`` is all the setup either needs: the environment first, then
``$JMSLIKE_BROKERS_DIR/brokers.env`` (default ``.brokers/brokers.env`` in the checkout or
the current folder).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import socket
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from jmslike.errors import JMSException
from jmslike.spi.management import ArtemisManagement

__all__ = [
    "TARGETS",
    "broker_settings",
    "declare_rabbitmq_queue",
    "delete_queue",
    "delete_rabbitmq_queue",
    "quiet_partition_advice",
    "reachable",
    "stomp_urls",
    "target_url",
]

log = logging.getLogger("jmslike.bench.env")


class _OneProcess(logging.Filter):
    """Drops the one record :func:`quiet_partition_advice` is about."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "keeps no ordering groups" not in str(record.msg)


def quiet_partition_advice() -> None:
    """Every queue a benchmark makes is consumed by its own process alone: RabbitMQ's
    advice to declare it partitioned for other processes (``jmslike.consumer`` logs it
    once per queue, and benchmarks make fresh queues) does not apply, and a page of it
    hid the results. Other warnings of ``jmslike.consumer`` still show."""
    logger = logging.getLogger("jmslike.consumer")
    if not any(isinstance(f, _OneProcess) for f in logger.filters):
        logger.addFilter(_OneProcess())


_CHECKOUT = Path(__file__).resolve().parents[3]

TARGETS = (
    "embedded",
    "activemq/stomp",
    "activemq/amqp",
    "artemis/stomp",
    "artemis/amqp",
    "rabbitmq/stomp",
    "rabbitmq/amqp",
)
"""What the single-purpose scripts (``benchmarks/container.py``, ``connect.py``) measure."""


def _env_file() -> Path:
    folder = os.environ.get("JMSLIKE_BROKERS_DIR")
    if folder:
        return Path(folder) / "brokers.env"
    for base in (Path.cwd(), _CHECKOUT):
        if (base / ".brokers" / "brokers.env").exists():
            return base / ".brokers" / "brokers.env"
    return _CHECKOUT / ".brokers" / "brokers.env"


def broker_settings() -> dict[str, str]:
    """``JMSLIKE_TEST_*`` settings: the environment over ``brokers.env``."""
    settings: dict[str, str] = {}
    path = _env_file()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and not key.startswith("#"):
                settings[key.strip()] = value.strip()
    settings.update({k: v for k, v in os.environ.items() if k.startswith("JMSLIKE_TEST_")})
    return settings


def target_url(target: str, embedded: str = "embedded://") -> str:
    """The URL of ``target`` (one of :data:`TARGETS`; ``embedded``'s is given);
    SystemExit naming a target that is unknown or has no URL."""
    if target not in TARGETS:
        raise SystemExit(f"unknown target {target!r}; choose from {', '.join(TARGETS)}")
    if target == "embedded":
        return embedded
    broker, protocol = target.split("/")
    key = f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL"
    url = broker_settings().get(key, "")
    if not url:
        raise SystemExit(f"no URL for {target}: set {key} or run scripts/brokers.sh start")
    return url


def stomp_urls(brokers: str, known: tuple[str, ...]) -> dict[str, str]:
    """Broker name -> STOMP URL for a comma-separated ``--brokers`` value (the STOMP
    scripts beside ``jmslike bench``); SystemExit naming an unknown broker or a missing
    URL."""
    names = [name.strip() for name in brokers.split(",") if name.strip()]
    if unknown := set(names) - set(known):
        raise SystemExit(f"unknown brokers {sorted(unknown)}; choose from {', '.join(known)}")
    settings = broker_settings()
    urls = {}
    for name in names:
        key = f"JMSLIKE_TEST_{name.upper()}_STOMP_URL"
        if not settings.get(key):
            raise SystemExit(f"no URL for {name}: set {key} or run scripts/brokers.sh start")
        urls[name] = settings[key]
    return urls


def reachable(url: str, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at ``url``'s host and port: the cheap
    check that turns a stopped broker into a "skipped" line instead of a minute of
    connect timeouts."""
    parsed = urllib.parse.urlsplit(url)
    if not parsed.hostname or not parsed.port:
        return False
    try:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=timeout):
            return True
    except OSError:
        return False


def delete_queue(broker: str, name: str) -> None:
    """Delete the queue ``name`` a run left on ``broker`` with its messages, best effort,
    where the broker keeps such queues and a management API is set: RabbitMQ (durable
    ``/queue/x`` queues stay for ever) and Artemis (a queue nobody reads keeps its
    messages, and a few bench runs of unread persistent sends took the test broker past
    its global size and out of heap). ActiveMQ Classic pages to its store: left alone."""
    if broker == "rabbitmq":
        delete_rabbitmq_queue(name)
    elif broker == "artemis":
        _delete_artemis_queue(name)


@functools.cache
def _artemis_management() -> ArtemisManagement | None:
    """One client for the bench (it asks the broker's name once), with the user of the
    test URLs; None where no management URL is set."""
    settings = broker_settings()
    base = settings.get("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL")
    if not base:
        return None
    url = urllib.parse.urlsplit(
        settings.get("JMSLIKE_TEST_ARTEMIS_STOMP_URL")
        or settings.get("JMSLIKE_TEST_ARTEMIS_AMQP_URL")
        or ""
    )
    user = urllib.parse.unquote(url.username) if url.username else None
    password = urllib.parse.unquote(url.password) if url.password else None
    return ArtemisManagement(base, user, password, 10.0)


def _delete_artemis_queue(name: str) -> None:
    api = _artemis_management()
    if api is None:
        return
    try:
        api.delete_queue(name)
    except JMSException as exc:
        log.warning("bench queue %s left on Artemis: %s", name, exc)


def delete_rabbitmq_queue(name: str) -> None:
    """RabbitMQ keeps ``/queue/x`` queues declared durable for ever: delete one through the
    management API, best effort (a bench must not fill the broker it measures)."""
    _rabbitmq_queue_request("DELETE", name)


def declare_rabbitmq_queue(name: str) -> None:
    """Declare a durable queue through the management API, best effort: as jmslike
    declares its queues over AMQP 1.0 (Qpid JMS would make ``/queue/x`` non-durable)."""
    _rabbitmq_queue_request("PUT", name, {"durable": True})


def _rabbitmq_queue_request(method: str, name: str, body: dict[str, Any] | None = None) -> None:
    base = broker_settings().get("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL")
    if not base:
        return
    parsed = urllib.parse.urlsplit(base)
    url = f"{parsed.scheme}://{parsed.hostname}:{parsed.port}/api/queues/%2F/{name}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    manager = urllib.request.HTTPPasswordMgrWithDefaultRealm()
    manager.add_password(None, url, parsed.username or "guest", parsed.password or "guest")
    opener = urllib.request.build_opener(urllib.request.HTTPBasicAuthHandler(manager))
    with contextlib.suppress(Exception):
        opener.open(request, timeout=5).close()
