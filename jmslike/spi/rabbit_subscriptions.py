"""Durable and shared topic subscriptions on RabbitMQ: queues that jmslike names.

RabbitMQ keeps no JMS subscriptions over either protocol. Its STOMP plugin declares a
subscription's queue from SUBSCRIBE headers; its AMQP 1.0 plugin (3.10) drops a topic
link's queue when the link detaches and refuses dynamic nodes. So a named subscription
is a queue bound to ``amq.topic`` with the topic's name as routing key (where both
plugins send what goes to ``/topic/<name>``), named by jmslike from the client id and the
subscription name, the same over both protocols, so that a STOMP and an AMQP subscriber
of one subscription share its queue and any connection can find it to unsubscribe:

* durable, unshared: ``jmslike-durable-<client id>.<name>`` (a client id is required);
* shared, durable or not: ``jmslike-shared-[<client id>.]<name>``.

RabbitMQ keeps no selector either: jmslike filters on the client and records the
selector a durable subscription was made with as a marked binding (see
``RabbitManagement.subscription_bindings``), so that the subscription made again with
another topic or selector is a new one, as JMS says.
"""

from __future__ import annotations

import logging

from jmslike.errors import (
    ConfigurationError,
    ConnectionFailedError,
    IllegalStateError,
    JMSException,
    JMSSecurityError,
)
from jmslike.spi.exclusive import Exclusivity

__all__ = [
    "SHARED_EXPIRES_MS",
    "STRICT_SHARED_EXPIRES_MS",
    "RabbitSubscriptions",
    "durable_queue",
    "shared_queue",
]

log = logging.getLogger("jmslike.spi")

STRICT_SHARED_EXPIRES_MS = 10_000
"""How long RabbitMQ keeps a strictly ordered non-durable shared subscription's queue
once nobody uses it (over either protocol): long enough for a
standby to take over, short enough that a subscription the application ended stops
collecting messages soon (RabbitMQ checks a quorum queue's expiry late: it went 10 to
20 s after a 5 s expiry here)."""


SHARED_EXPIRES_MS = 2_000
"""How long RabbitMQ keeps a non-durable shared subscription's queue, declared over AMQP
1.0 or STOMP, once nobody uses it. Not deleted with its last consumer (auto-delete, as
jmslike declared it over STOMP before): a consumer that declared the queue just as
another one's last consumer left found it gone at its attach or SUBSCRIBE, and RabbitMQ
3.10 answers that by closing the whole connection (seen here: three connections each
making and closing a consumer of one subscription 100 times, over AMQP two of them
closed so in each of 8 runs, over STOMP one to three in 12 of 13; none with the expiry,
tests/integration/test_rabbitmq_subscriptions.py). A declaration renews the lease, so
the queue is there at the attach that follows. The cost: for up to this long after the
last consumer closed, the subscription still collects the topic's messages, and a
consumer of it that comes back in time gets them."""


def durable_queue(client_id: str, name: str) -> str:
    """The queue of unshared durable subscription ``name`` of ``client_id``."""
    return f"jmslike-durable-{client_id}.{name}"


def shared_queue(client_id: str | None, name: str) -> str:
    """The queue of shared subscription ``name``, named after the client id if any, as
    the brokers' own JMS clients name theirs."""
    return f"jmslike-shared-{client_id}.{name}" if client_id else f"jmslike-shared-{name}"


class RabbitSubscriptions:
    """One connection's named subscriptions on RabbitMQ, through the management API."""

    def __init__(self, exclusivity: Exclusivity) -> None:
        self._exclusivity = exclusivity
        self._selector_unrecorded = False
        """A selector could not be recorded once (logged once a connection)."""

    def declare(
        self,
        topic: str,
        name: str,
        client_id: str | None,
        *,
        durable: bool,
        shared: bool,
        selector: str | None,
        strict: bool,
    ) -> str:
        """Declare subscription ``name`` of ``topic`` as its queue, bound to the topic,
        through the management API, and return the queue's name (consumers address it
        as a queue that exists). For RabbitMQ over AMQP 1.0, whose plugin declares
        nothing that outlives a topic link; over STOMP the SUBSCRIBE declares it.

        A non-durable shared subscription's queue goes ``SHARED_EXPIRES_MS`` after its
        last consumer; a strictly ordered shared one (ORD-18) is a
        single-active-consumer queue that outlives a hand-over to a standby by
        ``STRICT_SHARED_EXPIRES_MS``, as over STOMP. ``ConnectionFailedError`` (or
        ``JMSSecurityError``) if the management API cannot be used: nothing else can
        keep the subscription."""
        declare = self._exclusivity.declare_subscription_queue
        if declare is None:
            raise IllegalStateError(
                f"durable or shared subscription {name!r}: RabbitMQ keeps them over AMQP 1.0 "
                "only through its management API (setting managementUrl)"
            )
        queue = shared_queue(client_id, name) if shared else durable_queue(client_id or "", name)
        if durable:
            self.renew_if_moved(queue, topic, None if shared else selector or "")
        single_active = self._exclusivity.declare_subscription
        declared = False
        if strict and shared and single_active is not None:
            try:
                single_active(queue, topic, None if durable else STRICT_SHARED_EXPIRES_MS)
                declared = True
            except ConfigurationError as exc:
                log.warning(
                    "%s; jmslike keeps topic %s subscription %r strictly ordered within this "
                    "process only (ORD-18)",
                    exc,
                    topic,
                    name,
                )
        if not declared:
            declare(queue, topic, None if durable else SHARED_EXPIRES_MS)
        if durable and not shared:
            self.mark_selector(name, queue, topic, selector)
        return queue

    def renew_if_moved(self, queue: str, topic: str, selector: str | None = None) -> None:
        """JMS: a durable subscription made again on another topic or with another
        selector is a new one (the old one and its messages are deleted; an error while
        it has consumers). A SUBSCRIBE or a binding to the new topic would keep the old
        binding and its messages (the subscriber then got both topics' messages, seen
        over STOMP), so the management API says where the queue is bound, and it is
        deleted first if elsewhere. ``selector``: "" for none; None: not compared (a
        shared subscription). A queue without a recorded selector (made before jmslike
        kept one) is taken as it is. Without the management API, nothing is checked."""
        bound_topics = self._exclusivity.bound_topics
        if bound_topics is None:
            return
        try:
            found = bound_topics(queue)
        except (ConnectionFailedError, JMSSecurityError) as exc:
            log.debug("durable subscription %s not checked for a change: %s", queue, exc)
            return
        bound, mark = found or ([], None)
        if not bound:
            return  # new
        if bound == [topic] and (mark is None or selector is None or mark == selector):
            return  # as it was
        log.info(
            "durable subscription %s changes from %s (selector %r) to %s (selector %r): made anew",
            queue,
            bound,
            mark,
            topic,
            selector,
        )
        self._exclusivity.unsubscribe([queue], queue, "rabbitmq")

    def mark_selector(self, name: str, queue: str, topic: str, selector: str | None) -> None:
        """Record the selector of durable subscription ``name`` (its queue ``queue``),
        made just now (see :meth:`renew_if_moved`). Best effort: without the record, a
        later change of selector is not noticed, and nothing else changes."""
        mark = self._exclusivity.mark_selector
        if mark is None:
            return
        try:
            mark(queue, topic, selector or "")
        except JMSException as exc:
            # Once per connection: without the management API it fails for every one.
            level = logging.DEBUG if self._selector_unrecorded else logging.WARNING
            self._selector_unrecorded = True
            log.log(
                level,
                "durable subscription %s: its selector was not recorded through RabbitMQ's "
                "management API (%s); a later change of selector will not make it anew",
                name,
                exc,
            )

    def unsubscribe(self, name: str, client_id: str | None) -> None:
        """JMS ``unsubscribe(name)``: delete whichever of the subscription's queues
        exists, from any connection or process; InvalidDestinationError if none does,
        IllegalStateError while a consumer of any process is on it."""
        queues = [shared_queue(client_id, name)]
        if client_id:
            queues.append(durable_queue(client_id, name))
        self._exclusivity.unsubscribe(queues, name, "rabbitmq")
