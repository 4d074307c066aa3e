"""The names jmslike_otel puts on spans and metrics, in one place.

Kept free of OpenTelemetry imports so that dashboards, tests and other plugins can use
the names without the SDK installed. Generic names are the ones of the OpenTelemetry
messaging semantic conventions (attribute registry ``messaging.*``, ``error.type``);
what the conventions have no name for lives under ``messaging.jmslike.*`` (span
attributes, as the conventions ask of system-specific attributes) and ``jmslike.*``
(metrics).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CONSUMED_MESSAGES",
    "DEAD_LETTERED_MESSAGES",
    "DELIVERY_COUNT",
    "DESTINATION_KIND",
    "DESTINATION_NAME",
    "DESTINATION_SUBSCRIPTION_NAME",
    "DESTINATION_TEMPORARY",
    "ERROR_TYPE",
    "GROUP_SEQUENCE",
    "GROUP_WAIT",
    "JMSLIKE_BROKER",
    "JMSLIKE_PROVIDER",
    "MESSAGE_CONVERSATION_ID",
    "MESSAGE_ID",
    "MESSAGING_CLIENT_ID",
    "MESSAGING_SYSTEM",
    "OPERATION_DURATION",
    "OPERATION_NAME",
    "OPERATION_TYPE",
    "ORDERING_GROUP",
    "PROCESS_DURATION",
    "REDELIVERED",
    "REDELIVERED_MESSAGES",
    "SENT_MESSAGES",
    "SYSTEM",
]

SYSTEM: Final = "jmslike"
"""The value of ``messaging.system``: always ``jmslike``, whichever broker is behind
the connection, so one query finds every jmslike client; the broker is in
``messaging.jmslike.broker``."""

# --- semantic-convention attributes
MESSAGING_SYSTEM: Final = "messaging.system"
OPERATION_TYPE: Final = "messaging.operation.type"
OPERATION_NAME: Final = "messaging.operation.name"
DESTINATION_NAME: Final = "messaging.destination.name"
DESTINATION_TEMPORARY: Final = "messaging.destination.temporary"
DESTINATION_SUBSCRIPTION_NAME: Final = "messaging.destination.subscription.name"
MESSAGE_ID: Final = "messaging.message.id"
MESSAGE_CONVERSATION_ID: Final = "messaging.message.conversation_id"
"""The JMS correlation id (the conventions: "sometimes called correlation id")."""
MESSAGING_CLIENT_ID: Final = "messaging.client.id"
"""The connection's JMS client id, when it has one."""
ERROR_TYPE: Final = "error.type"
"""The qualified class name of the exception a send or a listener ended with."""

# --- jmslike's own span attributes (messaging.{system}.* per the conventions)
ORDERING_GROUP: Final = "messaging.jmslike.ordering_group"
GROUP_SEQUENCE: Final = "messaging.jmslike.group_sequence"
REDELIVERED: Final = "messaging.jmslike.message.redelivered"
"""JMSRedelivered of a delivered message (bool)."""
DELIVERY_COUNT: Final = "messaging.jmslike.message.delivery_count"
"""JMSXDeliveryCount of a delivered message: 1 the first time, 2 on the first redelivery."""
DESTINATION_KIND: Final = "messaging.jmslike.destination.kind"
"""queue, topic, temp-queue or temp-topic: a queue and a topic may share a name."""
JMSLIKE_BROKER: Final = "messaging.jmslike.broker"
"""``connection.capabilities.broker``, e.g. jmslike-embedded."""
JMSLIKE_PROVIDER: Final = "messaging.jmslike.provider"
"""``connection.capabilities.provider``, e.g. embedded."""

# --- metrics
SENT_MESSAGES: Final = "messaging.client.sent.messages"
CONSUMED_MESSAGES: Final = "messaging.client.consumed.messages"
OPERATION_DURATION: Final = "messaging.client.operation.duration"
PROCESS_DURATION: Final = "messaging.process.duration"
REDELIVERED_MESSAGES: Final = "jmslike.client.redelivered.messages"
DEAD_LETTERED_MESSAGES: Final = "jmslike.client.dead_lettered.messages"
GROUP_WAIT: Final = "jmslike.group.wait"
