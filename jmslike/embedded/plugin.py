"""Registers the embedded provider through the same hook third-party providers use."""

from __future__ import annotations

from jmslike.spi.hookspecs import hookimpl
from jmslike.spi.registry import ProviderRegistry


@hookimpl
def jmslike_register_providers(registry: ProviderRegistry) -> None:
    registry.register("embedded", "jmslike.embedded.provider:EmbeddedProvider")
