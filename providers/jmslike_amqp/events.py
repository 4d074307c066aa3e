"""Proton's events for one connection, handled on its thread.

The engine's events go to :class:`Events`, one plain handler with a method per event it
wants, rather than Proton's ``Container`` and ``MessagingHandler``: the reactor wraps
every event and passes it through a chain of handlers, and in a receive of 20,000
messages that took more than half of the connection thread's time
(docs/performance.md). The handler works on its connection's state
(``lifecycle.ConnectionLifecycle``): it resolves what other threads wait for, hands
incoming messages to their receiver's callback and reports a lost connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from proton import Delivery, Endpoint, Link, Terminus, symbol

from jmslike.errors import (
    ConnectionFailedError,
    InvalidClientIDError,
    InvalidDestinationError,
    JMSException,
    JMSSecurityError,
    MessageFormatError,
)
from jmslike.spi.diagnose import clip, inequivalent_note, wrong_port_hint
from jmslike_amqp.driver import Driver
from jmslike_amqp.links import LinkHandle
from jmslike_amqp.pncalls import (
    delivery_aborted,
    delivery_partial,
    delivery_pending,
    delivery_readable,
    delivery_settle,
    delivery_update,
    key_of,
    link_advance,
    link_recv,
    to_delivery,
)
from jmslike_amqp.received import read

if TYPE_CHECKING:
    from jmslike_amqp.lifecycle import ConnectionLifecycle

__all__ = ["Events"]

log = logging.getLogger("jmslike.amqp")

_ESTABLISHMENT_FAILED = symbol("amqp:connection-establishment-failed")
_LOCAL_CLOSED = Endpoint.LOCAL_CLOSED


_GONE = frozenset(
    {"amqp:resource-deleted", "amqp:not-found", "amqp:unauthorized-access", "amqp:not-allowed"}
)
"""Conditions of a link the broker closed that attaching it again cannot mend (its queue
was deleted, or access withdrawn): the link stays closed, with an error in the log."""


def _owned(data: Any) -> Any:
    """Copies, made here on the connection's thread, of the binary values in an outcome's
    data: Proton decodes them as views of its input buffer, which the frames it reads
    next overwrite. Copied later on the caller's thread, a declared transaction id had
    sometimes become the id of another session's transaction declared just after it; on
    ActiveMQ Classic over AMQP the second discharge of that id was then refused
    ("Transaction ... has not been started"), and Classic closed a consumer's link."""
    if not data:
        return data
    return [bytes(item) if isinstance(item, memoryview) else item for item in data]


def _refusal(link: Link) -> bool:
    """The broker's attach of a link we gave a source (a target, for a sender) has none:
    how AMQP 1.0 refuses a link (a lookup that asked for no source is not refused)."""
    asked, got = (
        (link.source, link.remote_source) if link.is_receiver else (link.target, link.remote_target)
    )
    return bool(asked.type != Terminus.UNSPECIFIED and got.type == Terminus.UNSPECIFIED)


def _refused_link(address: str, reason: str, condition: Any) -> JMSException:
    """The error for a link the broker refused, typed where its condition says why (the
    condition's name is kept as ``error_code``)."""
    name = condition.name if condition is not None else None
    text = f"AMQP broker {address} refused a link: {reason}"
    if name == "amqp:unauthorized-access":
        return JMSSecurityError(text, error_code=name)
    if name == "amqp:not-found" or "invalid_destination" in reason:
        # RabbitMQ: "Attach rejected: {invalid_destination,...}" (amqp:invalid-field).
        return InvalidDestinationError(text, error_code=name)
    return JMSException(text, error_code=name)


def _reason(condition: Any, default: str) -> str:
    return clip(f"{condition.name}: {condition.description}") if condition else default


class Events:
    """Proton's events for one connection, on its thread. The driver calls ``on_<event>``
    where this class has it and skips the rest."""

    def __init__(self, transport: ConnectionLifecycle) -> None:
        self._transport = transport

    def on_wake(self) -> None:
        self._transport._run_calls()

    def next_timer(self) -> float | None:
        timers = self._transport._timers
        return timers[0][0] if timers else None

    def on_timer(self) -> None:
        self._transport._run_timers()

    # ------------------------------------------------------------- connection
    def on_connection_remote_open(self, event: Any) -> None:
        properties = event.connection.remote_properties or {}
        if properties.get(_ESTABLISHMENT_FAILED):
            return  # the broker's close follows, with the reason
        self._transport._connection_opened(str(properties.get("product", "")))

    def on_connection_remote_close(self, event: Any) -> None:
        transport = self._transport
        connection = event.connection
        condition = connection.remote_condition
        if condition is None:
            if not connection.state & _LOCAL_CLOSED:  # the broker's, not an answer to ours
                transport._fail(
                    ConnectionFailedError(f"AMQP broker {transport.address} closed the connection")
                )
        else:
            container = transport.container_id
            if container and condition.name == "amqp:invalid-field":
                transport._fail(
                    InvalidClientIDError(
                        f"client id {container!r} is in use on AMQP broker "
                        f"{transport.address}: {condition.description}"
                    )
                )
            else:
                hint = ""
                vhost = transport._virtual_host
                if vhost and condition.name == "amqp:unauthorized-access":
                    # RabbitMQ 3.10's AMQP 1.0 plugin opens a connection to a vhost that
                    # does not exist, then closes it at the first link with "insufficient
                    # permissions" (over STOMP the CONNECT is refused, naming the vhost).
                    hint = (
                        f" (the URL names vhost {vhost.removeprefix('vhost:')!r}: check that "
                        "it exists and that the user has permissions on it)"
                    )
                transport._fail(
                    ConnectionFailedError(
                        f"AMQP broker {transport.address} closed the connection: "
                        f"{_reason(condition, '')}{hint}"
                    )
                )
        if not connection.state & _LOCAL_CLOSED:
            connection.close()

    def on_transport_error(self, event: Any) -> None:
        self._lost(event)

    def on_transport_tail_closed(self, event: Any) -> None:
        connection = event.connection
        if connection is not None and connection.state & Endpoint.LOCAL_ACTIVE:
            self._lost(event)

    def _lost(self, event: Any) -> None:
        """The socket is gone: say why, once (refused credentials are a security error)."""
        transport = self._transport
        if transport._closing:
            return
        condition = event.transport.condition if event.transport is not None else None
        hint = None
        if (
            condition is not None
            and "framing-error" in str(condition.name)
            and not transport._opened.done()
        ):
            # Another protocol's bytes (Proton quotes them all): name the protocol. Not
            # once the broker opened the connection: that port speaks AMQP, the error is
            # a cut ("connection aborted"), and a probe would only delay the reconnect.
            host, port = transport._member
            hint = wrong_port_hint(host, port, "AMQP 1.0") if transport._tls is None else None
        if hint is not None:
            text = hint
        elif condition is not None:
            text = _reason(condition, "")
        elif not transport._opened.done():
            text = "the broker closed the socket before the connection opened"
        else:
            text = "the broker closed the socket"
        security = condition is not None and "unauthorized" in str(condition.name)
        error_type = JMSSecurityError if security else ConnectionFailedError
        transport._fail(error_type(f"AMQP connection to {transport.address} failed: {text}"))

    # ---------------------------------------------------------------- session
    def on_session_remote_close(self, event: Any) -> None:
        """A broker that refuses an attach by ending the whole session (RabbitMQ does,
        e.g. PRECONDITION_FAILED on a queue declared otherwise): every link of it waiting
        to attach fails with the broker's reason, instead of timing out. A session ended
        with an error ends the connection, as Proton's own handler does. A link's own
        session (``OwnSession``) that the broker ended in answer to ours is freed: Proton
        keeps it, and what it holds, until then or until the connection goes; a detach
        of its link still unanswered is taken as answered (the end ended the link)."""
        session = event.session
        condition = session.remote_condition
        driver = self._transport._driver
        answer = session.state & _LOCAL_CLOSED  # to our end
        for link in [link for link in self._transport._detaching if link.session == session]:
            self._answered(link)
        if driver is not None:
            driver.session_ended(session, free=condition is None and bool(answer))
        if condition is None and answer:
            return
        text = _reason(condition, "session ended")
        text += inequivalent_note(text)
        transport = self._transport
        attaching = transport._attaching
        told = False
        for link in [link for link in attaching if link.session == session]:
            future = attaching.pop(link)
            if not future.done():
                future.set_exception(_refused_link(transport.address, text, condition))
                told = True
        if not session.state & _LOCAL_CLOSED:
            session.close()
        if condition is not None:
            # Once, where it is news: a caller waiting for the link raises it already.
            level = logging.DEBUG if told else logging.ERROR
            log.log(level, "AMQP broker %s ended a session: %s", transport.address, text)
            event.connection.close()

    # ------------------------------------------------------------------ links
    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        transport = self._transport
        if _refusal(link):
            # The broker refuses the link (AMQP 1.0, 2.6.3): its attach names no source
            # (target) and its detach, with the reason, follows; on_link_remote_close
            # tells whoever waits. Taken as attached, the consumer was "closed by the
            # broker" and attached again, refused again, for ever (ActiveMQ Classic and
            # a selector it cannot parse: 2,000 attaches in a few seconds).
            return
        if transport._restoring:
            transport._restoring.pop(Driver.key_of(link), None)
            again = transport._attached_again.pop(Driver.key_of(link), None)
            if again is not None:
                transport._tell_broker_closed(again, True)
        if link.state & Endpoint.LOCAL_ACTIVE:
            attached = self._transport._attaching.pop(link, None)
            if attached is not None and not attached.done():
                attached.set_result(None)

    def on_link_remote_detach(self, event: Any) -> None:
        self._answered(event.link)

    def on_link_remote_close(self, event: Any) -> None:
        link = event.link
        condition = link.remote_condition
        transport = self._transport
        key = Driver.key_of(link)
        handle = transport._handles.get(key)
        # An attached receiver the broker closed on its own: not one being attached, nor
        # one closed here (the broker's answer to our close).
        unasked = (
            link.is_receiver
            and not link.state & _LOCAL_CLOSED
            and link not in transport._attaching
            and key not in transport._restoring
            and handle is not None
            and handle._link is not None
            and not handle._closed
        )
        reason = _reason(condition, "no reason given")
        if transport._attached_again.pop(key, None) is not None:
            transport._restoring.pop(key, None)
            log.error(
                "AMQP broker %s refused to attach receiver link %s on %s again (%s): its "
                "consumer gets nothing more",
                transport.address,
                link.name,
                link.source.address,
                reason,
            )
        elif condition is not None or link in transport._attaching:
            refused = _refused_link(transport.address, reason, condition)
            attached = transport._attaching.pop(link, None)
            if attached is not None and not attached.done():
                attached.set_exception(refused)
            if transport._restoring.pop(key, None) is not None:
                # A link attached again after a reconnect, refused: nobody waits for it.
                log.error("AMQP %s: link %s not restored: %s", transport.address, link.name, reason)
                transport._on_lost(refused)
        self._answered(link)
        if not link.state & _LOCAL_CLOSED:
            link.close()
            if transport._driver is not None:
                transport._driver.end_own_session(link)
        if unasked and handle is not None:
            gone = condition is not None and condition.name in _GONE
            transport._attach_again(handle, link, reason, mendable=not gone)

    def _answered(self, link: Link) -> None:
        """The broker answered our detach of ``link`` (or ended its session): whoever
        waits for it goes on, a link closed here is let go of, and its own session, if it
        has one, ends now (``Driver.create_link`` says why not with the detach)."""
        transport = self._transport
        answered = transport._detaching.pop(link, None)
        if answered is not None and not answered.done():
            answered.set_result(None)
        handle = transport._handles.get(Driver.key_of(link))
        if handle is not None and handle._closed:
            if transport._driver is not None:
                transport._driver.end_own_session(link)
            transport._let_go(link)

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        transport = self._transport
        if link.is_sender:
            handle = transport._handles.get(Driver.key_of(link))
            if handle is not None and link.credit > 0:
                handle.credit.set()
            return
        if link.credit == 0 and link in transport._draining:
            self._drained(link)
        handle = transport._handles.get(Driver.key_of(link))
        if handle is not None and handle._on_flow is not None:
            handle._on_flow()

    def _drained(self, link: Link) -> None:
        """A drain of ``link`` is over (``AmqpTransport.drain``): whoever waits goes on."""
        drained = self._transport._draining.pop(link, None)
        link.drain_mode = False
        if drained is not None and not drained.done():
            drained.set_result(None)

    # ------------------------------------------------------------- deliveries
    def on_delivery(self, pointer: Any, link_pointer: Any) -> None:
        """A delivery event (``pointer`` and ``link_pointer``: Proton's C delivery and its
        link, as ``pncalls`` takes them)."""
        handle = self._transport._handles.get(key_of(link_pointer))
        link = handle._link if handle is not None else None
        if handle is None or link is None:  # a link already let go of
            delivery = Delivery.wrap(to_delivery(pointer))  # type: ignore[no-untyped-call]
            link = delivery.link
            if link.is_receiver and delivery.readable and not delivery.partial:
                link.recv(delivery.pending)
                link.advance()
                delivery.update(Delivery.RELEASED)
                delivery.settle()
            return
        if not handle.is_sender:
            self._received(handle, link, pointer, link_pointer)
            return
        delivery = Delivery.wrap(to_delivery(pointer))  # type: ignore[no-untyped-call]
        if delivery.updated:
            self._answer(handle, link, delivery)

    def _received(self, handle: LinkHandle, link: Link, pointer: Any, link_pointer: Any) -> None:
        if delivery_aborted(pointer):
            delivery_settle(pointer)
            return
        if not delivery_readable(pointer) or delivery_partial(pointer):
            return
        payload = link_recv(link_pointer, delivery_pending(pointer))
        if not payload:
            # AMQP 1.0 (3.2) gives every message a body section; Proton hands an empty
            # transfer over as None (as it does the end of a delivery, or an error),
            # which its decoder took for a TypeError.
            raise MessageFormatError(
                f"AMQP delivery on link {handle.name} carried no message (an empty payload)"
            )
        message = read(payload)
        link_advance(link_pointer)
        callback = handle._on_message
        if callback is None:
            # Closed here, and the broker sent it before it read the close: back, unseen.
            late = handle._late
            if late is not None:
                late(message)
            delivery_update(pointer, Delivery.RELEASED)
            delivery_settle(pointer)
            return
        transport = self._transport
        number = next(transport._delivery_numbers)
        handle._deliveries[number] = pointer
        callback(message, number)
        if transport._draining and link.credit == 0 and link in transport._draining:
            # A drain whose credit the deliveries used up is over: the broker owes no
            # flow for it (Artemis and Classic send none), and a browse of a queue holding
            # a whole batch or more waited for one until it timed out.
            self._drained(link)

    def _answer(self, handle: LinkHandle, link: Link, delivery: Delivery) -> None:
        """The broker's outcome of a transfer: a send's, or a transaction request's."""
        transport = self._transport
        state = delivery.remote_state
        if state:
            transport._answered_transfer(handle, link, delivery)
        control = transport._controls.pop(delivery, None) if transport._controls else None
        if control is not None and not control.done():
            reason = _reason(delivery.remote.condition, "no reason given")
            control.set_result((state, _owned(delivery.remote.data), reason))
        outcome = transport._outcomes.pop(delivery, None) if transport._outcomes else None
        if outcome is not None and not outcome.done():
            if state == Delivery.ACCEPTED:
                outcome.set_result(None)
            elif state == Delivery.REJECTED:
                reason = _reason(delivery.remote.condition, "rejected")
                outcome.set_exception(JMSException(f"AMQP broker refused a send: {reason}"))
            elif state in (Delivery.RELEASED, Delivery.MODIFIED):
                outcome.set_exception(JMSException("AMQP broker released a send unprocessed"))
            else:
                transport._outcomes[delivery] = outcome  # not an outcome yet
        if delivery.settled:
            delivery.settle()
