"""What each broker does over STOMP: the one place that knows brokers by name.

Everything else in the provider asks a :class:`Dialect` (and jmslike's API layer asks the
resulting ``Capabilities``), never a broker name. A dialect is chosen from the
``server`` header of the CONNECTED frame. Facts come from running the brokers
(docs/providers.md) and their STOMP documentation:

* ActiveMQ Classic keeps groups (``JMSXGroupID`` on SEND) but does not echo the group on
  MESSAGE frames, and re-pins a group whenever ``JMSXGroupSeq: 1`` arrives, so jmslike
  carries group and sequence in headers of its own and never sends ``JMSXGroupSeq``
  (ORD-4). NACK dead-letters, ABORT does not redeliver: recover and rollback are local.
* Artemis keeps groups (``JMSXGroupID`` becomes ``_AMQ_GROUP_ID``, echoed back), routes by
  ``destination-type``/``subscription-type`` rather than ``/queue/`` prefixes, reads
  selectors in its Core filter syntax (translated), ignores the ``transaction`` header
  on ACK, and treats NACK as ACK.
* RabbitMQ ignores groups (jmslike gates on the client, ORD-16), has no selectors on
  queues, no priorities or delivery delay on plain queues, gives every delivery a new
  ``message-id``, and requeues with NACK; UNSUBSCRIBE alone does not requeue.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from jmslike.errors import InvalidSelectorError
from jmslike.selector import ARTEMIS_FILTER, JMS_SYNTAX, parse_selector

ID_HEADER = "jmslikeMessageID"
"""jmslike's JMSMessageID: the broker's ``message-id`` is its own."""
PRIORITY_HEADER = "jmslikePriority"
"""Where the JMS priority travels when the broker must not see it (``Dialect.priority``)."""
TIMESTAMP_HEADER = "jmslikeTimestamp"
"""The sender's JMSTimestamp, where the broker stamps its own (``Dialect.keeps_timestamp``)."""
CLASSIC_STOMP_SELECTORS = replace(JMS_SYNTAX, string_properties=True, ascii_names=True)
"""JMS syntax for Classic, which holds a STOMP message's properties as strings."""
ARTEMIS_STOMP_SELECTORS = replace(ARTEMIS_FILTER, string_properties=True)
"""Artemis' Core filter syntax, for properties that came as strings."""

__all__ = [
    "ACTIVEMQ",
    "ARTEMIS",
    "GENERIC",
    "RABBITMQ",
    "Dialect",
    "_broker_selector",
    "dialect_for",
]


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    native_groups: bool
    queue_prefix: str
    topic_prefix: str
    temp_queue_prefix: str | None
    routing_type_headers: bool
    """Artemis: say ANYCAST/MULTICAST in ``destination-type`` / ``subscription-type``."""
    group_back_header: str | None
    """Where the broker echoes the group on MESSAGE frames: Artemis as ``_AMQ_GROUP_ID``,
    RabbitMQ as sent (it passes every header through). None (ActiveMQ Classic, unknown
    brokers): a grouped SEND carries jmslike's own copy too; elsewhere it would be a
    second copy, and every header a SEND carries costs RabbitMQ about 7 µs of CPU a
    message (docs/performance.md)."""
    selectors: str
    """``broker`` (JMS syntax), ``core`` (Artemis filter syntax), or ``topics-only``
    (the client evaluates them, which is only safe where each subscriber has its own
    queue)."""
    transactional_ack: bool
    release_by_nack: bool
    """True: unacknowledged messages go back only with NACK (UNSUBSCRIBE keeps them)."""
    delivery_delay_header: str | None
    priority: bool
    browse: bool
    durable_subscription: str
    """``activemq`` (client-id + activemq.subscriptionName), ``artemis``
    (durable-subscription-name), ``rabbitmq`` (durable:true + auto-delete:false + id)."""
    dead_letter_queue: str
    group_seq_header: str = "jmslikeGroupSeq"
    """Where JMSXGroupSeq travels: Artemis reads (and echoes) ``_AMQ_GROUP_SEQUENCE``, so
    its JMS clients of every protocol see the sequence; elsewhere jmslike's own header."""
    shared_subscription: str = "none"
    """``artemis`` (a queue of the topic's address, subscribed by its fully qualified name
    ``address::queue``), ``rabbitmq`` (a named queue bound to the topic: ``x-queue-name``,
    expiring soon after its last use unless durable), ``none`` (ActiveMQ Classic 5.x
    has no JMS 2.0 shared subscriptions)."""
    """The broker's own dead-letter queue for NACKed messages, for information."""
    consumer_connection: bool = False
    """True: each consumer gets a STOMP connection of its own, since only closing a
    connection gives back what its subscriptions hold (RabbitMQ)."""
    relative_ttl_header: str | None = None
    """Where the broker reads a time to live in milliseconds rather than ``expires``
    (RabbitMQ: ``expiration``)."""
    temp_queue_implicit: bool = False
    """True: the broker creates a temporary queue only when a SEND names it in ``reply-to``
    and then subscribes the creator itself, delivering under the queue's name with no ACK
    needed, consumer or not (RabbitMQ); a SEND or SUBSCRIBE to ``/temp-queue/x`` is
    refused ("not a valid destination"): sends use the name the broker gives the queue."""
    temp_queue_named: bool = False
    """True: the broker has no temporary queues over STOMP (Artemis): a temporary queue is
    an ordinary anycast queue named ``/temp-queue/jmslike-...``, which the broker creates
    at its first SEND or SUBSCRIBE, and which jmslike deletes through the management API
    (``managementUrl``) when the application deletes it or its connection closes. Only
    with the management API: without it every such queue would stay on the broker."""
    persistent_false: bool = True
    """False: never send ``persistent:false``; a frame without it is non-persistent.
    RabbitMQ 3.10 reads the header as a non-durable, exclusive, auto-delete queue
    declaration (a new queue vanishes with the sender, an existing one refuses with
    RESOURCE_LOCKED). ActiveMQ Classic and Artemis store a frame without it as
    non-persistent (each echoed such a frame as non-persistent here, 2026-12-03); each
    header a SEND carries is work for the broker, and leaving this one out raised a
    non-persistent send loop on Classic by 12% (docs/performance.md)."""
    keeps_timestamp: bool = True
    """False: the broker stamps ``timestamp`` itself; the sender's travels in jmslike's."""
    text_without_length: bool = False
    """True: the broker delivers a frame sent without ``content-length`` without one (it
    keeps it a TextMessage), so that absence alone marks text; the others add the length
    to every MESSAGE frame, so a text message needs jmslike's type header there."""
    tcp_no_delay: bool = True
    """Set ``TCP_NODELAY`` on the connection's socket (wire.py says why). False on ActiveMQ
    Classic: there an UNSUBSCRIBE that reached the broker while it was still dispatching
    the message the consumer's last ACK let through gave that message back flagged
    redelivered, to a consumer that never saw it (``test_auto_close_finishes_last``:
    about one close in two; a round trip before the UNSUBSCRIBE made it rare, not gone,
    a cold broker in CI still did it). With Nagle on, the UNSUBSCRIBE waits for the TCP
    acknowledgement of the ACK, which comes with that message. Classic's own transport
    leaves Nagle on as well, so its latency hardly changed with it (p99 19 ms against
    22 ms)."""
    max_header_line: int | None = None
    """The longest header line (name, colon and escaped value, in UTF-8 bytes) the broker
    reads, and ``max_headers`` the most headers a frame may have; beyond either it drops
    the connection. ActiveMQ Classic: 10,240 bytes and 1,000 headers (its
    StompWireFormat); a 64 KiB property was refused and the rest of its line, read as a
    command, dropped the connection. jmslike refuses such a message before sending."""
    max_headers: int | None = None
    percent_names: bool = False
    """The broker reads ``%2F`` in a destination's name as ``/`` (and refuses a bare
    one), and percent-encodes the name in the ``destination`` header of a MESSAGE
    (RabbitMQ: ``/queue/zam%C3%B3w`` for the queue ``zamów``, ``%25`` for ``%``,
    ``%2F`` for ``/``); ``reply-to`` comes as the sender wrote it. Encoded on the way
    out and decoded on the way in, a received message names the destination it was
    sent to."""
    quick_ack: bool = True
    """Have the kernel acknowledge what the broker sent at once, after every read
    (``wire._quick_ack``). Needed where the broker leaves Nagle's algorithm on at its
    end (ActiveMQ Classic, and a broker jmslike does not know): a RECEIPT would wait for
    the client's delayed TCP acknowledgement. Artemis and RabbitMQ set ``TCP_NODELAY``
    on their sockets (Netty's ``tcpNoDelay``, RabbitMQ's ``tcp_listen_options.nodelay``,
    both on by default), so there it is one system call per read for nothing."""
    exclusive_header: str | None = None
    """SUBSCRIBE header that makes the broker deliver to one such subscriber at a time
    (Classic's exclusive consumer): strictly ordered destinations across processes."""
    cumulative_ack: bool = False
    """``ack:client`` (one ACK covers every earlier message of the subscription) for a
    consumer that finishes in order and holds its ACKs: a write per many messages, and
    less of the broker's work per message (half on ActiveMQ Classic, a sixth on Artemis
    by raw stomp.py: docs/performance.md, "What one ACK per message costs the broker").
    Not where jmslike's client gate may park a message while later ones are finished
    (RabbitMQ), nor where NACK gives a message back, since a cumulative NACK would give
    back every earlier one too."""
    commit_before_stored: bool = False
    """True: the broker answers a COMMIT once it has routed the transaction's sends, before
    its queues have stored them (RabbitMQ: a transaction of 2,000 persistent sends to a
    durable classic queue, committed, the broker killed with ``kill -9`` at once: all
    2,000 gone after the restart, 3 of 3 runs, 2026-12-06). There a transaction's
    persistent SENDs ask for a RECEIPT, which the broker sends once the queue has stored
    the message (a publisher confirm), and ``commit()`` waits for them."""
    wildcard_addresses: bool = False
    """The broker reads ``*`` and ``#`` in an address as wildcards and answers a SEND to
    one with an ERROR that closes the connection (Artemis): such a send is refused before
    it is written (``jmslike.spi.names``)."""

    def prefetch_headers(self, prefetch: int) -> dict[str, str]:
        """Limit unacknowledged messages per subscription (1 keeps groups free, ORD-9)."""
        if self.name == "activemq":
            return {"activemq.prefetchSize": str(prefetch)}
        if self.name == "artemis":  # bytes, not messages: 1 lets one message through
            return {"consumer-window-size": "1" if prefetch <= 1 else "-1"}
        if self.name == "rabbitmq":
            return {"prefetch-count": str(prefetch)}
        return {}

    def window_headers(self, messages: int) -> dict[str, str]:
        """A window of about ``messages`` messages (a listener container's feed). Artemis
        counts bytes; its unbounded window (-1, what ``prefetch_headers`` gives any
        prefetch above 1) let a container's subscription take a whole queue at once, and
        stomp.py's thread then parsed thousands of frames while the sessions waited for
        the GIL (the first 0.3 s of a 4,000-message job at a third of the speed): 2 KiB a
        message, about what Artemis counts for a 1 KiB body with its headers."""
        if self.name == "artemis":
            return {"consumer-window-size": str(max(1, messages) * 2048)}
        return self.prefetch_headers(messages)


ACTIVEMQ = Dialect(
    name="activemq",
    native_groups=True,
    queue_prefix="/queue/",
    topic_prefix="/topic/",
    temp_queue_prefix="/temp-queue/",
    routing_type_headers=False,
    group_back_header=None,
    selectors="broker",
    transactional_ack=True,
    release_by_nack=False,
    delivery_delay_header=None,  # its scheduler ignores groups (ORD-12)
    priority=False,  # prioritizedMessages reorders groups (ORD-12)
    browse=True,
    durable_subscription="activemq",
    text_without_length=True,
    exclusive_header="activemq.exclusive",
    dead_letter_queue="ActiveMQ.DLQ",
    tcp_no_delay=False,
    cumulative_ack=True,
    persistent_false=False,
    max_header_line=10 * 1024,
    max_headers=1000,
)

ARTEMIS = Dialect(
    name="artemis",
    native_groups=True,
    queue_prefix="",
    topic_prefix="",
    temp_queue_prefix="/temp-queue/",
    routing_type_headers=True,
    group_back_header="_AMQ_GROUP_ID",
    selectors="core",
    transactional_ack=False,
    release_by_nack=False,
    delivery_delay_header=None,  # its scheduler ignores groups (ORD-12)
    priority=False,  # it orders a group by priority too (ORD-12)
    browse=False,
    durable_subscription="artemis",
    shared_subscription="artemis",
    group_seq_header="_AMQ_GROUP_SEQUENCE",
    dead_letter_queue="DLQ",
    keeps_timestamp=False,
    quick_ack=False,
    cumulative_ack=True,
    persistent_false=False,
    wildcard_addresses=True,
    temp_queue_named=True,
)

RABBITMQ = Dialect(
    name="rabbitmq",
    native_groups=False,
    queue_prefix="/queue/",
    topic_prefix="/topic/",
    temp_queue_prefix="/temp-queue/",
    routing_type_headers=False,
    group_back_header="JMSXGroupID",
    selectors="topics-only",
    transactional_ack=True,
    release_by_nack=True,
    delivery_delay_header=None,
    priority=False,
    browse=False,
    durable_subscription="rabbitmq",
    shared_subscription="rabbitmq",
    dead_letter_queue="",
    consumer_connection=True,
    persistent_false=False,
    temp_queue_implicit=True,
    relative_ttl_header="expiration",
    percent_names=True,
    quick_ack=False,
    commit_before_stored=True,
)

GENERIC = Dialect(
    name="stomp",
    native_groups=False,
    queue_prefix="/queue/",
    topic_prefix="/topic/",
    temp_queue_prefix=None,
    routing_type_headers=False,
    group_back_header=None,
    selectors="topics-only",
    transactional_ack=True,
    release_by_nack=True,
    delivery_delay_header=None,
    priority=False,
    browse=False,
    durable_subscription="none",
    dead_letter_queue="",
)


def dialect_for(server: str) -> Dialect:
    """The dialect for a CONNECTED frame's ``server`` header (e.g. ``ActiveMQ/5.17.2``)."""
    lowered = server.lower()
    if "artemis" in lowered:
        return ARTEMIS
    if lowered.startswith("activemq"):
        return ACTIVEMQ
    if lowered.startswith("rabbitmq"):
        return RABBITMQ
    return GENERIC


def _broker_selector(dialect: Dialect, selector: str | None) -> str | None:
    """The selector as the broker reads it, written from the parsed tree (None: none).
    Artemis applies STOMP selectors (and its management API's browse filters)
    untranslated, in its Core syntax; ``convert_string_expressions:`` has it compare
    STOMP's string-valued headers with numbers as the numbers they spell."""
    parsed = parse_selector(selector)
    if parsed is None:
        return None
    # Fields the broker holds its own value of (or none), jmslike's messages carrying the
    # sender's in a header of their own: `JMSPriority > 5` read the broker's 4 and
    # selected nothing, `JMSMessageID = 'ID:...'` the broker's message-id, and the group
    # sequence travels in jmslike's header (ORD-4). A test of one reads jmslike's header
    # where a message has it, else the broker's field.
    carried = {"JMSMessageID": ID_HEADER, "JMSXGroupSeq": dialect.group_seq_header}
    if not dialect.priority:
        carried["JMSPriority"] = PRIORITY_HEADER
    if not dialect.keeps_timestamp:
        carried["JMSTimestamp"] = TIMESTAMP_HEADER
    if dialect.selectors != "core":
        if dialect.name == "activemq" and (name := parsed.property_arithmetic(carried)):
            # Classic computes only with numbers, and a STOMP property is a string there:
            # `n + 1 > 2` threw on the broker for every message ("Cannot call plus
            # operation on: 2 and: 1"), and the consumer got nothing from then on.
            raise InvalidSelectorError(
                f"invalid selector {selector!r}: ActiveMQ Classic over STOMP holds {name!r} "
                "as a string and cannot do arithmetic with it; compare it as it is "
                "(n > 1), or use AMQP, which carries its type",
                selector or "",
            )
        return parsed.render(replace(CLASSIC_STOMP_SELECTORS, carried=carried))
    return "convert_string_expressions:" + parsed.render(
        replace(ARTEMIS_STOMP_SELECTORS, carried=carried)
    )
