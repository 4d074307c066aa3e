"""``MessageListenerContainer.run()``: a worker process stopped by SIGTERM (``docker
stop``, systemd, Kubernetes) or Ctrl-C finishes the messages in hand and leaves the rest
on the broker: no message is processed twice, none is lost. Real OS processes, real
signals, every broker x protocol and the embedded broker's file store.

Seen without ``run()`` (the worker waiting in ``threading.Event().wait()``, Python's
default SIGTERM): the process ended in the middle of its messages, and those came again
to the next consumer, flagged redelivered, their work done twice.

Run: ``.venv/bin/python -m pytest tests/integration/test_container_run.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from brokercases import CASES, case_url

import jmslike
from jmslike.testing.helpers import drain_consumer

COUNT = 12

WORKER = textwrap.dedent(
    """
    import sys, time
    import jmslike

    url, queue, log = sys.argv[1], sys.argv[2], sys.argv[3]

    def on_message(message):
        with open(log, "a") as out:
            out.write(f"start {message.text}\\n")
        time.sleep(0.3)
        with open(log, "a") as out:
            out.write(f"done {message.text}\\n")

    factory = jmslike.ConnectionFactory(url)
    with jmslike.MessageListenerContainer(factory, queue, on_message, concurrency=2) as c:
        print("stopped by", c.run(), flush=True)
    """
)


AIO_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    import jmslike
    from jmslike import aio

    url, queue, log = sys.argv[1], sys.argv[2], sys.argv[3]

    async def on_message(message):
        with open(log, "a") as out:
            out.write(f"start {message.text}\\n")
        await asyncio.sleep(0.3)
        with open(log, "a") as out:
            out.write(f"done {message.text}\\n")

    async def main():
        factory = aio.ConnectionFactory(url)
        async with aio.MessageListenerContainer(factory, queue, on_message, concurrency=2) as c:
            print("stopped by", await c.run(), flush=True)

    asyncio.run(main())
    """
)
"""The same worker on asyncio: ``aio.MessageListenerContainer.run()``."""


def _lines(log: Path, kind: str) -> list[str]:
    text = log.read_text() if log.exists() else ""
    return [line.split()[1] for line in text.splitlines() if line.startswith(kind + " ")]


def _runs() -> list[Any]:
    """Every case with SIGTERM, to a synchronous worker and an asyncio one; Ctrl-C takes
    the same way through ``run()``, so once is enough for it."""
    runs = []
    for case in [pytest.param("embedded-file", id="embedded-file"), *CASES]:
        (name,) = case.values
        for worker, kind in ((WORKER, "SIGTERM"), (AIO_WORKER, "asyncio-SIGTERM")):
            runs.append(
                pytest.param(name, worker, signal.SIGTERM, id=f"{case.id}-{kind}", marks=case.marks)
            )
    runs.append(pytest.param("embedded-file", WORKER, signal.SIGINT, id="embedded-file-SIGINT"))
    return runs


@pytest.mark.parametrize(("case", "worker", "stop"), _runs())
def test_a_worker_stopped_by_a_signal_finishes_what_it_holds(
    case: str, worker: str, stop: signal.Signals, tmp_path: Path
) -> None:
    url = f"embedded:///{tmp_path / 'store.db'}" if case == "embedded-file" else case_url(case)
    queue = f"queue://container-run-{uuid.uuid4().hex[:8]}"
    texts = [str(number) for number in range(COUNT)]
    factory = jmslike.ConnectionFactory(url)
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer(queue)
        for text in texts:
            producer.send(session.create_text_message(text))
    log = tmp_path / "worker.log"
    process = subprocess.Popen(
        [sys.executable, "-c", worker, url, queue, str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_lines(log, "start")) < 3 and process.poll() is None:
            assert time.monotonic() < deadline, "the worker took no message within 60 s"
            time.sleep(0.02)
        process.send_signal(stop)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert f"stopped by {int(stop)}" in out, (out, err)
    started, done = _lines(log, "start"), _lines(log, "done")
    assert sorted(started) == sorted(done), (started, done)  # what it held, it finished
    assert len(done) < COUNT, "the worker processed everything: the signal came too late"
    with factory.create_connection() as connection:
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        left = [m.text for m in drain_consumer(consumer, timeout=1.0)]
    assert sorted(done + left, key=int) == texts, (done, left)


@pytest.mark.parametrize("relay_for", CASES, indirect=True)
def test_run_raises_once_the_connection_is_lost_for_good(relay_for) -> None:
    """A worker whose broker connection is cut (no failover) must end, not wait for
    ever: ``run()`` stops the container and raises ConnectionFailedError, so that the
    process exits and its supervisor starts it again."""
    url, _direct, relay = relay_for
    queue = f"queue://container-run-cut-{uuid.uuid4().hex[:8]}"
    container = jmslike.MessageListenerContainer(jmslike.ConnectionFactory(url), queue, print)
    threading.Timer(0.5, relay.cut).start()
    started = time.monotonic()
    with pytest.raises(jmslike.ConnectionFailedError, match="listener container on"):
        container.run(signals=())
    assert time.monotonic() - started < 30
    assert not container.running
