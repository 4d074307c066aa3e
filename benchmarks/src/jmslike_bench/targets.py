"""The brokers and protocols a bench can measure, and how each client reaches them."""

from __future__ import annotations

from dataclasses import dataclass

from jmslike_bench.env import broker_settings, reachable

__all__ = ["BROKERS", "PROTOCOLS", "Target", "discover"]

BROKERS = ("embedded", "activemq", "artemis", "rabbitmq")
PROTOCOLS = ("embedded", "stomp", "amqp")

_PAIRS = (
    ("embedded", "embedded"),
    ("activemq", "stomp"),
    ("artemis", "stomp"),
    ("rabbitmq", "stomp"),
    ("activemq", "amqp"),
    ("artemis", "amqp"),
    ("rabbitmq", "amqp"),
)
"""Every pair jmslike speaks (ActiveMQ over AMQP: Debian's build has no AMQP transport;
scripts/brokers.sh adds the one from Maven Central, on its own port)."""

_JAVA = {
    # The broker's own JMS client over its native protocol where it has one; RabbitMQ has
    # no JMS client of its own in the Java project, so Qpid JMS over AMQP 1.0 stands in.
    ("activemq", "stomp"): ("openwire", "JMSLIKE_TEST_ACTIVEMQ_OPENWIRE_URL"),
    ("artemis", "stomp"): ("core", "JMSLIKE_TEST_ARTEMIS_OPENWIRE_URL"),
    ("rabbitmq", "stomp"): ("amqp", "JMSLIKE_TEST_RABBITMQ_AMQP_URL"),
    ("activemq", "amqp"): ("amqp", "JMSLIKE_TEST_ACTIVEMQ_AMQP_URL"),
    ("artemis", "amqp"): ("amqp", "JMSLIKE_TEST_ARTEMIS_AMQP_URL"),
    ("rabbitmq", "amqp"): ("amqp", "JMSLIKE_TEST_RABBITMQ_AMQP_URL"),
}


@dataclass(frozen=True)
class Target:
    """One broker over one protocol; ``skipped`` says why it cannot be measured."""

    broker: str
    protocol: str
    url: str
    java_protocol: str | None = None
    java_url: str | None = None
    """The broker URL the Java client's protocol uses (credentials included)."""
    skipped: str | None = None

    @property
    def name(self) -> str:
        return self.broker if self.protocol == "embedded" else f"{self.broker}/{self.protocol}"


def discover(brokers: list[str], protocols: list[str]) -> list[Target]:
    """The targets asked for, in a fixed order, each checked for a listening broker."""
    settings = broker_settings()
    found = []
    for broker, protocol in _PAIRS:
        if broker not in brokers or protocol not in protocols:
            continue
        if broker == "embedded":
            found.append(Target(broker, protocol, "embedded://bench"))
            continue
        url = settings.get(f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL", "")
        java_protocol, java_key = _JAVA[(broker, protocol)]
        java_url = settings.get(java_key)
        if not url:
            skipped: str | None = "no URL (run scripts/brokers.sh start)"
        elif not reachable(url):
            skipped = "not reachable"
        else:
            skipped = None
        found.append(Target(broker, protocol, url, java_protocol, java_url, skipped))
    return found
