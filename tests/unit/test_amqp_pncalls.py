"""jmslike_amqp.pncalls makes Proton's calls on a received message's path: through
``ctypes.PyDLL`` (they keep the interpreter lock) where Proton's extension module exports
them, else through Proton's own binding. Both ways are driven here over two real Proton
engines joined in memory (no broker: the calls are the C library's own either way)."""

from __future__ import annotations

import ctypes
import importlib.util
import sys
import threading
import time
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("proton")

from cproton import PN_DELIVERY, addressof
from proton import Collector, Connection, Delivery, Message, Transport

import jmslike_amqp.pncalls


@pytest.fixture(params=["kept", "binding"])
def calls(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The module as loaded (its calls keep the lock), and a copy loaded where
    ``ctypes.PyDLL`` finds nothing (the fallback through Proton's binding)."""
    if request.param == "kept":
        assert jmslike_amqp.pncalls.KEPT, "Proton's extension module exports its C functions"
        return jmslike_amqp.pncalls

    def nothing(*_args: Any, **_kwargs: Any) -> None:
        raise OSError("no such library")

    monkeypatch.setattr(ctypes, "PyDLL", nothing)
    spec = importlib.util.find_spec("jmslike_amqp.pncalls")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not module.KEPT
    return module


def _pump(*transports: Transport) -> None:
    """Move bytes between the two engines until neither has anything to say."""
    first, second = transports
    moved = True
    while moved:
        moved = False
        for source, target in ((first, second), (second, first)):
            pending = source.pending()
            if pending > 0:
                data = source.peek(pending)
                source.pop(len(data))
                target.push(data)
                moved = True


def _engines() -> tuple[Any, Any, Collector, tuple[Transport, Transport]]:
    """A sender on one engine, the receiver it attached on the other (with credit), and
    the receiving engine's collector, its events so far discarded."""
    client, server = Connection(), Connection()
    client_transport, server_transport = Transport(), Transport(Transport.SERVER)
    client_transport.bind(client)
    server_transport.bind(server)
    collector = Collector()
    server.collect(collector)
    client.open()
    session = client.session()
    session.open()
    sender = session.sender("orders")
    sender.open()
    transports = (client_transport, server_transport)
    _pump(*transports)
    server.open()
    server.session_head(0).open()
    receiver = server.link_head(0)
    receiver.open()
    receiver.flow(10)
    _pump(*transports)
    while collector.peek() is not None:
        collector.pop()
    return sender, receiver, collector, transports


def test_a_delivery_read_and_settled_through_either_kind_of_call(calls: ModuleType) -> None:
    sender, receiver, collector, transports = _engines()
    outgoing = sender.delivery(b"tag-1")
    sender.send(Message(body="hello").encode())
    sender.advance()
    _pump(*transports)

    events = calls.of_collector(collector._impl)
    deliveries = []
    while (event := calls.collector_peek(events)) is not None:
        if calls.event_type(event) == PN_DELIVERY:
            deliveries.append(calls.event_delivery(event))
        calls.collector_pop(events)
    assert calls.collector_peek(events) is None
    assert len(deliveries) == 1
    pointer = deliveries[0]
    link = calls.delivery_link(pointer)
    assert calls.key_of(link) == addressof(receiver._impl)  # the key the driver's links use
    assert Delivery.wrap(calls.to_delivery(pointer)).tag == "tag-1"  # type: ignore[no-untyped-call]
    assert not calls.delivery_aborted(pointer)
    assert calls.delivery_readable(pointer) and not calls.delivery_partial(pointer)
    payload = calls.link_recv(link, calls.delivery_pending(pointer))
    message = Message()
    message.decode(payload)
    assert message.body == "hello"
    assert calls.link_recv(link, 10) is None  # all of it was read
    assert calls.link_advance(link)
    assert not calls.delivery_settled(pointer)
    calls.delivery_update(pointer, Delivery.ACCEPTED)
    calls.delivery_settle(pointer)
    _pump(*transports)
    assert outgoing.remote_state == Delivery.ACCEPTED
    assert outgoing.settled  # settled by the receiver


def _voluntary_switches(native_id: int) -> int:
    with open(f"/proc/self/task/{native_id}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches line")


def test_the_kept_calls_do_not_wake_a_thread_waiting_for_the_interpreter_lock() -> None:
    """The reason the module exists. A thread waits for the interpreter lock (it lets the
    lock go and takes it again, in a loop) while this one makes 100,000 calls: through
    cffi each call lets the lock go, which wakes the waiting thread, only for it to find
    the lock taken again and sleep; through ``pncalls`` it is never woken. (The switch
    interval is made long, so that the interpreter forces no hand-over meanwhile;
    Linux's per-thread switch counts tell.)"""
    assert jmslike_amqp.pncalls.KEPT

    from cproton import pn_collector_peek

    _sender, _receiver, collector, _transports = _engines()
    kept = jmslike_amqp.pncalls.of_collector(collector._impl)

    def wake_ups(call: Any, pointer: Any) -> int:
        """How often the waiting thread was woken during 100,000 calls of ``call``."""
        stop = threading.Event()
        ids: list[int] = []

        def wait_for_the_lock() -> None:
            ids.append(threading.get_native_id())
            while not stop.is_set():
                time.sleep(0)  # lets the lock go, and waits to get it back

        other = threading.Thread(target=wait_for_the_lock)
        other.start()
        while not ids:
            time.sleep(0.001)
        interval = sys.getswitchinterval()
        sys.setswitchinterval(10.0)
        try:
            time.sleep(0.01)  # the other thread holds or wants the lock from now on
            before = _voluntary_switches(ids[0])
            for _ in range(100_000):
                call(pointer)
            woken = _voluntary_switches(ids[0]) - before
        finally:
            sys.setswitchinterval(interval)
            stop.set()
            other.join()
        return woken

    through_cffi = wake_ups(pn_collector_peek, collector._impl)
    kept_calls = wake_ups(jmslike_amqp.pncalls.collector_peek, kept)
    # (Reading /proc lets the lock go too: a few wake-ups either way.)
    assert through_cffi > 10 * max(kept_calls, 5), (kept_calls, through_cffi)
