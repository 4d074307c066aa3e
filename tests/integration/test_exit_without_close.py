"""A process that sends and exits without closing its connection loses nothing it sent,
on every broker x protocol (``jmslike._process``), tested with real OS processes.

Seen before the fix, 2,000 non-persistent sends and then the end of the script: over AMQP
1.0 all were lost on Artemis and RabbitMQ and 1,999 on ActiveMQ Classic, over STOMP to
ActiveMQ Classic 15 of them. Also here: the exit says so (a warning naming the broker), and a
listener that never returns holds the exit only ``EXIT_CLOSE_WAIT`` seconds.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from brokercases import CASES, case_url

from jmslike import ConnectionFactory
from jmslike.testing.helpers import receive_count

COUNT = 2000

SENDER = textwrap.dedent(
    """
    import sys
    import jmslike
    from jmslike import DeliveryMode

    url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    connection = jmslike.ConnectionFactory(url).create_connection()
    session = connection.create_session()
    producer = session.create_producer(queue)
    producer.delivery_mode = DeliveryMode.NON_PERSISTENT
    for i in range(count):
        producer.send(session.create_text_message(str(i)))
    # no close: the script ends here
    """
)

STUCK = textwrap.dedent(
    """
    import sys, threading, time
    import jmslike

    url, queue = sys.argv[1], sys.argv[2]
    connection = jmslike.ConnectionFactory(url).create_connection()
    session = connection.create_session()
    taken = threading.Event()

    def listener(message):
        taken.set()
        time.sleep(3600)  # never returns: close() would wait for it

    session.create_consumer(queue).set_message_listener(listener)
    connection.start()
    other = connection.create_session()
    other.create_producer(queue).send(other.create_text_message("x"))
    assert taken.wait(30)
    """
)


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("case", CASES)
def test_non_persistent_sends_of_a_process_that_exits_without_close_arrive(case: str) -> None:
    url = case_url(case)
    queue = f"queue://jmslike-exit-{uuid.uuid4().hex[:8]}"
    done = _run(SENDER, url, queue, str(COUNT))
    assert done.returncode == 0, done.stderr
    assert "1 connection(s) still open at exit" in done.stderr, done.stderr
    with ConnectionFactory(url).create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        got = receive_count(consumer, COUNT)
    assert [m.text for m in got] == [str(i) for i in range(COUNT)]


@pytest.mark.parametrize("case", CASES[:1] + CASES[4:5])
def test_a_listener_that_never_returns_holds_the_exit_a_bounded_time(case: str) -> None:
    from jmslike._process import EXIT_CLOSE_WAIT

    began = time.monotonic()
    done = _run(STUCK, case_url(case), f"queue://jmslike-exit-stuck-{uuid.uuid4().hex[:8]}")
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    assert f"gave up closing connections at exit after {EXIT_CLOSE_WAIT} s" in done.stderr
    assert took < EXIT_CLOSE_WAIT + 25, took  # start-up, connecting and the wait, no more
