"""A selector the broker itself refuses, over the real protocols.

jmslike refuses the selectors it knows Classic and Artemis cannot read before anything is
sent (``SelectorDialect.ascii_names``; the contract test
``test_a_selector_the_broker_refuses_is_an_invalid_selector_error``). These tests switch
that check off, so that the broker's parser has the last word, and check what the
provider does with its refusal:

* AMQP: the broker attaches the link with no source and detaches it with
  ``amqp:invalid-field``. Before, the attach was taken as a success and the detach as
  "the broker closed an attached link": attached again, refused again, about 2,000 times
  in a few seconds on ActiveMQ Classic, while the consumer waited for nothing. Now the
  consumer's creation fails with ``InvalidSelectorError`` and nothing is attached again.
* STOMP (which subscribes on first use): the ERROR is an ``InvalidSelectorError`` (it was
  an ``InvalidDestinationError`` on Classic, whose stack trace names destination classes,
  and a plain ``JMSException`` on Artemis). Artemis then drops the connection, as STOMP
  lets a broker do after an ERROR; Classic keeps it.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from brokerenv import broker_url

import jmslike
from jmslike import InvalidSelectorError

SELECTOR = "größe = 'S'"
BROKERS = [
    pytest.param("ACTIVEMQ", marks=pytest.mark.activemq, id="activemq"),
    pytest.param("ARTEMIS", marks=pytest.mark.artemis, id="artemis"),
]


def _send_two(session: jmslike.Session, queue: str) -> None:
    producer = session.create_producer(queue)
    for size in ("XL", "S"):
        message = session.create_text_message(size)
        message.set_string_property("größe", size)
        producer.send(message)


@pytest.mark.amqp
@pytest.mark.parametrize("broker", BROKERS)
def test_amqp_link_refused_for_its_selector(broker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import jmslike_amqp.connection as amqp_connection

    for name in ("CLASSIC_AMQP_SELECTORS", "ARTEMIS_AMQP_FILTER"):
        dialect = getattr(amqp_connection, name)
        monkeypatch.setattr(amqp_connection, name, dataclasses.replace(dialect, ascii_names=False))
    url = broker_url(f"JMSLIKE_TEST_{broker}_AMQP_URL")
    with jmslike.ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        queue = f"queue://refused-{uuid.uuid4().hex[:8]}"
        _send_two(session, queue)
        connection.start()
        transport = connection._provider.transport  # type: ignore[attr-defined]
        attaches = 0
        real = transport._engine.create_link

        def counting(*args: object, **kwargs: object) -> object:
            nonlocal attaches
            attaches += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(transport._engine, "create_link", counting)
        with pytest.raises(InvalidSelectorError, match="refused the selector") as refused:
            session.create_consumer(queue, message_selector=SELECTOR)
        assert "amqp:invalid-field" in str(refused.value)
        monkeypatch.setattr(transport._engine, "create_link", real)
        assert attaches == 1, f"the refused link was attached {attaches} times"
        # Nothing was taken, and the session goes on working.
        consumer = session.create_consumer(queue)
        got = [consumer.receive(5.0), consumer.receive(5.0)]
        assert [m.text if m else None for m in got] == ["XL", "S"]


@pytest.mark.stomp
@pytest.mark.parametrize("broker", BROKERS)
def test_stomp_subscription_refused_for_its_selector(
    broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jmslike_stomp.dialect as stomp_dialect

    for name in ("CLASSIC_STOMP_SELECTORS", "ARTEMIS_STOMP_SELECTORS"):
        dialect = getattr(stomp_dialect, name)
        monkeypatch.setattr(stomp_dialect, name, dataclasses.replace(dialect, ascii_names=False))
    url = broker_url(f"JMSLIKE_TEST_{broker}_STOMP_URL")
    queue = f"queue://refused-{uuid.uuid4().hex[:8]}"
    factory = jmslike.ConnectionFactory(url)
    with factory.create_connection() as connection:
        session = connection.create_session()
        _send_two(session, queue)
        connection.start()
        consumer = session.create_consumer(queue, message_selector=SELECTOR)
        with pytest.raises(InvalidSelectorError) as refused:
            consumer.receive(5.0)
        assert "größe" in str(refused.value)
    # Nothing was taken (Artemis has dropped that connection: a new one looks).
    with factory.create_connection() as connection:
        session = connection.create_session()
        connection.start()
        consumer = session.create_consumer(queue)
        got = [consumer.receive(5.0), consumer.receive(5.0)]
        assert [m.text if m else None for m in got] == ["XL", "S"]
