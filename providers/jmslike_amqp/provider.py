"""The SPI classes of the AMQP 1.0 provider: JMS over AMQP as Qpid JMS maps it.

Sends are transfers (a persistent one waits for the broker's outcome); a consumer is a
receiver link whose credit is what the API asks for; acknowledging is settling ACCEPTED,
giving back is RELEASED (unseen) or MODIFIED with delivery-failed (seen, counted);
recover and rollback redeliver locally, in order. Transactions use the broker's
transaction coordinator where it has one (Artemis, Classic) and are kept by jmslike
where it has none (RabbitMQ 3.10). Selectors are the ``apache.org:selector-filter:string``
filter; durable and shared subscriptions are named as Qpid JMS names them (on RabbitMQ,
which keeps none, queues jmslike declares); temporary destinations are dynamic nodes (on
RabbitMQ, which has none, queues jmslike declares); browsers are ``copy`` receivers.
Groups are the broker's (``group-id``) on Artemis and Classic, the client gate's on
RabbitMQ. What a broker lacks is in ``Capabilities`` (docs/providers.md has the matrix).

The SPI classes live one to a module: ``connection.py`` (``AmqpConnection``: which
broker it is, its capabilities and addresses, temporary destinations, reconnects),
``session.py`` (``AmqpSession``: sends, acknowledgements, local redelivery,
transactions, browsers, unsubscribe) and ``consumer.py`` (``AmqpConsumer``: one receiver
link and its credit). This module keeps ``AmqpProvider``, the entry point that
``jmslike_amqp/__init__.py`` registers for ``amqp://`` and ``amqps://``.

Threads: these classes run on the application's threads and on the connection's own
thread (``AmqpConsumer._on_message`` and what it calls); they hold Proton
objects only through the transport's handles and delivery numbers.
"""

from __future__ import annotations

from jmslike.config import FactorySettings, ParsedURL
from jmslike.errors import ConfigurationError, map_provider_errors
from jmslike.spi.exclusive import EXCLUSIVE_SETTINGS, exclusive_queues_setting
from jmslike.spi.provider import ExceptionCallback, Provider, ProviderConnection
from jmslike.spi.reconnect import RECONNECT_SETTINGS, reconnect_policy
from jmslike.spi.tls import TLS_SETTINGS, tls_options
from jmslike_amqp.connection import AmqpConnection, idle_timeout_of

__all__ = ["AmqpProvider"]


class AmqpProvider(Provider):
    """``amqp://host:port`` and ``amqps://``."""

    name = "amqp"
    schemes = ("amqp", "amqps")
    setting_names = (
        TLS_SETTINGS | RECONNECT_SETTINGS | EXCLUSIVE_SETTINGS | {"idleTimeout", "amqp.idleTimeout"}
    )

    def check_settings(self, settings: FactorySettings) -> None:
        tls_options(settings)
        idle_timeout_of(settings)
        exclusive_queues_setting(settings)
        reconnect_policy(ParsedURL(scheme="amqp"), settings.extra)

    def check_url(self, url: ParsedURL) -> None:
        for member in url.members or (url,):
            if not member.host:
                raise ConfigurationError(
                    f"AMQP URL {member} needs a host, e.g. amqp://127.0.0.1:5672"
                )

    def connect(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> ProviderConnection:
        with map_provider_errors(f"AMQP connection to {url.address} failed"):
            return AmqpConnection(url, settings, user, password, on_exception)
