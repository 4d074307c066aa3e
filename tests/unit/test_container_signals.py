"""``MessageListenerContainer.run()`` on the embedded broker: what it stops on, what it
refuses, and that it leaves the process's signal handlers as it found them. The worker
processes stopped by real signals on every broker are in
tests/integration/test_container_run.py."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import uuid

import pytest

import jmslike
from jmslike import MessageListenerContainer


def _container(on_message=print) -> MessageListenerContainer:
    factory = jmslike.ConnectionFactory(f"embedded://run-{uuid.uuid4().hex[:8]}")
    return MessageListenerContainer(factory, "queue://work", on_message)


def test_run_returns_the_signal_it_stopped_on_and_puts_the_handlers_back() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    container = _container()
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
    assert container.run() == signal.SIGTERM
    assert not container.running
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_run_returns_none_when_a_listener_stops_the_container() -> None:
    factory = jmslike.ConnectionFactory(f"embedded://run-{uuid.uuid4().hex[:8]}")
    holder: list[MessageListenerContainer] = []
    container = MessageListenerContainer(
        factory, "queue://work", lambda message: holder[0].stop(), start=False
    )
    holder.append(container)
    with factory.create_connection() as connection:
        session = connection.create_session()
        session.create_producer("queue://work").send(session.create_text_message("last"))
    container.start()
    assert container.run() is None
    assert not container.running


def test_run_off_the_main_thread_needs_no_signals() -> None:
    container = _container()
    outcome: list[object] = []

    def worker() -> None:
        try:
            container.run()
        except jmslike.IllegalStateError as exc:
            outcome.append(exc)
        outcome.append(container.run(signals=()))

    thread = threading.Thread(target=worker)
    thread.start()
    threading.Timer(0.3, container.stop).start()
    thread.join(10)
    assert "main thread" in str(outcome[0]) and "signals=()" in str(outcome[0])
    assert outcome[1] is None


@pytest.mark.parametrize("bad", [signal.SIGKILL, 0, 100000])
def test_run_refuses_what_is_not_a_signal_to_catch(bad: int) -> None:
    container = _container()
    try:
        with pytest.raises(jmslike.InvalidArgumentError, match=f"{int(bad)}"):
            container.run(signals=[signal.SIGTERM, bad])
        assert container.running  # refused before anything changed
    finally:
        container.stop()


def test_the_asyncio_container_runs_until_a_signal_and_puts_the_handlers_back() -> None:
    from jmslike import aio

    async def main() -> tuple[object, object, object]:
        sigint_before = signal.getsignal(signal.SIGINT)  # asyncio.run's own
        factory = aio.ConnectionFactory(f"embedded://run-{uuid.uuid4().hex[:8]}")
        container = aio.MessageListenerContainer(factory, "queue://work", print)
        with pytest.raises(jmslike.IllegalStateError, match="before start"):
            await container.run()
        async with container:
            asyncio.get_running_loop().call_later(0.2, os.kill, os.getpid(), signal.SIGTERM)
            stopped_by = await container.run()
            assert not container.running
        return stopped_by, sigint_before, signal.getsignal(signal.SIGINT)

    before = signal.getsignal(signal.SIGTERM)
    stopped_by, sigint_before, sigint_after = asyncio.run(main())
    assert stopped_by == signal.SIGTERM
    assert sigint_after == sigint_before
    assert signal.getsignal(signal.SIGTERM) == before
