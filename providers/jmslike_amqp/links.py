"""What other threads hold of a link, and the link options jmslike attaches with.

Proton is single-threaded: its objects may only be touched by the thread that drives the
connection (``driver.py``'s loop). That includes letting go of them: a Proton wrapper's
``__del__`` lowers the C object's reference count, without a lock and (cffi releases the
GIL around C calls) at the same time as the connection's thread works on it. So no
Proton link or delivery ever leaves the transport: other threads hold a
:class:`LinkHandle` and delivery numbers, and the objects behind them live and die on
the connection's thread. (Twice a process using the provider died in
``malloc_consolidate`` before it was built this way.)

The options (``Capability``, ``Coordinator``) are applied by Proton as it makes a link,
on that thread; ``OwnSession`` is read by the driver before it makes one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from proton import Data, Delivery, Link, Terminus, symbol
from proton.reactor import LinkOption

if TYPE_CHECKING:
    from jmslike_amqp.received import Incoming

__all__ = [
    "Capability",
    "Coordinator",
    "DurableNode",
    "LinkHandle",
    "MessageCallback",
    "OwnSession",
]

MessageCallback = Callable[["Incoming", int], None]
"""A receiver's callback: the message and its delivery number (for ``settle``)."""


class LinkHandle:
    """A link as the threads other than the connection's know it.

    ``name``, ``address`` and the credit gate may be read anywhere; the fields with a
    leading underscore belong to the connection's thread, which also clears ``_link`` when
    the link closes, so that the last reference to the Proton object goes there."""

    __slots__ = (
        "_closed",
        "_deliveries",
        "_late",
        "_link",
        "_on_broker_close",
        "_on_flow",
        "_on_message",
        "_reattaching",
        "_recipe",
        "_unsettled",
        "address",
        "before_attach",
        "credit",
        "credit_lost",
        "drained",
        "epoch",
        "is_sender",
        "name",
        "posted",
        "transferred",
    )

    def __init__(
        self,
        link: Link,
        address: str | None,
        on_message: MessageCallback | None,
        on_flow: Callable[[], None] | None = None,
    ):
        self.name: str = link.name
        self.address = address or ""
        self.is_sender: bool = link.is_sender
        self.credit = threading.Event()
        """Senders: set while the broker's credit lasts; a send waits while it is clear."""
        self.posted = 0
        """Senders: transfers queued for the connection's thread, counted by the thread
        sending (one at a time: a session's)."""
        self.transferred = 0
        """Senders: of those, the ones the connection's thread made; ``posted -
        transferred`` is what a send made at once may find ahead of it
        (``AmqpTransport.AT_ONCE_WINDOW``)."""
        self.drained: Callable[[], None] | None = None
        """Senders: called once (on the connection's thread) when no more than half of
        ``AT_ONCE_WINDOW`` transfers wait (``AmqpSession.wake_when_at_once``)."""
        self._link: Link | None = link
        self._closed = False
        """Closed (or detached) here: let go of once the broker has answered."""
        self._on_message = on_message
        self._on_flow = on_flow
        """Receivers: told (on the connection's thread) of each flow frame from the broker."""
        self._late: Callable[[Incoming], None] | None = None
        """A receiver closed here, not yet by the broker: told of transfers that were on
        their way (they are released unseen)."""
        self._deliveries: dict[int, Any] = {}
        """Receivers: deliveries handed up and not settled yet, by number: Proton's C
        pointers, alive while the link is (cleared with it), never wrapped (a wrapper per
        delivery, with its two dispositions, cost a tenth of the connection thread's time
        in a listener container's receive)."""
        self._unsettled: set[Delivery] = set()
        """Senders: transfers outside transactions the broker has not answered."""
        self._recipe: tuple[bool, str | None, Any] | None = None
        """(receiver, address, link options): how to attach the link again after a
        reconnect; None for one that must not be (a temporary destination's)."""
        self.before_attach: Callable[[], None] | None = None
        """Called on the connection's thread before the link is attached again after a
        reconnect: what the broker must have first (an expiring subscription queue jmslike
        declares on RabbitMQ, gone if the outage outlasted it)."""
        self.credit_lost = 0
        """Receivers: the credit the link had when its connection was lost."""
        self.epoch = 0
        """Receivers: raised each time the broker closed the link on its own and it was
        attached again: a delivery of an older epoch cannot be settled (the broker took
        it back with the old link)."""
        self._reattaching = False
        """Receivers: attached again after the broker closed it, and not answered yet:
        credit waits in ``credit_lost`` (Classic ended the whole connection on a flow
        frame for a link it was still attaching)."""
        self._on_broker_close: Callable[[bool], None] | None = None
        """Receivers: told (on the connection's thread) when the broker closed the link
        on its own and it is being attached again (False: its owner drops what came over
        it), then when the broker has attached it (True: credit may flow again)."""

    def _release(self) -> None:
        """The connection's thread, once the link is gone: let go of its Proton objects.
        A send still waiting for credit goes on, and fails at once: no link."""
        self._link = None
        self._late = None
        self._on_flow = None
        self._on_broker_close = None
        self._deliveries.clear()
        self._unsettled.clear()
        self.credit.set()

    def __repr__(self) -> str:
        kind = "sender" if self.is_sender else "receiver"
        return f"<LinkHandle {kind} {self.name} {self.address!r}>"


class Coordinator(LinkOption):
    """A sender's target that is the broker's transaction coordinator."""

    def apply(self, link: Link) -> None:
        link.target.type = Terminus.COORDINATOR
        link.target.capabilities.put_object(symbol("amqp:local-transactions"))


class OwnSession(LinkOption):
    """Attach the link on an AMQP session of its own, ended right after the link closes.

    For RabbitMQ 3.x receivers. Its AMQP 1.0 plugin backs a session with an AMQP 0-9-1
    channel and a receiver link with a consumer of it; a message the queue dispatched
    just as the client detached the link reaches a link that is gone, and the plugin
    drops it with the warning "Delivery to non-existent consumer", neither sending nor
    requeueing it: it stays unacknowledged on the channel until the session ends. Seen
    34 times in one run of the contract suite here (RabbitMQ 3.10.8): a message given
    back by a consumer closing in a race came to no other consumer until the first
    connection closed (ORD-11). Ending the link's own session closes that channel, and
    RabbitMQ puts what it held back in the queue, each in its place."""

    def apply(self, link: Link) -> None:
        pass  # the driver reads the option before it makes the link


class DurableNode(LinkOption):
    """A durable terminus, for RabbitMQ's ``/queue/x`` addresses. RabbitMQ declares the
    queue such an address names when a link attaches, durable only if the terminus is
    (seen on 3.10: durability ``none`` gave ``durable: false``, ``configuration``
    ``true``), and a non-durable queue loses its messages, persistent ones too, when the
    broker stops (seen: a persistent message confirmed during a graceful stop never
    came again). jmslike_amqp.durability decides where it is used."""

    def apply(self, link: Link) -> None:
        terminus = link.source if link.is_receiver else link.target
        terminus.durability = Terminus.CONFIGURATION


class Capability(LinkOption):
    """The node's kind as Qpid JMS announces it (``queue``, ``topic``...) on the link's
    target (a sender) or source (a receiver), so that Artemis creates the right kind of
    address for a name it has not seen (anycast for a queue)."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = kinds

    def apply(self, link: Link) -> None:
        terminus = link.source if link.is_receiver else link.target
        data = terminus.capabilities
        if len(self.kinds) == 1:
            data.put_symbol(symbol(self.kinds[0]))
            return
        # More than one: an array. Symbols put one after the other encode a list the
        # broker cannot read (Artemis: "List incorrectly encoded").
        data.put_array(False, Data.SYMBOL)
        data.enter()
        for kind in self.kinds:
            data.put_symbol(symbol(kind))
        data.exit()
