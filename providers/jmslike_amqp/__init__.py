"""AMQP 1.0 provider for jmslike, on python-qpid-proton.

The JMS <-> AMQP message mapping that Qpid JMS and Artemis use (``codec``), Proton's
engine over one socket on the connection's own thread (``driver``), links, sends and
settlement for the other threads (``transport``, on ``calls``, ``lifecycle``, ``events``
and ``links``), and the SPI classes (``connection``, ``session``, ``consumer``), whose
``provider.AmqpProvider`` is registered for ``amqp://`` and ``amqps://`` through the
``jmslike`` entry-point group like any third-party provider.
"""

from __future__ import annotations

from jmslike.spi.hookspecs import hookimpl
from jmslike.spi.registry import ProviderRegistry

__all__ = ["jmslike_register_providers"]


@hookimpl
def jmslike_register_providers(registry: ProviderRegistry) -> None:
    for scheme in ("amqp", "amqps"):
        registry.register(scheme, "jmslike_amqp.provider:AmqpProvider")
