"""The Java peer's jar, built once per test session (javapeer.build_jar keeps it between
sessions, keyed by a hash of the pom and the sources)."""

from __future__ import annotations

from pathlib import Path

import pytest
from javapeer import build_jar


@pytest.fixture(scope="session")
def java_jar() -> Path:
    """The interop jar; a failed Maven build fails every test that needs it, with Maven's
    output (never a skip)."""
    return build_jar()
