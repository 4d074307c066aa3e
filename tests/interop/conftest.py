"""The Java peer's jar, built once per test session (javapeer.build_jar keeps it between
sessions, keyed by a hash of the pom and the sources)."""

from __future__ import annotations

from pathlib import Path

import pytest
from javapeer import BUILD_TIMEOUT, build_jar


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whichever test builds the jar first also pays for a cold Maven build (about 20 s
    with downloads here, more on a slow mirror): the suite's 120 s per-test timeout must
    not cut it short."""
    for item in items:
        if "java_jar" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(BUILD_TIMEOUT + 120))


@pytest.fixture(scope="session")
def java_jar() -> Path:
    """The interop jar; a failed Maven build fails every test that needs it, with Maven's
    output (never a skip)."""
    return build_jar()
