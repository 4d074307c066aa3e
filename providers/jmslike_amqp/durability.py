"""RabbitMQ queues over AMQP 1.0: declared durable by jmslike, or used as they already are.

RabbitMQ 3.x's AMQP 1.0 plugin declares the queue ``/queue/x`` names when a link attaches,
durable only if the link's terminus is; Qpid JMS asks for durability ``none``, so a queue a
Java client made is non-durable, and such a queue loses every message it holds, persistent
ones too, when the broker stops (seen here: a persistent message whose send was confirmed
during a graceful stop never came again). A queue declared otherwise than it exists is
refused ("inequivalent arg"), and the refusal ends the AMQP session.

So, before a connection's first use of a queue, jmslike attaches a probe: a sender link
to ``/queue/x`` with a durable terminus, on a short-lived connection of its own. Taken,
the queue is durable (made so now, or already), and jmslike's links declare it durable
too; the other connections of the process take that answer without asking again.
Refused as inequivalent, the queue exists otherwise (non-durable from a Java client, or
declared by an operator with arguments of its own): jmslike addresses it as
``/amq/queue/x``, which uses a queue as it is, and says once per process, as a warning,
when it is non-durable. The probe has a connection of its own because RabbitMQ 3.10's
plugin does not always get over a session it ended with an error (seen here: after it
ended one with ``not-found``, the connection failed with ``noproc`` as it closed), and
the application's connection must not pay for a probe. It costs a connection's opening
and a durable queue's declaration: a connection's first send to a new queue took
18-22 ms here against 4.5 ms without it (median of 30 such sends, each to a new queue).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from jmslike.errors import JMSException
from jmslike.spi.diagnose import inequivalent
from jmslike_amqp.links import Capability, DurableNode
from jmslike_amqp.transport import AmqpTransport

__all__ = ["DECLARED", "EXISTING", "QueueDeclarations"]

log = logging.getLogger("jmslike.amqp")

DECLARED = "/queue/"
"""RabbitMQ's address prefix that declares the queue (durable with ``DurableNode``)."""
EXISTING = "/amq/queue/"
"""RabbitMQ's address prefix for a queue that exists, used as it is."""


_DURABLE: set[tuple[str, str]] = set()
"""(broker and vhost, queue) pairs that took a probe in this process: every connection of
the process declares them durable without asking again. (Were such a queue deleted, the
next link declares it durable again; were it made again otherwise meanwhile, that link is
refused with RabbitMQ's words and what to do.) A queue used as it exists is asked about
again by each connection."""
_WARNED: set[tuple[str, str]] = set()
"""(broker and vhost, queue) pairs whose warning this process has logged."""
_LOCK = threading.Lock()


def _first_time(scope: str, queue: str) -> bool:
    with _LOCK:
        if (scope, queue) in _WARNED:
            return False
        _WARNED.add((scope, queue))
        return True


class QueueDeclarations:
    """A connection's answer, per queue name, to "declare it, or use it as it is?"."""

    def __init__(self, connect: Callable[[], AmqpTransport], scope: str) -> None:
        self._connect = connect
        """Opens the probe's connection."""
        self._scope = scope
        """The broker and vhost, for the process-wide ``_DURABLE``."""
        self._addresses: dict[str, str] = {}

    def address_of(self, name: str, transport: AmqpTransport) -> str:
        """The address of queue ``name``: probed on first use (from any thread but the
        thread of ``transport``, the application's connection, which cannot wait for a
        broker's answer: there, before a probe, the declaring address)."""
        known = self._addresses.get(name)  # (every send asks: no lock to read a dict)
        if known is not None:
            return known
        if transport.on_own_thread():
            return DECLARED + name
        if (self._scope, name) in _DURABLE:
            address = DECLARED + name
        else:
            try:
                probe = self._connect()
            except JMSException as exc:
                # No probe today (a connection limit, a broker going): the links declare
                # the queue durable, and a queue that exists otherwise refuses them with
                # RabbitMQ's words and what to do. Asked again next time.
                log.info("RabbitMQ queue %r: no connection for a probe (%s)", name, exc)
                return DECLARED + name
            try:
                address = self._probe(name, probe)
            finally:
                probe.close()
        return self._addresses.setdefault(name, address)  # (atomic: a racing probe agrees)

    def _probe(self, name: str, transport: AmqpTransport) -> str:
        try:
            handle = transport.open_sender(
                DECLARED + name,
                name=transport.link_name("probe"),
                options=[Capability("queue"), DurableNode()],
                restore=False,
            )
        except JMSException as exc:
            found = inequivalent(str(exc))
            if found is None:
                raise
            if found.arg == "durable" and found.current == "false":
                level = logging.WARNING if _first_time(self._scope, name) else logging.INFO
                log.log(
                    level,
                    "RabbitMQ queue %r exists non-durable (as Qpid JMS and other AMQP 1.0 "
                    "clients declare /queue/%s): jmslike uses it as it is, and every message "
                    "it holds, persistent ones too, is lost when the broker stops. Declare "
                    "it durable beforehand (and address it as /amq/queue/%s from Java)",
                    name,
                    name,
                    name,
                )
            else:
                log.info(
                    "RabbitMQ queue %r exists with %s=%s: used as it is (%s%s)",
                    name,
                    found.arg,
                    found.current,
                    EXISTING,
                    name,
                )
            return EXISTING + name
        del handle  # closed with its connection
        with _LOCK:
            _DURABLE.add((self._scope, name))
        return DECLARED + name
