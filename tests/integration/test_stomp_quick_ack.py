"""TCP acknowledgements over STOMP: no RECEIPT waits for the client's delayed ACK.

ActiveMQ Classic leaves Nagle's algorithm on at its end of a STOMP connection. A RECEIPT
it writes while its last MESSAGE frame is not yet acknowledged at the TCP level waits
for the client kernel's delayed acknowledgement, up to 40 ms on Linux. CLIENT_ACKNOWLEDGE's
``acknowledge()`` waits for the RECEIPT of its ACK, so it made about 50 msg/s there until
the STOMP reader set ``TCP_QUICKACK`` after every read (``jmslike_stomp/wire.py``).
Artemis and RabbitMQ set ``TCP_NODELAY`` on their sockets, so jmslike leaves that system
call out there (``Dialect.quick_ack``).

Each case acknowledges messages one at a time, as a CLIENT_ACKNOWLEDGE loop does, with a
window of 100 messages (so MESSAGE frames keep coming while ACKs go out), and allows at
most one ``acknowledge()`` in twenty to take 30 ms or more; each takes well under a
millisecond on these brokers. With ``quick_ack`` turned off on Classic, 406 of 1,000
took about 40 ms (18 s in all, against 0.2 s).

Run: ``.venv/bin/python -m pytest tests/integration/test_stomp_quick_ack.py -v``
(needs the brokers of ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from brokerenv import broker_url

from jmslike import ConnectionFactory, DeliveryMode, Session

pytestmark = pytest.mark.stomp

ACKNOWLEDGES = 600
WINDOW = 100
SLOW_S = 0.030
"""Linux's delayed TCP acknowledgement is up to 40 ms: an acknowledge() this slow waited
for it (or for a busy machine, which the allowance of one in twenty covers)."""

CASES = [
    pytest.param("activemq", True, marks=pytest.mark.activemq, id="activemq"),
    pytest.param("artemis", False, marks=pytest.mark.artemis, id="artemis"),
    pytest.param("rabbitmq", False, marks=pytest.mark.rabbitmq, id="rabbitmq"),
]


def _wire_of(connection: Any) -> Any:
    """The STOMP reader of a connection's own transport (jmslike_stomp/wire.py)."""
    return connection._provider.transport._wire


@pytest.mark.parametrize(("broker", "quick_ack"), CASES)
def test_acknowledge_does_not_wait_for_a_delayed_tcp_ack(broker: str, quick_ack: bool) -> None:
    url = broker_url(f"JMSLIKE_TEST_{broker.upper()}_STOMP_URL")
    queue = f"quick-ack-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(url, prefetch=WINDOW, clientWindow=WINDOW)
    with factory.create_connection() as connection:
        assert _wire_of(connection).quick_ack is quick_ack
        sending = connection.create_session()
        producer = sending.create_producer(sending.create_queue(queue))
        for index in range(ACKNOWLEDGES):
            producer.send(
                sending.create_text_message(f"m{index}"),
                delivery_mode=DeliveryMode.NON_PERSISTENT,
            )
        session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(session.create_queue(queue))
        connection.start()
        took: list[float] = []
        texts: list[str] = []
        for _ in range(ACKNOWLEDGES):
            message = consumer.receive(10.0)
            assert message is not None, f"only {len(texts)} of {ACKNOWLEDGES} came"
            texts.append(str(message.text))
            started = time.perf_counter()
            message.acknowledge()
            took.append(time.perf_counter() - started)
    assert texts == [f"m{index}" for index in range(ACKNOWLEDGES)]
    slow = [seconds for seconds in took if seconds >= SLOW_S]
    assert len(slow) <= ACKNOWLEDGES // 20, (
        f"{broker}: {len(slow)} of {ACKNOWLEDGES} acknowledge() calls took {SLOW_S * 1000:.0f} ms "
        f"or more ({sum(took):.1f} s in all): their RECEIPTs waited for delayed TCP "
        "acknowledgements"
    )
