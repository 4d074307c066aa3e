"""Bad input against real brokers over STOMP: every failure is a clear jmslike error.

Each case does something a real broker refuses and checks what the caller gets: a
:class:`jmslike.JMSException` (the right subclass where the tree has one), raised by the
call that did the wrong thing (not only handed to the exception listener), promptly (not
by running out ``request_timeout``), whose message names the broker's address and the
cause, and which never carries the password, not even in the exception chain or in a
record of the ``jmslike`` loggers.

What each broker really refuses was found by sending raw frames with stomp.py first
(ActiveMQ Classic 5.17.2, Artemis 2.56.0, RabbitMQ 3.10.8 as set up by
``scripts/brokers.sh``):

* unreachable broker: a closed port on 127.0.0.1; and a port that accepts TCP but never
  answers the CONNECT frame (a firewall, a proxy or another service on the port), where
  only ``request_timeout`` can end the wait;
* refused credentials: Artemis and RabbitMQ (ActiveMQ Classic here has no authentication
  configured and accepts any password, so it has no case);
* a destination the broker refuses:

  - RabbitMQ: a name with ``/`` in it (``/queue/a/b``, ``/topic/a/b``) gets
    ``ERROR message:Invalid destination`` ("'/a/b' is not a valid queue destination");
    the ERROR frame carries no ``receipt-id`` and the connection stays open; a queue
    named ``amq.*`` gets ``ERROR message:access_refused`` ("queue name ... contains
    reserved prefix 'amq.*'"), also without ``receipt-id``, and the connection is closed;
  - Artemis: a wildcard address (``orders.*``, ``#``) gets ``ERROR message:AMQ339011
    Error sending message CoreMessage[... address=orders.* ...]`` with the SEND's
    ``receipt-id``, then the broker closes the connection (subscribing to a wildcard is
    legitimate there, so there is no consumer case);
  - ActiveMQ Classic: a composite destination with an empty member (``a,,b``) makes the
    broker drop the TCP connection without any ERROR frame (its log says
    ``Invalid destination name: a non-empty name is required``);

* an oversize message:

  - RabbitMQ: a body over ``max_message_size`` (default 128 MiB) gets ``ERROR
    message:precondition_failed`` ("message size ... is larger than configured max size
    134217728") without ``receipt-id``, then the connection is closed;
  - ActiveMQ Classic: a frame over ``wireFormat.maxFrameSize`` (104857600 here) gets
    ``ERROR message:The maximum data length was exceeded`` as soon as the broker reads
    ``content-length``, and the connection is closed while the body is still being sent;
  - Artemis has no case: it took a 129 MiB message (in about 40 s, converted to a large
    message) and has no frame size limit on its STOMP acceptor, so there is no size it
    refuses that a test can afford.

Both oversize cases hold about 300 MB of memory for well under a second each.

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_errors.py -v -p no:randomly``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import ConnectionFactory, DeliveryMode, Queue, Topic

pytestmark = pytest.mark.stomp

WRONG_PASSWORD = "wrong-Pa55word-xyz"
"""Distinctive, so that finding it anywhere in an error or a log record is a leak."""
REQUEST_TIMEOUT = 5.0
"""The factories' ``request_timeout``: every error here must come well before it."""
PROMPT = REQUEST_TIMEOUT / 2
"""An error that takes longer than this came from a timeout, not from the broker."""
PROBE_TOPIC = "jmslike-test-errors-probe"
"""Where a connection's usability is probed after an error: a topic nobody subscribes
to, so a probe that gets through leaves nothing behind on any broker."""
OVERSIZE_QUEUE = "jmslike-test-errors-oversize"
"""One fixed queue for the oversize sends (RabbitMQ declares it before it refuses the
message, so a fixed name keeps reruns from piling up empty queues)."""

BROKER_VARIABLES = {
    "activemq": "JMSLIKE_TEST_ACTIVEMQ_STOMP_URL",
    "artemis": "JMSLIKE_TEST_ARTEMIS_STOMP_URL",
    "rabbitmq": "JMSLIKE_TEST_RABBITMQ_STOMP_URL",
}


# ------------------------------------------------------------------------ brokers


def url_of(broker: str) -> str:
    return broker_url(BROKER_VARIABLES[broker])


def address_of(url: str) -> str:
    """``host:port`` as the STOMP provider names a broker in its messages."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 61613}"


def with_password(url: str, password: str) -> str:
    """``url`` with its password replaced (the user kept)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:{password}@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def factory(url: str, **kwargs: Any) -> ConnectionFactory:
    return ConnectionFactory(url, request_timeout=REQUEST_TIMEOUT, **kwargs)


def case(broker: str, *values: object, id: str) -> Any:
    """A parameter set for one broker, with that broker's marker."""
    return pytest.param(broker, *values, marks=getattr(pytest.mark, broker), id=id)


# ------------------------------------------------------------------------ checks


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def full_text(exc: BaseException) -> str:
    """The exception as a traceback prints it, chained causes and contexts included."""
    return "".join(traceback.format_exception(exc))


def problems_with(
    exc: BaseException,
    *,
    address: str,
    expected: type[jmslike.JMSException] | tuple[type[jmslike.JMSException], ...],
    cause: Sequence[str],
    elapsed: float,
    password: str | None = None,
) -> list[str]:
    """What is wrong with ``exc`` as the error for a refused request, or nothing.

    ``cause``: words of which at least one (case-insensitive) must be in the message.
    """
    message = str(exc)
    problems = []
    if not isinstance(exc, expected):
        names = (
            " or ".join(t.__name__ for t in expected)
            if isinstance(expected, tuple)
            else expected.__name__
        )
        problems.append(f"expected {names}, got {type(exc).__module__}.{type(exc).__name__}")
    if address not in message:
        problems.append(f"the message does not name the broker {address}")
    if not any(word.lower() in message.lower() for word in cause):
        problems.append(f"the message does not say the cause (none of {list(cause)})")
    if message.rstrip().endswith(":"):
        problems.append("the message ends with an empty reason")
    if elapsed > PROMPT:
        problems.append(
            f"it took {elapsed:.1f} s (request_timeout={REQUEST_TIMEOUT} s): a timeout, "
            "not the broker's answer"
        )
    if password is not None and password in full_text(exc):
        problems.append("the password is in the exception or its chain")
    return problems


def describe(exc: BaseException, elapsed: float) -> str:
    return f"{type(exc).__name__}({str(exc)!r}) after {elapsed:.2f} s"


@contextlib.contextmanager
def raised(what: str) -> Iterator[dict[str, Any]]:
    """Run the block, which must raise a JMSException; yields a dict that gets the
    exception (``exc``) and the seconds it took (``elapsed``)."""
    result: dict[str, Any] = {}
    start = time.monotonic()
    try:
        yield result
    except jmslike.JMSException as exc:
        result["exc"] = exc
        result["elapsed"] = time.monotonic() - start
        return
    except Exception as exc:
        pytest.fail(f"{what} raised a foreign {type(exc).__module__}.{type(exc).__name__}: {exc!r}")
    pytest.fail(f"{what} did not raise")


def jmslike_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "jmslike" or r.name.startswith("jmslike.")]


def record_text(record: logging.LogRecord) -> str:
    text = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        text += "\n" + full_text(record.exc_info[1])
    return text


def verdict(
    what: str,
    exc: BaseException,
    elapsed: float,
    problems: list[str],
    reported: list[jmslike.JMSException],
    afterwards: str,
) -> str:
    """The failure text of a bad-input test: what was raised, what is wrong with it,
    what the exception listener saw and the state of the connection afterwards."""
    return (
        f"{what} raised {describe(exc, elapsed)}: "
        + "; ".join(problems)
        + f". The exception listener got: {[f'{type(e).__name__}: {e}' for e in reported]}"
        + f". Afterwards the connection was {afterwards}"
    )


def check_usable_or_clear(session: jmslike.Session, address: str) -> tuple[str, str | None]:
    """After a refused request the connection either still works (a persistent send to
    a topic nobody listens to is confirmed) or says clearly that it is gone: a
    ConnectionFailedError or IllegalStateError naming the broker, at once. Returns
    (what happened, the problem with it or None)."""
    start = time.monotonic()
    try:
        session.create_producer(Topic(PROBE_TOPIC)).send(session.create_text_message("probe"))
    except jmslike.JMSException as exc:
        elapsed = time.monotonic() - start
        state = f"closed ({describe(exc, elapsed)})"
        if not isinstance(exc, (jmslike.ConnectionFailedError, jmslike.IllegalStateError)):
            return state, "afterwards the connection neither works nor says it is closed"
        if address not in str(exc) or elapsed > PROMPT:
            return state, "afterwards the error does not name the broker or is a timeout"
        return state, None
    return "usable", None


# ------------------------------------------------------------------ 1. unreachable


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word; yields the port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(conn)

    thread = threading.Thread(target=accept, name="silent-stomp-server", daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        server.close()
        for conn in accepted:
            conn.close()
        thread.join(5)


def connect_in_thread(make: Callable[[], Any], limit: float) -> tuple[Any, float]:
    """Run ``make()`` in a thread (so a hang fails the test instead of blocking it);
    returns (its result or exception, seconds), or fails when it runs past ``limit``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        start = time.monotonic()
        try:
            outcome["result"] = make()
        except BaseException as exc:  # handed to the test, never lost in the thread
            outcome["result"] = exc
        outcome["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=run, name="connect-attempt", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        return None, float("inf")
    return outcome["result"], outcome["elapsed"]


CONNECTION_CAUSE = (
    "connection refused",
    "errno 111",
    "econnrefused",
    "unreachable",
    "not reachable",
    "could not connect",
    "cannot connect",
)


def test_closed_port_fails_fast_with_connection_failed() -> None:
    port = free_port()
    url = f"stomp://127.0.0.1:{port}"
    result, elapsed = connect_in_thread(
        lambda: factory(url).create_connection(), REQUEST_TIMEOUT + 5
    )
    if result is None:
        pytest.fail(f"create_connection to the closed port {port} hung past {REQUEST_TIMEOUT} s")
    if isinstance(result, jmslike.Connection):
        result.close()
        pytest.fail(f"create_connection to the closed port {port} succeeded")
    if not isinstance(result, jmslike.JMSException):
        pytest.fail(f"a foreign {type(result).__name__} escaped: {result!r}")
    problems = problems_with(
        result,
        address=f"127.0.0.1:{port}",
        expected=jmslike.ConnectionFailedError,
        cause=CONNECTION_CAUSE,
        elapsed=elapsed,
    )
    assert not problems, f"{describe(result, elapsed)}: " + "; ".join(problems)


def test_closed_port_logs_no_warning_beside_the_error(caplog: pytest.LogCaptureFixture) -> None:
    """stomp.py's "could not connect to host" warning repeated the error the caller gets,
    on a line of its own (logging's last resort) for an application that set up no
    logging; it is an INFO record of ``jmslike.stomp`` now, with the same words."""
    url = f"stomp://127.0.0.1:{free_port()}"
    with caplog.at_level(logging.DEBUG), pytest.raises(jmslike.ConnectionFailedError):
        factory(url).create_connection()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not warnings, [f"{r.name}: {r.getMessage()}" for r in warnings]
    assert any(
        r.name == "jmslike.stomp" and "could not connect to host" in r.getMessage()
        for r in caplog.records
    ), [f"{r.name}: {r.getMessage()}" for r in caplog.records]


def test_silent_peer_fails_within_request_timeout() -> None:
    """TCP connects but no CONNECTED ever comes: only request_timeout ends the wait."""
    with silent_server() as port:
        result, elapsed = connect_in_thread(
            lambda: factory(f"stomp://127.0.0.1:{port}").create_connection(),
            REQUEST_TIMEOUT * 2 + 5,
        )
        # Leaving the block closes the server, which ends a hung attempt too.
    if result is None:
        pytest.fail(
            f"create_connection to a peer that never answers was still waiting after "
            f"{REQUEST_TIMEOUT * 2 + 5:.0f} s: request_timeout={REQUEST_TIMEOUT} s is not "
            "applied to the wait for CONNECTED"
        )
    if isinstance(result, jmslike.Connection):
        result.close()
        pytest.fail("create_connection to a peer that never answers succeeded")
    assert isinstance(result, jmslike.ConnectionFailedError), describe(result, elapsed)
    assert f"127.0.0.1:{port}" in str(result), describe(result, elapsed)
    assert elapsed <= REQUEST_TIMEOUT * 2, describe(result, elapsed)


# ------------------------------------------------------------------ 2. credentials


SECURITY_CAUSE = ("password", "access refused", "authenticat", "credential", "security", "login")


@pytest.mark.parametrize("where", ["url", "argument"])
@pytest.mark.parametrize(
    "broker",
    [case("artemis", id="artemis"), case("rabbitmq", id="rabbitmq")],
)
def test_wrong_password_is_a_security_error_without_the_password(
    broker: str, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="jmslike")
    url = url_of(broker)
    if where == "url":
        make = factory(with_password(url, WRONG_PASSWORD))
    else:
        make = factory(url, password=WRONG_PASSWORD)
    assert WRONG_PASSWORD not in repr(make)
    with raised("create_connection with a wrong password") as got:
        make.create_connection().close()
    exc, elapsed = got["exc"], got["elapsed"]
    problems = problems_with(
        exc,
        address=address_of(url),
        expected=jmslike.JMSSecurityError,
        cause=SECURITY_CAUSE,
        elapsed=elapsed,
        password=WRONG_PASSWORD,
    )
    leaks = [r for r in jmslike_records(caplog) if WRONG_PASSWORD in record_text(r)]
    problems += [f"the password is in a {r.name} log record: {r.getMessage()!r}" for r in leaks]
    assert not problems, f"{describe(exc, elapsed)}: " + "; ".join(problems)


# ------------------------------------------------------------------ 3. destinations


DESTINATION_CASES = [
    # (A name with "/" was refused by RabbitMQ here: "'/<name>' is not a valid queue
    # destination". jmslike writes it as %2F since 2026-12-02, and it travels:
    # test_destination_names_travel_as_written.)
    # RabbitMQ: "ACCESS_REFUSED - queue name 'amq.<name>' contains reserved prefix
    # 'amq.*'" (ERROR without receipt-id), then the connection is closed.
    case("rabbitmq", "send", lambda tag: Queue(f"amq.{tag}"), id="rabbitmq-send-reserved-prefix"),
    # Artemis: a wildcard address is refused with AMQ339011 naming the address.
    case("artemis", "send", lambda tag: Queue(f"{tag}.*"), id="artemis-send-queue-wildcard"),
    case("artemis", "send", lambda tag: Topic(f"{tag}.#"), id="artemis-send-topic-wildcard"),
    # ActiveMQ Classic: an empty member of a composite destination; the broker drops the
    # connection without an ERROR frame.
    case("activemq", "send", lambda tag: Queue(f"{tag},,x"), id="activemq-send-empty-member"),
    case(
        "activemq",
        "consume",
        lambda tag: Topic(f"{tag},,x"),
        id="activemq-consume-empty-member",
    ),
]


@pytest.mark.parametrize(("broker", "operation", "make_destination"), DESTINATION_CASES)
def test_refused_destination_is_named_in_the_error(
    broker: str, operation: str, make_destination: Callable[[str], jmslike.Destination]
) -> None:
    """The send or create_consumer call itself raises (InvalidDestinationError, or at
    least a JMSException naming the destination), promptly; afterwards the connection
    still works or says clearly that it is closed."""
    url = url_of(broker)
    address = address_of(url)
    destination = make_destination(unique("jmslike-bad"))
    reported: list[jmslike.JMSException] = []
    with factory(url).create_connection() as connection:
        connection.set_exception_listener(reported.append)
        session = connection.create_session()
        with raised(f"{operation} on {destination}") as got:
            if operation == "send":
                producer = session.create_producer(destination)
                producer.send(session.create_text_message("refused"))
            else:
                session.create_consumer(destination)
        exc, elapsed = got["exc"], got["elapsed"]
        problems = problems_with(
            exc,
            address=address,
            expected=jmslike.JMSException,
            cause=(destination.name,),
            elapsed=elapsed,
        )
        afterwards, problem = check_usable_or_clear(session, address)
        problems += [problem] if problem else []
    assert not problems, verdict(
        f"{operation} on {destination}", exc, elapsed, problems, reported, afterwards
    )


# ------------------------------------------------------------------ 4. oversize


MiB = 1024 * 1024
OVERSIZE_CASES = [
    # RabbitMQ's default max_message_size is 134217728 (128 MiB).
    case("rabbitmq", 128 * MiB + 1, id="rabbitmq-over-max_message_size"),
    # ActiveMQ Classic here: wireFormat.maxFrameSize=104857600 on the STOMP connector.
    case("activemq", 100 * MiB + 1, id="activemq-over-maxFrameSize"),
]
SIZE_CAUSE = ("size", "length", "exceed", "too large", "too big", "maximum", "max ")


@pytest.mark.parametrize(("broker", "size"), OVERSIZE_CASES)
def test_oversize_persistent_send_raises_with_the_cause(broker: str, size: int) -> None:
    """A persistent send waits for the broker, so a refusal must reach the caller, with
    the broker's reason, not only the exception listener."""
    url = url_of(broker)
    address = address_of(url)
    reported: list[jmslike.JMSException] = []
    with factory(url).create_connection() as connection:
        connection.set_exception_listener(reported.append)
        session = connection.create_session()
        producer = session.create_producer(Queue(OVERSIZE_QUEUE))
        producer.delivery_mode = DeliveryMode.PERSISTENT
        message = session.create_bytes_message(b"\0" * size)
        with raised(f"a persistent send of {size} bytes") as got:
            producer.send(message)
        del message
        exc, elapsed = got["exc"], got["elapsed"]
        problems = problems_with(
            exc,
            address=address,
            expected=jmslike.JMSException,
            cause=SIZE_CAUSE,
            elapsed=elapsed,
        )
        afterwards, problem = check_usable_or_clear(session, address)
        problems += [problem] if problem else []
    assert not problems, verdict(
        f"a persistent send of {size} bytes", exc, elapsed, problems, reported, afterwards
    )


# ------------------------------------------- 5. a refused commit, then closing


@pytest.mark.artemis
def test_refused_commit_says_why_and_close_still_works() -> None:
    """Artemis refuses a transaction that repeats a committed ``_AMQ_DUPL_ID`` ("AMQ339013
    Error committing") and drops the connection. The commit raises
    TransactionRolledBackError carrying the broker's words (not only "connection closed"),
    and closing the session and connection afterwards raises nothing: the broker ended the
    transaction with the connection."""
    url = url_of("artemis")
    duplicate = unique("dup")
    reported: list[jmslike.JMSException] = []
    connection = factory(url).create_connection()
    connection.set_exception_listener(reported.append)
    session = connection.create_session(transacted=True)
    producer = session.create_producer(Queue(unique("jmslike-dup")))
    first = session.create_text_message("first")
    first.set_string_property("_AMQ_DUPL_ID", duplicate)
    producer.send(first)
    session.commit()
    again = session.create_text_message("again")
    again.set_string_property("_AMQ_DUPL_ID", duplicate)
    with pytest.raises(jmslike.TransactionRolledBackError) as info:
        producer.send(again)
        session.commit()
    assert "AMQ339013" in str(info.value), str(info.value)
    connection.close()  # must not raise
