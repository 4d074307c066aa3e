"""Where the real test brokers listen, for every test that talks to one.

``scripts/brokers.sh start`` writes ``.brokers/brokers.env`` (or ``$JMSLIKE_BROKERS_DIR``);
``JMSLIKE_TEST_*`` environment variables override it. A broker the suite was asked to use
but that is not there fails the test: broker tests never skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["broker_env", "broker_url"]


def broker_env() -> dict[str, str]:
    """``JMSLIKE_TEST_*`` settings: the environment over ``.brokers/brokers.env``."""
    env: dict[str, str] = {}
    state = Path(os.environ.get("JMSLIKE_BROKERS_DIR", Path(__file__).parents[1] / ".brokers"))
    env_file = state / "brokers.env"
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.startswith("#"):
                env[key.strip()] = value.strip()
    env.update({k: v for k, v in os.environ.items() if k.startswith("JMSLIKE_TEST_")})
    return env


def broker_url(variable: str) -> str:
    """The URL (or setting) ``variable`` of a real test broker; fails the test if unset."""
    value = broker_env().get(variable)
    if not value:
        pytest.fail(
            f"{variable} is not set and no broker is running: start the brokers with "
            "`scripts/brokers.sh start` (scripts/test.sh does it)"
        )
    return value
