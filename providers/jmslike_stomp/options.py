"""The STOMP provider's own settings (URL query or factory keywords), read and checked.

Checked once when the factory is made (``StompProvider.check_settings``) and read again
by each connection, so a bad value fails at the factory, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jmslike.config import FactorySettings, ParsedURL
from jmslike.errors import ConfigurationError
from jmslike.spi.exclusive import EXCLUSIVE_SETTINGS
from jmslike.spi.reconnect import RECONNECT_SETTINGS, Reconnect, reconnect_policy
from jmslike.spi.tls import TLS_SETTINGS, TlsOptions, tls_options

__all__ = [
    "ACK_BATCH",
    "CLIENT_WINDOW",
    "SEND_BATCH",
    "SETTING_NAMES",
    "_Options",
    "_batch",
    "_heartbeats",
    "_options",
]

CLIENT_WINDOW = 1000
"""Broker window of CLIENT_ACKNOWLEDGE and transacted consumers (setting ``clientWindow``):
how many unacknowledged messages such a session may hold before receive() waits."""

ACK_BATCH = 16
"""The most ACKs of an AUTO/DUPS_OK consumer written together (setting ``ackBatch``; 0 or
1: each on its own); never more than a quarter of the consumer's window."""

SEND_BATCH = 16
"""The most SEND frames written together while a producer streams (setting
``sendBatch``; 0 or 1: each written before ``send`` returns). Only frames nobody waits
for: non-persistent, or inside a transaction (its COMMIT is waited for)."""

SETTING_NAMES = frozenset(
    {
        "heartbeat",
        "clientWindow",
        "ackBatch",
        "sendBatch",
        *EXCLUSIVE_SETTINGS,
        *RECONNECT_SETTINGS,
        *TLS_SETTINGS,
    }
)
"""The keys the provider accepts beyond jmslike's own (``Provider.setting_names``)."""


@dataclass(frozen=True, slots=True)
class _Options:
    heartbeats: tuple[int, int]
    """STOMP's heart-beat pair, ms: how often this client sends, how often it asks the
    broker to send."""
    reconnect: Reconnect
    tls: TlsOptions
    send_batch: int
    """``sendBatch``: see :data:`SEND_BATCH`."""


def _options(url: ParsedURL, settings: FactorySettings) -> _Options:
    """The provider's own settings (URL query or factory keywords), checked.

    ``heartbeat`` (ms; ``1000,5000`` as in STOMP's header, client send then server send,
    one value for both; 0 turns a direction off), and for coming back after a
    lost connection the settings of jmslike.spi.reconnect (``reconnectAttempts``, -1 for
    ever, the default of ``failover:`` URLs; 0, the default of plain URLs, never;
    ``reconnectDelay`` and ``maxReconnectDelay``, seconds, the delay doubling after each
    failed attempt; Qpid JMS's ``failover.`` names too).
    """
    extra = settings.extra

    tls = tls_options(settings)
    if not tls.verify_host:
        # stomp.py checks a certificate's host name whenever it checks the certificate.
        raise ConfigurationError(
            f"sslVerifyHost=false for {url}: stomp.py cannot check a certificate without its "
            "host name (amqps:// can)"
        )
    return _Options(
        heartbeats=_heartbeats(url, extra.get("heartbeat", "10000")),
        reconnect=reconnect_policy(url, extra),
        tls=tls,
        send_batch=_batch(extra, "sendBatch", SEND_BATCH),
    )


def _batch(extra: Mapping[str, object], name: str, default: int) -> int:
    """``ackBatch`` or ``sendBatch``: an integer >= 0 (0 or 1: every frame on its own)."""
    raw = extra.get(name, default)
    if isinstance(raw, bool) or not str(raw).strip().isdigit():
        what = "ACK" if name == "ackBatch" else "SEND"
        raise ConfigurationError(
            f"{name}={raw!r}: must be an integer >= 0 (0 or 1: every {what} on its own)"
        )
    return int(str(raw).strip())


def _heartbeats(url: ParsedURL, raw: object) -> tuple[int, int]:
    """``heartbeat=1000,5000`` (STOMP's own two-value form) or ``heartbeat=1000``."""
    parts = [part.strip() for part in str(raw).split(",")]
    if len(parts) not in (1, 2) or not all(part.isascii() and part.isdigit() for part in parts):
        raise ConfigurationError(
            f"heartbeat={raw!r} for {url}: must be an integer >= 0 (ms), or two separated by "
            "a comma: client send, server send"
        )
    return int(parts[0]), int(parts[-1])
