"""The embedded broker's file store through the public API: what survives a restart."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.testing.helpers import Interrupt, interrupted_at

pytestmark = pytest.mark.embedded


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"embedded://{tmp_path / 'store' / 'broker.db'}"


def _send(url: str, queue: str, texts: list[str], **kwargs: object) -> None:
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        for text in texts:
            group, _, _ = text.partition(":")
            if ":" in text:
                producer.enable_ordering_group(group)
            producer.send(session.create_text_message(text), **kwargs)  # type: ignore[arg-type]


def _drain(url: str, queue: str) -> list[tuple[str | None, bool]]:
    out = []
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        consumer = session.create_consumer(queue)
        connection.start()
        while (message := consumer.receive(0.2)) is not None:
            out.append((message.text, message.jms_redelivered))  # type: ignore[attr-defined]
    return out


def test_persistent_messages_survive_a_restart_in_order(url: str) -> None:
    """Issue 3: stored messages come back in their original order, groups included."""
    _send(url, "queue://q", ["a:1", "b:1", "a:2", "c", "b:2", "a:3"])
    _send(url, "queue://q", ["np"], delivery_mode=DeliveryMode.NON_PERSISTENT)
    with ConnectionFactory(url).create_connection() as connection:
        assert connection.capabilities.persistent
    texts = [text for text, _ in _drain(url, "queue://q")]
    assert texts == ["a:1", "b:1", "a:2", "c", "b:2", "a:3"], "non-persistent never stored"
    assert _drain(url, "queue://q") == [], "acknowledged messages are gone"


def test_in_flight_messages_come_back_flagged(url: str) -> None:
    _send(url, "queue://q", ["m1", "m2", "m3"])
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer("queue://q")
        connection.start()
        first = consumer.receive(1.0)
        assert first is not None and first.text == "m1"  # type: ignore[attr-defined]
        consumer.receive(1.0)  # m2 held too, then the connection goes without acknowledging
    assert _drain(url, "queue://q") == [("m1", True), ("m2", True), ("m3", False)]


def test_durable_subscription_survives_a_restart(url: str) -> None:
    factory = ConnectionFactory(url, client_id="app")
    with factory.create_connection() as connection:
        session = connection.create_session()
        session.create_durable_subscriber("topic://prices", "sub").close()
        producer = session.create_producer("topic://prices")
        producer.send(session.create_text_message("p1"))
        producer.send(session.create_text_message("np"), delivery_mode=DeliveryMode.NON_PERSISTENT)
    with factory.create_connection() as connection:
        session = connection.create_session()
        subscriber = session.create_durable_subscriber("topic://prices", "sub")
        connection.start()
        got = subscriber.receive(1.0)
        assert got is not None and got.text == "p1"  # type: ignore[attr-defined]
        assert subscriber.receive(0.1) is None
        subscriber.close()
        session.unsubscribe("sub")
    with factory.create_connection() as connection:
        session = connection.create_session()
        session.create_producer("topic://prices").send(session.create_text_message("p2"))
        with pytest.raises(Exception, match="sub"):
            session.unsubscribe("sub")


def test_transaction_is_stored_at_commit_only(url: str) -> None:
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session(transacted=True)
        producer = session.create_producer("queue://q")
        producer.send(session.create_text_message("kept"))
        session.commit()
        producer.send(session.create_text_message("rolled back"))
        session.rollback()
        producer.send(session.create_text_message("never committed"))
    assert [text for text, _ in _drain(url, "queue://q")] == ["kept"]


def test_dead_lettered_message_is_stored_on_the_dlq(url: str) -> None:
    _send(url, "queue://q", ["poison"])
    with ConnectionFactory(url, max_redeliveries=0).create_connection() as connection:
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer("queue://q")
        connection.start()
        assert consumer.receive(1.0) is not None
        session.recover()
        assert consumer.receive(0.2) is None
    assert [text for text, _ in _drain(url, "queue://DLQ")] == ["poison"]
    assert _drain(url, "queue://q") == []


def test_a_second_process_gets_a_clear_error(url: str) -> None:
    """Issue 3: a second process that opens the same file gets an error, not corruption."""
    probe = textwrap.dedent(
        """
        import sys
        from jmslike import ConnectionFactory, JMSException
        try:
            ConnectionFactory(sys.argv[1]).create_connection()
        except JMSException as exc:
            print(type(exc).__name__, exc)
        """
    )
    with ConnectionFactory(url).create_connection():
        result = subprocess.run(
            [sys.executable, "-c", probe, url],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("IllegalStateError"), result.stdout
    assert "in use by process" in result.stdout and "broker.db" in result.stdout
    # once this process lets go, the other may open it
    again = subprocess.run(
        [sys.executable, "-c", probe, url], check=False, capture_output=True, text=True, timeout=60
    )
    assert again.stdout == "", again.stdout


def test_same_process_shares_one_broker(url: str) -> None:
    first, second = ConnectionFactory(url), ConnectionFactory(url)
    with first.create_connection() as one, second.create_connection() as two:
        assert one.capabilities.extra["broker_name"] == two.capabilities.extra["broker_name"]


def test_bad_store_settings_are_refused_at_the_factory(url: str) -> None:
    from jmslike import ConfigurationError

    with pytest.raises(ConfigurationError, match="storeSync"):
        ConnectionFactory(url + "?storeSync=sometimes")
    with pytest.raises(ConfigurationError, match="not both"):
        ConnectionFactory("embedded://name/path.db")


def test_a_message_that_keeps_crashing_its_consumer_is_dead_lettered(url: str) -> None:
    """ORD-13 across restarts: each run takes the message and dies without finishing it;
    once its delivery count passes the limit it goes to the DLQ instead of round again."""
    _send(url, "queue://q", ["poison", "next"])
    counts = []
    for _ in range(4):
        with ConnectionFactory(url, max_redeliveries=1).create_connection() as connection:
            session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = session.create_consumer("queue://q")
            connection.start()
            message = consumer.receive(0.5)
            assert message is not None
            if message.text != "poison":  # type: ignore[attr-defined]
                break
            counts.append(message.get_int_property("JMSXDeliveryCount"))
    assert counts == [1, 2]
    assert [text for text, _ in _drain(url, "queue://DLQ")] == ["poison"]


def test_an_interrupted_commit_leaves_the_file_as_the_memory(tmp_path: Path) -> None:
    """Ctrl-C inside ``commit()`` on a file store, at each call of jmslike's code in turn
    (``interrupted_at``): the program goes on and commits another message; then the file
    holds, after a restart, everything the broker held in memory (a browser's list). The
    interrupted commit is in doubt: its message may be in the file only (the store wrote
    it, the interrupt came before the memory took it), once. Found: an interrupt as the
    store's transaction ended rolled the file back while the memory kept the commit (its
    message gone after a restart: lost), and one just before its COMMIT left SQLite
    inside the transaction, so that every later write failed ("cannot start a
    transaction within a transaction")."""
    point = 1
    while True:
        url = f"embedded://{tmp_path / f'point-{point}' / 'broker.db'}"
        with ConnectionFactory(url).create_connection() as connection:
            session = connection.create_session(transacted=True)
            producer = session.create_producer("queue://q")
            producer.send(session.create_text_message("interrupted"))
            try:
                with interrupted_at(point, _jmslike):
                    session.commit()
                ran_through = True
            except Interrupt:
                ran_through = False
            producer.send(session.create_text_message("next"))
            session.commit()
            browser = connection.create_session().create_browser("queue://q")
            in_memory = [message.text for message in browser]  # type: ignore[attr-defined]
        assert "next" in in_memory, f"interrupt at call {point}: {in_memory}"
        after_restart = [text for text, _ in _drain(url, "queue://q")]
        in_doubt = [] if "interrupted" in in_memory else ["interrupted"]
        assert after_restart in (in_memory, in_doubt + in_memory), f"interrupt at call {point}"
        if ran_through:
            break
        point += 1
    assert point > 3, "commit() made fewer calls than expected: the test tests nothing"


def _jmslike(frame: types.FrameType) -> bool:
    return str(frame.f_globals.get("__name__", "")).startswith("jmslike")
