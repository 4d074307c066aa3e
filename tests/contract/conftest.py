"""Fixtures of the provider contract suite.

Every test in ``tests/contract`` runs once per :class:`ProviderCase` in
:data:`PROVIDER_CASES`. Today these are three configurations of the in-process embedded
broker: in memory keeping groups itself (``embedded``), with its file store
(``embedded-file``), and ignoring groups like RabbitMQ so that jmslike's client-side gate
keeps them (``embedded-client-gate``). STOMP and AMQP brokers (markers ``stomp``,
``activemq``, ``artemis``, ``rabbitmq``, ``amqp``) are added by appending a case whose
``url_factory`` returns their URL.

Tests use only the public API (docs/getting-started.md), plus the helpers below:

* ``provider_url``: a fresh URL per test (for the embedded broker a broker of its own,
  ``embedded://test-<uuid>``, since brokers with different names are separate);
* ``make_factory(**settings)`` / ``factory``: ConnectionFactory objects for that URL;
* ``make_connection(factory=None)`` / ``connection``: connections, created (not started)
  and closed at teardown;
* ``drain(consumer, timeout)``: every message the consumer gets until a receive times out;
* ``receive_any(consumers, timeout)``: the first message any of several consumers gets, as
  ``(index, message)`` (``(None, None)`` on timeout), and ``drain_any(consumers,
  timeout)``: every ``(index, message)`` they get until none comes for ``timeout``; for
  brokers where a group's next message may wait at a consumer other than the one that
  held the group (``connection.capabilities.group_scope`` other than "session");
* ``require(connection, "capability")``: the one way a test may skip, naming the
  capability it needs, read from ``connection.capabilities``;
* ``unique``: a short unique name for destinations, groups and subscriptions;
* ``@pytest.mark.known_bug("case-id", reason="BUG: ...")``: a strict xfail of the test on
  that provider case only, or on one parametrisation (its full id, "case-id-param"): a
  library bug the test exposes there ("BUG:"), or a broker behaviour jmslike cannot yet
  change ("BROKER-LIMIT:", listed in docs/providers.md); ``strict=False`` only for a bug
  that shows intermittently (say so in the reason); the other cases run as
  usual, and once the bug is fixed the XPASS fails the run, so the mark is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from brokerenv import broker_url

from jmslike import Connection, ConnectionFactory, Message, MessageConsumer

# -------------------------------------------------------------------- provider cases


def _lazy_env(variable: str) -> Callable[[], str]:
    """A case setting read from the broker environment when a test runs, not at import."""
    return lambda: broker_url(variable)


def _empty_dead_letter_queue(url: str) -> None:
    """A real broker's dead-letter queue is shared by every test: start each test with it
    empty, so a test sees only what it dead-lettered itself."""
    with ConnectionFactory(url).create_connection() as conn:
        consumer = conn.create_session().create_consumer("queue://DLQ")
        conn.start()
        while consumer.receive(0.05) is not None:
            pass


def _embedded_url() -> str:
    return f"embedded://test-{uuid.uuid4().hex}"


def _embedded_gate_url() -> str:
    """An embedded broker that ignores groups and priorities, as RabbitMQ does: jmslike
    keeps the groups with its client-side gate (ORD-16)."""
    return f"embedded://test-{uuid.uuid4().hex}?nativeGroups=false"


def _embedded_file_url() -> str:
    """An embedded broker with a file store: persistent messages go through SQLite."""
    return f"embedded://{_STORE_DIR}/test-{uuid.uuid4().hex}.db"


_STORE_DIR = tempfile.mkdtemp(prefix="jmslike-contract-")


def _embedded_cleanup(url: str) -> None:
    """Forget the per-test broker even if it still holds messages or subscriptions."""
    from jmslike.embedded import drop_broker

    name = url.removeprefix("embedded://").partition("?")[0]
    if name.startswith("/"):
        drop_broker(str(Path(name).resolve()))
        for leftover in Path(name).parent.glob(Path(name).name + "*"):
            leftover.unlink(missing_ok=True)
    else:
        drop_broker(name)


@dataclass(frozen=True)
class ProviderCase:
    """One provider configuration the whole contract suite runs against.

    ``url_factory`` returns a URL for one test (isolated from every other test where the
    provider allows). ``marks`` select the case (``-m embedded``). ``capabilities_expected``
    names the ``connection.capabilities`` flags this broker must report True; tests that
    need a capability call ``require()`` rather than reading the case. ``settings`` are
    extra factory settings every factory of the case gets (credentials, timeouts);
    ``cleanup(url)`` runs after each test. A callable setting is called for its value when
    the factory is made.
    """

    id: str
    url_factory: Callable[[], str]
    marks: tuple[Any, ...] = ()
    capabilities_expected: frozenset[str] = frozenset()
    settings: dict[str, Any] = field(default_factory=dict)
    cleanup: Callable[[str], None] | None = None
    prepare: Callable[[str], None] | None = None
    """Runs before each test with its URL (a real broker: empty the shared DLQ)."""


ALL_CAPABILITIES = frozenset(
    {
        "native_groups",
        "selectors",
        "transactions",
        "delivery_delay",
        "priority",
        "time_to_live",
        "durable_subscriptions",
        "shared_subscriptions",
        "temporary_destinations",
        "browsers",
        "exclusive_consumers",
        "delivery_count",
        "dead_letter_queue",
    }
)

PROVIDER_CASES: list[ProviderCase] = [
    ProviderCase(
        id="embedded",
        url_factory=_embedded_url,
        marks=(pytest.mark.embedded,),
        capabilities_expected=ALL_CAPABILITIES,
        cleanup=_embedded_cleanup,
    ),
    ProviderCase(
        id="embedded-file",
        url_factory=_embedded_file_url,
        marks=(pytest.mark.embedded,),
        capabilities_expected=ALL_CAPABILITIES,
        cleanup=_embedded_cleanup,
    ),
    ProviderCase(
        id="embedded-client-gate",
        url_factory=_embedded_gate_url,
        marks=(pytest.mark.embedded,),
        capabilities_expected=ALL_CAPABILITIES - {"native_groups", "priority", "delivery_delay"},
        cleanup=_embedded_cleanup,
    ),
    ProviderCase(
        id="activemq-stomp",
        url_factory=lambda: broker_url("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL"),
        marks=(pytest.mark.stomp, pytest.mark.activemq),
        prepare=_empty_dead_letter_queue,
        capabilities_expected=frozenset(
            {
                "native_groups",
                "selectors",
                "transactions",
                "time_to_live",
                "durable_subscriptions",
                "temporary_destinations",
                "browsers",
                "delivery_count",
                "dead_letter_queue",
                "exclusive_consumers",
            }
        ),
    ),
    ProviderCase(
        id="artemis-stomp",
        # managementUrl in the query too: tests that build a factory from the URL alone
        # get Artemis' browsing and subscription checks as well.
        url_factory=lambda: (
            broker_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL")
            + "?managementUrl="
            + quote(broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), safe="")
        ),
        marks=(pytest.mark.stomp, pytest.mark.artemis),
        settings={"managementUrl": _lazy_env("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL")},
        prepare=_empty_dead_letter_queue,
        capabilities_expected=frozenset(
            {
                "native_groups",
                "selectors",
                "transactions",
                "time_to_live",
                "durable_subscriptions",
                "shared_subscriptions",
                "browsers",
                "delivery_count",
                "dead_letter_queue",
                "exclusive_consumers",
            }
        ),
    ),
    ProviderCase(
        id="rabbitmq-stomp",
        url_factory=lambda: broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL"),
        marks=(pytest.mark.stomp, pytest.mark.rabbitmq),
        prepare=_empty_dead_letter_queue,
        capabilities_expected=frozenset(
            {
                "transactions",
                "time_to_live",
                "durable_subscriptions",
                "shared_subscriptions",
                "temporary_destinations",
                "delivery_count",
                "dead_letter_queue",
                "exclusive_consumers",
            }
        ),
    ),
    ProviderCase(
        id="activemq-amqp",
        url_factory=lambda: broker_url("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL"),
        marks=(pytest.mark.amqp, pytest.mark.activemq),
        prepare=_empty_dead_letter_queue,
        capabilities_expected=frozenset(
            {
                "native_groups",
                "selectors",
                "transactions",
                "time_to_live",
                "durable_subscriptions",
                "temporary_destinations",
                "browsers",
                "delivery_count",
                "dead_letter_queue",
                "exclusive_consumers",
            }
        ),
    ),
    ProviderCase(
        id="artemis-amqp",
        # managementUrl as for artemis-stomp: exclusive queues (ORD-18 across processes,
        # partitions) are set through Artemis' management API.
        url_factory=lambda: (
            broker_url("JMSLIKE_TEST_ARTEMIS_AMQP_URL")
            + "?managementUrl="
            + quote(broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), safe="")
        ),
        marks=(pytest.mark.amqp, pytest.mark.artemis),
        settings={"managementUrl": _lazy_env("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL")},
        prepare=_empty_dead_letter_queue,
        capabilities_expected=frozenset(
            {
                "native_groups",
                "selectors",
                "transactions",
                "time_to_live",
                "durable_subscriptions",
                "shared_subscriptions",
                "temporary_destinations",
                "browsers",
                "delivery_count",
                "dead_letter_queue",
                "exclusive_consumers",
            }
        ),
    ),
    ProviderCase(
        id="rabbitmq-amqp",
        # A vhost of its own (scripts/brokers/rabbitmq.sh says why).
        url_factory=lambda: broker_url("JMSLIKE_TEST_RABBITMQ_AMQP_URL") + "/jmslike-amqp",
        marks=(pytest.mark.amqp, pytest.mark.rabbitmq),
        prepare=_empty_dead_letter_queue,
        capabilities_expected=frozenset(
            {
                "transactions",
                "time_to_live",
                "delivery_count",
                "dead_letter_queue",
                "exclusive_consumers",
            }
        ),
    ),
]


@pytest.fixture(params=[pytest.param(c, id=c.id, marks=c.marks) for c in PROVIDER_CASES])
def provider_case(request: pytest.FixtureRequest) -> ProviderCase:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def provider_url(provider_case: ProviderCase) -> Iterator[str]:
    url = provider_case.url_factory()
    if provider_case.prepare is not None:
        provider_case.prepare(url)
    yield url
    if provider_case.cleanup is not None:
        provider_case.cleanup(url)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "known_bug(case_ids, reason): strict xfail on the named provider case(s) only "
        "(tests/contract/conftest.py)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Turn ``known_bug`` marks into strict xfails on the named provider cases' runs."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("provider_case") if callspec is not None else None
        if not isinstance(case, ProviderCase):
            continue
        for mark in item.iter_markers("known_bug"):
            ids = {mark.args[0]} if isinstance(mark.args[0], str) else set(mark.args[0])
            if case.id in ids or callspec.id in ids:
                strict = mark.kwargs.get("strict", True)
                item.add_marker(pytest.mark.xfail(strict=strict, reason=mark.kwargs["reason"]))


# ------------------------------------------------------------ factories, connections


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


# -------------------------------------------------------------------------- helpers


def drain_consumer(consumer: MessageConsumer, timeout: float = 0.2) -> list[Message]:
    """Receive until a receive with ``timeout`` returns None."""
    out: list[Message] = []
    while True:
        msg = consumer.receive(timeout)
        if msg is None:
            return out
        out.append(msg)


def receive_any(
    consumers: list[MessageConsumer], timeout: float = 2.0, poll: float = 0.02
) -> tuple[int, Message] | tuple[None, None]:
    """Poll ``consumers`` in turn with short receives until one returns a message.

    Returns ``(index into consumers, message)``, or ``(None, None)`` once ``timeout``
    seconds passed with no message. Every consumer is polled at least once.
    """
    deadline = time.monotonic() + timeout
    while True:
        for index, consumer in enumerate(consumers):
            msg = consumer.receive_no_wait() or consumer.receive(poll)
            if msg is not None:
                return index, msg
        if time.monotonic() >= deadline:
            return None, None


def drain_any(consumers: list[MessageConsumer], timeout: float = 0.2) -> list[tuple[int, Message]]:
    """``receive_any`` until no consumer gets a message for ``timeout`` seconds."""
    out: list[tuple[int, Message]] = []
    while True:
        index, msg = receive_any(consumers, timeout)
        if index is None or msg is None:
            return out
        out.append((index, msg))


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


def texts(messages: list[Message]) -> list[str | None]:
    """The text bodies of ``messages`` (helper for assertions)."""
    return [getattr(m, "text", None) for m in messages]


@pytest.fixture
def body_texts() -> Callable[[list[Message]], list[str | None]]:
    return texts
