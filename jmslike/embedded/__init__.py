"""The in-process broker behind ``embedded://``: the default, needing no server."""

from jmslike.embedded.broker import Broker, drop_broker, get_broker

__all__ = ["Broker", "drop_broker", "get_broker"]
