"""The pytest plugin of jmslike's provider contract suite.

A provider author runs the suite that jmslike's own providers pass against theirs (see
docs/plugins.md, "Testing your provider")::

    pytest -p jmslike.testing.plugin --pyargs jmslike.testing.suite --jmslike-url=tiny://x

It is loaded explicitly (``-p``), never through a ``pytest11`` entry point, so that
installing jmslike does not change anyone else's pytest runs. It gives the scenarios in
:mod:`jmslike.testing.suite` their fixtures:

* ``provider_case``: the :class:`~jmslike.testing.cases.ProviderCase` under test; by
  default one built from ``--jmslike-url``. A ``conftest.py`` may override it, e.g. with
  a parametrised fixture running the suite over several configurations (jmslike's own
  ``tests/contract/conftest.py`` does);
* ``provider_url``: the URL for one test (the case's ``prepare``/``cleanup`` around it);
* ``make_factory(**settings)`` / ``factory``: ConnectionFactory objects for that URL;
* ``make_connection(factory=None)`` / ``connection``: connections, created (not started)
  and closed at teardown;
* ``drain(consumer, timeout)``, ``receive_any(consumers, timeout)``,
  ``drain_any(consumers, timeout)``, ``body_texts(messages)``: the helpers of
  :mod:`jmslike.testing.helpers`;
* ``require(connection, "capability", value=True)``: the one way a scenario may skip,
  naming the capability it needs, read from ``connection.capabilities``; so a provider
  with fewer capabilities runs what applies to it;
* ``unique("prefix")``: a short name no other test uses, for destinations, groups and
  subscriptions (tests on a shared broker stay apart through it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jmslike import ConfigurationError, Connection, ConnectionFactory, Message
from jmslike.testing.cases import ProviderCase
from jmslike.testing.helpers import drain_any, drain_consumer, receive_any, texts

__all__ = [
    "SuiteOptionError",
    "body_texts",
    "connection",
    "drain",
    "drain_any_fixture",
    "empty_dead_letter_queue",
    "factory",
    "make_connection",
    "make_factory",
    "provider_case",
    "provider_url",
    "receive_any_fixture",
    "require",
    "require_capability",
    "unique",
]

_log = logging.getLogger("jmslike.testing.plugin")

DEAD_LETTER_QUEUE = "queue://DLQ"


class SuiteOptionError(ConfigurationError):
    """The suite was run without the URL it needs; every scenario errors with this."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jmslike", "jmslike provider contract suite")
    group.addoption(
        "--jmslike-url",
        dest="jmslike_url",
        default=None,
        metavar="URL",
        help="broker URL the contract suite runs against, e.g. tiny://localhost "
        "(a broker for tests: the suite empties its queue://DLQ before each test)",
    )


def empty_dead_letter_queue(url: str, **settings: Any) -> None:
    """A broker's dead-letter queue is shared by every test: start each test with it empty,
    so that a scenario sees only what it dead-lettered itself. Brokers without one are
    left alone."""
    with ConnectionFactory(url, **settings).create_connection() as conn:
        if not conn.capabilities.dead_letter_queue:
            return
        consumer = conn.create_session().create_consumer(DEAD_LETTER_QUEUE)
        conn.start()
        dropped = 0
        while consumer.receive(0.05) is not None:
            dropped += 1
        if dropped:
            _log.debug("dropped %d leftover message(s) from %s", dropped, DEAD_LETTER_QUEUE)


def _case_from_options(config: pytest.Config) -> ProviderCase:
    url: str | None = config.getoption("jmslike_url")
    if not url:
        raise SuiteOptionError(
            "the jmslike contract suite needs a broker URL: pass --jmslike-url=<scheme>://..."
            " (or override the provider_case fixture in a conftest.py); got none"
        )
    scheme = url.partition("://")[0] or url
    return ProviderCase(id=scheme, url_factory=lambda: url, prepare=empty_dead_letter_queue)


@pytest.fixture
def provider_case(request: pytest.FixtureRequest) -> ProviderCase:
    """The provider configuration under test: from ``--jmslike-url`` unless a conftest
    overrides this fixture."""
    return _case_from_options(request.config)


@pytest.fixture
def provider_url(provider_case: ProviderCase) -> Iterator[str]:
    url = provider_case.url_factory()
    if provider_case.prepare is not None:
        provider_case.prepare(url)
    yield url
    if provider_case.cleanup is not None:
        provider_case.cleanup(url)


@pytest.fixture
def make_factory(
    provider_case: ProviderCase, provider_url: str
) -> Callable[..., ConnectionFactory]:
    """``make_factory(**settings)``: a factory for this test's broker with extra settings."""

    def make(**settings: Any) -> ConnectionFactory:
        case_settings = {
            key: value() if callable(value) else value
            for key, value in provider_case.settings.items()
        }
        return ConnectionFactory(provider_url, **{**case_settings, **settings})

    return make


@pytest.fixture
def factory(make_factory: Callable[..., ConnectionFactory]) -> ConnectionFactory:
    return make_factory()


@pytest.fixture
def make_connection(factory: ConnectionFactory) -> Iterator[Callable[..., Connection]]:
    """``make_connection(factory=None)``: a new (stopped) connection, closed at teardown."""
    opened: list[Connection] = []

    def make(from_factory: ConnectionFactory | None = None) -> Connection:
        conn = (from_factory or factory).create_connection()
        opened.append(conn)
        return conn

    yield make
    for conn in reversed(opened):
        with contextlib.suppress(Exception):
            conn.close()


@pytest.fixture
def connection(make_connection: Callable[..., Connection]) -> Connection:
    """A connection to this test's broker: created, not started, closed at teardown."""
    return make_connection()


def require_capability(connection: Connection, name: str, value: object = True) -> None:
    """Skip the test, naming the capability, unless the broker reports it as ``value``
    (True by default; e.g. ``require(conn, "group_scope", "session")``)."""
    caps = connection.capabilities
    known = {f.name for f in dataclasses.fields(caps)}
    if name not in known:
        raise AssertionError(f"require(): unknown capability {name!r}; known: {sorted(known)}")
    actual = getattr(caps, name)
    if actual != value:
        pytest.skip(
            f"broker lacks capability {name}={value!r} (has {actual!r}; "
            f"{caps.provider}, {caps.broker})"
        )


@pytest.fixture
def drain() -> Callable[..., list[Message]]:
    return drain_consumer


@pytest.fixture(name="receive_any")
def receive_any_fixture() -> Callable[..., tuple[int, Message] | tuple[None, None]]:
    return receive_any


@pytest.fixture(name="drain_any")
def drain_any_fixture() -> Callable[..., list[tuple[int, Message]]]:
    return drain_any


@pytest.fixture
def require() -> Callable[..., None]:
    return require_capability


@pytest.fixture
def unique() -> Callable[[str], str]:
    """``unique("orders")`` -> ``"orders-1a2b3c4d"``: names no other test uses."""

    def make(prefix: str = "x") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
def body_texts() -> Callable[[list[Message]], list[str | None]]:
    return texts
