"""Fixtures shared by the integration tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from brokercases import case_url
from brokerenv import broker_url
from faultproxy import Relay
from restartable import RestartableBrokers

from jmslike.spi import console


@pytest.fixture(scope="session")
def restartable() -> Iterator[RestartableBrokers]:
    """The second set of brokers that tests may stop and kill (tests/restartable.py),
    one for the whole session: each broker starts once, at the first test that asks."""
    brokers = RestartableBrokers()
    yield brokers
    brokers.close()


@pytest.fixture
def relay_for(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, Relay]]:
    """(URL through a relay, direct URL, relay) for the case ``request.param`` (one of
    brokercases.CASES, given with ``indirect=True``)."""
    case = request.param
    direct = case_url(case)
    host, port = re.search(r"@?(127\.0\.0\.1):(\d+)", direct).groups()  # type: ignore[union-attr]
    relay = Relay((host, int(port)), name=case)
    yield direct.replace(f"{host}:{port}", f"127.0.0.1:{relay.port}", 1), direct, relay
    relay.close()


@pytest.fixture
def console_at_default_address() -> Iterator[None]:
    """The suite's Artemis console, reachable where ``artemis create`` puts it (port
    8161) through a relay, so that jmslike's look-up (jmslike/spi/console.py) meets the
    real Jolokia there. Answers kept from before or for later are dropped."""
    management = urlsplit(broker_url("JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL"))
    try:
        relay = Relay((management.hostname or "127.0.0.1", management.port or 8161), port=8161)
    except OSError as exc:
        pytest.fail(f"port 8161 is taken ({exc}): this test serves Artemis' console there")
    console.forget()
    try:
        yield
    finally:
        relay.close()
        console.forget()
