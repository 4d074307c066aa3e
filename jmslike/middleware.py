"""Interceptors: code that runs around every send and every delivery of a connection.

Plugins contribute interceptors through the collecting hook ``jmslike_middleware``;
applications may also pass ``ConnectionFactory(..., interceptors=[...])``. When a
connection is created the interceptors are folded once, with wrapt, into one chain per
direction, so nothing is looked up per message, and a connection without interceptors
pays nothing at all (the chain is None and the API calls the provider directly).

An interceptor sees a typed context (connection, session, destination, message and its
ordering group) and calls ``proceed()`` to let the operation happen:

* on send it may change headers and properties, observe, or veto by raising; whatever it
  raises reaches the caller of ``send`` (wrapped in a JMSException if it is not one), and
  nothing is sent;
* on delivery it may observe or change the message; an error in the interceptor itself
  goes to the connection's exception listener, and the message is delivered anyway, so
  a broken interceptor never stops the flow of messages. An error raised by the
  application's listener (inside ``proceed``) is not the interceptor's and passes on.

Interceptors run on the thread of the operation: the sending thread, the thread that
calls ``receive()``, or the session's dispatcher thread around a message listener.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import wrapt

from jmslike.errors import JMSException

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.consumer import MessageConsumer
    from jmslike.destination import Destination
    from jmslike.message import Message
    from jmslike.session import Session

__all__ = [
    "DeliveryContext",
    "Interceptor",
    "InterceptorError",
    "SendContext",
    "collect",
    "deliver_to_handler",
    "fold_delivery",
    "fold_send",
    "notify_dead_letter",
    "send_to_provider",
]


class InterceptorError(JMSException):
    """An interceptor failed; the interceptor's exception is ``__cause__``."""


@dataclass(slots=True)
class SendContext:
    """What a send interceptor sees. ``message`` is the caller's message, headers set."""

    connection: Connection
    session: Session
    destination: Destination
    message: Message

    @property
    def group(self) -> str | None:
        return self.message.ordering_group


@dataclass(slots=True)
class DeliveryContext:
    """What a delivery interceptor sees: the message as the application will get it."""

    connection: Connection
    session: Session
    consumer: MessageConsumer
    destination: Destination
    message: Message
    handler: Callable[[Message], object] | None = field(default=None, repr=False)
    """The message listener the delivery ends in; None for ``receive()``."""

    @property
    def group(self) -> str | None:
        return self.message.ordering_group

    @property
    def redelivered(self) -> bool:
        return self.message.jms_redelivered


class Interceptor:
    """Base class: override ``send`` and/or ``deliver``; the defaults just proceed."""

    def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
        proceed()

    def deliver(self, context: DeliveryContext, proceed: Callable[[], None]) -> None:
        proceed()

    def dead_lettered(self, context: DeliveryContext, reason: str) -> None:
        """Told when the session moves a message to the dead-letter queue (ORD-13)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


SendChain = Callable[[SendContext], None]
DeliveryChain = Callable[[DeliveryContext], None]


def _overrides(interceptor: Interceptor, name: str) -> bool:
    return getattr(type(interceptor), name, None) is not getattr(Interceptor, name)


def fold_send(interceptors: Sequence[Interceptor], final: SendChain) -> SendChain | None:
    """One send chain for a connection, outermost interceptor first; None if none."""
    chain: SendChain = final
    folded = False
    for interceptor in reversed([i for i in interceptors if _overrides(i, "send")]):
        chain = wrapt.FunctionWrapper(chain, _send_wrapper(interceptor))
        folded = True
    return chain if folded else None


def _send_wrapper(interceptor: Interceptor) -> Callable[..., None]:
    def wrapper(
        wrapped: SendChain, _instance: object, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        context: SendContext = args[0]
        called = False
        inner_error: BaseException | None = None

        def proceed() -> None:
            nonlocal called, inner_error
            called = True
            try:
                wrapped(context)
            except BaseException as exc:  # the provider's (or an inner interceptor's)
                inner_error = exc
                raise

        try:
            interceptor.send(context, proceed)
        except JMSException:
            raise
        except Exception as exc:
            if exc is inner_error:
                raise
            raise InterceptorError(
                f"send interceptor {interceptor!r} failed: {type(exc).__name__}: {exc}; "
                f"message {context.message.jms_message_id} to {context.destination} "
                + ("was sent" if called else "was not sent")
            ) from exc
        if not called:
            raise InterceptorError(
                f"send interceptor {interceptor!r} neither sent message "
                f"{context.message.jms_message_id} nor vetoed it with an exception; not sent"
            )

    return wrapper


def fold_delivery(
    interceptors: Sequence[Interceptor],
    final: DeliveryChain,
    report: Callable[[JMSException], None],
) -> DeliveryChain | None:
    """One delivery chain for a connection; errors of interceptors go to ``report``."""
    chain: DeliveryChain = final
    folded = False
    for interceptor in reversed([i for i in interceptors if _overrides(i, "deliver")]):
        chain = wrapt.FunctionWrapper(chain, _delivery_wrapper(interceptor, report))
        folded = True
    return chain if folded else None


def _delivery_wrapper(
    interceptor: Interceptor, report: Callable[[JMSException], None]
) -> Callable[..., None]:
    def wrapper(
        wrapped: DeliveryChain, _instance: object, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        context: DeliveryContext = args[0]
        called = False
        inner_error: BaseException | None = None

        def proceed() -> None:
            nonlocal called, inner_error
            if called:
                return  # a message is handed over once, however often proceed is called
            called = True
            try:
                wrapped(context)
            except BaseException as exc:
                inner_error = exc
                raise

        try:
            interceptor.deliver(context, proceed)
        except BaseException as exc:
            if exc is inner_error:
                raise
            error = InterceptorError(
                f"delivery interceptor {interceptor!r} failed: {type(exc).__name__}: {exc} "
                f"(message {context.message.jms_message_id}); delivered anyway"
            )
            error.__cause__ = exc
            report(error)
        if not called:
            wrapped(context)

    return wrapper


def deliver_to_handler(context: DeliveryContext) -> None:
    """The innermost step of every delivery chain: the listener, if there is one."""
    if context.handler is not None:
        context.handler(context.message)


def send_to_provider(context: SendContext) -> None:
    """The innermost step of every send chain: the provider puts it on the wire."""
    context.session._provider.send(context.destination, context.message)


def notify_dead_letter(
    interceptors: Sequence[Interceptor],
    context: DeliveryContext,
    reason: str,
    report: Callable[[JMSException], None],
) -> None:
    for interceptor in interceptors:
        try:
            interceptor.dead_lettered(context, reason)
        except Exception as exc:
            error = InterceptorError(f"{interceptor!r}.dead_lettered failed: {exc}")
            error.__cause__ = exc
            report(error)


def collect(results: Iterable[object]) -> list[Interceptor]:
    """Flatten what the ``jmslike_middleware`` hook implementations returned."""
    out: list[Interceptor] = []
    for result in results:
        if result is None:
            continue
        items = result if isinstance(result, list | tuple) else [result]
        for item in items:
            if not isinstance(item, Interceptor):
                raise JMSException(
                    f"jmslike_middleware returned {item!r}, not a jmslike.middleware.Interceptor"
                )
            out.append(item)
    return out
