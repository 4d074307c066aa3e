"""Connection factory settings and broker URLs.

Settings can come from several places so that ordering can be switched on without
touching code (ORD-6, the JBoss/WebLogic way). The precedence, highest first:

1. keyword arguments of ``ConnectionFactory(...)``;
2. the URL query, e.g. ``embedded://?enableOrderingGroup=true``;
3. defaults of :class:`FactorySettings`.

Query keys may be written camelCase (as in Java configuration) or snake_case. An unknown
key or a value of the wrong type is an error naming the key and what is allowed, raised
before any connection is made; a typo must never silently leave ordering off.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from jmslike.destination import Destination, parse_destination
from jmslike.errors import ConfigurationError, InvalidDestinationError

__all__ = [
    "ConfigurationError",
    "FactorySettings",
    "ParsedURL",
    "parse_url",
    "redact_url",
]


@dataclass(frozen=True, slots=True)
class ParsedURL:
    """A broker URL taken apart. ``password`` never appears in ``str()`` or ``repr()``."""

    scheme: str
    host: str = ""
    port: int | None = None
    path: str = ""
    query: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    members: tuple[ParsedURL, ...] = ()
    """For ``failover:(a,b)``: the member URLs, in order."""

    @property
    def address(self) -> str:
        """``host:port`` (or the path), for messages and logs."""
        if self.members:
            return ",".join(m.address for m in self.members)
        if self.host or self.port:
            return f"{self.host}:{self.port}" if self.port else self.host
        return self.path

    def __str__(self) -> str:
        if self.members:
            inner = ",".join(str(m) for m in self.members)
            return f"{self.scheme}:({inner})"
        user = (
            f"{self.user}:***@"
            if self.user and self.password
            else (f"{self.user}@" if self.user else "")
        )
        return f"{self.scheme}://{user}{self.address if self.host else ''}{self.path}"


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")


def parse_url(url: object) -> ParsedURL:
    """Parse a broker URL; a malformed one raises ConfigurationError naming it.

    Forms: ``scheme://host:port/path?query``, ``embedded://`` (default broker),
    ``embedded://name``, ``embedded:///path/to/file.db``, and
    ``failover:(url1,url2)?query``.
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(f"invalid broker URL {url!r}: need a string such as 'embedded://'")
    text = url.strip()
    if text.startswith("failover:"):
        return _parse_failover(text)
    if "://" not in text:
        raise ConfigurationError(
            f"invalid broker URL {redact_url(text)!r}: missing '<scheme>://', "
            "e.g. 'embedded://' or 'stomp://127.0.0.1:61613'"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(f"invalid broker URL {redact_url(text)!r}: {exc}") from None
    if not _SCHEME.match(parts.scheme or ""):
        raise ConfigurationError(f"invalid broker URL {redact_url(text)!r}: bad scheme")
    try:
        query = dict(
            parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
        )
    except ValueError:
        raise ConfigurationError(
            f"invalid broker URL {redact_url(text)!r}: malformed query {parts.query!r}"
        ) from None
    return ParsedURL(
        scheme=parts.scheme.lower(),
        host=parts.hostname or "",
        port=port,
        path=unquote(parts.path),
        query=query,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _parse_failover(text: str) -> ParsedURL:
    match = re.fullmatch(r"failover:\((?P<inner>[^()]*)\)(\?(?P<query>.*))?", text)
    if not match or not match.group("inner").strip():
        raise ConfigurationError(
            f"invalid failover URL {redact_url(text)!r}: write "
            "'failover:(stomp://a:61613,stomp://b:61613)?option=value'"
        )
    members = tuple(parse_url(part) for part in match.group("inner").split(","))
    schemes = {m.scheme for m in members}
    if len(schemes) != 1:
        raise ConfigurationError(
            f"invalid failover URL {redact_url(text)!r}: members mix schemes {sorted(schemes)}"
        )
    query = dict(parse_qsl(match.group("query") or "", keep_blank_values=True))
    return ParsedURL(scheme="failover", query=query, members=members)


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, safe for messages and logs."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


@dataclass(frozen=True, slots=True)
class FactorySettings:
    """Everything a ConnectionFactory can be told, with its defaults.

    Durations are float seconds. ``extra`` holds provider-specific keys that a provider
    declared (see ``Provider.setting_names``).
    """

    enable_ordering_group: bool = False
    """ORD-6: bind every producer to ``default_ordering_group_name`` (or a per-session name)."""
    default_ordering_group_name: str | None = None
    client_id: str | None = None
    prefetch: int = 1
    """Messages a consumer asks the broker for when its buffer runs empty (receive() and
    listeners alike); 1 keeps groups free for other sessions (ORD-9)."""
    max_redeliveries: int = 6
    """Redeliveries before a message goes to the dead-letter queue (ORD-13); -1: no limit."""
    redelivery_delay: float = 0.0
    """Seconds before a rolled-back or recovered message is delivered again (ORD-12)."""
    redelivery_backoff: float = 1.0
    """Multiplier applied to the delay on each further redelivery."""
    max_redelivery_delay: float = 60.0
    dead_letter_queue: str = "DLQ"
    request_timeout: float = 30.0
    """How long a call that waits for the broker (connect, a persistent send) may wait."""
    strictly_ordered: str = ""
    """ORD-18: destinations declared strictly ordered, comma-separated
    (``"queue://orders,topic://prices"``). A string rather than a list so that it reads the
    same in a URL query, a TOML file and a keyword argument."""
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name != "extra"]

    def merged(
        self, values: Mapping[str, Any], source: str, extra_names: frozenset[str] = frozenset()
    ) -> FactorySettings:
        """A copy with ``values`` applied; keys may be camelCase or snake_case.

        ``source`` names where the values came from (``"URL query"``, a file and line),
        so that an error can say where to look.
        """
        known = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        extra = dict(self.extra)
        for raw_key, raw_value in values.items():
            key = _snake(raw_key)
            if key in known and key != "extra":
                changes[key] = _coerce(key, raw_value, known[key].type, source)
            elif raw_key in extra_names or key in extra_names:
                extra[key if key in extra_names else raw_key] = str(raw_value)
            else:
                allowed = ", ".join(sorted({*self.names(), *extra_names}))
                raise ConfigurationError(
                    f"unknown setting {raw_key!r} in {source}; allowed: {allowed}"
                )
        if extra != dict(self.extra):
            changes["extra"] = extra
        result = dataclasses.replace(self, **changes)
        result.validate(source)
        return result

    def validate(self, source: str = "settings") -> None:
        """Raise ConfigurationError for values out of range, naming the setting."""
        if self.prefetch < 1:
            raise ConfigurationError(f"prefetch={self.prefetch} in {source}: must be >= 1")
        if self.max_redeliveries < -1:
            raise ConfigurationError(
                f"max_redeliveries={self.max_redeliveries} in {source}: must be >= -1"
            )
        for name in ("redelivery_delay", "max_redelivery_delay", "request_timeout"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name}={getattr(self, name)} in {source}: must be >= 0")
        if self.redelivery_backoff < 1.0:
            raise ConfigurationError(
                f"redelivery_backoff={self.redelivery_backoff} in {source}: must be >= 1.0"
            )
        if not self.dead_letter_queue:
            raise ConfigurationError(f"dead_letter_queue in {source}: must not be empty")
        for entry in _strict_entries(self.strictly_ordered):
            _check_strict_entry(entry, source)
        if self.default_ordering_group_name is not None:
            from jmslike.ordering import validate_group_name

            validate_group_name(
                self.default_ordering_group_name,
                what=f"default_ordering_group_name in {source}",
            )

    def is_strictly_ordered(self, destination: Destination | str) -> bool:
        """Whether the ``strictly_ordered`` setting declares ``destination`` (ORD-18).

        Asked when a consumer or a listener container is created, never per message; the
        parsed set is cached per setting string. A declaration made in code
        (``create_consumer(..., strictly_ordered=True)``) or by another connection to the
        same broker is not visible here: ``consumer.strictly_ordered`` tells that.
        """
        if not self.strictly_ordered:
            return False
        return parse_destination(destination).key in _strict_keys(self.strictly_ordered)


def _strict_entries(text: str) -> list[str]:
    """The entries of a ``strictly_ordered`` value; blank ones (a trailing comma) are
    dropped, since they cannot leave a destination undeclared by mistake."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _check_strict_entry(entry: str, source: str) -> None:
    """A ``strictly_ordered`` entry must be a destination string; a bare ``orders`` is
    refused rather than guessed, since guessing queue or topic wrong would leave the real
    destination unprotected without a word."""
    try:
        parse_destination(entry)
    except InvalidDestinationError:
        raise ConfigurationError(
            f"strictly_ordered entry {entry!r} in {source}: write 'queue://<name>' or "
            "'topic://<name>', several separated by commas"
        ) from None


@functools.lru_cache(maxsize=32)
def _strict_keys(text: str) -> frozenset[str]:
    """Destination keys (``queue://orders``) declared by a validated setting string."""
    return frozenset(parse_destination(entry).key for entry in _strict_entries(text))


def _snake(name: str) -> str:
    """``enableOrderingGroup`` -> ``enable_ordering_group``; ``clientID`` -> ``client_id``."""
    if name.islower():
        return name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _coerce(key: str, value: object, declared: object, source: str) -> Any:
    """Convert a value (often a string from a URL or a file) to the setting's type."""
    kind = str(declared)
    try:
        if kind.startswith("bool"):
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
                return value.lower() in _TRUE
            raise ValueError("expected true or false")
        if kind.startswith("int"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError("expected an integer")
            return int(value)  # type: ignore[call-overload]
        if kind.startswith("float"):
            if isinstance(value, bool):
                raise ValueError("expected a number")
            number = float(value)  # type: ignore[arg-type]
            if not math.isfinite(number):
                raise ValueError("expected a finite number")
            return number
        if kind.startswith("str"):
            if value is None and "None" in kind:
                return None
            if not isinstance(value, str):
                raise ValueError("expected a string")
            return value
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"setting {key}={value!r} in {source}: {exc} ({kind})") from None
    raise ConfigurationError(f"setting {key} in {source}: unsupported type {kind}")
