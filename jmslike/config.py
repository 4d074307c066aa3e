"""Connection factory settings and broker URLs, and where the settings come from.

Ordering can be switched on without touching code (ORD-6), the JBoss/WebLogic way: an
administrator sets it where the program is deployed, and every producer the program
creates is bound to an ordering group. :func:`resolve_settings` combines the sources
once, when a factory is created. The precedence, highest first:

1. keyword arguments of ``ConnectionFactory(url, **settings)``;
2. the query of the URL given in code (or in ``$JMSLIKE_URL``), e.g.
   ``embedded://?enableOrderingGroup=true``;
3. environment variables ``JMSLIKE_<SETTING>``, e.g. ``JMSLIKE_ENABLE_ORDERING_GROUP=true``;
4. the config file's ``[factories.NAME]`` table, for ``ConnectionFactory.from_config(NAME)``
   only: its keys, then the query of its ``url``;
5. the config file's ``[destinations."queue://x"]`` tables and its ``[defaults]`` table,
   which apply to every factory of the process, ``ConnectionFactory(url)`` included:
   that is what lets an unmodified program gain ordering;
6. the defaults of :class:`FactorySettings`.

``strictly_ordered``, ``unit_of_order_destinations`` and ``partitioned_destinations`` are
lists of destinations and add up instead: each source adds its destinations (for the same
destination a higher source's unit of order or partition count wins), and no source
removes one that another declared, since a program's own list must not silently undo an
administrator's ORD-18 or partition declaration.

Keys may be written camelCase (as in Java configuration), snake_case or, in the
environment, upper snake_case: :func:`setting_name` maps every spelling to the name the
setting is declared under, in one place, for every source. An unknown key or file table,
or a value of the wrong type, is an error naming it, where it came from and what is
allowed, raised before any connection is made: a typo must never silently leave ordering
off. The environment is the exception, because it is shared with everything else a
process runs: a ``JMSLIKE_`` variable that names no setting of the factory's provider is
ignored, with a warning when it resembles one (:func:`_env_settings`). No error, log line
or repr shows a password.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import logging
import math
import os
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from jmslike.configfile import FACTORY_KEYS, ConfigFile, load_config, misspelling_hint
from jmslike.destination import Destination, Queue, parse_destination
from jmslike.errors import ConfigurationError, InvalidDestinationError
from jmslike.placement import parse_thread_cpus

if TYPE_CHECKING:
    from jmslike.partitions.layout import PartitionSpec

__all__ = [
    "DEFAULT_URL",
    "ENV_PREFIX",
    "RESERVED_ENV",
    "UNIT_OF_ORDER_SESSION",
    "UNSET_URL",
    "URL_ENV_VAR",
    "ConfigurationError",
    "FactorySettings",
    "ParsedURL",
    "Resolution",
    "default_url",
    "effective_url",
    "env_var",
    "is_secret",
    "parse_url",
    "redact_url",
    "reserve_env_var",
    "resolve",
    "resolve_settings",
    "setting_name",
    "shown_value",
]

log = logging.getLogger("jmslike.config")

DEFAULT_URL = "embedded://"
"""The URL of ``ConnectionFactory()`` when neither code nor ``$JMSLIKE_URL`` gives one."""
ENV_PREFIX = "JMSLIKE_"
URL_ENV_VAR = "JMSLIKE_URL"
RESERVED_ENV = frozenset({"JMSLIKE_CONFIG", "JMSLIKE_DISABLE_PLUGINS", "JMSLIKE_OTEL", URL_ENV_VAR})
"""``JMSLIKE_`` variables that jmslike reads and that are not settings (the OpenTelemetry
plugin's switch among them). Never read as settings, never logged as ignored."""
RESERVED_ENV_PREFIXES = (
    "JMSLIKE_TEST_",
    "JMSLIKE_BROKERS_",
    "JMSLIKE_NO_BROKERS",
    "JMSLIKE_ARTEMIS_",
)
"""Left to test suites and scripts/brokers.sh (broker addresses, where the test brokers
live), never read as settings."""
_reserved_env: set[str] = set(RESERVED_ENV)


def reserve_env_var(name: str) -> None:
    """Declare a ``JMSLIKE_`` variable that a plugin reads for itself, so that factories
    neither read it as a setting nor warn that it is ignored when it resembles one. Call
    it when the plugin is imported."""
    if not name.startswith(ENV_PREFIX):
        raise ValueError(f"{name!r}: only JMSLIKE_ variables need reserving")
    _reserved_env.add(name)


UNIT_OF_ORDER_SESSION = "session"
"""The unit-of-order value that means "a generated group name per session" (WebLogic's
system-generated unit of order); any other value is a fixed group name."""

_SECRET = re.compile(r"password|passwd|passphrase|secret|token|credential|api_?key", re.I)


def is_secret(name: str) -> bool:
    """Whether a key's value must be hidden (``***``) in errors, logs, reprs and output."""
    return bool(_SECRET.search(name))


def shown_value(key: str, value: Any) -> Any:
    """A setting's value as errors, logs, reprs and ``jmslike config`` show it: ``***``
    for a key that looks secret, and a URL's password hidden (``managementUrl``'s login,
    ``http://user:password@host/...``)."""
    if is_secret(key):
        return "***"
    if isinstance(value, str) and "@" in value:
        return redact_url(value)
    return value


@dataclass(frozen=True, slots=True, repr=False)
class ParsedURL:
    """A broker URL taken apart. ``password`` never appears in ``str()`` or ``repr()``,
    nor does a query value whose key looks secret (:func:`is_secret`)."""

    scheme: str
    host: str = ""
    port: int | None = None
    path: str = ""
    query: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    members: tuple[ParsedURL, ...] = ()
    """For ``failover:(a,b)``: the member URLs, in order."""
    redacted: str = field(default="", repr=False, compare=False)
    """The URL as written, query included, with secrets hidden (:func:`redact_url`): what
    errors about its query quote."""

    @property
    def address(self) -> str:
        """``host:port`` (or the path), for messages and logs."""
        if self.members:
            return ",".join(m.address for m in self.members)
        if self.host or self.port:
            return f"{self.host}:{self.port}" if self.port else self.host
        return self.path

    def __repr__(self) -> str:
        query = {k: shown_value(k, v) for k, v in self.query.items()}
        return (
            f"ParsedURL(scheme={self.scheme!r}, host={self.host!r}, port={self.port!r}, "
            f"path={self.path!r}, query={query!r}, user={self.user!r}, "
            f"members={self.members!r})"
        )

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
            f"invalid broker URL {_redact_unparsed(text)!r}: missing '<scheme>://', "
            "e.g. 'embedded://' or 'stomp://127.0.0.1:61613'"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(
            f"invalid broker URL {redact_url(text)!r}: {_reason(exc)}"
        ) from None
    if not _SCHEME.match(parts.scheme or ""):
        raise ConfigurationError(f"invalid broker URL {redact_url(text)!r}: bad scheme")
    try:
        query = dict(
            parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
        )
    except ValueError:
        raise ConfigurationError(
            f"invalid broker URL {redact_url(text)!r}: malformed query"
        ) from None
    return ParsedURL(
        redacted=redact_url(text),
        scheme=parts.scheme.lower(),
        host=parts.hostname or "",
        port=port,
        path=unquote(parts.path),
        query=query,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def _reason(exc: ValueError) -> str:
    """urlsplit's complaint without the text it quotes (``Port could not be cast to
    integer value as 'pw'``): a ',' or '#' in a password makes that text a piece of it."""
    text = str(exc)
    if text.startswith("netloc"):
        return "the host part has characters that change under NFKC normalization"
    if text.startswith("Port could not be cast"):
        return "the port is not a number"
    return text if text in ("Invalid IPv6 URL", "Port out of range 0-65535") else "malformed"


def _parse_failover(text: str) -> ParsedURL:
    match = re.fullmatch(r"failover:\((?P<inner>[^()]*)\)(\?(?P<query>.*))?", text)
    if not match or not match.group("inner").strip():
        raise ConfigurationError(
            f"invalid failover URL {_redact_failover(text)!r}: write "
            "'failover:(stomp://a:61613,stomp://b:61613)?option=value'"
        )
    members = []
    for number, part in enumerate(match.group("inner").split(","), 1):
        try:
            members.append(parse_url(part))
        except ConfigurationError:
            # The member's own message quotes its text, which may be a piece of a
            # password that held a ',' (found by tests/unit/test_fuzz_text.py): only the
            # whole URL can be redacted, so the reason names the member by position.
            raise ConfigurationError(
                f"invalid failover URL {_redact_failover(text)!r}: member {number} is not a "
                "broker URL"
            ) from None
    schemes = {m.scheme for m in members}
    if len(schemes) != 1:
        raise ConfigurationError(
            f"invalid failover URL {_redact_failover(text)!r}: "
            f"members mix schemes {sorted(schemes)}"
        )
    query = dict(parse_qsl(match.group("query") or "", keep_blank_values=True))
    return ParsedURL(
        scheme="failover", query=query, members=tuple(members), redacted=_redact_failover(text)
    )


# The password of each URL (each failover member) runs from the first ':' after its
# '://' to the last '@' before the next '://', so one with '@', '/', '?', ',', ' ' or '('
# in it is hidden whole, and so is one after a user with '@' or '?' in it (the odd ones
# were found by tests/unit/test_fuzz_text.py); an odd URL may lose a little more than its
# password, which is the safe way to be wrong.
_QUERY_SECRET = re.compile(
    r"([?&;][^=&#,()]*(?:password|passwd|passphrase|secret|token|credential|api_?key)"
    r"[^=&#,()]*=)[^&#,()\s]*",
    re.I,
)


_QUERY_LOGIN = re.compile(r"([?&;][^=&#?]*=)([^&#?]*%40[^&#?]*)", re.I)
"""A query value with a percent-encoded ``@``: a URL with a login in it, maybe
(``?managementUrl=http%3A%2F%2Fuser%3Apassword%40host``)."""


def _hide_encoded_login(match: re.Match[str]) -> str:
    inner = unquote(match.group(2))
    hidden = redact_url(inner)
    return match.group(1) + (quote(hidden, safe="*") if hidden != inner else match.group(2))


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, safe for messages and logs.

    Hidden: the password of ``user:password@`` (of every failover member, and of a URL
    in a query value, percent-encoded or not), and query values whose key looks secret
    (``?password=``, ``?token=``...).
    """
    pieces = url.split("://")
    for index in range(1, len(pieces)):
        piece = pieces[index]
        colon, at = piece.find(":"), piece.rfind("@")
        if 0 <= colon < at:
            pieces[index] = piece[: colon + 1] + "***" + piece[at:]
    hidden = _QUERY_SECRET.sub(r"\1***", "://".join(pieces))
    return _QUERY_LOGIN.sub(_hide_encoded_login, hidden)


def _redact_unparsed(text: str) -> str:
    """A URL without ``://`` (``stomp:/u:pw@h``, a typo) for an error message: there is
    no telling where its user ends, so everything from its first ':' to its last '@' is
    hidden (found by tests/unit/test_fuzz_text.py)."""
    colon, at = text.find(":"), text.rfind("@")
    if 0 <= colon < at:
        return redact_url(text[: colon + 1] + "***" + text[at:])
    return redact_url(text)


def _redact_failover(text: str) -> str:
    """A failover URL for an error message: as :func:`redact_url`, which covers every
    member after the first ``://``; what comes before it (a first member without ``://``)
    as :func:`_redact_unparsed` (found by tests/unit/test_fuzz_text.py)."""
    head, sep, rest = redact_url(text).partition("://")
    prefix = "failover:("
    if head.startswith(prefix):
        head = prefix + _redact_unparsed(head[len(prefix) :])
    return head + sep + rest


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """The URL of ``ConnectionFactory()`` without one: ``$JMSLIKE_URL``, else
    ``embedded://``; so a deployment can point an unmodified program at its broker."""
    env = os.environ if environ is None else environ
    return env.get(URL_ENV_VAR) or DEFAULT_URL


class _UnsetURL(str):
    """The type of :data:`UNSET_URL`; its repr says what it stands for in ``help()``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "$JMSLIKE_URL or 'embedded://'"


UNSET_URL: str = _UnsetURL(DEFAULT_URL)
"""The default of ``ConnectionFactory(url=...)``: "no URL given", told apart by identity
(``None`` stays an error, a caller passing it has a bug). It is also a working URL,
``embedded://``, for code that uses it as a string."""


def effective_url(url: str) -> str:
    """``url``, or :func:`default_url` where ``url`` is :data:`UNSET_URL`."""
    return default_url() if url is UNSET_URL else url


@dataclass(frozen=True, slots=True, repr=False)
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
    max_prefetch: int = 64
    """The most a consumer may ask for at once when it grows its request
    (credit that follows consumption, docs/threading.md#flow-control): only where the
    provider can take unused credit back, only while the messages carry no group, and only
    while the application works through a request faster than the broker answers one.
    Set it to ``prefetch`` to keep every request at ``prefetch``."""
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
    unit_of_order_destinations: str = ""
    """Destination-level unit of order (WebLogic's): every message a producer created for
    one of these destinations sends is bound to a group, like ``enable_ordering_group``
    but per destination. Comma-separated ``destination=value`` entries, where ``value`` is
    ``session`` (a name generated once per session) or a fixed group name:
    ``"queue://orders=session,queue://ledger=ledger"``. Usually written as
    ``[destinations."queue://orders"] unit_of_order = "session"`` in the config file."""
    partitioned_destinations: str = ""
    """Partitioned queues (ORD-16 across processes, docs/partitions.md): comma-separated
    ``queue://name=count`` entries, optionally ``queue://name=count@consumer-group``. A
    group's messages go to one of ``count`` partition queues, each consumed by one process
    at a time. Usually written ``[destinations."queue://orders"] partitions = 16``; as a
    keyword argument a dict ``{"queue://orders": 16}`` is accepted too."""
    partition_heartbeat: float = 1.0
    """Seconds between the heart-beats a process sends while it consumes a partitioned
    queue, so that the others know it is alive."""
    partition_timeout: float = 4.0
    """Seconds without a heart-beat after which a process counts as gone and its
    partitions move to the others (a killed or frozen process)."""
    thread_cpus: str = ""
    """CPUs the connection's own threads run on (its I/O thread, the sessions' listener
    threads): ``""`` (where the OS puts them), ``"one"`` (one CPU of the process's, chosen
    by process id) or a CPU list such as ``"0"`` or ``"2-3"``. Holding them to one core
    saves the interpreter lock's hand-offs between cores for Python-bound listeners
    (docs/threading.md#placement); Linux only."""
    extra: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        """Like the dataclass repr, with the values of secret-looking provider keys
        hidden: a repr ends up in logs and tracebacks."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "extra":
                value = {k: shown_value(k, v) for k, v in value.items()}
            parts.append(f"{f.name}={value!r}")
        return f"FactorySettings({', '.join(parts)})"

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
        for raw_key, given in values.items():
            key = setting_name(raw_key, extra_names)
            if key is None:
                names = sorted({*self.names(), *extra_names})
                hint = misspelling_hint(raw_key, names)
                raise ConfigurationError(
                    f"unknown setting {raw_key!r} in {source}{hint}; allowed: {', '.join(names)}"
                )
            raw_value = (
                _partition_entries_of(given, source)
                if key == "partitioned_destinations" and isinstance(given, Mapping)
                else given
            )
            if key in known:
                changes[key] = _coerce(key, raw_value, known[key].type, source)
            else:
                # Under the declared name, since that is the name the provider reads.
                extra[key] = str(raw_value)
        if extra != dict(self.extra):
            changes["extra"] = extra
        result = dataclasses.replace(self, **changes)
        result.validate(source)
        return result

    def validate(self, source: str = "settings") -> None:
        """Raise ConfigurationError for values out of range, naming the setting."""
        if self.prefetch < 1:
            raise ConfigurationError(f"prefetch={self.prefetch} in {source}: must be >= 1")
        if self.max_prefetch < 1:
            raise ConfigurationError(
                f"max_prefetch={self.max_prefetch} in {source}: must be >= 1 "
                "(set it to the prefetch to keep requests from growing)"
            )
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
        for entry in _strict_entries(self.unit_of_order_destinations):
            _check_unit_of_order_entry(entry, source)
        for entry in _strict_entries(self.partitioned_destinations):
            _parse_partition_entry(entry, source)
        parse_thread_cpus(self.thread_cpus, source)
        if self.partition_heartbeat <= 0:
            raise ConfigurationError(
                f"partition_heartbeat={self.partition_heartbeat} in {source}: must be > 0"
            )
        if self.partition_timeout < 2 * self.partition_heartbeat:
            raise ConfigurationError(
                f"partition_timeout={self.partition_timeout} in {source}: must be at least "
                f"twice partition_heartbeat ({self.partition_heartbeat}), or one late "
                "heart-beat would make a live process look gone"
            )
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

    def unit_of_order_for(self, destination: Destination | str) -> str | None:
        """The destination-level unit of order of ``destination``: ``"session"`` (bind to
        a name generated once per session), a fixed group name, or None.

        Asked when a producer is created, never per message; the parsed table is cached
        per setting string, like :meth:`is_strictly_ordered`.
        """
        if not self.unit_of_order_destinations:
            return None
        key = parse_destination(destination).key
        return _unit_of_order_map(self.unit_of_order_destinations).get(key)

    def partitions_for(self, destination: Destination | str) -> PartitionSpec | None:
        """The partitioning of ``destination`` (a queue), or None if it is not partitioned.

        Asked when a producer sends to a destination or a consumer is created; the parsed
        table is cached per setting string.
        """
        if not self.partitioned_destinations:
            return None
        key = parse_destination(destination).key
        return _partition_map(self.partitioned_destinations).get(key)

    def partition_specs(self) -> tuple[PartitionSpec, ...]:
        """Every partitioned destination these settings declare."""
        if not self.partitioned_destinations:
            return ()
        return tuple(_partition_map(self.partitioned_destinations).values())


_FIELD_NAMES = frozenset(FactorySettings.names())
"""The common settings; ``extra`` is not one (it holds the providers' settings)."""


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


def _split_unit_of_order(entry: str) -> tuple[str, str]:
    """``"queue://a=session"`` -> ``("queue://a", "session")``; the first '=' splits."""
    destination, _sep, value = entry.partition("=")
    return destination.strip(), value.strip()


def _check_unit_of_order_entry(entry: str, source: str) -> None:
    """A ``unit_of_order_destinations`` entry: a destination with its scheme, '=', and
    ``session`` or a legal group name (ORD-1); refused whole rather than half-applied."""
    destination, value = _split_unit_of_order(entry)
    try:
        parse_destination(destination)
        if not value:
            raise InvalidDestinationError(entry)
    except InvalidDestinationError:
        raise ConfigurationError(
            f"unit_of_order_destinations entry {entry!r} in {source}: write "
            "'queue://<name>=session' or 'queue://<name>=<group name>', several separated "
            "by commas"
        ) from None
    if value != UNIT_OF_ORDER_SESSION:
        from jmslike.ordering import validate_group_name

        validate_group_name(value, what=f"unit of order of {destination} in {source}")


@functools.lru_cache(maxsize=32)
def _unit_of_order_map(text: str) -> Mapping[str, str]:
    """Destination key -> unit of order, for a validated setting string; the last entry
    for a destination wins."""
    table: dict[str, str] = {}
    for entry in _strict_entries(text):
        destination, value = _split_unit_of_order(entry)
        table[parse_destination(destination).key] = value
    return types.MappingProxyType(table)


def _partition_entries_of(value: Mapping[Any, Any], source: str) -> str:
    """``{"queue://orders": 16}`` (a keyword argument) -> ``"queue://orders=16"``."""
    parts = []
    for destination, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise ConfigurationError(
                f"partitioned_destinations[{destination!r}] = {count!r} in {source}: "
                "the partition count must be an int"
            )
        parts.append(f"{destination}={count}")
    return ",".join(parts)


def _parse_partition_entry(entry: str, source: str) -> PartitionSpec:
    """``queue://orders=16`` or ``queue://orders=16@billing`` -> its PartitionSpec."""
    from jmslike.partitions.layout import MAX_PARTITIONS, PartitionSpec

    destination, _sep, value = entry.partition("=")
    count_text, _at, group = value.strip().partition("@")
    how = (
        "write 'queue://<name>=<partitions>' (optionally '@<consumer group>'), several "
        "separated by commas"
    )
    try:
        target = parse_destination(destination.strip())
    except InvalidDestinationError:
        raise ConfigurationError(
            f"partitioned_destinations entry {entry!r} in {source}: {how}"
        ) from None
    if target.is_topic or target.is_temporary:
        raise ConfigurationError(
            f"partitioned_destinations entry {entry!r} in {source}: only queues can be "
            f"partitioned, not {target}"
        )
    count_text = count_text.strip()
    if not count_text.isdigit() or not 1 <= int(count_text) <= MAX_PARTITIONS:
        raise ConfigurationError(
            f"partitioned_destinations entry {entry!r} in {source}: the partition count "
            f"must be a whole number from 1 to {MAX_PARTITIONS}; {how}"
        )
    group = group.strip() or target.name
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,200}", group):
        raise ConfigurationError(
            f"partitioned_destinations entry {entry!r} in {source}: consumer group "
            f"{group!r} may hold only letters, digits, '_', '.' and '-'"
        )
    return PartitionSpec(Queue(target.name), int(count_text), group)


@functools.lru_cache(maxsize=32)
def _partition_map(text: str) -> Mapping[str, PartitionSpec]:
    """Destination key -> PartitionSpec for a validated setting string; the last entry
    for a destination wins."""
    table: dict[str, PartitionSpec] = {}
    for entry in _strict_entries(text):
        spec = _parse_partition_entry(entry, "settings")
        table[spec.destination.key] = spec
    return types.MappingProxyType(table)


@functools.lru_cache(maxsize=32)
def _strict_keys(text: str) -> frozenset[str]:
    """Destination keys (``queue://orders``) declared by a validated setting string."""
    return frozenset(parse_destination(entry).key for entry in _strict_entries(text))


def _snake(name: str) -> str:
    """``enableOrderingGroup`` -> ``enable_ordering_group``; ``clientID`` -> ``client_id``."""
    if name.islower():
        return name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _folded(name: str) -> str:
    """A key with case and separators dropped: ``reconnectAttempts``,
    ``reconnect_attempts`` and ``RECONNECT_ATTEMPTS`` all fold to ``reconnectattempts``.

    Folding rather than converting between cases is what makes every spelling work,
    whatever case the provider declared its name in, and runs of capitals
    (``clientID``, ``sslCAFile``) need no rule of their own.
    """
    return re.sub(r"[^0-9a-z]", "", name.lower())


@functools.lru_cache(maxsize=32)
def _names_by_fold(provider_names: frozenset[str]) -> Mapping[str, str]:
    """Folded key -> declared name; a common setting wins over a provider's look-alike,
    as it always has."""
    table = {_folded(name): name for name in sorted(provider_names)}
    table.update({_folded(name): name for name in FactorySettings.names()})
    return types.MappingProxyType(table)


def setting_name(key: str, provider_names: frozenset[str] = frozenset()) -> str | None:
    """The name ``key`` is declared under (a :class:`FactorySettings` field or one of
    ``provider_names``), or None if it names no setting.

    The one place where spellings are mapped, for every source (keyword, URL query,
    config file, environment): a provider reads ``settings.extra`` under the name it
    declared, so ``reconnect_attempts=3`` must land where ``reconnectAttempts=3`` would.
    Case and the separators ``_``, ``-`` and ``.`` do not count.
    """
    if key in provider_names or key in _FIELD_NAMES:
        return key
    return _names_by_fold(provider_names).get(_folded(key))


def env_var(name: str) -> str:
    """The ``JMSLIKE_`` variable of a setting: ``reconnectAttempts`` ->
    ``JMSLIKE_RECONNECT_ATTEMPTS``; the form a shell user expects, and the one errors and
    ``jmslike config`` name."""
    return ENV_PREFIX + re.sub(r"[^0-9A-Za-z]+", "_", _snake(name)).upper()


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def parse_flag(name: str, value: object) -> bool:
    """A true/false setting from code, a URL, a file or the environment: a bool, or
    true/false, 1/0, yes/no, on/off in any case. The one parser every provider uses, so
    ``sslVerifyHost=no`` means the same as ``nativeGroups=no``; anything else is a
    ConfigurationError naming the setting and the value."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigurationError(f"setting {name}={value!r}: expected true or false")


def _coerce(key: str, value: object, declared: object, source: str) -> Any:
    """Convert a value (often a string from a URL or a file) to the setting's type."""
    kind = str(declared)
    try:
        if kind.startswith("bool"):
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                return parse_flag(key, value)
            raise ValueError("expected true or false")
        if kind.startswith("int"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError("expected an integer")
            try:
                return int(value)  # type: ignore[call-overload]
            except (TypeError, ValueError):
                raise ValueError("expected an integer") from None
        if kind.startswith("float"):
            if isinstance(value, bool):
                raise ValueError("expected a number")
            try:
                number = float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise ValueError("expected a number") from None
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
        shown = "***" if is_secret(key) else repr(shown_value(key, value))
        raise ConfigurationError(f"setting {key}={shown} in {source}: {exc} ({kind})") from None
    raise ConfigurationError(f"setting {key} in {source}: unsupported type {kind}")


# ----------------------------------------------------------------- where settings come from
_LIST_SETTINGS = frozenset(
    {"strictly_ordered", "unit_of_order_destinations", "partitioned_destinations"}
)
"""Settings that add up across sources instead of replacing each other (see the module
docstring): they declare destinations, and a declaration is never silently dropped."""


@dataclass(frozen=True)
class Resolution:
    """The settings of a factory, and where each value came from.

    ``sources`` maps every setting (provider keys included) to ``"default"``,
    ``"file <path>:<line> [<table>]"``, ``"env JMSLIKE_<SETTING>"``, ``"url"`` or
    ``"kwargs"``; a list setting fed by several sources names them all, joined by
    ``" + "``. ``jmslike config`` prints them, so "why is ordering on?" has an answer.
    """

    settings: FactorySettings
    sources: Mapping[str, str]
    config: ConfigFile | None


class _Builder:
    """Applies one key at a time, so that an error names the exact source of the key."""

    def __init__(self, provider_names: frozenset[str]) -> None:
        self.names = provider_names
        self.settings = FactorySettings()
        self.sources: dict[str, str] = dict.fromkeys(
            [*FactorySettings.names(), *sorted(provider_names)], "default"
        )

    def apply(self, raw_key: str, value: object, where: str, label: str) -> None:
        key = setting_name(raw_key, self.names) or raw_key  # unknown: merged() says so
        if key in _LIST_SETTINGS:
            # Check the value on its own first, so that a bad entry is blamed on its source.
            added = getattr(FactorySettings().merged({raw_key: value}, where, self.names), key)
            if not added:
                return
            current = getattr(self.settings, key)
            combined = _combine_lists(key, current, added)
            changes: dict[str, Any] = {key: combined}
            self.settings = dataclasses.replace(self.settings, **changes)
            before = self.sources[key]
            self.sources[key] = label if before == "default" else f"{before} + {label}"
            return
        self.settings = self.settings.merged({raw_key: value}, where, self.names)
        self.sources[key] = label


def _combine_lists(key: str, current: str, added: str) -> str:
    """Union of two destination lists; for units of order and partition counts, ``added``
    wins per destination."""
    if key == "partitioned_destinations":
        specs = {**_partition_map(current), **_partition_map(added)} if current else None
        return ",".join(s.entry() for s in specs.values()) if specs else added
    if key == "strictly_ordered":
        seen: dict[str, str] = {}
        for entry in [*_strict_entries(current), *_strict_entries(added)]:
            seen.setdefault(parse_destination(entry).key, entry)
        return ",".join(seen.values())
    table: dict[str, str] = {}
    for entry in [*_strict_entries(current), *_strict_entries(added)]:
        destination, value = _split_unit_of_order(entry)
        table[parse_destination(destination).key] = value
    return ",".join(f"{d}={v}" for d, v in table.items())


_logged_env: set[str] = set()
"""Ignored variables already logged: once per process is enough, since every factory
would say the same."""


def _env_settings(
    environ: Mapping[str, str], provider_names: frozenset[str]
) -> list[tuple[str, str, str]]:
    """(setting, value, variable) for every ``JMSLIKE_<SETTING>`` variable of a setting
    this factory has, under the setting's declared name.

    Any other ``JMSLIKE_`` variable is ignored, never an error: the environment is shared
    by everything a process runs (a ``JMSLIKE_LOG_LEVEL`` of the application's own, test
    suites' variables, another provider's setting meant for the process's other
    factories), and one stray variable must not stop every factory. What guards against
    a typo leaving ordering off is a warning, once per process, for an ignored name that
    resembles a setting (``JMSLIKE_ENABLE_ORDERING``); any other is a debug line.
    """
    found: list[tuple[str, str, str]] = []
    for var in sorted(environ):
        if (
            not var.startswith(ENV_PREFIX)
            or var in _reserved_env
            or var.startswith(RESERVED_ENV_PREFIXES)
        ):
            continue
        value = environ[var]
        if value == "":  # `export JMSLIKE_X=` is how a shell user clears a setting
            continue
        name = setting_name(var[len(ENV_PREFIX) :], provider_names)
        if name is None:
            _log_ignored(var, provider_names)
            continue
        found.append((name, value, var))
    return found


def _log_ignored(var: str, provider_names: frozenset[str]) -> None:
    """Say that ``var`` is ignored, loudly only when it looks like a misspelt setting.
    The value is never logged: it may be a secret."""
    if var in _logged_env:
        return
    _logged_env.add(var)
    # Compared without the prefix, which every candidate shares and would make any
    # two names look alike. jmslike's other variables count: JMSLIKE_CONFIGS is a typo too.
    variables = {env_var(n)[len(ENV_PREFIX) :] for n in {*_FIELD_NAMES, *provider_names}}
    variables |= {v[len(ENV_PREFIX) :] for v in _reserved_env}
    close = difflib.get_close_matches(var[len(ENV_PREFIX) :], sorted(variables), n=1, cutoff=0.8)
    if close:
        log.warning(
            "environment variable %s is not a jmslike setting and is ignored; did you mean %s?",
            var,
            ENV_PREFIX + close[0],
        )
    else:
        log.debug("environment variable %s is not a setting of this factory; ignored", var)


def resolve(
    url: ParsedURL | str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    provider_names: frozenset[str] = frozenset(),
    source: str = "ConnectionFactory keyword arguments",
    factory: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Resolution:
    """The settings of a factory for ``url``, from every source, with their sources.

    ``kwargs`` are the factory's keyword arguments and ``source`` names them in errors.
    ``factory`` is the name given to ``from_config``: then ``url`` is that table's URL,
    and its query counts as part of the file (below the environment). ``config_path`` is
    from_config's ``path``; otherwise the file is ``$JMSLIKE_CONFIG`` or ./jmslike.toml.
    ``environ`` defaults to ``os.environ``. The precedence is in the module docstring.
    """
    parsed = url if isinstance(url, ParsedURL) else parse_url(url)
    env = os.environ if environ is None else environ
    config = load_config(config_path, environ=env)
    build = _Builder(provider_names)
    if config is not None:
        for key, value in config.defaults().items():
            where = config.where(("defaults",), key)
            build.apply(key, value, where, f"file {where}")
        for destination, table in config.destinations().items():
            dest_path = ("destinations", destination)
            if table.get("strictly_ordered") is True:
                where = config.where(dest_path, "strictly_ordered")
                build.apply("strictly_ordered", destination, where, f"file {where}")
            if "unit_of_order" in table:
                where = config.where(dest_path, "unit_of_order")
                pair = f"{destination}={table['unit_of_order']}"
                build.apply("unit_of_order_destinations", pair, where, f"file {where}")
            if "partitions" in table:
                where = config.where(dest_path, "partitions")
                group = table.get("consumer_group")
                pair = f"{destination}={table['partitions']}" + (f"@{group}" if group else "")
                build.apply("partitioned_destinations", pair, where, f"file {where}")
    if factory is not None:
        if config is None:
            raise ConfigurationError(
                f"no configuration file for factory {factory!r}: set $JMSLIKE_CONFIG or "
                "create ./jmslike.toml"
            )
        table_path = ("factories", factory)
        entry = config.factory(factory)
        where_url = config.where(table_path, "url")
        for key, value in parsed.query.items():
            build.apply(
                key,
                value,
                f"the query of URL {parsed.redacted!r} in {where_url}",
                f"file {where_url} (url)",
            )
        for key, value in entry.items():
            if key not in FACTORY_KEYS:
                where = config.where(table_path, key)
                build.apply(key, value, where, f"file {where}")
    for name, value, var in _env_settings(env, provider_names):
        build.apply(name, value, f"environment variable {var}", f"env {var}")
    if factory is None:
        for key, value in parsed.query.items():
            build.apply(key, value, f"the query of URL {parsed.redacted!r}", "url")
    for key, value in (kwargs or {}).items():
        build.apply(key, value, source, "kwargs")
    if log.isEnabledFor(logging.DEBUG):
        outside = sorted({s for s in build.sources.values() if s not in ("default", "kwargs")})
        log.debug("settings for %s from: %s", parsed.redacted or parsed, outside or "code only")
    return Resolution(build.settings, types.MappingProxyType(build.sources), config)


def resolve_settings(
    url: ParsedURL | str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    provider_names: frozenset[str] = frozenset(),
    source: str = "ConnectionFactory keyword arguments",
    factory: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> FactorySettings:
    """:func:`resolve` without the sources: what ``ConnectionFactory`` keeps."""
    return resolve(
        url,
        kwargs,
        provider_names=provider_names,
        source=source,
        factory=factory,
        config_path=config_path,
        environ=environ,
    ).settings
