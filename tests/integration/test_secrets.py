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

The other secrets jmslike takes go through the same search, on every case: the login of
the management API in ``managementUrl`` (``http://user:password@host/...``: Artemis'
Jolokia, RabbitMQ's management plugin; Classic's test broker is asked nothing, so any
login), given as a keyword, in the URL's query (percent-encoded), in a ``jmslike.toml``
factory table (with the connection's ``password``) and in ``$JMSLIKE_MANAGEMENT_URL``;
used by a strictly ordered queue, which Artemis and RabbitMQ declare through that API,
with a login they accept and with one they refuse (``m4nagement-Pa55-wr0ng``); the
password of a ``failover:`` member; and a setting that looks secret but that jmslike does
not take (``accessToken``, ``apiKey``: refused, the value unshown). jmslike takes no TLS
key password or token: its TLS settings are ``sslCaFile`` and ``sslVerifyHost``.

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
from pathlib import Path
from typing import Any
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
MANAGEMENT_ACCEPTED = "m4nagement-Pa55-accepted"
"""The management login's password on Classic, whose management API jmslike never asks."""
MANAGEMENT_WRONG = "m4nagement-Pa55-wr0ng"
"""A management password that Artemis and RabbitMQ refuse (with a user they do not know,
so that no login of the other tests is throttled)."""
NOT_TAKEN = "t0ken-Pa55-unused"
"""The value of settings that look secret and that jmslike does not take."""
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
        quote(f":{password}@", safe=""),  # in a URL inside a URL's query
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


def _cli_config(
    url: str, capsys: pytest.CaptureFixture[str], *args: str, password: str | None = "***"
) -> list[str]:
    """``jmslike config --url URL`` (or ``jmslike config ARGS``), as text and JSON; the
    JSON's ``password`` must be ``password`` (a failover URL's are its members')."""
    outputs = []
    for extra in ([], ["--json"]):
        assert cli.main(["config", *(args or ("--url", url)), *extra]) == 0
        out, err = capsys.readouterr()
        outputs += [out, err]
    report = json.loads(outputs[2])
    assert report["password"] == password
    return outputs


def _login(case: str) -> tuple[str, str, str]:
    """(URL with the login in it, user, password) of a case: the brokers' own, or for
    ActiveMQ Classic, which checks none, a distinctive one."""
    url = case_url(case)
    parsed = parse_url(url)
    if parsed.password is None:  # ActiveMQ Classic: no login checked; a distinctive one
        user, password = "jmslike", ACCEPTED_ANYWHERE
        url = _with_password(url, user, password) + (
            "?" + url.partition("?")[2] if "?" in url else ""
        )
        return url, user, password
    return url, parsed.user or "", parsed.password


def _recorded(logs: _Capture, spans: InMemorySpanExporter) -> list[str]:
    """Every span's name and attributes (its events' too), and every log record."""
    finished = spans.get_finished_spans()
    assert finished, "the otel plugin recorded no span"
    texts = []
    for span in finished:
        texts += [span.name, repr(dict(span.attributes or {}))]
        texts += [repr(dict(event.attributes or {})) for event in span.events]
    assert len(logs.texts) > 10, "DEBUG logging recorded (almost) nothing"
    return texts + logs.texts


def _assert_nowhere(texts: list[str], secrets: list[str]) -> None:
    searched = "\n".join(texts)
    for secret in secrets:
        assert secret not in searched, _context(searched, secret)


@pytest.mark.parametrize("case", CASES)
def test_no_password_in_logs_errors_reprs_config_or_spans(
    case: str,
    logs: _Capture,
    spans: InMemorySpanExporter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, user, password = _login(case)
    parsed = parse_url(url)
    texts: list[str] = []
    queue = f"queue://secrets-{uuid.uuid4().hex[:8]}"
    try:
        factory = jmslike.ConnectionFactory(url, request_timeout=10.0)
        texts += _round_trip(factory, queue)

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
        texts += _recorded(logs, spans)
        _assert_nowhere(texts, [*_leak_patterns(user, password), WRONG])
    finally:
        delete_rabbitmq_queues(case, "secrets-")


def _management_url(case: str, user: str, password: str) -> str:
    """The case's management API (Classic: a URL jmslike never calls) with a login."""
    broker = case.split("-", maxsplit=1)[0]
    if broker == "activemq":
        return f"http://{user}:{password}@127.0.0.1:8161/api/jolokia"
    return _with_password(
        broker_url(f"JMSLIKE_TEST_{broker.upper()}_MANAGEMENT_URL"), user, password
    )


def _round_trip(factory: jmslike.ConnectionFactory, queue: str) -> list[str]:
    """Send and receive one message on ``queue`` (the management test passes a strictly
    ordered one: Artemis and RabbitMQ declare it through the management API); the reprs
    of what was used."""
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        producer.send(session.create_text_message("hello"))
        consumer = session.create_consumer(queue)
        connection.start()
        message = consumer.receive(timeout=10.0)
        assert isinstance(message, jmslike.TextMessage) and message.text == "hello"
        shown = [repr(o) for o in (factory, connection, session, producer, consumer)]
        shown.append(str(connection.capabilities))
        return [*shown, repr(message), repr(factory.settings), repr(factory.url)]


def _joined(*parts: str) -> str:
    """A URL query of the non-empty ``parts``, with its ``?``."""
    query = "&".join(p for p in parts if p)
    return f"?{query}" if query else ""


@pytest.mark.parametrize("case", CASES)
def test_no_management_login_or_other_secret_in_logs_errors_reprs_config_or_spans(
    case: str,
    logs: _Capture,
    spans: InMemorySpanExporter,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The other secrets jmslike takes (see the module): the management API's login,
    accepted and refused, from every source a setting has; a failover member's password;
    settings that look secret, refused. Searched for as the password is."""
    url, user, password = _login(case)
    managed = not case.startswith("activemq")
    # Artemis and RabbitMQ accept their one login only, whose password is its user name.
    api_user, api_password = (user, password) if managed else ("jmslike", MANAGEMENT_ACCEPTED)
    management = _management_url(case, api_user, api_password)
    refused = _management_url(case, "jmslike-nobody", MANAGEMENT_WRONG)
    base, _, query = url.partition("?")
    query = "&".join(p for p in query.split("&") if p and not p.startswith("managementUrl="))
    scheme, _, rest = base.partition("://")
    plain = f"{scheme}://{rest.rpartition('@')[2]}"  # no login
    queues = [f"queue://secrets-{uuid.uuid4().hex[:8]}" for _ in range(5)]
    texts: list[str] = []
    try:
        # Keywords: the connection's login and the management API's.
        factory = jmslike.ConnectionFactory(
            plain + _joined(query),
            user=user,
            password=password,
            managementUrl=management,
            strictly_ordered=queues[0],
            request_timeout=10.0,
        )
        texts += _round_trip(factory, queues[0])
        # The URL's query, percent-encoded.
        in_query = base + _joined(query, "managementUrl=" + quote(management, safe=""))
        factory = jmslike.ConnectionFactory(
            in_query, strictly_ordered=queues[1], request_timeout=10.0
        )
        texts += _round_trip(factory, queues[1])
        texts += _cli_config(in_query, capsys)
        # A jmslike.toml factory table: url, user, password and managementUrl.
        config = tmp_path / "jmslike.toml"
        config.write_text(
            "[factories.secrets]\n"
            f"url = {json.dumps(plain + _joined(query))}\n"
            f"user = {json.dumps(user)}\n"
            f"password = {json.dumps(password)}\n"
            f"managementUrl = {json.dumps(management)}\n"
            f"strictly_ordered = {json.dumps(queues[2])}\n"
            "request_timeout = 10.0\n"
        )
        texts += _round_trip(
            jmslike.ConnectionFactory.from_config("secrets", str(config)), queues[2]
        )
        texts += _cli_config("", capsys, "secrets", "--file", str(config))
        # A failover member's password.
        failover = f"failover:({base}){_joined(query, 'reconnectAttempts=0')}"
        factory = jmslike.ConnectionFactory(
            failover, managementUrl=management, strictly_ordered=queues[3], request_timeout=10.0
        )
        texts += _round_trip(factory, queues[3])
        texts += _cli_config(failover, capsys, password=None)
        # A management login the broker refuses: the refusal does not show it either.
        factory = jmslike.ConnectionFactory(
            url, managementUrl=refused, strictly_ordered=queues[4], request_timeout=10.0
        )
        with factory.create_connection() as connection:
            session = connection.create_session()
            texts += [repr(factory.settings), repr(connection), repr(session)]
            texts += [str(connection.url), repr(connection.url)]
            if managed:
                with pytest.raises(jmslike.JMSSecurityError) as denied:
                    session.create_consumer(queues[4])
                texts += _exception_texts(denied.value)
        monkeypatch.setenv("JMSLIKE_MANAGEMENT_URL", refused)
        texts += _cli_config(url, capsys)
        monkeypatch.delenv("JMSLIKE_MANAGEMENT_URL")
        # Settings that look secret, which jmslike does not take: refused, value unshown.
        bad: list[tuple[str, dict[str, Any]]] = [
            (base + _joined(query, f"accessToken={NOT_TAKEN}"), {}),
            (url, {"apiKey": NOT_TAKEN}),
        ]
        for bad_url, bad_settings in bad:
            with pytest.raises(jmslike.ConfigurationError) as refusal:
                jmslike.ConnectionFactory(bad_url, **bad_settings)
            texts += _exception_texts(refusal.value)

        texts += _recorded(logs, spans)
        secrets = [*_leak_patterns(user, password), *_leak_patterns(api_user, api_password)]
        _assert_nowhere(texts, [*secrets, MANAGEMENT_WRONG, NOT_TAKEN])
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
    opt_outs: list[dict[str, Any]] = [{}, {"sslVerifyHost": "false"}]
    for settings in opt_outs:
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
