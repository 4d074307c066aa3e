"""Queues held to one active consumer by the broker itself, across processes.

Strictly ordered destinations (ORD-18) and the partitions of a partitioned queue need a
broker that lets one consumer at a time take a queue's messages, whichever process it is
in, and hands the queue to a waiting consumer when that one goes. Each broker says it
differently:

* ActiveMQ Classic: an *exclusive consumer*, asked for by the consumer (STOMP's
  ``activemq.exclusive`` header, AMQP's ``?consumer.exclusive=true`` address option).
  Nothing to declare.
* Artemis: an *exclusive queue*, a property of the queue set through its management API
  (neither STOMP nor AMQP can set it): ``managementUrl``, or the console's default
  address if the broker serves it there (jmslike.spi.console). Or made so by the
  broker's own configuration (``default-exclusive-queue`` in the address settings of
  ``broker.xml``), where the management API is not open to applications: the setting
  ``exclusiveQueues=configured`` says so, and jmslike declares nothing.
* RabbitMQ: a *single-active-consumer* queue, declared with that argument through the
  management API before anything else uses the queue name (a queue declared without it
  cannot be changed); consumers and senders then address it as ``/amq/queue/<name>``,
  which does not declare anything.

:func:`exclusivity_for` says, for one connection, how the broker does it and makes the
declaring function; :class:`ExclusiveQueues` remembers, per broker address and for the
whole process, which queues were declared, so that each is declared once and its
senders and consumers address it the way the broker needs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jmslike.config import FactorySettings
from jmslike.errors import ConfigurationError, IllegalStateError, InvalidDestinationError
from jmslike.spi.console import artemis_console
from jmslike.spi.management import ArtemisManagement, RabbitManagement
from jmslike.spi.perbroker import PerBroker

__all__ = [
    "EXCLUSIVE_SETTINGS",
    "ExclusiveQueues",
    "Exclusivity",
    "exclusive_queues_for",
    "exclusive_queues_setting",
    "exclusivity_for",
]

log = logging.getLogger("jmslike.spi")

EXCLUSIVE_SETTINGS = frozenset({"managementUrl", "exclusiveQueues"})
"""The providers' settings read here (``Provider.setting_names``)."""

EXCLUSIVE_QUEUES = ("declare", "configured")
"""Values of ``exclusiveQueues``: ``declare`` (the default) makes each strictly ordered
queue exclusive through the management API where one is found; ``configured`` (Artemis)
says the broker's configuration already makes them exclusive, so jmslike counts on the
broker across processes and declares nothing."""

UNSUBSCRIBE_WAIT = 3.0
"""Seconds an unsubscribe waits for the broker to forget a consumer that just closed."""


class ExclusiveQueues:
    """The queue names declared exclusive at one broker, for the whole process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._declared: set[str] = set()
        self._refused: set[str] = set()
        self._warned: set[str] = set()

    def __contains__(self, name: object) -> bool:
        return name in self._declared

    def within_process(self, name: str, hint: str) -> None:
        """Say once per process that ``name`` is strictly ordered within this process
        only: nothing else would tell the user that a consumer in another process is a
        second active consumer (Artemis without ``managementUrl``)."""
        with self._lock:
            if name in self._warned:
                return
            self._warned.add(name)
        log.warning(
            "%s is strictly ordered (ORD-18), but this broker keeps it to one consumer only "
            "when asked: %s. Until then jmslike keeps it to one active consumer within this "
            "process only, and a consumer in another process is a second active consumer",
            name,
            hint,
        )

    def declare(self, name: str, declare: Callable[[str], None], *, required: bool) -> bool:
        """Run ``declare(name)`` unless this process already did it for this broker;
        True if the broker now holds the queue to one consumer.

        A broker may refuse because the queue exists as an ordinary one (RabbitMQ cannot
        change that). ``required`` (a partition) re-raises the ConfigurationError; else
        (ORD-18 declared after the queue was first used) it is logged once as a warning
        and the queue stays strictly ordered within this process only.
        """
        if name in self._declared:
            return True
        if name in self._refused and not required:
            return False
        try:
            declare(name)
        except ConfigurationError as exc:
            if required:
                raise
            with self._lock:
                first = name not in self._refused
                self._refused.add(name)
            if first:
                log.warning(
                    "%s; until then jmslike keeps it strictly ordered within this process "
                    "only (ORD-18)",
                    exc,
                )
            return False
        with self._lock:
            self._declared.add(name)
            self._refused.discard(name)
        return True


exclusive_queues_for = PerBroker(ExclusiveQueues)


@dataclass(frozen=True)
class Exclusivity:
    """How one connection's broker keeps a queue to one consumer across processes."""

    scope: str
    """"broker" (across processes) or "process" (jmslike keeps it within the process)."""
    declare: Callable[[str], None] | None
    """Declare a queue exclusive at the broker (None: nothing to declare, or cannot)."""
    hint: str = ""
    """Where ``scope`` is "process": the setting that would make it "broker"."""
    depths: Callable[[str], dict[str, int]] | None = None
    """Messages per queue named ``prefix...``, through the management API (None: none)."""
    declare_subscription: Callable[[str, str, int | None], None] | None = None
    """Declare ``queue``, a shared subscription of ``topic`` held to one consumer, that
    RabbitMQ deletes ``expires_ms`` after its last use (None: a durable one, kept until
    unsubscribed); None: cannot."""
    declare_subscription_queue: Callable[[str, str, int | None], None] | None = None
    """Declare ``queue``, a subscription of ``topic`` (RabbitMQ over AMQP 1.0, whose
    plugin keeps no subscriptions), deleted ``expires_ms`` after its last use (None:
    kept until unsubscribed); None: cannot."""
    delete_subscription: Callable[[str], bool] | None = None
    """Delete the durable subscription queue named so, with its messages, through the
    management API; False if there is none; IllegalStateError while any process consumes
    from it (JMS unsubscribe, where the protocol cannot do it). None: cannot."""
    bound_topics: Callable[[str], tuple[list[str], str | None] | None] | None = None
    """The topics a durable subscription queue is bound to and the selector recorded with
    it ("" for none; None: none recorded), or None: no such queue; None: cannot tell
    (RabbitMQ only: elsewhere the protocol or the broker looks after it)."""
    mark_selector: Callable[[str, str, str], None] | None = None
    """Record ``selector`` with durable subscription ``queue`` of ``topic`` (RabbitMQ
    only); None: cannot."""
    declare_topic: Callable[[str], None] | None = None
    """Have the broker hold every subscription made from now on of a topic to one
    consumer (Artemis; None: cannot)."""
    delete_queue: Callable[[str], bool] | None = None
    """Delete the queue named so with its messages, through the management API (a
    temporary queue that jmslike made where the broker has none: RabbitMQ over AMQP);
    False if there is none; None: cannot."""
    declare_durable: Callable[[str], str] | None = None
    """Declare the queue named so durable at the broker now, through the management API
    (``ProviderConnection.declare_queue``); returns how, in a few words. None: the
    broker makes it at its first use."""
    artemis: ArtemisManagement | None = None
    """Artemis' management API, at ``managementUrl`` or found where ``artemis create``
    puts it (jmslike.spi.console), for the connection's other uses of it (browsing over
    STOMP); None: none to use."""

    def hold_queue(self, declared: ExclusiveQueues, queue: str, *, required: bool) -> bool:
        """ORD-18 or a partition on ``queue``: one active consumer across processes, once
        per process (see :meth:`ExclusiveQueues.declare`). A strictly ordered queue
        (``required`` False) the broker cannot hold is logged once, with the setting."""
        if self.declare is not None:
            return declared.declare(queue, self.declare, required=required)
        if self.scope != "broker" and not required:
            declared.within_process(f"queue://{queue}", self.hint)
        return self.scope == "broker"

    def hold_topic(self, declared: ExclusiveQueues, topic: str, *, shared: bool) -> bool:
        """ORD-18 on ``topic``: each of its subscriptions gets one active consumer across
        processes, once per process (``declared`` remembers it as ``topic://<name>``).
        Only a shared subscription can have consumers in two processes: for it, a broker
        that cannot hold the topic is logged once, with the setting."""
        declare = self.declare_topic
        if declare is None:
            if shared and self.scope != "broker" and self.declare is None:
                declared.within_process(f"topic://{topic}", self.hint)
            return False
        return declared.declare(f"topic://{topic}", lambda _key: declare(topic), required=False)

    def unsubscribe(self, queues: Sequence[str], name: str, broker: str) -> None:
        """JMS ``unsubscribe(name)`` of a durable subscription the broker keeps as the
        first existing queue of ``queues``, which its protocol cannot delete by name
        (RabbitMQ over STOMP; Artemis without a client id). InvalidDestinationError if
        there is none; IllegalStateError while a consumer of any process is on it,
        after a short wait, since a consumer closed just now may still be counted for a
        moment."""
        delete = self.delete_subscription
        if delete is None:
            raise IllegalStateError(
                f"{broker} cannot delete durable subscription {name!r} by its name over this "
                "protocol: set managementUrl to the broker's management API, or give the "
                "connection a client id"
            )
        deadline = time.monotonic() + UNSUBSCRIBE_WAIT
        for queue in queues:
            while True:
                try:
                    if delete(queue):
                        return
                    break
                except IllegalStateError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        raise InvalidDestinationError(f"no durable subscription {name!r} on {broker}")


def exclusive_queues_setting(settings: FactorySettings) -> str:
    """``exclusiveQueues``, checked: ConfigurationError naming a value not allowed."""
    value = str(settings.extra.get("exclusiveQueues", "declare")).strip().lower()
    if value not in EXCLUSIVE_QUEUES:
        raise ConfigurationError(
            f"exclusiveQueues={settings.extra.get('exclusiveQueues')!r}: write 'declare' "
            "(jmslike makes strictly ordered queues exclusive through the management API) "
            "or 'configured' (Artemis: the broker's address settings already make them "
            "exclusive, default-exclusive-queue in broker.xml)"
        )
    return value


def exclusivity_for(
    broker: str,
    host: str,
    settings: FactorySettings,
    user: str | None,
    password: str | None,
    vhost: str = "/",
    *,
    port: int | None = None,
) -> Exclusivity:
    """The :class:`Exclusivity` of a connection to ``broker`` ("activemq", "artemis",
    "rabbitmq", or anything else) on ``host``; ``port``: the one broker's port (None
    for a failover URL), where Artemis' management API is looked for without a
    ``managementUrl`` (jmslike.spi.console)."""
    url = settings.extra.get("managementUrl")
    timeout = settings.request_timeout
    configured = exclusive_queues_setting(settings) == "configured"
    if broker == "activemq":  # exclusive consumers: nothing to declare or configure
        return Exclusivity("broker", None)
    if broker == "rabbitmq":
        if configured:
            raise ConfigurationError(
                "exclusiveQueues=configured: RabbitMQ cannot make queues single-active-"
                "consumer by configuration (it is an argument of each queue's declaration); "
                "leave exclusiveQueues out and give managementUrl, so that jmslike declares them"
            )
        rabbit = RabbitManagement(url or f"http://{host}:15672", user, password, timeout)

        def declare_subscription(queue: str, topic: str, expires_ms: int | None) -> None:
            rabbit.declare_single_active(vhost, queue, expires_ms=expires_ms)
            rabbit.bind_to_topic(vhost, queue, topic)

        def declare_subscription_queue(queue: str, topic: str, expires_ms: int | None) -> None:
            if rabbit.declare_queue(vhost, queue, expires_ms=expires_ms) == "differs":
                log.debug("RabbitMQ queue %s exists otherwise: used as it is", queue)
            rabbit.bind_to_topic(vhost, queue, topic)

        def declare_durable(queue: str) -> str:
            return {
                "created": "a durable queue, through RabbitMQ's management API",
                "existed": "exists already: left as it is",
                "differs": "exists with other arguments (RabbitMQ cannot change them): "
                "left as it is",
            }[rabbit.declare_queue(vhost, queue)]

        return Exclusivity(
            "broker",
            lambda name: rabbit.declare_single_active(vhost, name),
            declare_durable=declare_durable,
            declare_subscription_queue=declare_subscription_queue,
            depths=lambda prefix: rabbit.queue_depths(vhost, prefix),
            declare_subscription=declare_subscription,
            delete_subscription=lambda queue: rabbit.delete_queue(vhost, queue, if_unused=True),
            delete_queue=lambda queue: rabbit.delete_queue(vhost, queue),
            bound_topics=lambda queue: rabbit.subscription_bindings(vhost, queue),
            mark_selector=lambda queue, topic, selector: rabbit.mark_selector(
                vhost, queue, topic, selector
            ),
        )
    why = ""
    artemis: ArtemisManagement | None = None
    if broker == "artemis":
        if url:
            artemis = ArtemisManagement(url, user, password, timeout)
        elif port is None:
            why = "a failover URL's brokers are not looked for at the default address"
        else:
            artemis, why = artemis_console(host, port, user, password, timeout)
    if configured and broker == "artemis":
        # The broker's address settings make the queues exclusive; the API, if found,
        # still serves browsing, depths and unsubscribing by name.
        return Exclusivity(
            "broker",
            None,
            depths=artemis.queue_depths if artemis else None,
            declare_durable=artemis.declare_queue if artemis else None,
            delete_subscription=artemis.delete_subscription_queue if artemis else None,
            artemis=artemis,
        )
    if artemis is not None:
        return Exclusivity(
            "broker",
            artemis.declare_exclusive,
            depths=artemis.queue_depths,
            declare_durable=artemis.declare_queue,
            declare_topic=artemis.declare_exclusive_address,
            delete_subscription=artemis.delete_subscription_queue,
            artemis=artemis,
        )
    hint = (
        "set managementUrl to Artemis' Jolokia endpoint (http://<host>:<console "
        "port>/console/jolokia) so that jmslike can make the queue exclusive, or, where "
        "broker.xml makes the queue exclusive (default-exclusive-queue), "
        f"exclusiveQueues=configured; {why}"
        if broker == "artemis"
        else f"{broker} has no exclusive queues jmslike knows how to ask for"
    )
    return Exclusivity("process", None, hint)
