"""Fixtures shared by the integration tests."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from brokercases import case_url
from faultproxy import Relay


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
