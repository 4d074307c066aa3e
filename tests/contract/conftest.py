"""jmslike's provider cases for the contract suite.

The scenarios live in :mod:`jmslike.testing.suite` and their fixtures in
:mod:`jmslike.testing.plugin` (shipped, so that third-party providers run the very same
code, docs/plugins.md). This conftest is the repository's layer over them: it overrides
``provider_case`` with a fixture parametrised over :data:`PROVIDER_CASES`, so every test
in ``tests/contract`` (the ``test_*.py`` modules here re-export the suite's) runs once per
case. Today these are three configurations of the in-process embedded broker: in memory
keeping groups itself (``embedded``), with its file store (``embedded-file``), and
ignoring groups like RabbitMQ so that jmslike's client-side gate keeps them
(``embedded-client-gate``), plus the six real broker x protocol cases (markers ``stomp``,
``amqp``, ``activemq``, ``artemis``, ``rabbitmq``) whose ``url_factory`` reads their URL
from the broker environment.

Tests use only the public API (docs/getting-started.md), plus the plugin's fixtures
(``provider_url``, ``make_factory``/``factory``, ``make_connection``/``connection``,
``drain``, ``receive_any``, ``drain_any``, ``require``, ``unique``, ``body_texts``; see
jmslike/testing/plugin.py).

Known failures on one case are named here, not in the shipped suite:

* ``@pytest.mark.known_bug("case-id", reason="BUG: ...")`` on a test written in this
  directory, or an entry of :data:`KNOWN_BUGS` for a scenario of the shipped suite: a
  strict xfail of the test on that provider case only, or on one parametrisation (its
  full id, "case-id-param"): a library bug the test exposes there ("BUG:"), or a broker
  behaviour jmslike cannot yet change ("BROKER-LIMIT:", listed in docs/providers.md);
  ``strict=False`` only for a bug that shows intermittently (say so in the reason); the
  other cases run as usual, and once the bug is fixed the XPASS fails the run, so the
  mark is removed.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import pytest
from brokerenv import broker_url

from jmslike.testing.cases import ProviderCase
from jmslike.testing.plugin import (  # noqa: F401 - fixtures, found by pytest by name
    body_texts,
    connection,
    drain,
    drain_any_fixture,
    empty_dead_letter_queue,
    factory,
    make_connection,
    make_factory,
    provider_url,
    receive_any_fixture,
    require,
    unique,
)

# -------------------------------------------------------------------- provider cases


def _lazy_env(variable: str) -> Callable[[], str]:
    """A case setting read from the broker environment when a test runs, not at import."""
    return lambda: broker_url(variable)


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
        "no_local",
        "browsers",
        "exclusive_consumers",
        "delivery_count",
        "dead_letter_queue",
    }
)

# What each broker lacks, as its connections report it (docs/providers.md says why).
_NO_TIMING = frozenset({"delivery_delay", "priority"})
"""None of the three real brokers, as the test brokers run them, has these two."""
ACTIVEMQ_CAPABILITIES = ALL_CAPABILITIES - _NO_TIMING - {"shared_subscriptions"}
ARTEMIS_CAPABILITIES = ALL_CAPABILITIES - _NO_TIMING
RABBITMQ_CAPABILITIES = ALL_CAPABILITIES - _NO_TIMING - {"native_groups", "selectors", "browsers"}


def _artemis_url(variable: str) -> str:
    """Artemis' URL with ``managementUrl`` in the query: tests that build a factory from
    the URL alone get Artemis' browsing and subscription checks, and its exclusive queues
    (ORD-18 across processes, partitions), which are set through the management API."""
    management = quote(broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"), safe="")
    return f"{broker_url(variable)}?managementUrl={management}"


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
        capabilities_expected=ALL_CAPABILITIES - _NO_TIMING - {"native_groups"},
        cleanup=_embedded_cleanup,
    ),
    ProviderCase(
        id="activemq-stomp",
        url_factory=lambda: broker_url("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL"),
        marks=(pytest.mark.stomp, pytest.mark.activemq),
        prepare=empty_dead_letter_queue,
        capabilities_expected=ACTIVEMQ_CAPABILITIES,
    ),
    ProviderCase(
        id="artemis-stomp",
        url_factory=lambda: _artemis_url("JMSLIKE_TEST_ARTEMIS_STOMP_URL"),
        marks=(pytest.mark.stomp, pytest.mark.artemis),
        settings={"managementUrl": _lazy_env("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL")},
        prepare=empty_dead_letter_queue,
        capabilities_expected=ARTEMIS_CAPABILITIES,
    ),
    ProviderCase(
        id="rabbitmq-stomp",
        url_factory=lambda: broker_url("JMSLIKE_TEST_RABBITMQ_STOMP_URL"),
        marks=(pytest.mark.stomp, pytest.mark.rabbitmq),
        # The management API of the broker under test (strictly ordered queues and
        # subscriptions, partitions, unsubscribe): by default jmslike would ask
        # host:15672, another broker when the test brokers run on a port offset.
        settings={"managementUrl": _lazy_env("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL")},
        prepare=empty_dead_letter_queue,
        capabilities_expected=RABBITMQ_CAPABILITIES,
    ),
    ProviderCase(
        id="activemq-amqp",
        url_factory=lambda: broker_url("JMSLIKE_TEST_ACTIVEMQ_AMQP_URL"),
        marks=(pytest.mark.amqp, pytest.mark.activemq),
        prepare=empty_dead_letter_queue,
        capabilities_expected=ACTIVEMQ_CAPABILITIES,
    ),
    ProviderCase(
        id="artemis-amqp",
        url_factory=lambda: _artemis_url("JMSLIKE_TEST_ARTEMIS_AMQP_URL"),
        marks=(pytest.mark.amqp, pytest.mark.artemis),
        settings={"managementUrl": _lazy_env("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL")},
        prepare=empty_dead_letter_queue,
        capabilities_expected=ARTEMIS_CAPABILITIES,
    ),
    ProviderCase(
        id="rabbitmq-amqp",
        # A vhost of its own (scripts/brokers/rabbitmq.sh says why).
        url_factory=lambda: broker_url("JMSLIKE_TEST_RABBITMQ_AMQP_URL") + "/jmslike-amqp",
        marks=(pytest.mark.amqp, pytest.mark.rabbitmq),
        settings={"managementUrl": _lazy_env("JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL")},
        prepare=empty_dead_letter_queue,
        capabilities_expected=RABBITMQ_CAPABILITIES,
    ),
]


@pytest.fixture(params=[pytest.param(c, id=c.id, marks=c.marks) for c in PROVIDER_CASES])
def provider_case(request: pytest.FixtureRequest) -> ProviderCase:
    """Overrides the plugin's ``--jmslike-url`` case: every test runs once per case."""
    return request.param  # type: ignore[no-any-return]


# ------------------------------------------------------------------------ known bugs


class KnownBug(NamedTuple):
    """A strict xfail of a shipped scenario on the named case ids (or full callspec ids)."""

    cases: str | tuple[str, ...]
    reason: str
    strict: bool = True


KNOWN_BUGS: dict[str, list[KnownBug]] = {
    # "<suite module>::<scenario function>": why it fails on which of PROVIDER_CASES.
    # Kept here so that jmslike.testing.suite names none of this repository's cases.
    "test_messaging::test_time_to_live_expired_never_delivered": [
        KnownBug(
            ("rabbitmq-stomp", "rabbitmq-amqp"),
            reason="BROKER-LIMIT: RabbitMQ has no browsers (capability browsers)",
        ),
    ],
    "test_messaging::test_browser_lists_a_long_queue": [
        KnownBug(
            ("activemq-stomp", "activemq-amqp"),
            reason="BROKER-LIMIT: ActiveMQ Classic lists at most maxBrowsePageSize (400 "
            "by default) messages to a browser (docs/providers.md, browsers)",
        ),
    ],
    "test_ordering::test_ord3_ord9_shared_subscription_holds_group": [
        KnownBug(
            "rabbitmq-stomp",
            reason="BROKER-LIMIT: STOMP client window, ORD-9 (docs/providers.md, limits)",
        ),
    ],
    "test_ordering::test_ord7_application_group_property_is_a_group": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "rabbitmq-stomp"),
            reason="BROKER-LIMIT: STOMP client window, ORD-9 (docs/providers.md, limits)",
        ),
    ],
    "test_ordering::test_ord9_group_held_by_one_session_others_flow_past": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "rabbitmq-stomp"),
            reason="BROKER-LIMIT: STOMP client window, ORD-9 (docs/providers.md, limits)",
        ),
    ],
    "test_ordering::test_ord9_others_flow_past_at_once": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "rabbitmq-stomp"),
            reason="BROKER-LIMIT: STOMP client window, ORD-9 (docs/providers.md, limits)",
        ),
    ],
    "test_ordering::test_ord10_listener_finishes_on_return": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "artemis-amqp", "activemq-amqp"),
            reason="BROKER-LIMIT: group pinned to a consumer for life (docs/providers.md)",
        ),
    ],
    "test_ordering::test_ord10_ord13_listener_raise_redelivers_then_group_moves_on": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "artemis-amqp", "activemq-amqp"),
            reason="BROKER-LIMIT: group pinned to a consumer for life (docs/providers.md)",
        ),
    ],
    "test_ordering::test_ord12_redelivery_delay_blocks_its_group": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "rabbitmq-stomp"),
            reason="BROKER-LIMIT: STOMP client window, ORD-9 (docs/providers.md, limits)",
        ),
    ],
    "test_ordering::test_ord14_selector_consumer_gets_matching_in_order_and_warns_once": [
        KnownBug(
            ("activemq-stomp", "artemis-stomp", "artemis-amqp", "activemq-amqp"),
            reason="BROKER-LIMIT: group pinned to a consumer for life (docs/providers.md)",
        ),
    ],
    "test_strict_order::test_ord18_declared_by_setting_url_or_code": [
        KnownBug(
            ("activemq-stomp", "activemq-amqp"),
            reason="BROKER-LIMIT: Classic's queue browser also lists delivered, "
            "unacknowledged messages",
        ),
        KnownBug(
            ("rabbitmq-stomp", "rabbitmq-amqp"),
            reason="BROKER-LIMIT: RabbitMQ has no browsers (capability browsers)",
        ),
    ],
}


def scenario_key(function: Callable[..., object]) -> str:
    """``"<module>::<function>"``, the :data:`KNOWN_BUGS` key of a test function."""
    return f"{function.__module__.rpartition('.')[2]}::{function.__name__}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "known_bug(case_ids, reason): strict xfail on the named provider case(s) only "
        "(tests/contract/conftest.py)",
    )


def _known_bugs(item: pytest.Item) -> list[KnownBug]:
    bugs = [
        KnownBug(mark.args[0], mark.kwargs["reason"], mark.kwargs.get("strict", True))
        for mark in item.iter_markers("known_bug")
    ]
    function = getattr(item, "function", None)
    if function is not None:
        bugs.extend(KNOWN_BUGS.get(scenario_key(function), ()))
    return bugs


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Turn ``known_bug`` marks and :data:`KNOWN_BUGS` entries into strict xfails on the
    named provider cases' runs."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("provider_case") if callspec is not None else None
        if not isinstance(case, ProviderCase):
            continue
        for bug in _known_bugs(item):
            ids = {bug.cases} if isinstance(bug.cases, str) else set(bug.cases)
            if case.id in ids or callspec.id in ids:
                item.add_marker(pytest.mark.xfail(strict=bug.strict, reason=bug.reason))
