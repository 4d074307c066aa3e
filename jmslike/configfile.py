"""The ``jmslike.toml`` file: ordering switched on by an administrator, not by code (ORD-6).

JBoss Messaging and WebLogic let an administrator turn ordering on in the server's
configuration, so that an application that never heard of ordering groups gains them
without a code change. jmslike has no server configuration to write into, so the file
plays that part. It is ``$JMSLIKE_CONFIG`` if set, else ``./jmslike.toml``::

    [defaults]                       # every ConnectionFactory of the process
    enable_ordering_group = true

    [factories.orders]               # ConnectionFactory.from_config("orders")
    url = "embedded://"
    default_ordering_group_name = "orders"

    [destinations."queue://orders"]  # one destination, whatever factory sends to it
    unit_of_order = "session"        # WebLogic's destination-level unit of order
    strictly_ordered = true          # ORD-18
    partitions = 16                  # groups spread over 16 partition queues (ORD-16)

This module reads and checks the file's shape: which tables exist, what a destination
table may hold, and where each key is written, so that every error names the file, the
line, the table and the key. Which factory setting a key means, and in which order the
sources apply, is :func:`jmslike.config.resolve_settings`'s business.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jmslike.destination import parse_destination
from jmslike.errors import ConfigurationError, InvalidDestinationError

__all__ = [
    "DESTINATION_KEYS",
    "ENV_VAR",
    "FILE_NAME",
    "TABLES",
    "ConfigFile",
    "closest_name",
    "find_config",
    "load_config",
    "load_factory_config",
    "misspelling_hint",
]

ENV_VAR = "JMSLIKE_CONFIG"
FILE_NAME = "jmslike.toml"

TABLES = ("defaults", "destinations", "factories")
"""The file's top-level tables. Anything else is refused: a ``[default]`` typo must not
leave ordering off without a word."""

DESTINATION_KEYS = {
    "unit_of_order": 'a string, "session" or a fixed group name',
    "strictly_ordered": "true or false, ORD-18",
    "partitions": "a whole number from 1 to 1024, docs/partitions.md",
    "consumer_group": "a name for the processes sharing the partitions",
}
"""What a ``[destinations."queue://name"]`` table may hold, with the expected type."""

FACTORY_KEYS = ("url", "user", "password")
"""Keys of a ``[factories.NAME]`` table that are not settings."""


def find_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The config file to use: ``path``, ``$JMSLIKE_CONFIG``, or ./jmslike.toml if present.

    A file named by ``path`` or the variable must exist (:func:`load_config` says so if it
    does not), since someone meant it to apply; ./jmslike.toml only applies if it exists.
    """
    if path is not None:
        return Path(path)
    env = (os.environ if environ is None else environ).get(ENV_VAR)
    if env:
        return Path(env)
    local = Path.cwd() / FILE_NAME
    return local if local.exists() else None


_PART = r"""(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)"""
_HEADER = re.compile(rf"^\s*\[\s*({_PART}(?:\s*\.\s*{_PART})*)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(rf"^\s*({_PART})\s*=")
_PARTS = re.compile(_PART)


def _unquote(part: str) -> str:
    if part[:1] in ('"', "'"):
        if part[0] == "'":
            return part[1:-1]
        try:
            return str(json.loads(part))  # TOML's basic-string escapes are JSON's
        except ValueError:
            return part[1:-1]
    return part


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Line numbers of table headers and ``key = value`` lines, keyed by their path
    (``("factories", "orders", "prefetch")``).

    tomllib does not say where a value was written, and "line 7" is what a person
    fixing a file needs. This is a scan for the common forms (``[a.b]``, ``[a."q://x"]``,
    ``key =``, ``"key" =``); a key it misses is reported with its table's line, or none.
    """
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_multiline = False
    for number, line in enumerate(text.splitlines(), 1):
        # Skip the inside of multi-line strings, where "[x]" or "k =" is only text.
        if line.count('"""') % 2 or line.count("'''") % 2:
            in_multiline = not in_multiline
            if not in_multiline:
                continue
        elif in_multiline:
            continue
        header = _HEADER.match(line)
        if header:
            table = tuple(_unquote(p) for p in _PARTS.findall(header.group(1)))
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault((*table, _unquote(key.group(1))), number)
    return lines


def _table_name(path: tuple[str, ...]) -> str:
    """``("destinations", "queue://orders")`` -> ``destinations."queue://orders"``."""
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else f'"{p}"' for p in path)


def closest_name(given: str, names: list[str]) -> str | None:
    """The allowed name ``given`` most likely misspells, for an error to suggest: compared
    as a URL, a file and code may spell it (``prefetch``, ``maxPrefetch``,
    ``max_prefetch``); None if none is close. The lists of allowed names are long
    (forty-odd settings with a provider's), and a guess reads faster."""

    def plain(name: str) -> str:
        return name.replace("_", "").replace(".", "").lower()

    by_plain = {plain(name): name for name in names}
    close = difflib.get_close_matches(plain(given), list(by_plain), n=1, cutoff=0.75)
    return by_plain[close[0]] if close else None


def misspelling_hint(given: str, names: list[str], show: Callable[[str], str] = repr) -> str:
    """`` (did you mean 'prefetch'?)`` for an error about the unknown name ``given``, or
    nothing when no allowed name is close (``closest_name``); ``show`` writes the guess
    as the error writes names (``[defaults]`` for a table)."""
    guess = closest_name(given, names)
    return f" (did you mean {show(guess)}?)" if guess else ""


@dataclass(frozen=True)
class ConfigFile:
    """A parsed, shape-checked ``jmslike.toml``; what each table holds, and where."""

    path: Path
    data: Mapping[str, Any] = field(repr=False)
    lines: Mapping[tuple[str, ...], int] = field(repr=False, default_factory=dict)

    def where(self, table: tuple[str, ...], key: str | None = None) -> str:
        """``/etc/app/jmslike.toml:7 [factories.orders]``, for errors and sources; the
        line is the key's if known, else the table's."""
        line = self.lines.get((*table, key)) if key is not None else None
        line = line or self.lines.get(table)
        at = f"{self.path}:{line}" if line else str(self.path)
        return f"{at} [{_table_name(table)}]" if table else at

    def defaults(self) -> dict[str, Any]:
        """The ``[defaults]`` table: settings for every factory of the process."""
        return dict(self.data.get("defaults", {}))

    def factory_names(self) -> list[str]:
        return sorted(self.data.get("factories", {}))

    def factory(self, name: str) -> dict[str, Any]:
        """The ``[factories.NAME]`` table; a missing one lists the defined ones."""
        factories = self.data.get("factories", {})
        if name not in factories:
            known = ", ".join(self.factory_names())
            hint = misspelling_hint(name, self.factory_names())
            raise ConfigurationError(
                f"no factory {name!r} in {self.path}{hint}: expected a [factories.{name}] "
                f"table; defined: {known or 'none'}"
            )
        return dict(factories[name])

    def destinations(self) -> dict[str, dict[str, Any]]:
        """``{"queue://orders": {"unit_of_order": "session"}, ...}``, already checked."""
        return {name: dict(table) for name, table in self.data.get("destinations", {}).items()}

    def check(self) -> None:
        """Refuse a file whose shape is wrong, naming the file, line, table and key.

        Setting names are checked later, per factory, because a provider may add its own
        (``Provider.setting_names``); everything else is known here.
        """
        tables = ", ".join(f"[{t}]" for t in TABLES)
        for key, value in self.data.items():
            if key not in TABLES:
                line = self.lines.get((key,))
                at = f"{self.path}:{line}" if line else str(self.path)
                if isinstance(value, dict):
                    hint = misspelling_hint(key, list(TABLES), show="[{}]".format)
                    raise ConfigurationError(
                        f"unknown table [{key}] in {at}{hint}: a jmslike.toml has the tables "
                        f"{tables}"
                    )
                raise ConfigurationError(
                    f"unknown key {key!r} at the top of {at}: settings for every factory go "
                    f"in a [defaults] table; a jmslike.toml has the tables {tables}"
                )
            if not isinstance(value, dict):
                raise ConfigurationError(f"{self.where((key,))}: {key} must be a table")
        for name, entry in self.data.get("factories", {}).items():
            self._check_factory(name, entry)
        for name, entry in self.data.get("destinations", {}).items():
            self._check_destination(name, entry)

    def _check_factory(self, name: str, entry: object) -> None:
        table = ("factories", name)
        if not isinstance(entry, dict):
            raise ConfigurationError(
                f"{self.where(table)}: factories.{name} must be a table of settings"
            )
        for key in FACTORY_KEYS:
            if key in entry and not isinstance(entry[key], str):
                # The value itself is not shown: it may be the password.
                raise ConfigurationError(
                    f"{self.where(table, key)}: factories.{name}.{key} must be a string, "
                    f"not {type(entry[key]).__name__}"
                )

    def _check_destination(self, name: str, entry: object) -> None:
        table = ("destinations", name)
        try:
            parse_destination(name)
        except InvalidDestinationError:
            raise ConfigurationError(
                f"{self.where(table)}: a destination table is named by its destination with "
                f'its scheme, e.g. [destinations."queue://{name}"], not {name!r}'
            ) from None
        if not isinstance(entry, dict):
            raise ConfigurationError(f"{self.where(table)}: must be a table")
        allowed = ", ".join(f"{k} ({v})" for k, v in DESTINATION_KEYS.items())
        for key, value in entry.items():
            where = self.where(table, key)
            if key not in DESTINATION_KEYS:
                hint = misspelling_hint(key, list(DESTINATION_KEYS))
                raise ConfigurationError(
                    f"unknown key {key!r} in {where}{hint}; allowed: {allowed}"
                )
            if key == "strictly_ordered" and not isinstance(value, bool):
                raise ConfigurationError(
                    f"{where}: strictly_ordered = {value!r} must be true or false (bool)"
                )
            if key == "partitions" and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024
            ):
                raise ConfigurationError(
                    f"{where}: partitions = {value!r} must be a whole number from 1 to 1024"
                )
            if key == "consumer_group" and "partitions" not in entry:
                raise ConfigurationError(
                    f"{where}: consumer_group only applies to a partitioned queue; add "
                    "partitions = <count> to the table"
                )
            if key == "unit_of_order":
                if not isinstance(value, str) or not value:
                    raise ConfigurationError(
                        f"{where}: unit_of_order = {value!r} must be a non-empty string: "
                        '"session" for a generated name per session, or a fixed group name'
                    )
                if "," in value:
                    raise ConfigurationError(
                        f"{where}: unit_of_order = {value!r}: a group name given here cannot "
                        "contain ',' (it travels in the comma-separated setting "
                        "unit_of_order_destinations)"
                    )


def load_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> ConfigFile | None:
    """The config file (see :func:`find_config`), parsed and checked; None if there is none.

    Parsed once per file version (path, size, modification time, inode), since every
    ConnectionFactory of the process asks.
    """
    file = find_config(path, environ)
    if file is None:
        return None
    try:
        stat = file.stat()
    except OSError as exc:
        named = "given" if path is not None else f"named by ${ENV_VAR}"
        raise ConfigurationError(
            f"cannot read configuration file {file} ({named}): {exc.strerror or exc}"
        ) from None
    return _load(str(file), stat.st_mtime_ns, stat.st_size, stat.st_ino)


@functools.lru_cache(maxsize=8)
def _load(path: str, _mtime_ns: int, _size: int, _inode: int) -> ConfigFile:
    """Parse and check one version of a file; the stat values only key the cache."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read configuration file {file}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(_decode_error(file, exc)) from None
    config = ConfigFile(file, data, _key_lines(text))
    config.check()
    return config


def _decode_error(file: Path, exc: tomllib.TOMLDecodeError) -> str:
    """``jmslike.toml:3:9: configuration file does not parse: ...``: the position first,
    as compilers write it, so that editors can jump to it."""
    message = str(exc)
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if match:
        reason = message[: match.start()]
        return (
            f"configuration file {file} does not parse at line {match.group(1)}, "
            f"column {match.group(2)}: {reason}"
        )
    return f"configuration file {file} does not parse: {message}"


def load_factory_config(
    name: str, path: str | os.PathLike[str] | None = None
) -> tuple[str, str | None, str | None, dict[str, Any], str]:
    """(url, user, password, settings, source) of factory ``name``.

    ``source`` names the file and table, for errors about the settings. The settings
    are the table's keys as written; :func:`jmslike.config.resolve_settings` puts them in
    their place among the other sources (``factory=name``).
    """
    config = load_config(path)
    if config is None:
        raise ConfigurationError(
            f"no configuration file for factory {name!r}: set ${ENV_VAR} or create ./{FILE_NAME}"
        )
    entry = config.factory(name)
    url = entry.pop("url", "embedded://")
    user = entry.pop("user", None)
    password = entry.pop("password", None)
    return url, user, password, entry, config.where(("factories", name))
