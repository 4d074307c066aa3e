"""No password anywhere: logs at DEBUG, errors, reprs, ``jmslike config``, spans.

On every broker x protocol case, with the password in the URL: connect, send, receive,
then fail on purpose (a wrong password, and an address where nothing listens), all with
DEBUG logging on for jmslike, stomp.py and Proton and with the OpenTelemetry plugin
recording spans. Then every log record (message, arguments and traceback), every
exception's text and repr (causes included), the repr of the factory, connection,
session, producer and consumer, the output of ``jmslike config`` (text and JSON) and
every span attribute is searched for the password.

Passwords: RabbitMQ's and Artemis' test logins are guest/guest and admin/admin, the only
ones they accept; a password equal to the user name cannot be searched for as it stands
(the user name is rightly shown), so for those the search is for the forms a leak takes
(``user:password@``, ``passcode:password``, SASL PLAIN's ``\\0user\\0password`` and its
base64). ActiveMQ Classic's test broker checks no login, so it gets a distinctive
password that it accepts. Every wrong password is the distinctive ``s3cr3t-Pa55``, which
RabbitMQ and Artemis refuse with ``JMSSecurityError``, searched for as it stands.

And TLS: ``amqps://`` to Artemis verifies the certificate by default, and the one opt-out
there is, ``sslVerifyHost=false``, relaxes the host name check only: a certificate no
trusted authority signed is still refused (tests/integration/test_tls.py has the rest).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from brokercases import CASES, case_url, delete_rabbitmq_queues
from brokerenv import broker_url

import jmslike
from jmslike import cli
from jmslike.config import parse_url

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import jmslike_otel
from jmslike.spi import get_registry

WRONG = "s3cr3t-Pa55"
ACCEPTED_ANYWHERE = "s3cr3t-Pa55-accepted"
"""For ActiveMQ Classic, which checks no login: distinctive, and accepted."""
LOGGERS = ("jmslike", "stomp.py", "stomp", "proton")


class _Capture(logging.Handler):
    """Every record, formatted with its traceback, and its arguments' reprs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))
        self.texts.append(repr(record.args))
        self.texts.append(repr(record.msg))


@pytest.fixture
def logs() -> Iterator[_Capture]:
    capture = _Capture()
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.DEBUG)
        logger.addHandler(capture)
    try:
        yield capture
    finally:
        for logger, level in saved:
            logger.removeHandler(capture)
            logger.setLevel(level)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    registry = get_registry()
    registry.load_plugins()
    manager = registry.plugin_manager
    ours = not manager.is_registered(jmslike_otel)
    if ours:
        manager.register(jmslike_otel, name=f"otel-secrets-{uuid.uuid4().hex}")
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    jmslike_otel.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield exporter
    finally:
        jmslike_otel.uninstrument()
        meter_provider.shutdown()
        tracer_provider.shutdown()
        if ours:
            manager.unregister(jmslike_otel)


def _with_password(url: str, user: str, password: str) -> str:
    """``url`` with its login replaced by ``user:password``."""
    scheme, _, rest = url.partition("://")
    host = rest.rpartition("@")[2] if "@" in rest.split("/", 1)[0] else rest
    return f"{scheme}://{quote(user, safe='')}:{quote(password, safe='')}@{host}"


def _leak_patterns(user: str, password: str) -> list[str]:
    """What to search for: the password itself when it is distinctive, else the forms
    a leak of a password equal to the user name takes."""
    if password != user:
        return [password]
    plain = f"\0{user}\0{password}"
    return [
        f"{user}:{password}@",
        f":{password}@",
        f"passcode:{password}",
        f"'passcode': '{password}'",
        f"password={password}",
        f"password='{password}'",
        plain,
        repr(plain)[1:-1],
        base64.b64encode(plain.encode()).decode(),
    ]


def _exception_texts(exc: BaseException) -> list[str]:
    texts = []
    seen: BaseException | None = exc
    while seen is not None:
        texts += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    return texts


def _cli_config(url: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    outputs = []
    for extra in ([], ["--json"]):
        assert cli.main(["config", "--url", url, *extra]) == 0
        out, err = capsys.readouterr()
        outputs += [out, err]
    report = json.loads(outputs[2])
    assert report["password"] == "***"
    return outputs


@pytest.mark.parametrize("case", CASES)
def test_no_password_in_logs_errors_reprs_config_or_spans(
    case: str,
    logs: _Capture,
    spans: InMemorySpanExporter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = case_url(case)
    parsed = parse_url(url)
    if parsed.password is None:  # ActiveMQ Classic: no login checked; a distinctive one
        user, password = "jmslike", ACCEPTED_ANYWHERE
        url = _with_password(url, user, password) + (
            "?" + url.partition("?")[2] if "?" in url else ""
        )
    else:
        user, password = parsed.user or "", parsed.password
    texts: list[str] = []
    queue = f"queue://secrets-{uuid.uuid4().hex[:8]}"
    try:
        factory = jmslike.ConnectionFactory(url, request_timeout=10.0)
        with factory.create_connection() as connection:
            session = connection.create_session()
            producer = session.create_producer(queue)
            producer.send(session.create_text_message("hello"))
            consumer = session.create_consumer(queue)
            connection.start()
            message = consumer.receive(timeout=10.0)
            assert isinstance(message, jmslike.TextMessage) and message.text == "hello"
            texts += [repr(o) for o in (factory, connection, session, producer, consumer)]
            texts += [repr(message), str(connection.capabilities)]

        # A wrong password: refused by the brokers that check one.
        wrong = _with_password(url.partition("?")[0], user, WRONG)
        if case.startswith("activemq"):
            with factory.create_connection(user, WRONG):
                pass  # accepted: Classic's test broker checks no login
        else:
            with pytest.raises(jmslike.JMSSecurityError) as refused:
                jmslike.ConnectionFactory(wrong, request_timeout=10.0).create_connection()
            texts += _exception_texts(refused.value)
        # Nothing listens: the error names the address, not the login.
        nowhere = wrong.replace(f":{parsed.members[0].port if parsed.members else parsed.port}",
                                ":1", 1)  # fmt: skip
        with pytest.raises(jmslike.JMSException) as failed:
            jmslike.ConnectionFactory(nowhere, request_timeout=5.0).create_connection()
        texts += _exception_texts(failed.value)
        with pytest.raises(jmslike.JMSException) as bad:
            jmslike.ConnectionFactory(wrong + "?prefetch=lots")
        texts += _exception_texts(bad.value)

        for shown_url in (url, wrong):
            texts += _cli_config(shown_url, capsys)
        finished = spans.get_finished_spans()
        assert finished, "the otel plugin recorded no span"
        for span in finished:
            texts += [span.name, repr(dict(span.attributes or {}))]
            texts += [repr(dict(event.attributes or {})) for event in span.events]
        texts += logs.texts
        assert len(logs.texts) > 10, "DEBUG logging recorded (almost) nothing"

        searched = "\n".join(texts)
        for secret in (*_leak_patterns(user, password), WRONG):
            assert secret not in searched, _context(searched, secret)
    finally:
        delete_rabbitmq_queues(case, "secrets-")


def _context(text: str, secret: str) -> str:
    at = text.find(secret)
    return f"{secret!r} found: ...{text[max(0, at - 200) : at + 100]!r}..."


@pytest.mark.artemis
@pytest.mark.amqp
def test_amqps_verifies_the_certificate_and_the_host_opt_out_does_not_skip_it(
    logs: _Capture,
) -> None:
    """``sslVerifyHost=false`` is the only opt-out, and only of the host name check: a
    certificate signed by no trusted authority is refused all the same, by default and
    with it; trusting the test CA connects (with the host check off, by address)."""
    url = broker_url("JMSLIKE_TEST_ARTEMIS_AMQPS_URL")
    secret_url = _with_password(url, "admin", WRONG)
    for settings in ({}, {"sslVerifyHost": "false"}):
        with pytest.raises(jmslike.ConnectionFailedError) as refused:
            jmslike.ConnectionFactory(
                secret_url, request_timeout=10.0, **settings
            ).create_connection()
        assert "certificate" in str(refused.value).lower(), refused.value
        assert WRONG not in "\n".join(_exception_texts(refused.value))
    ca_file = broker_url("JMSLIKE_TEST_TLS_CA_FILE")
    by_address = url.replace("localhost", "127.0.0.1")
    factory = jmslike.ConnectionFactory(
        by_address, sslCaFile=ca_file, sslVerifyHost="false", request_timeout=10.0
    )
    with contextlib.closing(factory.create_connection()) as connection:
        assert connection.capabilities.broker == "artemis"
    assert not any(WRONG in text for text in logs.texts)
