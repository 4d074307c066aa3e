"""A connection made before ``os.fork()`` is the parent's: in the child it raises at once,
saying to connect after the fork, and the child's exit leaves the parent's connection
working (``jmslike._process``). Real OS processes on every broker x protocol, and the
embedded broker.

Seen before: the child's send waited for ever (AMQP 1.0; over STOMP it wrote on the
parent's socket and then waited), and on an in-memory embedded broker it went to the
child's copy of the broker and was lost. A child that closed the connection, or whose exit
closed it, would have said goodbye to the broker on the parent's socket.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid

import pytest
from brokercases import CASES, case_url

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import jmslike

    url, queue = sys.argv[1], sys.argv[2]
    connection = jmslike.ConnectionFactory(url).create_connection()
    session = connection.create_session()
    producer = session.create_producer(queue)
    consumer = session.create_consumer(queue)
    producer.send(session.create_text_message("parent"))

    def child():
        began = time.monotonic()
        for call in (
            lambda: producer.send(session.create_text_message("inherited")),
            lambda: consumer.receive(1.0),
            connection.create_session,
        ):
            try:
                call()
            except jmslike.ConnectionFailedError as exc:
                assert "os.fork()" in str(exc) and "after the fork" in str(exc), exc
            else:
                raise AssertionError("an inherited connection worked in the child")
        connection.close()  # lets go, without a word to the broker
        assert time.monotonic() - began < 5
        with jmslike.ConnectionFactory(url).create_connection() as own:
            mine = own.create_session()
            mine.create_producer(queue).send(mine.create_text_message("child"))

    pid = os.fork()
    if pid == 0:
        try:
            child()
        except BaseException as exc:
            print("child:", repr(exc), flush=True)
            os._exit(1)
        sys.exit(0)  # a normal exit: the exit handlers run in the child too
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    connection.start()
    # An in-memory embedded broker is the process's own: the child's went with it.
    expected = ["parent"] if url == "embedded://" else ["parent", "child"]
    got = [consumer.receive(10.0).text for _ in expected]
    assert got == expected, got
    producer.send(session.create_text_message("after"))
    assert consumer.receive(10.0).text == "after"
    assert consumer.receive(0.5) is None
    connection.close()
    print("ok", flush=True)
    """
)


@pytest.mark.parametrize("case", ["embedded", *CASES])
def test_a_connection_made_before_fork_raises_in_the_child_and_works_in_the_parent(
    case: str,
) -> None:
    url = "embedded://" if case == "embedded" else case_url(case)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, url, f"queue://jmslike-fork-{uuid.uuid4().hex[:8]}"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr
