"""Java's camelCase JMS names on jmslike's own classes, for code ported line by line.

``import jmslike.compat`` and ``connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)``,
``producer.setTimeToLive(60000)``, ``consumer.receive(5000)`` and
``producer.enableOrderingGroup("joe")`` work as in Java. Nothing changes until this module
is imported: the import is the opt-in.

How it is built, and why:

* **One table.** :data:`JAVA_NAMES` maps, per jmslike class, each Java name to the Python
  attribute it stands for and a :class:`Kind` that says how (a plain alias, a getter or
  setter of an attribute, a milliseconds conversion, one of Java's overloads...).
  :func:`install` turns each entry into a small generated function when this module is
  imported. There is no hand-written method per Java name, so the table is the whole
  mapping, and tests/unit/test_compat.py checks it against live objects in both
  directions: every entry resolves, and every public jmslike name has an entry or a
  reason in :data:`NOT_PORTED`.
* **On the real classes, not on subclasses.** Most objects a program touches are made
  inside jmslike: the session that a connection creates, the message a consumer
  receives, the messages a browser lists. Subclasses exported from here would never
  reach them unless jmslike's factories were all re-implemented. So the names go onto
  ``jmslike.Session``, ``jmslike.Message`` and the rest, and every object has them once
  the module is imported. jmslike itself never calls a camelCase name, so the snake_case
  API behaves exactly as before, in the same process.
* **Java views, for the two names that clash.** ``MessageConsumer.receive`` and
  ``MessageProducer.send`` are Java names and jmslike names too, with other units:
  Java's ``receive(5000)`` waits 5 s and ``receive(0)`` waits for ever, where jmslike's
  ``receive(0)`` returns at once. Java's ``send(msg, mode, priority, 60000)`` lives a
  minute, and Java's ``send`` can take the destination first. Changing them on the real
  classes would change every jmslike program in the process. Instead, camelCase factory
  calls (``createConsumer``, ``createProducer``, ``createDurableSubscriber``...) return
  a *Java view*: a transparent proxy (``wrapt.ObjectProxy``, so ``isinstance`` still
  holds and every other attribute is the real object's) whose ``receive`` and ``send``
  take Java's arguments. :func:`as_java` makes a view of an object obtained through the
  snake_case API. jmslike's internals keep calling the real object (its
  ``receive_no_wait`` calls ``receive(0.0)`` and must keep meaning "now"), so only code
  that holds the view sees Java semantics. On a view, jmslike's keywords keep their
  meaning: ``receive(timeout=2.0)`` is two seconds.
* **Milliseconds.** Java durations and timeouts are milliseconds
  (``setTimeToLive``, ``setDeliveryDelay``, ``receive``, ``send``'s time to live);
  jmslike's are float seconds. The converting kinds divide by 1000 on the way in and
  multiply on the way out (``getTimeToLive()`` is an int, like Java's long). Header
  values (``getJMSTimestamp``, ``getJMSExpiration``) are epoch milliseconds already.
* **Static typing.** Names added at run time are invisible to type checkers. Ported code
  is rarely type-checked. Code that is should use the snake_case API, which is typed.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import wrapt

from jmslike.connection import Connection, ConnectionFactory
from jmslike.consumer import MessageConsumer, QueueBrowser
from jmslike.container import MessageListenerContainer
from jmslike.context import JMSContext
from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.errors import (
    IllegalStateError,
    InvalidArgumentError,
    InvalidClientIDError,
    InvalidDestinationError,
    InvalidSelectorError,
    JMSException,
    JMSSecurityError,
    MessageFormatError,
    MessageNotWriteableError,
    TransactionInProgressError,
    TransactionRolledBackError,
)
from jmslike.jms_consumer import JMSConsumer
from jmslike.jms_producer import JMSProducer
from jmslike.message import BytesMessage, DeliveryMode, MapMessage, Message, TextMessage
from jmslike.producer import MessageProducer
from jmslike.requestor import QueueRequestor, TopicRequestor
from jmslike.session import Session

__all__ = [
    "JAVA_NAMES",
    "NOT_PORTED",
    "BytesMessage",
    "Connection",
    "ConnectionFactory",
    "DeliveryMode",
    "Enumeration",
    "IllegalStateRuntimeException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorRuntimeException",
    "JMSConsumer",
    "JMSContext",
    "JMSException",
    "JMSProducer",
    "JMSRuntimeException",
    "JMSSecurityRuntimeException",
    "JavaCompletionListener",
    "Kind",
    "MapMessage",
    "Message",
    "MessageConsumer",
    "MessageFormatRuntimeException",
    "MessageListenerContainer",
    "MessageNotWriteableRuntimeException",
    "MessageProducer",
    "Queue",
    "QueueBrowser",
    "Session",
    "TemporaryQueue",
    "TemporaryTopic",
    "TextMessage",
    "Topic",
    "TransactionInProgressRuntimeException",
    "TransactionRolledBackRuntimeException",
    "as_java",
    "install",
]

_T = TypeVar("_T")

# JMS 2.0's unchecked exceptions: Python has no checked ones, so each is the jmslike error
# its checked twin maps to, and ``except MessageFormatRuntimeException`` ports unchanged.
JMSRuntimeException = JMSException
IllegalStateRuntimeException = IllegalStateError
InvalidClientIDRuntimeException = InvalidClientIDError
InvalidDestinationRuntimeException = InvalidDestinationError
InvalidSelectorRuntimeException = InvalidSelectorError
JMSSecurityRuntimeException = JMSSecurityError
MessageFormatRuntimeException = MessageFormatError
MessageNotWriteableRuntimeException = MessageNotWriteableError
TransactionInProgressRuntimeException = TransactionInProgressError
TransactionRolledBackRuntimeException = TransactionRolledBackError


class Kind(enum.Enum):
    """How a Java name maps onto its Python attribute; each kind has one generator."""

    METHOD = "calls"
    """Same arguments, same result (a consumer or producer comes back as a Java view)."""
    GET = "returns"
    """``getX()`` of an attribute or property."""
    SET = "assigns"
    """``setX(value)`` of an attribute or property."""
    GET_MS = "returns in milliseconds"
    """Getter of a seconds attribute, as Java's long milliseconds."""
    SET_MS = "assigns from milliseconds"
    """Setter of a seconds attribute, from Java milliseconds."""
    RECEIVE_MS = "receives, waiting milliseconds, with"
    """``receive()``/``receive(0)`` wait for ever; ``receive(ms)`` waits ms/1000 s."""
    SEND = "sends (Java overloads, time to live in ms) with"
    """``send([destination,] message[, deliveryMode, priority, timeToLive][,
    completionListener])``."""
    SESSION = "creates a session (Java overloads) with"
    """``createSession()``, ``createSession(sessionMode)``, ``createSession(tx, ack)``."""
    COMPLETION = "sets a Java CompletionListener (onCompletion/onException) through"
    """``setAsync(listener)``: a Java-style listener object, or None."""
    LISTENER = "sets a callable or an object with an on... method through"
    """A callable, or a Java-style listener object (``onMessage``/``onException``)."""
    ENUMERATION = "returns as a java.util.Enumeration the list of"
    """The list result, with ``hasMoreElements()``/``nextElement()`` too."""
    BODY = "returns, checking the Java class given,"
    """``getBody(cls)``: the body, MessageFormatError unless it is a ``cls``."""
    MAP_GET = "returns converted to the type in its name the result of"
    """Typed MapMessage getter; the JMS type is the name's tail (getInt: int)."""
    MAP_SET = "checks the type in its name, then calls"
    """Typed MapMessage setter; the JMS type is the name's tail (setInt: int)."""
    READ_BYTES = "copies out from the read position"
    """``readBytes()`` is the body; ``readBytes(buffer)`` fills ``buffer``."""
    WRITE_BYTES = "appends to"
    """``writeBytes(value[, offset, length])`` appends to the body."""
    CONTEXT = "creates a context (Java overloads) with"
    """``createContext()``, ``createContext(sessionMode)``, ``createContext(user, password[,
    sessionMode])``."""
    CALL_MS = "calls, with Java milliseconds as seconds,"
    """A JMS 2.0 fluent setter of a duration: ``setTimeToLive(ms)`` returns the producer."""
    RESULT_MS = "returns in milliseconds the seconds of"
    """A JMS 2.0 getter of a duration: ``getTimeToLive()`` as Java's long milliseconds."""
    RECEIVE_BODY_MS = "receives a body, waiting milliseconds, with"
    """``receiveBody(cls)``/``receiveBody(cls, 0)`` wait for ever; ``(cls, ms)`` ms/1000 s."""


K = Kind
_PROPERTY_TYPES = ("Boolean", "Byte", "Short", "Int", "Long", "Float", "Double", "String", "Object")
_STREAM_TYPES = {
    "Boolean": "boolean",
    "Byte": "byte",
    "Short": "short",
    "Char": "char",
    "Int": "int",
    "Long": "long",
    "Float": "float",
    "Double": "double",
    "UTF": "utf",
}
"""BytesMessage's typed reads and writes: Java's suffix -> jmslike's (``readInt``: ``read_int``)."""
_MAP_TYPES = ("Boolean", "Byte", "Short", "Int", "Long", "Float", "Double", "String", "Bytes")
_HEADERS = {
    "MessageID": "jms_message_id",
    "Timestamp": "jms_timestamp",
    "CorrelationID": "jms_correlation_id",
    "ReplyTo": "jms_reply_to",
    "Destination": "jms_destination",
    "DeliveryMode": "jms_delivery_mode",
    "Redelivered": "jms_redelivered",
    "Type": "jms_type",
    "Expiration": "jms_expiration",
    "Priority": "jms_priority",
    "DeliveryTime": "jms_delivery_time",
}

_SESSION_FACTORIES: dict[str, tuple[str, Kind]] = {
    # What a Session and a JMSContext (JMS 2.0) both make and do, under the same names.
    "createProducer": ("create_producer", K.METHOD),
    "createConsumer": ("create_consumer", K.METHOD),
    "createDurableConsumer": ("create_durable_consumer", K.METHOD),
    "createSharedConsumer": ("create_shared_consumer", K.METHOD),
    "createSharedDurableConsumer": ("create_shared_durable_consumer", K.METHOD),
    "createBrowser": ("create_browser", K.METHOD),
    "createQueue": ("create_queue", K.METHOD),
    "createTopic": ("create_topic", K.METHOD),
    "createTemporaryQueue": ("create_temporary_queue", K.METHOD),
    "createTemporaryTopic": ("create_temporary_topic", K.METHOD),
    "createMessage": ("create_message", K.METHOD),
    "createTextMessage": ("create_text_message", K.METHOD),
    "createBytesMessage": ("create_bytes_message", K.METHOD),
    "createMapMessage": ("create_map_message", K.METHOD),
    "unsubscribe": ("unsubscribe", K.METHOD),
    "commit": ("commit", K.METHOD),
    "rollback": ("rollback", K.METHOD),
    "recover": ("recover", K.METHOD),
}

JAVA_NAMES: dict[type, dict[str, tuple[str, Kind]]] = {
    ConnectionFactory: {
        "createConnection": ("create_connection", K.METHOD),
        "createContext": ("create_context", K.CONTEXT),
    },
    Connection: {
        "createSession": ("create_session", K.SESSION),
        "start": ("start", K.METHOD),
        "stop": ("stop", K.METHOD),
        "close": ("close", K.METHOD),
        "setClientID": ("set_client_id", K.METHOD),
        "getClientID": ("get_client_id", K.METHOD),
        "setExceptionListener": ("set_exception_listener", K.LISTENER),
        "getExceptionListener": ("get_exception_listener", K.METHOD),
    },
    Session: {
        **_SESSION_FACTORIES,
        "createDurableSubscriber": ("create_durable_subscriber", K.METHOD),
        "acknowledge": ("acknowledge", K.METHOD),  # JMSContext.acknowledge()
        "close": ("close", K.METHOD),
        "getTransacted": ("transacted", K.GET),
        "getAcknowledgeMode": ("acknowledge_mode", K.GET),
    },
    MessageProducer: {
        "send": ("send", K.SEND),  # a Java view's send: time to live in milliseconds
        "setDeliveryMode": ("delivery_mode", K.SET),
        "getDeliveryMode": ("delivery_mode", K.GET),
        "setPriority": ("priority", K.SET),
        "getPriority": ("priority", K.GET),
        "setTimeToLive": ("time_to_live", K.SET_MS),
        "getTimeToLive": ("time_to_live", K.GET_MS),
        "setDeliveryDelay": ("delivery_delay", K.SET_MS),
        "getDeliveryDelay": ("delivery_delay", K.GET_MS),
        "setDisableMessageID": ("disable_message_id", K.SET),
        "getDisableMessageID": ("disable_message_id", K.GET),
        "setDisableMessageTimestamp": ("disable_message_timestamp", K.SET),
        "getDisableMessageTimestamp": ("disable_message_timestamp", K.GET),
        "getDestination": ("destination", K.GET),
        "enableOrderingGroup": ("enable_ordering_group", K.METHOD),  # JBossMessageProducer
        "disableOrderingGroup": ("disable_ordering_group", K.METHOD),
        "getOrderingGroup": ("ordering_group", K.GET),
        "setUnitOfOrder": ("set_unit_of_order", K.METHOD),  # WLMessageProducer
        "getUnitOfOrder": ("unit_of_order", K.GET),
        "close": ("close", K.METHOD),
    },
    MessageConsumer: {
        "receive": ("receive", K.RECEIVE_MS),  # a Java view's receive: milliseconds
        "receiveNoWait": ("receive_no_wait", K.METHOD),
        "setMessageListener": ("set_message_listener", K.LISTENER),
        "getMessageListener": ("get_message_listener", K.METHOD),
        "getMessageSelector": ("message_selector", K.GET),
        "getQueue": ("destination", K.GET),  # QueueReceiver (JMS 1.1)
        "getTopic": ("destination", K.GET),  # TopicSubscriber (JMS 1.1)
        "getNoLocal": ("no_local", K.GET),  # TopicSubscriber (JMS 1.1)
        "close": ("close", K.METHOD),
    },
    QueueRequestor: {
        "request": ("request", K.METHOD),  # Java's waits for ever, as request(message) does
        "close": ("close", K.METHOD),
    },
    TopicRequestor: {
        "request": ("request", K.METHOD),
        "close": ("close", K.METHOD),
    },
    QueueBrowser: {
        "getEnumeration": ("get_enumeration", K.ENUMERATION),
        "getQueue": ("queue", K.GET),
        "getMessageSelector": ("message_selector", K.GET),
        "close": ("close", K.METHOD),
    },
    Message: {
        **{f"get{t}Property": (f"get_{t.lower()}_property", K.METHOD) for t in _PROPERTY_TYPES},
        **{f"set{t}Property": (f"set_{t.lower()}_property", K.METHOD) for t in _PROPERTY_TYPES},
        "getPropertyNames": ("property_names", K.ENUMERATION),
        "propertyExists": ("property_exists", K.METHOD),
        "clearProperties": ("clear_properties", K.METHOD),
        "clearBody": ("clear_body", K.METHOD),
        "getBody": ("body", K.BODY),
        "acknowledge": ("acknowledge", K.METHOD),
        **{f"getJMS{header}": (attr, K.GET) for header, attr in _HEADERS.items()},
        **{f"setJMS{header}": (attr, K.SET) for header, attr in _HEADERS.items()},
    },
    TextMessage: {
        "getText": ("text", K.GET),
        "setText": ("text", K.SET),
    },
    BytesMessage: {
        "getBodyLength": ("body_length", K.GET),
        "readBytes": ("read_bytes", K.READ_BYTES),
        "writeBytes": ("write_bytes", K.WRITE_BYTES),
        "reset": ("reset", K.METHOD),
        **{f"read{t}": (f"read_{n}", K.METHOD) for t, n in _STREAM_TYPES.items()},
        **{f"write{t}": (f"write_{n}", K.METHOD) for t, n in _STREAM_TYPES.items()},
        "readUnsignedByte": ("read_unsigned_byte", K.METHOD),
        "readUnsignedShort": ("read_unsigned_short", K.METHOD),
        "writeObject": ("write_object", K.METHOD),
    },
    MapMessage: {
        "getObject": ("get_object", K.METHOD),
        "setObject": ("set_object", K.METHOD),
        **{f"get{t}": ("get_object", K.MAP_GET) for t in _MAP_TYPES},
        **{f"set{t}": ("set_object", K.MAP_SET) for t in _MAP_TYPES},
        "getMapNames": ("map_names", K.ENUMERATION),
        "itemExists": ("item_exists", K.METHOD),
    },
    Queue: {
        "getQueueName": ("queue_name", K.GET),
    },
    Topic: {
        "getTopicName": ("topic_name", K.GET),
    },
    MessageListenerContainer: {  # Spring's DefaultMessageListenerContainer names
        "start": ("start", K.METHOD),
        # Spring's stop() pauses; jmslike's stop() drains and closes, like shutdown().
        "stop": ("stop", K.METHOD),
        "shutdown": ("stop", K.METHOD),
        "isRunning": ("running", K.GET),
        "getDestination": ("destination", K.GET),
        "getConcurrentConsumers": ("concurrency", K.GET),
        "getSessionAcknowledgeMode": ("acknowledge_mode", K.GET),
    },
    JMSContext: {  # JMS 2.0
        **_SESSION_FACTORIES,
        "createContext": ("create_context", K.METHOD),
        "acknowledge": ("acknowledge", K.METHOD),
        "start": ("start", K.METHOD),
        "stop": ("stop", K.METHOD),
        "close": ("close", K.METHOD),
        "getClientID": ("get_client_id", K.METHOD),
        "setClientID": ("set_client_id", K.METHOD),
        "getExceptionListener": ("get_exception_listener", K.METHOD),
        "setExceptionListener": ("set_exception_listener", K.LISTENER),
        "getAutoStart": ("get_autostart", K.METHOD),
        "setAutoStart": ("set_autostart", K.METHOD),
        "getSessionMode": ("get_session_mode", K.METHOD),
        "getTransacted": ("get_transacted", K.METHOD),
    },
    JMSProducer: {  # JMS 2.0; every setter returns the producer, as in Java
        "send": ("send", K.METHOD),
        "setDeliveryMode": ("set_delivery_mode", K.METHOD),
        "getDeliveryMode": ("get_delivery_mode", K.METHOD),
        "setPriority": ("set_priority", K.METHOD),
        "getPriority": ("get_priority", K.METHOD),
        "setTimeToLive": ("set_time_to_live", K.CALL_MS),
        "getTimeToLive": ("get_time_to_live", K.RESULT_MS),
        "setDeliveryDelay": ("set_delivery_delay", K.CALL_MS),
        "getDeliveryDelay": ("get_delivery_delay", K.RESULT_MS),
        "setDisableMessageID": ("set_disable_message_id", K.METHOD),
        "getDisableMessageID": ("get_disable_message_id", K.METHOD),
        "setDisableMessageTimestamp": ("set_disable_message_timestamp", K.METHOD),
        "getDisableMessageTimestamp": ("get_disable_message_timestamp", K.METHOD),
        "setProperty": ("set_property", K.METHOD),
        "getObjectProperty": ("get_property", K.METHOD),
        "propertyExists": ("property_exists", K.METHOD),
        "getPropertyNames": ("get_property_names", K.METHOD),
        "clearProperties": ("clear_properties", K.METHOD),
        "setJMSCorrelationID": ("set_jms_correlation_id", K.METHOD),
        "getJMSCorrelationID": ("get_jms_correlation_id", K.METHOD),
        "setJMSType": ("set_jms_type", K.METHOD),
        "getJMSType": ("get_jms_type", K.METHOD),
        "setJMSReplyTo": ("set_jms_reply_to", K.METHOD),
        "getJMSReplyTo": ("get_jms_reply_to", K.METHOD),
        "setAsync": ("set_async", K.COMPLETION),
        "getAsync": ("get_async", K.METHOD),
        "setOrderingGroup": ("set_ordering_group", K.METHOD),  # jmslike's (ORD-5)
        "getOrderingGroup": ("get_ordering_group", K.METHOD),
    },
    JMSConsumer: {  # JMS 2.0
        "receive": ("receive", K.RECEIVE_MS),  # a Java view's receive: milliseconds
        "receiveNoWait": ("receive_no_wait", K.METHOD),
        "receiveBody": ("receive_body", K.RECEIVE_BODY_MS),
        "receiveBodyNoWait": ("receive_body_no_wait", K.METHOD),
        "setMessageListener": ("set_message_listener", K.LISTENER),
        "getMessageListener": ("get_message_listener", K.METHOD),
        "getMessageSelector": ("get_message_selector", K.METHOD),
        "close": ("close", K.METHOD),
    },
    JMSException: {
        "getErrorCode": ("error_code", K.GET),
        "getLinkedException": ("__cause__", K.GET),
    },
}
"""Java name -> (Python attribute, kind), per jmslike class; subclasses inherit entries."""

_ATTRIBUTE_SPELLING = "Python attribute over get_x / set_x, which are ported"

NOT_PORTED: dict[type, dict[str, str]] = {
    ConnectionFactory: {
        "url": "jmslike's parsed broker URL; a Java factory's URL is vendor configuration",
        "settings": "jmslike's factory settings; Java sets them through vendor setters or JNDI",
        "interceptors": "jmslike middleware; JMS has no interceptors",
        "from_config": "stands in for a JNDI lookup; a class method, not a JMS call",
    },
    Connection: {
        "client_id": "property twin of get_client_id/set_client_id (getClientID/setClientID)",
        "exception_listener": "property twin of get/set_exception_listener",
        "capabilities": "jmslike's own (what the broker does natively); unlike getMetaData",
        "url": "jmslike's own (the broker URL, password hidden in str); JMS has none",
        "closed": "jmslike's own; JMS has no isClosed",
        "started": "jmslike's own; JMS has no isStarted",
        "delete_temporary": "TemporaryQueue.delete() in Java; jmslike's temporary "
        "destinations are values that do not know their connection",
        "declare_queue": "jmslike's own (queues made at deploy time); JMS leaves that to "
        "the broker's tools",
    },
    Session: {
        "closed": "jmslike's own; JMS has no isClosed",
        "run_in_dispatcher": "jmslike's own; no JMS counterpart",
    },
    MessageProducer: {
        "closed": "jmslike's own; JMS has no isClosed",
    },
    MessageConsumer: {
        "message_listener": "property twin of get/set_message_listener",
        "closed": "jmslike's own; JMS has no isClosed",
        "strictly_ordered": "jmslike's own (ORD-18); no JMS counterpart",
        "partitions": "jmslike's own (partitioned queues, ORD-16); no JMS counterpart",
        "request_size": "jmslike's own (credit that follows consumption); no JMS counterpart",
        "request_limit": "jmslike's own (max_prefetch); no JMS counterpart",
        "subscription_name": "jmslike's own; JMS consumers do not expose it",
    },
    Message: {
        "properties": "Python dict view; Java code uses getPropertyNames and the getters",
        "set_properties": "Python convenience; no JMS counterpart",
        "property_type": "jmslike's own; no JMS counterpart",
        "ordering_group": "jmslike's own; in Java getStringProperty('JMSXGroupID')",
        "group_sequence": "jmslike's own; in Java getIntProperty('JMSXGroupSeq')",
        "delivery_count": "jmslike's own; in Java getIntProperty('JMSXDeliveryCount')",
        "type_name": "jmslike's wire name of the body type; no JMS counterpart",
    },
    Destination: {
        "name": "Java spells it getQueueName/getTopicName (Queue, Topic)",
        "key": "jmslike's 'queue://name' form; no JMS counterpart",
        "kind": "jmslike's own; Java tests instanceof Queue/Topic",
        "is_topic": "jmslike's own; Java tests instanceof Topic",
        "is_temporary": "jmslike's own; Java tests instanceof TemporaryQueue/TemporaryTopic",
    },
    TemporaryQueue: {"owner": "jmslike's own: the connection that created it"},
    TemporaryTopic: {"owner": "jmslike's own: the connection that created it"},
    MessageListenerContainer: {
        "close": "stop() (ported as stop and shutdown) under the JMS objects' name",
        "connection": "jmslike's own; Spring containers do not expose their connection",
        "processed": "jmslike's own counter",
        "failed": "jmslike's own counter",
        "strictly_ordered": "jmslike's own (ORD-18)",
        "run": "jmslike's own: a worker's main loop until SIGTERM; in Java the application "
        "server or Spring's context stops the container on shutdown",
    },
    JMSContext: {
        "closed": "jmslike's own; JMS has no isClosed",
        **dict.fromkeys(
            ("autostart", "client_id", "exception_listener", "session_mode", "transacted"),
            _ATTRIBUTE_SPELLING,
        ),
    },
    JMSProducer: dict.fromkeys(
        (
            "delivery_delay",
            "delivery_mode",
            "disable_message_id",
            "disable_message_timestamp",
            "jms_correlation_id",
            "jms_reply_to",
            "jms_type",
            "ordering_group",
            "priority",
            "time_to_live",
        ),
        _ATTRIBUTE_SPELLING,
    ),
    JMSConsumer: {
        "closed": "jmslike's own; JMS has no isClosed",
        **dict.fromkeys(("message_listener", "message_selector"), _ATTRIBUTE_SPELLING),
    },
    InvalidSelectorError: {
        "selector": "jmslike's own detail; Java puts it in the message",
        "position": "jmslike's own detail; Java puts it in the message",
    },
}
"""Public jmslike names with no Java counterpart, per class, each with the reason."""


# ------------------------------------------------------------------ Java views
class _JavaView(wrapt.ObjectProxy[Any]):
    """A consumer or producer as Java code expects it; everything else is the real object's.

    Only names whose Java meaning differs from jmslike's (``receive``, ``send``) are
    defined on a view class; the rest reach the wrapped object untouched.
    """

    def __enter__(self) -> Any:
        """``with`` gives the view, not the wrapped object, so the block keeps Java units."""
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self.__wrapped__.__exit__(*exc)

    def __repr__(self) -> str:
        return f"<Java view of {self.__wrapped__!r}>"


_VIEWS: dict[type, type[_JavaView]] = {}
"""jmslike class -> its Java view class (only classes with clashing names have one)."""


def as_java(obj: _T) -> _T:
    """``obj`` with Java's meaning for the names that clash (receive, send), if it has any.

    A consumer or producer made with ``create_consumer``/``create_producer`` takes seconds
    in ``receive``/``send``; ``as_java(consumer).receive(5000)`` waits 5 s as in Java.
    Other objects, and views already, come back unchanged.
    """
    if isinstance(obj, _JavaView):
        return obj
    for cls in type(obj).__mro__:
        view = _VIEWS.get(cls)
        if view is not None:
            return view(obj)  # type: ignore[return-value]  # a proxy passes for _T
    return obj


def _real(obj: Any) -> Any:
    """The jmslike object behind a Java view (or the object itself)."""
    return obj.__wrapped__ if isinstance(obj, _JavaView) else obj


class Enumeration(list[_T]):
    """A list that is also a ``java.util.Enumeration``, for getEnumeration and friends.

    Java loops (``while (e.hasMoreElements()) e.nextElement()``) port unchanged, and the
    result is still the list jmslike returns (iterate it, index it, ``len`` it).
    """

    def __init__(self, items: Iterable[_T] = ()) -> None:
        super().__init__(items)
        self._next = 0

    def hasMoreElements(self) -> bool:  # noqa: N802 - Java's name
        return self._next < len(self)

    def nextElement(self) -> _T:  # noqa: N802 - Java's name
        if self._next >= len(self):
            raise IllegalStateError("nextElement(): no more elements (NoSuchElementException)")
        self._next += 1
        return self[self._next - 1]


# ------------------------------------------------------------------ conversions
def _seconds(java: str, millis: object) -> float:
    """Java milliseconds as jmslike seconds; a bad value names the Java call."""
    if (
        isinstance(millis, bool)
        or not isinstance(millis, int | float)
        or not math.isfinite(millis)
        or millis < 0
    ):
        raise InvalidArgumentError(f"{java}({millis!r}): need milliseconds >= 0")
    return millis / 1000


_BITS = {"byte": 8, "short": 16, "int": 32, "long": 64}


def _fits(value: object, jms_type: str) -> bool:
    """Whether ``value`` is an int within the JMS integral type's range."""
    bits = _BITS[jms_type]
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
    )


def _check_map_value(java: str, name: str, value: object, jms_type: str) -> object:
    """What ``setInt(name, v)`` and friends store, after Java's static type check."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if jms_type in _BITS and _fits(value, jms_type):
        return value
    if jms_type in ("float", "double") and number:
        return float(value)  # type: ignore[arg-type]
    if jms_type == "bytes" and isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if (jms_type == "string" and isinstance(value, str)) or (
        jms_type == "boolean" and isinstance(value, bool)
    ):
        return value
    raise MessageFormatError(f"{java}({name!r}, {value!r:.60}): not a JMS {jms_type}")


def _read_map_value(java: str, name: str, value: object, jms_type: str) -> object:
    """A map entry read as ``jms_type``, by the JMS conversion table (None if absent)."""
    if value is None:
        return None
    if jms_type == "string" and not isinstance(value, bytes):
        return ("true" if value else "false") if isinstance(value, bool) else str(value)
    if jms_type == "bytes" and isinstance(value, bytes):
        return value
    if jms_type == "boolean" and isinstance(value, bool | str):
        return value if isinstance(value, bool) else value.lower() == "true"
    if isinstance(value, str) and jms_type in _BITS:
        try:
            value = int(value.strip())
        except ValueError:
            raise MessageFormatError(f"{java}({name!r}): {value!r} is not a number") from None
    elif isinstance(value, str) and jms_type in ("float", "double"):
        try:
            return float(value.strip())
        except ValueError:
            raise MessageFormatError(f"{java}({name!r}): {value!r} is not a number") from None
    if jms_type in _BITS and _fits(value, jms_type):
        return value
    if jms_type in ("float", "double") and isinstance(value, float):
        return value
    raise MessageFormatError(f"{java}({name!r}): {value!r:.60} cannot be read as {jms_type}")


# ------------------------------------------------------------------ generators
Generated = Callable[..., Any]


def _method(java: str, attr: str) -> Generated:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return as_java(getattr(_real(self), attr)(*args, **kwargs))

    return call


def _get(java: str, attr: str) -> Generated:
    def get(self: Any) -> Any:
        return getattr(_real(self), attr)

    return get


def _set(java: str, attr: str) -> Generated:
    def set_(self: Any, value: Any) -> None:
        setattr(_real(self), attr, value)

    return set_


def _get_ms(java: str, attr: str) -> Generated:
    def get(self: Any) -> int:
        return round(float(getattr(_real(self), attr)) * 1000)

    return get


def _set_ms(java: str, attr: str) -> Generated:
    def set_(self: Any, millis: float) -> None:
        setattr(_real(self), attr, _seconds(java, millis))

    return set_


def _receive_ms(java: str, attr: str) -> Generated:
    def receive(self: Any, millis: float = 0, /, **kwargs: Any) -> Any:
        method = getattr(_real(self), attr)
        if kwargs:  # jmslike's keywords (timeout=seconds) keep their meaning
            if millis:
                raise InvalidArgumentError(f"{java}: give milliseconds or timeout=, not both")
            return method(**kwargs)
        seconds = _seconds(java, millis)
        return method(seconds if seconds else None)  # Java: 0 waits for ever

    return receive


class JavaCompletionListener:
    """A Java-style ``CompletionListener`` (``onCompletion``/``onException``) as jmslike
    calls one (``on_completion``/``on_exception``)."""

    def __init__(self, java: Any) -> None:
        self.java = java

    def __repr__(self) -> str:
        return f"JavaCompletionListener({self.java!r})"

    def on_completion(self, message: Message) -> None:
        self.java.onCompletion(message)

    def on_exception(self, message: Message, exception: JMSException) -> None:
        self.java.onException(message, exception)


def _completion_listener(listener: Any) -> Any:
    """A listener with Java's method names wrapped; anything else as it is (jmslike
    checks it and names what is missing)."""
    if hasattr(listener, "onCompletion") and not hasattr(listener, "on_completion"):
        return JavaCompletionListener(listener)
    return listener


def _completion(java: str, attr: str) -> Generated:
    def set_(self: Any, listener: Any) -> Any:
        if listener is not None:
            listener = _completion_listener(listener)
        return as_java(getattr(_real(self), attr)(listener))

    return set_


def _send(java: str, attr: str) -> Generated:
    def send(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and not isinstance(args[0], Message):  # send(destination, message, ...)
            kwargs = {**kwargs, "destination": args[0]}
            args = args[1:]
        if len(args) in (2, 5) and not isinstance(args[-1], (int, float)):
            # send(..., completionListener): JMS 2.0's asynchronous send
            kwargs = {**kwargs, "completion_listener": _completion_listener(args[-1])}
            args = args[:-1]
        if len(args) == 4:
            message, mode, priority, ttl = args
            args = (message,)
            kwargs = {
                **kwargs,
                "delivery_mode": mode,
                "priority": priority,
                "time_to_live": _seconds(java, ttl),
            }
        elif len(args) != 1:
            raise InvalidArgumentError(
                f"{java}: call send([destination,] message[, deliveryMode, priority, "
                "timeToLive][, completionListener]) with the time to live in milliseconds"
            )
        return getattr(_real(self), attr)(*args, **kwargs)

    return send


def _call_ms(java: str, attr: str) -> Generated:
    def call(self: Any, millis: float) -> Any:
        return as_java(getattr(_real(self), attr)(_seconds(java, millis)))

    return call


def _result_ms(java: str, attr: str) -> Generated:
    def get(self: Any) -> int:
        return round(float(getattr(_real(self), attr)()) * 1000)

    return get


def _receive_body_ms(java: str, attr: str) -> Generated:
    def receive(self: Any, cls: type, millis: float = 0, /) -> Any:
        seconds = _seconds(java, millis)
        return getattr(_real(self), attr)(cls, seconds if seconds else None)  # 0: for ever

    return receive


def _context(java: str, attr: str) -> Generated:
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) >= 2:  # createContext(user, password[, sessionMode])
            kwargs = {**kwargs, "user": args[0], "password": args[1]}
            args = args[2:]
        return getattr(_real(self), attr)(*args, **kwargs)

    return create


def _session(java: str, attr: str) -> Generated:
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
            args = (False, args[0])  # JMS 2.0 createSession(sessionMode)
        return getattr(_real(self), attr)(*args, **kwargs)

    return create


def _listener(java: str, attr: str) -> Generated:
    callback = "on" + java.removeprefix("set").removesuffix("Listener")  # onMessage

    def set_(self: Any, listener: Any) -> Any:
        if listener is not None and not callable(listener):
            listener = getattr(listener, callback, listener)
        return getattr(_real(self), attr)(listener)

    return set_


def _enumeration(java: str, attr: str) -> Generated:
    def listing(self: Any, *args: Any) -> Enumeration[Any]:
        return Enumeration(getattr(_real(self), attr)(*args))

    return listing


def _body(java: str, attr: str) -> Generated:
    def get(self: Any, cls: type | None = None) -> Any:
        body = getattr(_real(self), attr)
        if cls is not None and body is not None and not isinstance(body, cls):
            raise MessageFormatError(f"{java}({cls.__name__}): the body is {type(body).__name__}")
        return body

    return get


def _map_get(java: str, attr: str) -> Generated:
    jms_type = java.removeprefix("get").lower()

    def get(self: Any, name: str) -> Any:
        return _read_map_value(java, name, getattr(_real(self), attr)(name), jms_type)

    return get


def _map_set(java: str, attr: str) -> Generated:
    jms_type = java.removeprefix("set").lower()

    def set_(self: Any, name: str, value: Any) -> None:
        getattr(_real(self), attr)(name, _check_map_value(java, name, value, jms_type))

    return set_


def _read_bytes(java: str, attr: str) -> Generated:
    def read(self: Any, buffer: bytearray | None = None, length: int | None = None) -> Any:
        """Java's ``readBytes(buffer[, length])``: bytes read, -1 at the end of the body.
        Without a buffer (no Java counterpart), the rest of the body as bytes."""
        reader = getattr(_real(self), attr)
        if buffer is None:
            return reader()
        wanted = len(buffer) if length is None else min(length, len(buffer))
        chunk: bytes = reader(wanted)
        if not chunk and wanted:
            return -1
        buffer[: len(chunk)] = chunk
        return len(chunk)

    return read


def _write_bytes(java: str, attr: str) -> Generated:
    def write(self: Any, value: bytes, offset: int = 0, length: int | None = None) -> None:
        end = None if length is None else offset + length
        getattr(_real(self), attr)(bytes(value[offset:end]))

    return write


_GENERATORS: dict[Kind, Callable[[str, str], Generated]] = {
    K.METHOD: _method,
    K.GET: _get,
    K.SET: _set,
    K.GET_MS: _get_ms,
    K.SET_MS: _set_ms,
    K.RECEIVE_MS: _receive_ms,
    K.SEND: _send,
    K.SESSION: _session,
    K.LISTENER: _listener,
    K.COMPLETION: _completion,
    K.ENUMERATION: _enumeration,
    K.BODY: _body,
    K.MAP_GET: _map_get,
    K.MAP_SET: _map_set,
    K.READ_BYTES: _read_bytes,
    K.WRITE_BYTES: _write_bytes,
    K.CONTEXT: _context,
    K.CALL_MS: _call_ms,
    K.RESULT_MS: _result_ms,
    K.RECEIVE_BODY_MS: _receive_body_ms,
}
_CALLS_A_METHOD = frozenset(
    {
        K.METHOD,
        K.RECEIVE_MS,
        K.SEND,
        K.SESSION,
        K.LISTENER,
        K.COMPLETION,
        K.ENUMERATION,
        K.MAP_GET,
        K.MAP_SET,
        K.CONTEXT,
        K.CALL_MS,
        K.RESULT_MS,
        K.RECEIVE_BODY_MS,
    }
)
_MARK = "_jmslike_compat"


def install(table: Mapping[type, Mapping[str, tuple[str, Kind]]] = JAVA_NAMES) -> None:
    """Attach the Java names of ``table`` to its classes (importing this module does it).

    Idempotent. A Java name that is also the Python name with the same meaning (``close``,
    ``commit``) needs nothing; one with another meaning (``receive``, ``send``) goes onto
    the class's Java view. A name the class already has for another purpose is an error
    rather than silently replaced, and so is an entry whose method does not exist: both
    mean jmslike changed under the table.
    """
    for cls, entries in table.items():
        view_names: dict[str, Generated] = {}
        for java, (attr, kind) in entries.items():
            if kind in _CALLS_A_METHOD and not callable(getattr(cls, attr, None)):
                raise TypeError(f"jmslike.compat: {cls.__name__}.{java} -> {attr}: no such method")
            if java == attr and kind is K.METHOD:
                continue
            function = _GENERATORS[kind](java, attr)
            function.__name__ = java
            function.__qualname__ = f"{cls.__name__}.{java}"
            function.__doc__ = f"Java's {cls.__name__}.{java}: {kind.value} ``{attr}``."
            setattr(function, _MARK, (attr, kind))
            if java == attr:
                view_names[java] = function
                continue
            existing = cls.__dict__.get(java)
            if existing is not None and not hasattr(existing, _MARK):
                raise TypeError(f"jmslike.compat: {cls.__name__}.{java} exists already")
            setattr(cls, java, function)
        if view_names:
            _VIEWS[cls] = type(f"Java{cls.__name__}", (_JavaView,), {"__slots__": (), **view_names})


install()
