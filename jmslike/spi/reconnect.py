"""How a provider comes back after losing its broker (``failover:`` URLs).

Both network providers (STOMP and AMQP 1.0) reconnect the same way and read the same
settings, so the policy and its parsing live here, once. The names are the STOMP
provider's own (``reconnectAttempts``, ``reconnectDelay``, ``maxReconnectDelay``) plus
``initialReconnectDelay``, ``useReconnectBackOff`` and ``reconnectBackOffMultiplier``; Qpid
JMS's ``failover.``-prefixed names (``failover.maxReconnectAttempts`` and the others) are
read too, in Qpid JMS's unit (delays in milliseconds there, seconds under jmslike's
names), so that a URL copied from a Java application means the same here. The
defaults are jmslike's (docs/configuration.md, docs/providers.md "Reconnecting"), not
Qpid JMS's: a delay of 0.1 s doubling up to 5 s, for ever on a ``failover:`` URL and never
on a plain one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jmslike.config import ParsedURL
from jmslike.errors import ConfigurationError

__all__ = ["RECONNECT_SETTINGS", "Reconnect", "reconnect_policy"]


@dataclass(frozen=True, slots=True)
class Reconnect:
    """``attempts``: how many tries before giving up (-1: for ever, 0: never). One try
    goes through every member of the ``failover:`` list once, in order, without waiting
    between members. Before try 1 the transport waits ``initial_delay`` (None: ``delay``),
    before try n > 1 ``delay * multiplier ** (n - 1)``, at most ``max_delay``.
    """

    attempts: int = 0
    delay: float = 0.1
    max_delay: float = 5.0
    multiplier: float = 2.0
    initial_delay: float | None = None

    def delay_before(self, attempt: int) -> float:
        """Seconds to wait before try ``attempt`` (1 for the first after a loss)."""
        if attempt <= 1:
            return self.delay if self.initial_delay is None else self.initial_delay
        return min(self.delay * self.multiplier ** (attempt - 1), self.max_delay)

    def gives_up_after(self, attempt: int) -> bool:
        """Whether try ``attempt`` failing is the last one."""
        return self.attempts >= 0 and attempt >= self.attempts


_NAMES: dict[str, tuple[str, ...]] = {
    "reconnectAttempts": ("failover.maxReconnectAttempts",),
    "reconnectDelay": ("failover.reconnectDelay",),
    "initialReconnectDelay": ("failover.initialReconnectDelay",),
    "maxReconnectDelay": ("failover.maxReconnectDelay",),
    "useReconnectBackOff": ("failover.useReconnectBackOff",),
    "reconnectBackOffMultiplier": ("failover.reconnectBackOffMultiplier",),
}
"""jmslike's name -> the Qpid JMS names read for it."""

_QPID_MILLISECONDS = frozenset(
    ("failover.reconnectDelay", "failover.initialReconnectDelay", "failover.maxReconnectDelay")
)
"""Qpid JMS names whose values are milliseconds (jmslike's own names take seconds)."""

RECONNECT_SETTINGS = frozenset(name for own, qpid in _NAMES.items() for name in (own, *qpid))
"""Every setting name the policy reads, for a provider's ``setting_names``."""

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _raw(extra: Mapping[str, Any], name: str) -> tuple[str, Any] | None:
    """(the name it was given under, its value), jmslike's name first; None if unset."""
    for given in (name, *_NAMES[name]):
        if given in extra:
            return given, extra[given]
    return None


def reconnect_policy(url: ParsedURL, extra: Mapping[str, Any]) -> Reconnect:
    """The policy the settings ``extra`` ask for on ``url``, checked: a bad value raises
    ConfigurationError naming the setting and the value. Delays are in seconds (in
    milliseconds under Qpid JMS's names, as Qpid JMS reads them)."""

    def number(name: str, default: float, kind: type[int] | type[float], low: float) -> Any:
        found = _raw(extra, name)
        given, raw = found if found is not None else (name, default)
        try:
            value = kind(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            value = None
        scale = 1000.0 if given in _QPID_MILLISECONDS else 1.0
        if value is not None:
            value = value / scale if scale != 1.0 else value
        if value is None or value < low or (kind is int and str(raw).strip() != str(value)):
            unit = " (milliseconds)" if scale != 1.0 else ""
            raise ConfigurationError(
                f"{given}={raw!r} for {url}: must be "
                f"{'an integer' if kind is int else 'a number'} >= {low * scale:g}{unit}"
            )
        return value

    attempts = number("reconnectAttempts", -1 if url.members else 0, int, -1)
    delay = number("reconnectDelay", 0.1, float, 0.001)
    max_delay = max(delay, number("maxReconnectDelay", 5.0, float, 0.001))
    initial = number("initialReconnectDelay", delay, float, 0.0)
    multiplier = number("reconnectBackOffMultiplier", 2.0, float, 1.0)
    found = _raw(extra, "useReconnectBackOff")
    if found is not None:
        given, raw = found
        text = str(raw).strip().lower()
        if text not in _TRUE | _FALSE:
            raise ConfigurationError(f"{given}={raw!r} for {url}: must be true or false")
        if text in _FALSE:
            multiplier = 1.0
    return Reconnect(
        attempts=attempts,
        delay=delay,
        max_delay=max_delay,
        multiplier=multiplier,
        initial_delay=initial if _raw(extra, "initialReconnectDelay") is not None else None,
    )
