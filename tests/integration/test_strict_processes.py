"""ORD-18 across processes, on every broker and protocol: a strictly ordered queue has
one active consumer even when the consumers live in different processes.

Within one process jmslike keeps ORD-18 itself (jmslike/spi/strict.py); across
processes the broker does (jmslike/spi/exclusive.py): Classic's exclusive consumer,
Artemis' exclusive queue, RabbitMQ's single-active-consumer queue. Here a
child process holds the queue with a CLIENT_ACKNOWLEDGE consumer that acknowledges the
first message and keeps the next two; a strictly ordered consumer in this process must get
nothing meanwhile, not even the messages sent once it has subscribed (the child's window
took the first five before it came, so only later ones show that the broker keeps it
out), and once the child is killed (SIGKILL: no goodbye), it must take over with the
child's two unfinished messages first, in order and flagged redelivered, then the rest.
(The same crash on a plain CLIENT consumer is what showed that Classic gives back
messages ACKed inside a transaction after the others when a connection dies, which is
why Classic consumers no longer open their window with such ACKs: docs/providers.md.)

Run: ``.venv/bin/python -m pytest tests/integration/test_strict_processes.py -v``
(needs ``scripts/brokers.sh start``; a missing broker fails, never skips).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from brokercases import CASES, case_url
from faultproxy import Relay

from jmslike import ConfigurationError, ConnectionFactory, Session
from jmslike.spi import console

CHILD = """
import sys
from jmslike import ConfigurationError, ConnectionFactory, Session
url, queue = sys.argv[1], sys.argv[2]
connection = ConnectionFactory(url).create_connection()
session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
consumer = session.create_consumer(queue, strictly_ordered=True)
connection.start()
first = consumer.receive(10.0)
first.acknowledge()
held = [consumer.receive(10.0).text for _ in range(2)]
print(first.text, *held, flush=True)
sys.stdin.read()  # hold them until killed
"""


@contextlib.contextmanager
def _child_holding(
    script: str, *args: str, ready: Callable[[], None] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """A consumer process that acknowledged m1 and holds m2 and m3 (killed on exit).
    With ``ready``: the child says "ready" once subscribed, and ``ready()`` runs then
    (a topic keeps nothing for a subscription that is not there yet)."""
    with subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        if ready is not None:
            assert child.stdout.readline().split() == ["ready"]
            ready()
        assert child.stdout.readline().split() == ["m1", "m2", "m3"]
        try:
            yield child
        finally:
            child.kill()
            child.wait(10.0)


def _flagged(case: str, got: list[tuple[str, bool]]) -> bool:
    """The dead process's two messages come back flagged redelivered. Artemis over AMQP
    cannot say so: it gives a dead consumer's unsettled messages back with
    ``delivery-count`` 0 and no ``first-acquirer`` (seen on 2.56: every copy arrived as
    ``(0, False)``), and jmslike's own count lives in the dead process; there the flag
    is not checked, the order is (docs/providers.md, limits)."""
    return case == "artemis-amqp" or (got[0][1] and got[1][1])


def _takes_over_after_the_kill(
    case: str, child: subprocess.Popen[str], consumer: Any, last: int = 5
) -> None:
    """``consumer`` (this process's standby) gets nothing while the child is active; once
    the child is killed it gets m2 and m3 (which the child held), flagged, then m4 to
    m<last>."""
    assert consumer.receive(1.0) is None  # the child is the active consumer
    child.kill()
    child.wait(10.0)
    _took_over_in_order(case, consumer, last=last)


def _took_over_in_order(case: str, consumer: Any, first: Any = None, last: int = 5) -> None:
    """The standby gets m2 and m3 (the child's unfinished ones), flagged, then m4 to
    m<last>, and nothing more; ``first``: the first of them, received already."""
    got = []
    while len(got) < last - 1:
        message = first or consumer.receive(10.0)
        first = None
        assert message is not None, f"took over with only {got}"
        got.append((message.text, message.jms_redelivered))
        message.acknowledge()
    # m4 and later may come flagged too: the dead process had them prefetched, and the
    # broker cannot tell prefetched from seen (JMSRedelivered is a "maybe").
    assert [text for text, _flag in got] == [f"m{n}" for n in range(2, last + 1)]
    assert _flagged(case, got)
    assert consumer.receive(0.2) is None


LAST = 9
"""The last message of _standby_beside_a_holder's queue."""


@contextlib.contextmanager
def _standby_beside_a_holder(
    url: str, child_url: str | None = None, prefix: str = ""
) -> Iterator[tuple[Any, subprocess.Popen[str], Any]]:
    """A strictly ordered queue holding m1..m5, a child process (URL ``child_url``, else
    ``url``) holding it (m1 acknowledged, m2 and m3 not), and this process's standby
    consumer on it: (connection, child, standby). ``prefix`` starts the queue's name."""
    queue = f"queue://{prefix}strict-{uuid.uuid4().hex[:8]}"
    # Declared by the sender too: RabbitMQ cannot make a queue single-active-consumer
    # once something declared it as an ordinary one.
    factory = ConnectionFactory(url, strictly_ordered=queue)
    with factory.create_connection() as connection:
        sender = connection.create_session()
        producer = sender.create_producer(queue)
        for n in range(1, 6):
            producer.send(sender.create_text_message(f"m{n}"))
        with _child_holding(CHILD, child_url or url, queue) as child:
            mine = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            consumer = mine.create_consumer(queue, strictly_ordered=True, standby=True)
            connection.start()
            # A first receive has this consumer subscribed (a STOMP consumer subscribes
            # when it first asks); later messages then show whether the broker keeps it
            # out: the child's window took m1..m5 before it came, and a queue that is not
            # exclusive hands it some of m6..m9.
            assert consumer.receive(0.5) is None  # the child is the active consumer
            for n in range(6, LAST + 1):
                producer.send(sender.create_text_message(f"m{n}"))
            yield connection, child, consumer


@pytest.mark.parametrize("case", CASES)
def test_ord18_strict_queue_has_one_consumer_across_processes(case: str) -> None:
    """ORD-18 (+ ORD-11): while another process's consumer is active on the strictly
    ordered queue, this process's consumer gets nothing; when that process dies, this one
    takes over with what it left unfinished, in order, redelivered, then the rest."""
    with _standby_beside_a_holder(case_url(case)) as (_connection, child, consumer):
        _takes_over_after_the_kill(case, child, consumer, LAST)


FROZEN_NOTICED = {case.id for case in CASES} - {"rabbitmq-amqp"}
"""Cases whose broker drops a frozen client's connection by itself: STOMP heart-beats,
and the AMQP idle timeout of Classic and Artemis (6 s on the test brokers). RabbitMQ
3.10 never drops a silent AMQP 1.0 client: there the frozen process keeps the queue
until it wakes and its own idle timeout ends its connection (docs/partitions.md)."""

FREEZE_S = 8.0
"""How long the holder stays frozen: past the brokers' 6 s AMQP idle timeout, and past
the child's own (5 s) where only waking ends its connection."""


@pytest.mark.parametrize("case", CASES)
def test_ord18_standby_takes_over_from_a_frozen_process(case: str) -> None:
    """ORD-18 (+ ORD-11), issue 16: the active consumer's process is frozen (SIGSTOP, as a
    long GC pause or a stopped VM) holding two unacknowledged messages. Its connections
    stay open, so only the broker noticing the silence (STOMP heart-beats, the AMQP idle
    timeout) lets the other process's standby take over, with the frozen process's two
    messages first, in order, flagged, then the rest. On RabbitMQ over AMQP that happens
    only once the process wakes (its own idle timeout ends its connection)."""
    url = case_url(case)
    keep_alive = "heartbeat=1000" if case.endswith("stomp") else "idleTimeout=5000"
    child_url = url + ("&" if "?" in url else "?") + keep_alive
    with _standby_beside_a_holder(url, child_url) as (_connection, child, consumer):
        assert consumer.receive(1.0) is None  # the child is the active consumer
        child.send_signal(signal.SIGSTOP)
        try:
            first = consumer.receive(FREEZE_S)
            if case not in FROZEN_NOTICED:
                assert first is None, "took over from a process RabbitMQ cannot see frozen"
                child.send_signal(signal.SIGCONT)
                first = consumer.receive(15.0)
        finally:
            child.send_signal(signal.SIGCONT)
        assert first is not None, f"no take-over within {FREEZE_S} s of the freeze"
        _took_over_in_order(case, consumer, first, LAST)


SUBSCRIPTION_CHILD = """
import sys
from jmslike import ConfigurationError, ConnectionFactory, Session
url, topic, name, durable = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "durable"
connection = ConnectionFactory(url, strictly_ordered=topic).create_connection()
session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
create = session.create_shared_durable_consumer if durable else session.create_shared_consumer
consumer = create(topic, name)
connection.start()
print("ready", flush=True)
first = consumer.receive(10.0)
first.acknowledge()
held = [consumer.receive(10.0).text for _ in range(2)]
print(first.text, *held, flush=True)
sys.stdin.read()  # hold them until killed
"""

SHARED = [case for case in CASES if not case.id.startswith("activemq-")]
"""The cases with shared subscriptions (Classic 5.x has none)."""


@pytest.mark.parametrize("durable", [False, True], ids=["non-durable", "durable"])
@pytest.mark.parametrize("case", SHARED)
def test_ord18_strict_shared_subscription_has_one_consumer_across_processes(
    case: str, durable: bool
) -> None:
    """ORD-18 on a topic: a strictly ordered shared subscription has one active consumer
    across processes, and its standby takes over after a kill -9 with what was left
    unfinished first. Before, another process's consumer was a second active consumer
    (it got m1..m9 of ten while the first got m0, on all three cases), since only
    jmslike kept the rule, within each process: now Artemis makes the topic's queues
    exclusive (address settings) and RabbitMQ's subscription queue is a
    single-active-consumer queue (management API). A durable one on RabbitMQ was still
    declared by the SUBSCRIBE, as an ordinary queue, until it was declared the same way:
    the child took m1 and the other process m2 at once."""
    _shared_subscription_taken_over(case, case_url(case), durable)


def _shared_subscription_taken_over(case: str, url: str, durable: bool, prefix: str = "") -> None:
    """The scenario of the test above, at ``url``, on a topic whose name starts with
    ``prefix``."""
    topic = f"topic://{prefix}strict-{uuid.uuid4().hex[:8]}"
    name = f"s-{uuid.uuid4().hex[:8]}"
    factory = ConnectionFactory(url, strictly_ordered=topic)
    with factory.create_connection() as connection:
        mine = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        sender = connection.create_session()
        producer = sender.create_producer(topic)
        consumers = []

        create = mine.create_shared_durable_consumer if durable else mine.create_shared_consumer

        def subscribe_and_send() -> None:
            consumers.append(create(topic, name, standby=True))
            for n in range(1, 6):
                producer.send(sender.create_text_message(f"m{n}"))

        with _child_holding(
            SUBSCRIPTION_CHILD,
            url,
            topic,
            name,
            "durable" if durable else "-",
            ready=subscribe_and_send,
        ) as child:
            consumer = consumers[0]
            connection.start()
            # Subscribed now (a STOMP consumer subscribes when it first asks): only
            # messages sent from here on show whether the broker keeps it out.
            assert consumer.receive(0.5) is None
            for n in range(6, LAST + 1):
                producer.send(sender.create_text_message(f"m{n}"))
            _takes_over_after_the_kill(case, child, consumer, LAST)
        if durable:
            consumer.close()
            mine.unsubscribe(name)


GROUPED_CHILD = CHILD.replace(", strictly_ordered=True", "")


@pytest.mark.parametrize("case", CASES)
def test_ord11_group_order_survives_a_consumer_process_crash(case: str) -> None:
    """ORD-11 (+ ORD-9): a CLIENT_ACKNOWLEDGE consumer process that dies holding a
    group's messages gives them back; the next consumer gets them in send order, before
    the group's later messages. (On Classic this once failed: see the module text.)"""
    url = case_url(case)
    queue = f"queue://crash-{uuid.uuid4().hex[:8]}"
    with ConnectionFactory(url).create_connection() as connection:
        sender = connection.create_session()
        producer = sender.create_producer(queue)
        producer.enable_ordering_group("g")
        for n in range(1, 6):
            producer.send(sender.create_text_message(f"m{n}"))
        with _child_holding(GROUPED_CHILD, url, queue):
            pass  # dies holding m2 and m3
        consumer = connection.create_session().create_consumer(queue)
        connection.start()
        got = []
        while (message := consumer.receive(2.0)) is not None:
            got.append((message.text, message.jms_redelivered))
        assert [text for text, _flag in got] == ["m2", "m3", "m4", "m5"]
        assert _flagged(case, got)


ARTEMIS = [case for case in CASES if case.id.startswith("artemis")]

DEFAULT_CONSOLE = "http://127.0.0.1:8161/console/jolokia"
"""Where ``artemis create`` puts the console; the suite's Artemis serves it elsewhere."""


@pytest.mark.parametrize("case", ARTEMIS)
def test_ord18_without_management_url_says_it_holds_within_the_process(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """ORD-18 on Artemis needs ``managementUrl`` to hold across processes (neither STOMP
    nor AMQP can make a queue exclusive). Without it a strictly ordered queue or shared
    subscription is kept within the process, and the first consumer says so once per
    destination, naming the setting: before, nothing told the user that a consumer in
    another process was a second active consumer."""
    url = case_url(case).partition("?managementUrl=")[0]
    queue = f"queue://strict-{uuid.uuid4().hex[:8]}"
    topic = f"topic://strict-{uuid.uuid4().hex[:8]}"
    console.forget()  # jmslike looks at the default address again
    factory = ConnectionFactory(url, strictly_ordered=f"{queue},{topic}")
    with caplog.at_level("WARNING", logger="jmslike"), factory.create_connection() as connection:
        for _ in range(2):
            session = connection.create_session()
            session.create_consumer(queue, strictly_ordered=True, standby=True)
            session.create_shared_consumer(topic, "s", strictly_ordered=True, standby=True)
            session.create_consumer(topic, strictly_ordered=True)  # its own subscription
    warned = [r.getMessage() for r in caplog.records if "within this process only" in r.message]
    assert len(warned) == 2, warned
    assert queue in warned[0] and topic in warned[1]
    assert all("managementUrl" in message for message in warned)
    # and where jmslike looked for it (the suite's consoles are not at the default port)
    assert all(DEFAULT_CONSOLE in message for message in warned), warned


@pytest.mark.parametrize("case", ARTEMIS)
def test_ord18_across_processes_with_the_console_at_its_default_address(
    case: str, console_at_default_address: None
) -> None:
    """ORD-18 across processes on Artemis with no ``managementUrl``, where the broker
    serves its console at the default address: every process finds the management API
    there by itself, checks it is its broker's (an acceptor on the port it connected
    to), and makes the queue exclusive. The scenario of
    test_ord18_strict_queue_has_one_consumer_across_processes, child included, with the
    setting left out; before, the child was a second active consumer."""
    url = case_url(case).partition("?managementUrl=")[0]
    with _standby_beside_a_holder(url) as (connection, child, consumer):
        assert connection.capabilities.exclusive_scope == "broker"
        _takes_over_after_the_kill(case, child, consumer, LAST)


CONFIGURED_EXCLUSIVE = "configured-exclusive."
"""Queues named so are exclusive by the suite's Artemis' own broker.xml
(``default-exclusive-queue``, scripts/brokers/artemis.sh), as an administrator sets
them up where applications may not use the management API."""


@pytest.mark.parametrize("case", ARTEMIS)
def test_ord18_across_processes_with_exclusive_queues_configured_in_the_broker(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """ORD-18 across processes on Artemis with no management API at all (the suite's
    console is not at the default address, and no ``managementUrl``): the broker's
    address settings make the queue exclusive, and ``exclusiveQueues=configured`` tells
    jmslike so. The scenario of test_ord18_strict_queue_has_one_consumer_across_processes,
    child included; before the setting, this case said "within this process only" and
    the child was a second active consumer unless the queue happened to be exclusive."""
    url = case_url(case).partition("?managementUrl=")[0] + "?exclusiveQueues=configured"
    console.forget()
    with (
        caplog.at_level("WARNING", logger="jmslike"),
        _standby_beside_a_holder(url, prefix=CONFIGURED_EXCLUSIVE) as (connection, child, consumer),
    ):
        assert connection.capabilities.exclusive_scope == "broker"
        assert connection.capabilities.exclusive_consumers
        _takes_over_after_the_kill(case, child, consumer, LAST)
    assert not [r for r in caplog.records if "within this process only" in r.message]


@pytest.mark.parametrize("case", ARTEMIS)
def test_ord18_shared_subscription_across_processes_with_exclusive_queues_configured(
    case: str,
) -> None:
    """The same for a strictly ordered shared subscription: the address setting matches
    the topic's address, so every subscription queue on it is exclusive. (Non-durable
    only: with no management API and no client id, a durable shared subscription cannot
    be deleted by name, docs/providers.md.)"""
    url = case_url(case).partition("?managementUrl=")[0] + "?exclusiveQueues=configured"
    console.forget()
    _shared_subscription_taken_over(case, url, durable=False, prefix=CONFIGURED_EXCLUSIVE)


@pytest.mark.parametrize("case", ARTEMIS)
def test_a_console_at_the_default_address_that_is_another_brokers_is_not_used(
    case: str, console_at_default_address: None, caplog: pytest.LogCaptureFixture
) -> None:
    """A console at the default address is used only if it is the broker's that the
    connection reached: here the connection goes through a relay on another port, so
    none of the console's acceptors listens on the connection's port, as for a second
    broker on the same host. Declaring there would make the other broker's queue
    exclusive and leave this one's open to every process."""
    url = case_url(case).partition("?managementUrl=")[0]
    parts = urlsplit(url)
    relay = Relay((parts.hostname or "127.0.0.1", parts.port or 0))
    try:
        other = url.replace(f":{parts.port}", f":{relay.port}", 1)
        queue = f"queue://strict-{uuid.uuid4().hex[:8]}"
        factory = ConnectionFactory(other, strictly_ordered=queue)
        with caplog.at_level("WARNING", logger="jmslike"), factory.create_connection() as c:
            assert c.capabilities.exclusive_scope == "process"
            c.create_session().create_consumer(queue, strictly_ordered=True)
    finally:
        relay.close()
    warned = [r.getMessage() for r in caplog.records if "within this process only" in r.message]
    assert len(warned) == 1 and "another broker's" in warned[0], warned


@pytest.mark.parametrize("case", ARTEMIS)
def test_a_failover_url_is_not_looked_up_at_the_default_address(
    case: str, console_at_default_address: None
) -> None:
    """A failover URL may name several brokers, each with a console of its own: which
    one speaks for the others is the user's to say (``managementUrl``), so with a
    console at the default address of the first, jmslike still asks none of them."""
    url = case_url(case).partition("?managementUrl=")[0]
    scheme, rest = url.split("://", 1)
    factory = ConnectionFactory(f"failover:({scheme}://{rest},{scheme}://{rest})")
    with factory.create_connection() as connection:
        assert connection.capabilities.exclusive_scope == "process"


@pytest.mark.parametrize("case", [case for case in CASES if case.id.startswith("rabbitmq")])
def test_exclusive_queues_configured_is_refused_on_rabbitmq(case: str) -> None:
    """RabbitMQ has no configuration that makes a queue single-active-consumer (it is an
    argument of the queue's declaration), so ``exclusiveQueues=configured`` there would
    be a promise nothing keeps: the connection refuses it, naming the setting, before a
    consumer could believe it is alone."""
    url = case_url(case)
    url += ("&" if "?" in url else "?") + "exclusiveQueues=configured"
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(url).create_connection()
    assert "exclusiveQueues=configured" in str(info.value)
    assert "managementUrl" in str(info.value)
