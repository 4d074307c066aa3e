"""Artemis' management API where ``artemis create`` puts it, found without a setting.

Strictly ordered destinations across processes (ORD-18), partitioned queues, browsing
over STOMP and unsubscribing a shared subscription by name all need Artemis' management
API (Jolokia), since neither STOMP nor AMQP 1.0 can ask for them. Every broker instance
made by ``artemis create`` serves it with its web console, at
``http://<host>:8161/console/jolokia``, behind the broker's own users. So where the
factory has no ``managementUrl``, a connection to Artemis looks there once, with its own
credentials, and uses it if it answers and belongs to the broker the connection reached
(one of that broker's acceptors listens on the connection's port: a second broker on the
same host has its own console and its own ports).

Where it does not answer, refuses the credentials or is another broker's, nothing changes
from before: the broker cannot be asked, and the warnings name ``managementUrl`` with the
reason found here. A failover URL is not looked up: which member's console would speak
for the others is the user's to say.

The answer is kept per broker address and login for :data:`REMEMBER` seconds, so that a
process opening many connections asks once, and a console started later is found.
"""

from __future__ import annotations

import logging
import re
import threading
import time

from jmslike.spi.management import ArtemisManagement

__all__ = ["ARTEMIS_CONSOLE", "artemis_console", "forget"]

log = logging.getLogger("jmslike.management")

ARTEMIS_CONSOLE = "http://{host}:8161/console/jolokia"
"""Where ``artemis create`` binds the web console (its ``bootstrap.xml``)."""
TIMEOUT = 2.0
"""Seconds the look may take at most (the factory's request timeout if shorter): it is
made while a connection opens."""
REMEMBER = 60.0
"""Seconds an answer is kept for later connections of the process."""

_ADVICE = re.compile(r"(?::\s*(?:set|give) managementUrl|\s*\(setting managementUrl\)).*$", re.S)
"""The advice that ends jmslike.spi.management's errors."""

_lock = threading.Lock()
_answers: dict[tuple[str, int, str | None, str | None], tuple[float, str | None, str]] = {}
"""(host, port, user, password) -> (when, the broker's name in its MBeans or None, why
not). The name is what the look-up learnt: the caller's client need not search again."""


def artemis_console(
    host: str, port: int, user: str | None, password: str | None, timeout: float
) -> tuple[ArtemisManagement | None, str]:
    """A client of the Artemis management API at the default address, with ``timeout``
    for its later calls, if that API is this broker's; else None and why not (for the
    warnings that name ``managementUrl``)."""
    key = (host, port, user, password)
    url = ARTEMIS_CONSOLE.format(host=f"[{host}]" if ":" in host else host)
    now = time.monotonic()
    with _lock:
        known = _answers.get(key)
    if known is None or now - known[0] >= REMEMBER:
        known = _look(key, url, min(timeout, TIMEOUT), now)
    _when, broker, why = known
    if broker is None:
        return None, why
    return ArtemisManagement(url, user, password, timeout, broker=broker), ""


def _look(
    key: tuple[str, int, str | None, str | None], url: str, timeout: float, now: float
) -> tuple[float, str | None, str]:
    """Ask the default address once and keep the answer (see artemis_console)."""
    host, port, user, password = key
    found: str | None = None
    try:
        management = ArtemisManagement(url, user, password, timeout)
        if management.listens_on(port):
            found, why = management.broker_name(), ""
        else:
            why = (
                f"the management API at {url} is another broker's (none of its acceptors "
                f"listens on port {port})"
            )
    except Exception as exc:  # whatever answers there (or not) is only not the API
        # The error's advice (set managementUrl) is the caller's to give, once.
        why = "the default address did not serve: " + _ADVICE.sub("", str(exc))
    with _lock:
        _answers[key] = (now, found, why)
    if found is not None:
        log.info("Artemis at %s:%s: management API found at %s", host, port, url)
    else:
        log.debug("Artemis at %s:%s: no management API found: %s", host, port, why)
    return now, found, why


def forget() -> None:
    """Drop every kept answer (tests that start or stop a console)."""
    with _lock:
        _answers.clear()
