"""TLS to the real Artemis: ``amqps://`` (issue 5, item 1) and ``stomp+ssl://``.

scripts/brokers.sh gives Artemis a second acceptor, 127.0.0.1:61618, for AMQP and STOMP
over TLS, with a certificate for ``localhost`` and the IP 127.0.0.1 signed by a test CA
it makes with openssl (``JMSLIKE_TEST_TLS_CA_FILE``). jmslike trusts that CA through the
``sslCaFile`` setting (factory keyword or URL query) and checks that the certificate
names the host (``sslVerifyHost``, AMQP only may turn that off). A broker whose
certificate cannot be verified is a ConnectionFailedError, and bad TLS settings are
refused when the factory is made, before anything connects.

Run: ``.venv/bin/python -m pytest tests/integration/test_tls.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import uuid

import pytest
from brokerenv import broker_url

import jmslike

pytestmark = [pytest.mark.artemis]

PROTOCOLS = [
    pytest.param("JMSLIKE_TEST_ARTEMIS_AMQPS_URL", marks=pytest.mark.amqp, id="amqps"),
    pytest.param("JMSLIKE_TEST_ARTEMIS_STOMPS_URL", marks=pytest.mark.stomp, id="stomp+ssl"),
]


def _round_trip(factory: jmslike.ConnectionFactory) -> str | None:
    queue = f"queue://tls-{uuid.uuid4().hex[:8]}"
    with factory.create_connection() as connection:
        session = connection.create_session()
        session.create_producer(queue).send(session.create_text_message("over TLS"))
        consumer = session.create_consumer(queue)
        connection.start()
        message = consumer.receive(timeout=5.0)
        assert connection.capabilities.broker == "artemis"
        return message.text if message is not None else None


@pytest.mark.parametrize("variable", PROTOCOLS)
def test_trusting_the_test_ca_sends_and_receives(variable: str) -> None:
    factory = jmslike.ConnectionFactory(
        broker_url(variable), sslCaFile=broker_url("JMSLIKE_TEST_TLS_CA_FILE")
    )
    assert _round_trip(factory) == "over TLS"


@pytest.mark.parametrize("variable", PROTOCOLS)
def test_a_certificate_that_cannot_be_verified_is_a_connection_failure(variable: str) -> None:
    """Without the test CA (the system's authorities never signed it) the handshake
    fails; the error names the broker and not the password."""
    url = broker_url(variable)
    factory = jmslike.ConnectionFactory(url, request_timeout=10.0)
    with pytest.raises(jmslike.ConnectionFailedError) as info:
        factory.create_connection()
    text = str(info.value)
    assert ":61618" in text
    assert "certificate" in text.lower(), text  # the TLS reason, not just "refused"
    assert "admin:admin" not in text


@pytest.mark.parametrize("variable", PROTOCOLS)
@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"sslCaFile": "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"),
        ({"sslVerifyHost": "maybe"}, "maybe"),
    ],
)
def test_bad_tls_settings_are_refused_before_connecting(
    variable: str, settings: dict[str, str], named: str
) -> None:
    url = broker_url(variable).replace(":61618", ":1")  # nothing listens: nothing may try
    with pytest.raises(jmslike.ConfigurationError) as info:
        jmslike.ConnectionFactory(url, **settings)
    assert named in str(info.value)


@pytest.mark.amqp
def test_amqps_tls_settings_from_the_url_query() -> None:
    url = broker_url("JMSLIKE_TEST_ARTEMIS_AMQPS_URL").replace("localhost", "127.0.0.1")
    ca_file = broker_url("JMSLIKE_TEST_TLS_CA_FILE")
    factory = jmslike.ConnectionFactory(f"{url}?sslCaFile={ca_file}&sslVerifyHost=false")
    assert _round_trip(factory) == "over TLS"


@pytest.mark.amqp
def test_amqps_host_verification_matches_host_names_not_addresses() -> None:
    """Proton checks the URL's host against the certificate's DNS names: ``127.0.0.1``
    fails the check, although the certificate lists that address as an IP SAN
    (docs/configuration.md says so; use the host name, or ``sslVerifyHost=false``).
    stomp.py (Python's ssl) matches the IP SAN: the STOMP round trip above uses it."""
    url = broker_url("JMSLIKE_TEST_ARTEMIS_AMQPS_URL").replace("localhost", "127.0.0.1")
    factory = jmslike.ConnectionFactory(
        url, sslCaFile=broker_url("JMSLIKE_TEST_TLS_CA_FILE"), request_timeout=10.0
    )
    with pytest.raises(jmslike.ConnectionFailedError) as info:
        factory.create_connection()
    assert "certificate verify failed" in str(info.value)


@pytest.mark.amqp
def test_plain_amqp_to_the_tls_port_fails_cleanly() -> None:
    """``amqp://`` to a TLS listener: the broker drops the connection; jmslike says so
    within the request timeout instead of hanging."""
    url = broker_url("JMSLIKE_TEST_ARTEMIS_AMQPS_URL").replace("amqps://", "amqp://", 1)
    factory = jmslike.ConnectionFactory(url, request_timeout=5.0)
    with pytest.raises(jmslike.ConnectionFailedError):
        factory.create_connection()


@pytest.mark.stomp
def test_stomp_cannot_skip_the_host_check() -> None:
    """stomp.py checks the host name whenever it checks the certificate, so
    ``sslVerifyHost=false`` is refused for STOMP rather than quietly ignored."""
    with pytest.raises(jmslike.ConfigurationError) as info:
        jmslike.ConnectionFactory(
            broker_url("JMSLIKE_TEST_ARTEMIS_STOMPS_URL"), sslVerifyHost="false"
        )
    assert "sslVerifyHost" in str(info.value)
