"""Named connection factories from a ``jmslike.toml`` file (ORD-6 without code changes).

The file is ``$JMSLIKE_CONFIG`` if set, else ``./jmslike.toml``::

    [factories.orders]
    url = "embedded://"
    enable_ordering_group = true
    default_ordering_group_name = "orders"

Every key besides ``url``, ``user`` and ``password`` is a factory setting; a wrong key or
type is an error naming the file, the factory and the key.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from jmslike.errors import ConfigurationError

__all__ = ["find_config", "load_factory_config"]

ENV_VAR = "JMSLIKE_CONFIG"
FILE_NAME = "jmslike.toml"


def find_config(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to use: ``path``, ``$JMSLIKE_CONFIG``, or ./jmslike.toml if present."""
    if path is not None:
        return Path(path)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    local = Path.cwd() / FILE_NAME
    return local if local.exists() else None


def load_factory_config(
    name: str, path: str | os.PathLike[str] | None = None
) -> tuple[str, str | None, str | None, dict[str, Any], str]:
    """(url, user, password, settings, source) of factory ``name``; ``source`` names the
    file and table, for errors about the settings."""
    file = find_config(path)
    if file is None:
        raise ConfigurationError(
            f"no configuration file for factory {name!r}: set ${ENV_VAR} or create ./{FILE_NAME}"
        )
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read configuration file {file}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"configuration file {file} does not parse: {exc}") from None
    factories = data.get("factories", {})
    if not isinstance(factories, dict) or name not in factories:
        known = ", ".join(sorted(factories)) if isinstance(factories, dict) else ""
        raise ConfigurationError(
            f"no factory {name!r} in {file} (expected a [factories.{name}] table); "
            f"defined: {known or 'none'}"
        )
    entry = dict(factories[name])
    url = entry.pop("url", "embedded://")
    if not isinstance(url, str):
        raise ConfigurationError(f"{file}: factories.{name}.url must be a string")
    user = entry.pop("user", None)
    password = entry.pop("password", None)
    for key in ("user", "password"):
        value = user if key == "user" else password
        if value is not None and not isinstance(value, str):
            raise ConfigurationError(f"{file}: factories.{name}.{key} must be a string")
    return url, user, password, entry, f"{file} [factories.{name}]"
