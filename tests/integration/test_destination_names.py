"""Destination names Artemis reads as something else are refused before anything is sent.

Found by sending to queues named with each of ``. / space ü : * > # % , \\ = & ' ?`` on
every broker and protocol, a fresh connection each:

* Artemis takes ``*`` and ``#`` as wildcards and refuses a send to such an address
  (AMQ229260). Over STOMP its ERROR frame closed the connection, so every session and
  consumer of the connection failed after one bad name.
* Over AMQP 1.0 Artemis reads what follows ``?`` as the address' parameters: a send to
  ``a?b`` went to ``a``, and a consumer of ``a?b`` got nothing.

Both are now an InvalidDestinationError naming the destination, raised before anything is
written, and the connection goes on working. A consumer may still use wildcards (a topic
subscription over several addresses). The other names travelled on every broker, except
RabbitMQ over AMQP (``/``, refused before, see ``jmslike_amqp.connection``) and ActiveMQ
Classic over STOMP, which reads ``,`` as a composite destination and ``?`` as options
(its own features; docs/providers.md, names).

Run: ``.venv/bin/python -m pytest tests/integration/test_destination_names.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import uuid

import pytest
from brokercases import url_variables
from brokerenv import broker_url

from jmslike import ConnectionFactory, InvalidDestinationError

pytestmark = pytest.mark.artemis


@pytest.mark.parametrize("variable", url_variables("artemis"))
@pytest.mark.parametrize("character", ["*", "#"])
def test_a_send_to_a_wildcard_name_is_refused_and_the_connection_lives(
    variable: str, character: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    with ConnectionFactory(broker_url(variable)).create_connection() as connection:
        session = connection.create_session()
        with pytest.raises(InvalidDestinationError, match="wildcards") as refused:
            session.create_producer(f"queue://names-{tag}-a{character}b").send(
                session.create_text_message("refused")
            )
        assert f"names-{tag}-a{character}b" in str(refused.value)
        # A consumer may use wildcards: one over the topics news-<tag>.<anything>.
        connection.start()
        news = session.create_consumer(f"topic://news-{tag}.*")
        session.create_producer(f"topic://news-{tag}.eu").send(session.create_text_message("eu"))
        got = news.receive(5.0)
        assert got is not None and got.text == "eu"
        queue = session.create_queue(f"names-{tag}-fine")
        session.create_producer(queue).send(session.create_text_message("after"))
        after = session.create_consumer(queue).receive(5.0)
        assert after is not None and after.text == "after"


@pytest.mark.amqp
def test_a_question_mark_is_refused_over_amqp() -> None:
    tag = uuid.uuid4().hex[:8]
    url = broker_url("JMSLIKE_TEST_ARTEMIS_AMQP_URL")
    with ConnectionFactory(url).create_connection() as connection:
        session = connection.create_session()
        for make in (
            lambda: session.create_producer(f"queue://names-{tag}-a?b").send(
                session.create_text_message("refused")
            ),
            lambda: session.create_consumer(f"queue://names-{tag}-a?b"),
        ):
            with pytest.raises(InvalidDestinationError, match="parameters"):
                make()
