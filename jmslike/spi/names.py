"""Destination names a broker reads as something other than a name.

Artemis takes ``*`` and ``#`` in an address as wildcards (its default
``wildcard-addresses``: ``#`` any words, ``*`` one word) and refuses a send to such an
address ("AMQ229260: Wildcard addresses are not supported on producers"). Over AMQP that
refuses the one send; over STOMP the broker answers with an ERROR frame and closes the
connection, so every other session and consumer of it failed too (seen with a queue
named ``orders*eu``). A consumer may use them: that is a wildcard subscription. Over
AMQP 1.0, Artemis also reads what follows a ``?`` in an address as parameters of the
address (``name?consumer.exclusive=true``), so a queue named ``a?b`` silently became
``a``: the message went to one queue and the consumer listened on another.

These checks run before anything is sent, so the refusal names the destination and
loses nothing.
"""

from __future__ import annotations

from jmslike.destination import Destination
from jmslike.errors import InvalidDestinationError

__all__ = ["refuse_artemis_parameters", "refuse_artemis_wildcards"]


def refuse_artemis_wildcards(destination: Destination, broker: str) -> None:
    """Refuse a send to a name Artemis would take for a wildcard address; ``broker``
    (its address) is named in the error, as every refusal names its broker."""
    name = destination.name
    if ("*" in name or "#" in name) and not destination.is_temporary:
        raise InvalidDestinationError(
            f"{destination}: Artemis at {broker} reads '*' and '#' in an address as "
            "wildcards and refuses a send to it (over STOMP it closes the connection); "
            "rename the destination "
            "(a consumer may use them, to subscribe to several addresses)"
        )


def refuse_artemis_parameters(destination: Destination) -> None:
    """Refuse, over AMQP, a name whose ``?`` Artemis would read as address parameters."""
    if "?" in destination.name and not destination.is_temporary:
        raise InvalidDestinationError(
            f"{destination}: over AMQP 1.0 Artemis reads what follows '?' in an address as "
            "its parameters, so messages would go to another queue; rename the destination"
        )
