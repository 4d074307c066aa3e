"""What the provider contract suite runs against: one :class:`ProviderCase` per provider
configuration.

Kept apart from the pytest plugin so that a repository parametrising the suite over
several cases (jmslike's own ``tests/contract`` does, over embedded and real brokers)
builds them without importing pytest here; ``marks`` simply carries whatever pytest marks
the caller wants on the case's runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProviderCase"]


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
