"""Reconnecting over STOMP: a real broker behind a TCP relay that the test can cut.

The relay (tests/faultproxy.py) forwards 127.0.0.1:<port> to the broker and can drop
every connection through it at once, which is what a broker restart or a network
failure looks like to a client.
A ``failover:(...)`` URL makes jmslike connect again with back-off, send its
subscriptions again, and carry on; messages that were in flight come back from the
broker flagged redelivered, in group order (ORD-11), and a transaction that was open
rolls back.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid

import pytest
from brokerenv import broker_url
from faultproxy import Relay

import jmslike
from jmslike import ConnectionFactory, Session

BROKERS = [
    pytest.param("JMSLIKE_TEST_ACTIVEMQ_STOMP_URL", marks=[pytest.mark.activemq], id="activemq"),
    pytest.param("JMSLIKE_TEST_ARTEMIS_STOMP_URL", marks=[pytest.mark.artemis], id="artemis"),
    pytest.param("JMSLIKE_TEST_RABBITMQ_STOMP_URL", marks=[pytest.mark.rabbitmq], id="rabbitmq"),
]

pytestmark = pytest.mark.stomp


@pytest.fixture(params=BROKERS)
def relayed(request: pytest.FixtureRequest):
    """(failover URL through a relay, direct URL, relay) for one broker."""
    direct = broker_url(request.param)
    parsed = jmslike.config.parse_url(direct)
    relay = Relay((parsed.host, parsed.port or 61613))
    credentials = f"{parsed.user}:{parsed.password}@" if parsed.user else ""
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()  # nothing listens there: the first member always fails
    url = (
        f"failover:(stomp://{credentials}127.0.0.1:{dead_port},"
        f"stomp://{credentials}127.0.0.1:{relay.port})?reconnectDelay=0.05"
    )
    yield url, direct, relay
    relay.close()


def test_failover_reconnects_resubscribes_and_redelivers_in_group_order(relayed) -> None:
    """A cut connection comes back by itself: the consumer keeps its subscription, what it
    held unacknowledged comes again flagged redelivered and in group order (ORD-11), and
    sends work again."""
    url, direct, relay = relayed
    queue = f"queue://failover-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(direct).create_connection() as feeder:
        producer = feeder.create_session().create_producer(queue)
        producer.enable_ordering_group("g")
        session = feeder.create_session()
        for text in ("g:1", "g:2", "g:3"):
            producer.send(session.create_text_message(text))

    errors: list[Exception] = []
    with ConnectionFactory(url, request_timeout=10.0).create_connection() as conn:
        conn.set_exception_listener(errors.append)
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(queue)
        conn.start()
        first = consumer.receive(5.0)
        assert first is not None and first.text == "g:1"
        accepted = relay.accepted
        relay.cut()
        first.acknowledge()  # the delivery belongs to the lost connection: not acknowledged
        deadline = time.monotonic() + 10.0
        while relay.accepted == accepted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert relay.accepted > accepted, "jmslike did not connect again"
        got = []
        while True:
            msg = consumer.receive(3.0)
            if msg is None:
                break
            got.append((msg.text, msg.jms_redelivered))
            msg.acknowledge()
        # g:1 again, flagged (its acknowledgement was lost with the connection), then the
        # rest, in order; the old copies buffered from the lost connection never show up.
        assert [text for text, _ in got] == ["g:1", "g:2", "g:3"], got
        assert got[0][1] is True, got
        conn.create_session().create_producer(queue).send(
            conn.create_session().create_text_message("after")
        )
        assert consumer.receive(5.0).text == "after"
    assert not errors, errors


def test_failover_rolls_back_an_open_transaction(relayed) -> None:
    """Sends of a transaction open when the connection was lost are gone with it: commit
    raises TransactionRolledBackError, and the session goes on with a new transaction."""
    url, _direct, relay = relayed
    queue = f"queue://failover-tx-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(url, request_timeout=10.0).create_connection() as conn:
        tx = conn.create_session(True)
        producer = tx.create_producer(queue)
        producer.send(tx.create_text_message("lost"))
        accepted = relay.accepted
        relay.cut()
        deadline = time.monotonic() + 10.0
        while relay.accepted == accepted and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # let the subscription and transaction state settle
        with pytest.raises(jmslike.TransactionRolledBackError):
            tx.commit()
        producer.send(tx.create_text_message("kept"))
        tx.commit()
        consumer = conn.create_session().create_consumer(queue)
        conn.start()
        assert consumer.receive(5.0).text == "kept"
        assert consumer.receive(0.5) is None


def test_plain_url_reports_the_loss(relayed) -> None:
    """Without failover (a plain stomp:// URL) a lost connection goes to the exception
    listener as ConnectionFailedError, and calls fail with it: nothing is retried silently."""
    _url, direct, relay = relayed
    parsed = jmslike.config.parse_url(direct)
    credentials = f"{parsed.user}:{parsed.password}@" if parsed.user else ""
    errors: list[Exception] = []
    got = threading.Event()
    plain = ConnectionFactory(f"stomp://{credentials}127.0.0.1:{relay.port}")
    with plain.create_connection() as conn:
        conn.set_exception_listener(lambda exc: (errors.append(exc), got.set()))
        session = conn.create_session()
        relay.cut()
        assert got.wait(5.0)
        assert isinstance(errors[0], jmslike.ConnectionFailedError)
        with pytest.raises(jmslike.JMSException):
            session.create_producer("queue://x").send(session.create_text_message("x"))
