"""JMSConsumer: JMS 2.0's consumer, a MessageConsumer plus ``receive_body``.

Receiving, listeners, acknowledgement and ordering stay the MessageConsumer's (ORD-9 to
ORD-11); this class only adds the body-returning calls of JMS 2.0 and their one subtle
rule: a body of the wrong type must not cost an AUTO_ACKNOWLEDGE application the message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TypeVar

from jmslike.consumer import MessageConsumer, MessageListener
from jmslike.errors import InvalidArgumentError, MessageFormatError
from jmslike.message import BytesMessage, MapMessage, Message, TextMessage

__all__ = ["JMSConsumer"]

log = logging.getLogger("jmslike.jms_consumer")

_B = TypeVar("_B")

_BODY_TYPES = (TextMessage, BytesMessage, MapMessage)
"""Message types with a body receive_body can return (JMS 2.0: no Stream/plain Message)."""


class JMSConsumer:
    """Receives from one destination for a JMSContext (JMS 2.0 JMSConsumer).

    Timeouts are seconds, as for ``MessageConsumer.receive``: ``None`` waits until a
    message comes, 0 does not wait. It belongs to its context's thread
    (docs/threading.md).
    """

    __slots__ = ("__weakref__", "_consumer")
    """No other attribute: ``consumer.message_listnr = f`` raises instead of making an
    attribute nothing reads (``message_listener`` below is the spelling that works)."""

    def __init__(self, consumer: MessageConsumer) -> None:
        self._consumer = consumer

    def __repr__(self) -> str:
        return f"<JMSConsumer {self._consumer.destination}>"

    def __enter__(self) -> JMSConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Message]:
        """Messages from ``receive()`` until the consumer or its context closes."""
        return iter(self._consumer)

    # ---------------------------------------------------------------- receive
    def receive(self, timeout: float | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` seconds; None if none came."""
        return self._consumer.receive(timeout)

    def receive_no_wait(self) -> Message | None:
        return self._consumer.receive_no_wait()

    def receive_body(self, body_type: type[_B], timeout: float | None = None) -> _B | None:
        """The next message's body as ``body_type`` (str, bytes or dict), or None if none
        came within ``timeout`` seconds (None waits until one comes).

        A message whose body is not a ``body_type``, or that has no body kind JMS 2.0
        allows (a plain Message), raises MessageFormatError. In AUTO_ACKNOWLEDGE and
        DUPS_OK_ACKNOWLEDGE the message then comes again, before anything after it,
        flagged redelivered, as if the call had not taken it (JMS 2.0); in the other
        modes it counts as received, as JMS says.
        """
        if not isinstance(body_type, type):
            raise InvalidArgumentError(
                f"receive_body({body_type!r}): need a type such as str, bytes or dict"
            )
        message = self._consumer.receive(timeout)
        if message is None:
            return None
        body = message.body
        if isinstance(message, _BODY_TYPES) and (body is None or isinstance(body, body_type)):
            return body
        session = self._consumer._session
        if session._auto:
            session._redeliver_last(self._consumer)
        log.debug(
            "receive_body(%s) on %s: %s %s does not fit",
            body_type.__name__,
            self._consumer.destination,
            type(message).__name__,
            message.jms_message_id,
        )
        raise MessageFormatError(
            f"receive_body({body_type.__name__}): message {message.jms_message_id} on "
            f"{self._consumer.destination} is a {type(message).__name__} whose body is "
            f"{type(body).__name__ if body is not None else 'absent'}"
        )

    def receive_body_no_wait(self, body_type: type[_B]) -> _B | None:
        return self.receive_body(body_type, 0.0)

    # -------------------------------------------------------------- listeners
    def set_message_listener(self, listener: MessageListener | None) -> None:
        """Deliver messages to ``listener`` on the context's dispatcher thread."""
        self._consumer.set_message_listener(listener)

    def get_message_listener(self) -> MessageListener | None:
        return self._consumer.get_message_listener()

    def get_message_selector(self) -> str | None:
        return self._consumer.message_selector

    # The attribute spellings of MessageConsumer, for code that writes
    # ``consumer.message_listener = handler`` as it would there.
    message_listener = property(get_message_listener, set_message_listener)
    message_selector = property(get_message_selector)

    # ------------------------------------------------------------------ close
    @property
    def closed(self) -> bool:
        return self._consumer.closed

    def close(self) -> None:
        """Close; unacknowledged messages go back in order (ORD-10)."""
        self._consumer.close()
