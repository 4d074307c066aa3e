"""``thread_cpus``: the threads jmslike starts for a connection run on the CPUs named, on
every provider; the application's threads and other connections' stay free.

Checked through the kernel (``os.sched_getaffinity`` of each thread's native id), on the
real brokers over the real protocols: the sessions' listener threads, the asynchronous
sends' completion threads, and the provider's I/O threads (the AMQP connection's thread,
stomp.py's receiver and heart-beat threads). Needs at least two CPUs, as CI's machines
have: with one, "held to one CPU" and "free" could not be told apart.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from jmslike import ConnectionFactory, Message
from jmslike.testing.cases import ProviderCase

IO_THREADS = ("jmslike-amqp-", "jmslike-stomp-io_loop")
"""Names of the providers' I/O threads (embedded has none: its broker runs on the
calling thread)."""


@pytest.fixture
def allowed() -> frozenset[int]:
    cpus = frozenset(os.sched_getaffinity(0))
    assert len(cpus) >= 2, f"this test needs two CPUs to tell placed from free, has {cpus}"
    return cpus


class _Seen:
    """Where the listener and the completion listener ran: (thread name, its CPUs)."""

    def __init__(self) -> None:
        self.places: dict[str, tuple[str, frozenset[int]]] = {}
        self.done = threading.Event()

    def note(self, what: str) -> None:
        self.places[what] = (threading.current_thread().name, frozenset(os.sched_getaffinity(0)))
        if len(self.places) == 2:
            self.done.set()

    def on_message(self, message: Message) -> None:
        self.note("listener")

    def on_completion(self, message: Message) -> None:
        self.note("completion")

    def on_exception(self, message: Message, exception: Exception) -> None:
        self.note("completion")


def _run_one(factory: ConnectionFactory, queue: str) -> tuple[_Seen, dict[str, frozenset[int]]]:
    """One message through a listener, sent asynchronously; then every thread started
    meanwhile (the connection's: other tests' connections may still have threads of
    their own), with its CPUs, while the connection is still open."""
    seen = _Seen()
    # The Thread objects, not their idents: a thread of an earlier test that ends during
    # this one leaves its ident to the next thread started (seen in CI: the
    # connection's own I/O thread, on artemis-stomp, was taken for an old one).
    before = set(threading.enumerate())
    with factory.create_connection() as connection:
        session = connection.create_session()
        session.create_consumer(queue).set_message_listener(seen.on_message)
        connection.start()
        sending = connection.create_session()
        sending.create_producer(queue).send(
            sending.create_text_message("placed?"), completion_listener=seen
        )
        assert seen.done.wait(20.0), f"only {sorted(seen.places)} ran within 20 s"
        threads = {
            t.name: frozenset(os.sched_getaffinity(t.native_id))
            for t in threading.enumerate()
            if t.native_id is not None and t.is_alive() and t not in before
        }
    return seen, threads


def test_thread_cpus_holds_the_connections_threads(
    provider_case: ProviderCase,
    make_factory: Callable[..., ConnectionFactory],
    unique: Callable[[str], str],
    allowed: frozenset[int],
) -> None:
    """``threadCpus`` set: the listener ran on a jmslike session thread held to that
    CPU, the completion listener on a completion thread held to it, and every I/O thread
    of the provider is held to it; the test's own thread is not."""
    cpu = max(allowed)
    seen, threads = _run_one(make_factory(threadCpus=str(cpu)), f"queue://{unique('placed')}")
    for what, (name, cpus) in seen.places.items():
        assert name.startswith("jmslike-"), f"{what} ran on {name}"
        assert cpus == {cpu}, f"{what} ran on {name}, which may use CPUs {sorted(cpus)}"
    io = {name: cpus for name, cpus in threads.items() if name.startswith(IO_THREADS)}
    if not provider_case.id.startswith("embedded"):
        assert io, f"no I/O thread of the provider found among {sorted(threads)}"
    for name, cpus in io.items():
        assert cpus == {cpu}, f"I/O thread {name} may use CPUs {sorted(cpus)}"
    assert frozenset(os.sched_getaffinity(0)) == allowed, "the calling thread was moved"


def test_without_thread_cpus_threads_stay_free(
    make_factory: Callable[..., ConnectionFactory],
    unique: Callable[[str], str],
    allowed: frozenset[int],
) -> None:
    """The default (``""``): the same threads may use every CPU the process may."""
    seen, threads = _run_one(make_factory(), f"queue://{unique('free')}")
    for what, (name, cpus) in seen.places.items():
        assert cpus == allowed, f"{what} ran on {name}, which may use CPUs {sorted(cpus)}"
    for name, cpus in threads.items():
        if name.startswith(IO_THREADS):
            assert cpus == allowed, f"I/O thread {name} may use CPUs {sorted(cpus)}"
