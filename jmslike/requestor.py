"""JMS 1.1's request/reply helpers, ``QueueRequestor`` and ``TopicRequestor``.

Java code that asks a service and waits for its answer writes
``new QueueRequestor(session, queue).request(message)``; ported code keeps that line.
The helper exists because the pattern is easy to get subtly wrong by hand: the reply
destination must exist (and be consumed) before the request leaves, the connection must
be started or the reply can never arrive, and a reply that comes after its request was
given up on must not be taken for the answer to the next request.

Where jmslike differs from Java, and why:

* ``request(message, timeout=None)``: Java's waits for ever. A service that never answers
  then hangs its caller; ``timeout`` (seconds, like ``receive``) returns ``None`` instead.
* A late reply is dropped: a reply whose ``jms_correlation_id`` is the message id of an
  earlier request of this requestor (one that timed out) is acknowledged and skipped.
  Java's requestor hands it to the next caller as its answer. A reply without a
  correlation id is taken as Java takes it (the next one that arrives).
* The session is checked up front. Java requires a non-transacted session in
  ``AUTO_ACKNOWLEDGE`` or ``DUPS_OK_ACKNOWLEDGE`` mode but does not check it: in a
  transacted session the request is never sent (it waits for a commit that never comes)
  and the caller waits for ever. jmslike raises ``IllegalStateError`` when the requestor
  is made, and when ``request`` is called on a connection that is not started.

As in Java, ``close()`` closes the session given to the constructor too (the requestor
owns it from then on), and deletes the temporary destination. A requestor is used by one
thread at a time, as its session is.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from jmslike.consumer import wait_seconds
from jmslike.destination import Destination, Queue, Topic, parse_destination
from jmslike.errors import IllegalStateError, InvalidDestinationError, JavaNames

if TYPE_CHECKING:
    from jmslike.message import Message
    from jmslike.session import Session

__all__ = ["QueueRequestor", "TopicRequestor"]

log = logging.getLogger("jmslike.requestor")

_ABANDONED = 1_000
"""Message ids of timed-out requests remembered, to drop their late replies."""


class _Requestor(JavaNames):
    """One temporary destination for replies, one producer, one consumer on it."""

    _kind: type[Destination]

    def __init__(self, session: Session, destination: Destination | str) -> None:
        target = parse_destination(destination)
        if not isinstance(target, self._kind):
            raise InvalidDestinationError(
                f"{type(self).__name__} sends to a {self._kind.__name__.lower()}, "
                f"not {destination!r}"
            )
        if session.transacted or session.acknowledge_mode not in (
            session.AUTO_ACKNOWLEDGE,
            session.DUPS_OK_ACKNOWLEDGE,
        ):
            raise IllegalStateError(
                f"{type(self).__name__} needs a session that is not transacted, in "
                f"AUTO_ACKNOWLEDGE or DUPS_OK_ACKNOWLEDGE mode (this one is {session!r}): "
                "in a transacted session the request would wait for a commit and never leave"
            )
        self._session = session
        self._replies = self._temporary(session)
        self._consumer = session.create_consumer(self._replies)
        self._producer = session.create_producer(target)
        self._abandoned: deque[str] = deque(maxlen=_ABANDONED)
        self._closed = False

    def _temporary(self, session: Session) -> Destination:
        raise NotImplementedError

    def __enter__(self) -> _Requestor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"replies to {self._replies}"
        return f"<{type(self).__name__} {self._producer.destination} {state}>"

    def request(self, message: Message, timeout: float | None = None) -> Message | None:
        """Send ``message`` with ``jms_reply_to`` set to this requestor's temporary
        destination and wait for the reply: for ever with ``timeout=None`` (as Java), else
        up to ``timeout`` seconds, then ``None``. ``None`` too if the connection closes."""
        if self._closed:
            raise IllegalStateError(f"{self!r} is closed")
        if not self._session._connection.started:
            raise IllegalStateError(
                "the connection is not started, so no reply could arrive: call "
                "connection.start() before request()"
            )
        if timeout is not None:
            timeout = wait_seconds(timeout, "request")
        deadline = None if timeout is None else time.monotonic() + timeout
        message.jms_reply_to = self._replies
        self._producer.send(message)
        asked = message.jms_message_id
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            reply = self._consumer.receive(left)
            if reply is None or reply.jms_correlation_id not in self._abandoned:
                break
            log.debug("dropped a late reply to %s", reply.jms_correlation_id)
        if reply is None and asked:
            self._abandoned.append(asked)
        return reply

    def close(self) -> None:
        """Close the consumer, the producer and the session, and delete the temporary
        destination (Java's ``close`` closes the session too)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._consumer.close()
            self._producer.close()
            if not self._session._connection.closed:
                self._session._connection.delete_temporary(self._replies)
        finally:
            self._session.close()


class QueueRequestor(_Requestor):
    """Requests to a queue; replies come to a temporary queue (JMS ``QueueRequestor``)."""

    _kind = Queue

    def _temporary(self, session: Session) -> Destination:
        return session.create_temporary_queue()


class TopicRequestor(_Requestor):
    """Requests published to a topic; replies come to a temporary topic, as in Java (JMS
    ``TopicRequestor``). Every subscriber may answer: ``request`` returns the first answer,
    and the others are dropped as late replies at the next ``request``. A provider without
    temporary topics (none of this repository's) refuses with ``IllegalStateError`` when it
    is made."""

    _kind = Topic

    def _temporary(self, session: Session) -> Destination:
        return session.create_temporary_topic()
