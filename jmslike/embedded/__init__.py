"""The in-process broker behind ``embedded://``: the default, needing no server."""

from jmslike.embedded.broker import Broker, get_broker

__all__ = ["Broker", "get_broker"]
