"""The STOMP provider: jmslike's SPI over stomp.py, for ActiveMQ Classic, Artemis, RabbitMQ.

The API layer above keeps the JMS rules (acknowledgement modes, local redelivery for
recover and rollback, the redelivery policy, the ordering engine); this package maps each
SPI call onto STOMP frames the way the connected broker reads them (its
:class:`~jmslike_stomp.dialect.Dialect`). This module is what the registry loads
(``jmslike_stomp.provider:StompProvider``): it checks URLs and settings and connects.
The SPI classes have a module each:

* ``connection.py``: ``StompConnection``: sessions, durable subscriptions, temporary
  queues, reconnects; ``capabilities.py``: what it declares to the API layer.
* ``session.py``: ``StompSession``: sends, acknowledgements, transactions and dead
  letters (a send to the factory's dead-letter queue, then an acknowledgement: NACK
  means "discard" on Artemis and "to ActiveMQ.DLQ" on Classic, neither what jmslike
  promises).
* ``consumer.py``: ``StompConsumer``, one subscription with ``ack:client-individual``
  (``ack:client``, cumulative, where an AUTO or DUPS_OK consumer holds its ACKs on a
  broker that keeps groups itself: it finishes in order there), made on the first
  request for messages with the broker's prefetch header set from the
  factory's ``prefetch`` (1 by default: a consumer never holds a group's next message
  ahead of time, ORD-9). Delivery counts are kept by jmslike, per message, because the
  brokers do not send them.
* ``temporary.py``: temporary queues' bookkeeping; ``options.py``: the provider's own
  settings.
"""

from __future__ import annotations

from jmslike.config import FactorySettings, ParsedURL
from jmslike.errors import ConfigurationError, map_provider_errors
from jmslike.spi.exclusive import exclusive_queues_setting
from jmslike.spi.provider import ExceptionCallback, Provider, ProviderConnection
from jmslike_stomp.connection import StompConnection
from jmslike_stomp.options import ACK_BATCH, CLIENT_WINDOW, SETTING_NAMES, _batch, _options

__all__ = ["StompProvider"]


class StompProvider(Provider):
    """``stomp://host:port`` and ``stomp+ssl://``; ``failover:(stomp://a,stomp://b)``."""

    name = "stomp"
    schemes = ("stomp", "stomp+ssl")
    setting_names = SETTING_NAMES

    def check_settings(self, settings: FactorySettings) -> None:
        _options(ParsedURL(scheme="stomp"), settings)
        exclusive_queues_setting(settings)
        window = settings.extra.get("clientWindow", CLIENT_WINDOW)
        if isinstance(window, bool) or not str(window).strip().isdigit() or int(window) < 1:
            raise ConfigurationError(f"clientWindow={window!r}: must be an integer >= 1")
        _batch(settings.extra, "ackBatch", ACK_BATCH)

    def check_url(self, url: ParsedURL) -> None:
        for member in url.members or (url,):
            if not member.host:
                raise ConfigurationError(
                    f"STOMP URL {member} needs a host, e.g. stomp://127.0.0.1:61613"
                )

    def connect(
        self,
        url: ParsedURL,
        settings: FactorySettings,
        user: str | None,
        password: str | None,
        on_exception: ExceptionCallback,
    ) -> ProviderConnection:
        with map_provider_errors(f"STOMP connection to {url.address} failed"):
            return StompConnection(url, settings, user, password, on_exception)
