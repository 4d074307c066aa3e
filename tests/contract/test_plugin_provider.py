"""A test installs a tiny provider from a test plugin and uses it through the public API.

docs/architecture.md: providers register through the ``jmslike_register_providers`` hook, found via
the ``jmslike`` entry-point group exactly like third-party ones; ``registry.register()``
and ``add_plugin`` serve tests and applications; ``JMSLIKE_DISABLE_PLUGINS=1`` skips
entry points but keeps the built-in ``embedded://``.

The plugin is written into ``tmp_path`` as a package plus a ``.dist-info`` directory, so
``importlib.metadata`` discovers its entry point in a subprocess run with
``PYTHONPATH=tmp_path``; nothing is installed into the environment.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import textwrap
import threading
import types
import uuid
from pathlib import Path

import pytest

import jmslike
from jmslike import ConnectionFactory, Session
from jmslike.spi import ProviderRegistry, get_registry, hookimpl

TINY_PROVIDER = '''
"""tinyprovider: an in-memory FIFO provider, just what the SPI asks of every provider.

Queues, and topics (each consumer of a topic gets a copy in a queue of its own); delivery
counts and the redelivered flag (``redeliver``, and messages given back by ``release`` or a
closing consumer); client ids claimed once. Everything else it lacks is declared False in
its capabilities (durable and shared subscriptions are refused naming the capability), so
the shipped contract suite (jmslike.testing.suite) passes on it, skipping the rest.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque

import jmslike
from jmslike.spi import (
    Capabilities,
    OrderingMode,
    Provider,
    ProviderConnection,
    ProviderConsumer,
    ProviderSession,
    hookimpl,
)
from jmslike.spi.messages import copy_message, set_provider_property

_lock = threading.RLock()
_queues: dict = {}      # queue key -> deque of Stored (the tokens)
_consumers: dict = {}   # queue key -> list of TinyConsumer
_subscribers: dict = {} # topic key -> list of TinyConsumer (each with a queue of its own)
_client_ids: set = set()
_numbers = itertools.count()
ACKED: list = []


class Stored:
    """One message in one queue, counting its deliveries."""

    def __init__(self, key, message):
        self.key = key
        self.message = message
        self.count = 0

    def delivery(self):
        self.count += 1
        copy = copy_message(self.message)
        copy.jms_redelivered = self.count > 1
        set_provider_property(copy, "JMSXDeliveryCount", self.count)
        return copy


def _put(stored, front=False):
    queue = _queues.setdefault(stored.key, deque())
    if front:
        queue.appendleft(stored)
    else:
        queue.append(stored)


def _route(destination_key, message):
    """A send: to the queue, or a copy to each subscriber of the topic."""
    if destination_key.startswith("topic://"):
        keys = [consumer.key for consumer in _subscribers.get(destination_key, [])]
    else:
        keys = [destination_key]
    for key in keys:
        _put(Stored(key, copy_message(message)))
        _pump(key)


def _pump(key):
    queue = _queues.setdefault(key, deque())
    for consumer in _consumers.get(key, []):
        while consumer.credit > 0 and queue:
            stored = queue.popleft()
            consumer.credit -= 1
            consumer.sink(stored.delivery(), stored)


class TinyConsumer(ProviderConsumer):
    def __init__(self, key, sink, topic=None):
        self.key = key
        self.sink = sink
        self.credit = 0
        self.topic = topic

    def flow(self, credit):
        with _lock:
            self.credit = 0 if credit <= 0 else self.credit + credit
            _pump(self.key)

    def close(self, delivered, undelivered):
        with _lock:
            _consumers[self.key].remove(self)
            if self.topic is not None:
                _subscribers[self.topic].remove(self)
                _queues.pop(self.key, None)
                return
            for token in undelivered:
                token.count -= 1  # only buffered: it comes back as it was
            for token in reversed([*delivered, *undelivered]):
                _put(token, front=True)
            _pump(self.key)


class TinySession(ProviderSession):
    def __init__(self, transacted):
        self.transacted = transacted
        self.pending = []

    def send(self, destination, message):
        stored = copy_message(message)
        if self.transacted:
            self.pending.append((destination.key, stored))
            return
        with _lock:
            _route(destination.key, stored)

    def create_consumer(self, spec, sink):
        destination = spec.destination
        for wanted, capability in ((spec.durable, "durable"), (spec.shared, "shared")):
            if wanted:
                raise jmslike.IllegalStateError(
                    f"tiny has no {capability} subscriptions ({spec.subscription!r}; "
                    f"capability {capability}_subscriptions)"
                )
        with _lock:
            if destination.key.startswith("topic://"):
                consumer = TinyConsumer(
                    f"{destination.key}#{next(_numbers)}", sink, topic=destination.key
                )
                _subscribers.setdefault(destination.key, []).append(consumer)
            else:
                consumer = TinyConsumer(destination.key, sink)
            _consumers.setdefault(consumer.key, []).append(consumer)
        return consumer

    def acknowledge(self, tokens):
        with _lock:
            ACKED.extend(tokens)

    def browse(self, destination, selector):
        raise jmslike.IllegalStateError(
            f"tiny cannot browse {destination} (capability browsers)"
        )

    def redeliver(self, token):
        return token.delivery()

    def release(self, tokens):
        with _lock:
            for token in reversed(list(tokens)):
                _put(token, front=True)
            for key in {token.key for token in tokens}:
                _pump(key)

    def dead_letter(self, token, reason):
        with _lock:
            _route("queue://DLQ", token.message)

    def commit(self, tokens):
        with _lock:
            for key, message in self.pending:
                _route(key, message)
            self.pending = []
            ACKED.extend(tokens)

    def rollback(self):
        self.pending = []

    def close(self):
        self.pending = []


class TinyConnection(ProviderConnection):
    def __init__(self):
        self.client_id = None
        self.capabilities = Capabilities(
            provider="tiny",
            broker="tiny-fifo",
            ordering_mode=OrderingMode.CLIENT_GATE,
            native_groups=False,
            selectors=False,
            delivery_delay=False,
            priority=False,
            durable_subscriptions=False,
            shared_subscriptions=False,
            temporary_destinations=False,
            browsers=False,
            persistent=False,
        )

    def create_session(self, transacted, acknowledge_mode):
        return TinySession(transacted)

    def set_client_id(self, client_id):
        with _lock:
            if client_id in _client_ids:
                raise jmslike.InvalidClientIDError(f"client id {client_id!r} is in use")
            _client_ids.add(client_id)
            self.client_id = client_id

    def close(self):
        with _lock:
            _client_ids.discard(self.client_id)


class TinyProvider(Provider):
    name = "tiny"
    schemes = ("tiny",)

    def connect(self, url, settings, user, password, on_exception):
        return TinyConnection()


@hookimpl
def jmslike_register_providers(registry):
    registry.register("tiny", "tinyprovider:TinyProvider")
'''

CLIENT_SCRIPT = """
import jmslike
from jmslike import ConnectionFactory, Session

cf = ConnectionFactory("tiny://somewhere")
with cf.create_connection() as connection:
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    producer = session.create_producer("queue://work")
    producer.enable_ordering_group("g")
    for text in ("one", "two"):
        producer.send(session.create_text_message(text))
    consumer = session.create_consumer("queue://work")
    connection.start()
    first = consumer.receive(2.0)
    second = consumer.receive(2.0)
    second.acknowledge()
    import tinyprovider
    print("RESULT", connection.capabilities.provider, first.text, second.text,
          first.ordering_group, second.get_int_property("JMSXGroupSeq"),
          consumer.receive(0.05), len(tinyprovider.ACKED))
"""

DISABLED_SCRIPT = """
import jmslike
from jmslike import ConnectionFactory

try:
    ConnectionFactory("tiny://somewhere")
except jmslike.ConfigurationError as exc:
    print("TINY-ERROR", exc)
else:
    print("TINY-FOUND")
cf = ConnectionFactory("embedded://plugins-disabled")
with cf.create_connection() as connection:
    session = connection.create_session()
    session.create_producer("queue://q").send(session.create_text_message("still here"))
    consumer = session.create_consumer("queue://q")
    connection.start()
    print("EMBEDDED", consumer.receive(2.0).text)
"""


def _write_plugin(root: Path, *, broken: bool = False) -> None:
    """The tinyprovider package and its dist-info (plus, optionally, a broken plugin)."""
    package = root / "tinyprovider"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(TINY_PROVIDER))
    dist = root / "tinyprovider-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyprovider\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[jmslike]\ntiny = tinyprovider\n")
    if broken:
        bad = root / "brokenplugin-0.1.dist-info"
        bad.mkdir()
        (bad / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenplugin\nVersion: 0.1\n")
        (bad / "entry_points.txt").write_text("[jmslike]\nbroken = no_such_module_xyz\n")


def _run(script: str, root: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "JMSLIKE_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_entry_point_plugin_provider_through_public_api(tmp_path: Path) -> None:
    """docs/architecture.md, plugins: a provider from a third-party distribution, found through the
    ``jmslike`` entry-point group, serves its URL scheme through the public API (and the
    ordering engine stamps groups whatever the provider, ORD-4)."""
    _write_plugin(tmp_path)
    proc = _run(CLIENT_SCRIPT, tmp_path)
    assert proc.returncode == 0, proc.stderr
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("RESULT")]
    assert line.split() == ["RESULT", "tiny", "one", "two", "g", "2", "None", "2"]


def test_broken_plugin_is_skipped(tmp_path: Path) -> None:
    """spi registry: a plugin whose entry point fails to load is logged and skipped; the
    others still work."""
    _write_plugin(tmp_path, broken=True)
    proc = _run(CLIENT_SCRIPT, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert any(x.startswith("RESULT tiny one two") for x in proc.stdout.splitlines())
    assert "no_such_module_xyz" in proc.stderr


def test_disable_plugins_hides_entry_points_keeps_embedded(tmp_path: Path) -> None:
    """spi registry: ``JMSLIKE_DISABLE_PLUGINS=1`` skips entry points from other
    distributions (tiny:// becomes an unknown scheme, whose error lists the known ones), but
    the built-in embedded:// still works."""
    _write_plugin(tmp_path)
    proc = _run(DISABLED_SCRIPT, tmp_path, JMSLIKE_DISABLE_PLUGINS="1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    [error] = [x for x in lines if x.startswith("TINY-")]
    assert error.startswith("TINY-ERROR")
    assert "'tiny'" in error and "embedded://" in error
    assert "EMBEDDED still here" in lines


@pytest.fixture
def tiny_module() -> types.ModuleType:
    """The tiny provider's module, built in memory (no sys.path or sys.modules change)."""
    module = types.ModuleType(f"tinyprovider_{uuid.uuid4().hex[:8]}")
    exec(compile(TINY_PROVIDER, module.__name__, "exec"), module.__dict__)
    return module


@pytest.fixture
def registry() -> ProviderRegistry:
    reg = get_registry()
    reg.schemes()  # load the installed plugins first, as an application would
    return reg


def test_add_plugin_in_process(registry: ProviderRegistry, tiny_module) -> None:
    """spi registry ``get_registry().add_plugin(obj)``: a plugin object registered in code
    runs its ``jmslike_register_providers`` hook; its scheme then works through the public
    API, including the listener and acknowledge paths."""
    scheme = f"tiny{uuid.uuid4().hex[:8]}"

    class Plugin:
        @hookimpl
        def jmslike_register_providers(self, registry: ProviderRegistry) -> None:
            registry.register(scheme, tiny_module.TinyProvider)

    plugin = Plugin()
    registry.add_plugin(plugin, name=f"test-{scheme}")
    try:
        assert scheme in registry.schemes()
        factory = ConnectionFactory(f"{scheme}://anywhere")
        with factory.create_connection() as connection:
            assert connection.capabilities.provider == "tiny"
            assert connection.capabilities.native_groups is False
            session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            producer = session.create_producer("queue://inproc")
            for text in ("a", "b", "c"):
                producer.send(session.create_text_message(text))
            got: list[str] = []
            done = threading.Event()

            def listener(msg: jmslike.Message) -> None:
                got.append(msg.text)
                if len(got) == 3:
                    msg.acknowledge()
                    done.set()

            session.create_consumer("queue://inproc").set_message_listener(listener)
            connection.start()
            assert done.wait(5.0)
        assert got == ["a", "b", "c"]
        assert len(tiny_module.ACKED) == 3
    finally:
        registry.unregister(scheme)
        registry.plugin_manager.unregister(plugin)
    with pytest.raises(jmslike.ConfigurationError):
        ConnectionFactory(f"{scheme}://anywhere")


def test_register_in_process(registry: ProviderRegistry, tiny_module) -> None:
    """spi registry ``registry.register(scheme, ProviderClass)`` (for tests): the scheme
    works at once and goes away with ``unregister``."""
    scheme = f"tiny{uuid.uuid4().hex[:8]}"
    registry.register(scheme, tiny_module.TinyProvider)
    try:
        with ConnectionFactory(f"{scheme}://x").create_connection() as connection:
            session = connection.create_session()
            session.create_producer("queue://r").send(session.create_text_message("hi"))
            consumer = session.create_consumer("queue://r")
            connection.start()
            assert consumer.receive(2.0).text == "hi"
    finally:
        registry.unregister(scheme)
    with pytest.raises(jmslike.ConfigurationError) as info:
        ConnectionFactory(f"{scheme}://x")
    assert scheme in str(info.value)


def test_ord16_client_gate_for_provider_without_native_groups(
    registry: ProviderRegistry, tiny_module
) -> None:
    """ORD-16 + ORD-9: where the broker ignores JMSXGroupID (the tiny provider declares
    native_groups=False, ordering_mode=client-gate), jmslike keeps ORD-9 itself within a
    process: while session A holds g:1 unfinished, session B does not get g:2."""
    scheme = f"tiny{uuid.uuid4().hex[:8]}"
    registry.register(scheme, tiny_module.TinyProvider)
    try:
        with ConnectionFactory(f"{scheme}://x").create_connection() as connection:
            assert connection.capabilities.ordering_mode == jmslike.OrderingMode.CLIENT_GATE
            setup = connection.create_session()
            producer = setup.create_producer("queue://gate")
            producer.enable_ordering_group("g")
            for text in ("g:1", "g:2"):
                producer.send(setup.create_text_message(text))
            a = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            b = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            ca, cb = a.create_consumer("queue://gate"), b.create_consumer("queue://gate")
            connection.start()
            assert ca.receive(2.0).text == "g:1"
            assert cb.receive(0.1) is None
    finally:
        registry.unregister(scheme)


@pytest.mark.parametrize("provider_kind", ["no-capability", "ignores-spec"])
def test_ord18_provider_without_strict_order_refuses_strict_consumer(
    registry: ProviderRegistry, tiny_module, monkeypatch, provider_kind
) -> None:
    """ORD-18 + SPI: a provider that cannot keep strictly ordered destinations (one that
    does not declare ``exclusive_consumers``, or one that declares it and then ignores the
    spec's ``exclusive``/``standby``) keeps serving plain consumers; a strictly ordered
    one, asked for in code or declared by the factory, is refused with IllegalStateError
    naming the destination and the exclusive_consumers capability, and leaves no consumer
    behind."""
    if provider_kind == "ignores-spec":
        original = tiny_module.TinyConnection.__init__

        def claims_exclusive(self):
            original(self)
            self.capabilities = dataclasses.replace(self.capabilities, exclusive_consumers=True)

        monkeypatch.setattr(tiny_module.TinyConnection, "__init__", claims_exclusive)
    scheme = f"tiny{uuid.uuid4().hex[:8]}"
    registry.register(scheme, tiny_module.TinyProvider)
    try:
        factory = ConnectionFactory(f"{scheme}://x", strictly_ordered="queue://strict")
        with factory.create_connection() as connection:
            session = connection.create_session()
            for make in (
                lambda: session.create_consumer("queue://plain", strictly_ordered=True),
                lambda: session.create_consumer("queue://strict"),
                lambda: session.create_consumer("queue://strict", standby=True),
            ):
                with pytest.raises(jmslike.IllegalStateError) as info:
                    make()
                assert "exclusive_consumers" in str(info.value)
                assert "queue://" in str(info.value)
            assert not any(tiny_module._consumers.values())
            session.create_producer("queue://plain").send(session.create_text_message("hi"))
            consumer = session.create_consumer("queue://plain")
            assert not consumer.strictly_ordered
            connection.start()
            assert consumer.receive(2.0).text == "hi"
    finally:
        registry.unregister(scheme)


SUITE_MIN_TESTS = 200
"""The shipped suite has some 300 scenarios per provider; the tiny provider must run at
least this many (far more than it skips), so a suite that silently collected little fails."""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_shipped_contract_suite_passes_on_third_party_provider(tmp_path: Path) -> None:
    """docs/plugins.md, "Testing your provider": the contract suite installed with jmslike
    (jmslike.testing.suite, fixtures from jmslike.testing.plugin) runs against a
    third-party provider found through its entry point, exactly as its author would run
    it; every scenario passes or skips naming a capability the provider does not have."""
    _write_plugin(tmp_path)
    here = str(Path(jmslike.__file__).resolve().parents[1])  # this checkout's jmslike
    env = {k: v for k, v in os.environ.items() if k != "JMSLIKE_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), here, env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "jmslike.testing.plugin",
            "--pyargs",
            "jmslike.testing.suite",
            "--jmslike-url=tiny://suite",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "--timeout=120",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report[-5000:]
    summary = report.strip().splitlines()[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|skipped|failed)", summary)}
    assert counts.get("failed", 0) == 0, summary
    assert counts.get("passed", 0) >= SUITE_MIN_TESTS, summary
    assert counts.get("skipped", 0) < counts["passed"], summary
    skips = [line for line in report.splitlines() if line.startswith("SKIPPED")]
    assert skips, "the tiny provider lacks capabilities: some scenarios must skip"
    assert all("broker lacks capability" in line for line in skips), skips
