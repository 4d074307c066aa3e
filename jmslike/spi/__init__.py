"""The provider SPI: what a broker binding implements, and the hooks it plugs into."""

from jmslike.spi.hookspecs import hookimpl, hookspec
from jmslike.spi.provider import (
    Capabilities,
    ConsumerSpec,
    DeliverySink,
    ExceptionCallback,
    OrderingMode,
    Provider,
    ProviderConnection,
    ProviderConsumer,
    ProviderSession,
)
from jmslike.spi.registry import ProviderRegistry, get_registry

__all__ = [
    "Capabilities",
    "ConsumerSpec",
    "DeliverySink",
    "ExceptionCallback",
    "OrderingMode",
    "Provider",
    "ProviderConnection",
    "ProviderConsumer",
    "ProviderRegistry",
    "ProviderSession",
    "get_registry",
    "hookimpl",
    "hookspec",
]
