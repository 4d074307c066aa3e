"""STOMP provider for jmslike: ``stomp://`` and ``stomp+ssl://`` over stomp.py.

Registered through the ``jmslike`` entry-point group, exactly like a third-party provider;
stomp.py is imported only when a ``stomp://`` URL is first used.
"""

from __future__ import annotations

from jmslike.spi.hookspecs import hookimpl
from jmslike.spi.registry import ProviderRegistry

__all__ = ["jmslike_register_providers"]


@hookimpl
def jmslike_register_providers(registry: ProviderRegistry) -> None:
    for scheme in ("stomp", "stomp+ssl"):
        registry.register(scheme, "jmslike_stomp.provider:StompProvider")
