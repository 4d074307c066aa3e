"""What a STOMP connection tells the API layer it can do, read from the broker's dialect.

The API layer decides from these alone (never from a broker name) where it keeps a rule
itself: groups on the client gate where the broker has none (ORD-16), delivery counts
kept by jmslike, strictly ordered destinations held per process or by the broker.
"""

from __future__ import annotations

from jmslike.spi.exclusive import Exclusivity
from jmslike.spi.management import ArtemisManagement
from jmslike.spi.provider import Capabilities, OrderingMode
from jmslike_stomp.dialect import Dialect
from jmslike_stomp.transport import StompTransport

__all__ = ["_capabilities"]


def _capabilities(
    dialect: Dialect,
    transport: StompTransport,
    management: ArtemisManagement | None,
    exclusivity: Exclusivity,
) -> Capabilities:
    native = dialect.native_groups
    return Capabilities(
        provider="stomp",
        broker=dialect.name,
        broker_version=transport.server,
        ordering_mode=OrderingMode.BROKER if native else OrderingMode.CLIENT_GATE,
        native_groups=native,
        group_scope="consumer" if native else "none",
        selectors=dialect.selectors != "topics-only",
        transactions=True,
        delivery_delay=dialect.delivery_delay_header is not None,
        priority=dialect.priority,
        durable_subscriptions=dialect.durable_subscription != "none",
        shared_subscriptions=dialect.shared_subscription != "none",
        # Artemis' are queues jmslike deletes through its management API (dialect.py).
        temporary_destinations=dialect.temp_queue_prefix is not None
        and (not dialect.temp_queue_named or management is not None),
        # The header is honoured by Classic (activemq.noLocal) and Artemis (no-local);
        # RabbitMQ ignores it, and a broker not known here is not trusted with it: there
        # jmslike keeps it (jmslike.spi.nolocal).
        no_local=True,
        browsers=dialect.browse or management is not None,
        exclusive_consumers=True,
        exclusive_scope=exclusivity.scope,
        delivery_count=True,
        persistent=True,
        time_to_live=True,
        dead_letter_queue=True,
        extra={
            "exclusive_hint": exclusivity.hint,
            "gate_scope": f"stomp://{transport.address}",
            "counted_by": "jmslike",
            # Consumers on connections of their own: arrival order is not broker order.
            "gate_by_sequence": dialect.consumer_connection,
            # A listener container's sessions take from one subscription (jmslike/_feed.py).
            "container_feed": True,
        },
    )
