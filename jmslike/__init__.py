"""jmslike: the JMS programming model for Python, with ordering groups.

Start with ``ConnectionFactory("embedded://")`` (an in-process broker, no server) and
read docs/ordering.md for the ordering-group rules (ORD-1..ORD-20). This module only
re-exports the public names; ``__all__`` is pinned by a test.
"""

from jmslike.completion import CompletionListener
from jmslike.config import FactorySettings
from jmslike.connection import Connection, ConnectionFactory
from jmslike.consumer import MessageConsumer, QueueBrowser
from jmslike.container import MessageListenerContainer
from jmslike.context import JMSContext
from jmslike.declare import QueueDeclaration
from jmslike.destination import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.errors import (
    AcknowledgeInDoubtError,
    ConfigurationError,
    ConnectionFailedError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidClientIDError,
    InvalidDestinationError,
    InvalidOrderingGroupError,
    InvalidSelectorError,
    JMSException,
    JMSSecurityError,
    ListenerError,
    MessageEOFError,
    MessageFormatError,
    MessageNotReadableError,
    MessageNotWriteableError,
    OrderingError,
    SendInDoubtError,
    TransactionInDoubtError,
    TransactionInProgressError,
    TransactionRolledBackError,
)
from jmslike.jms_consumer import JMSConsumer
from jmslike.jms_producer import JMSProducer
from jmslike.message import BytesMessage, DeliveryMode, MapMessage, Message, TextMessage
from jmslike.producer import MessageProducer
from jmslike.requestor import QueueRequestor, TopicRequestor
from jmslike.session import Session
from jmslike.spi.provider import Capabilities, OrderingMode

__version__ = "0.1.0"

__all__ = [
    "AcknowledgeInDoubtError",
    "BytesMessage",
    "Capabilities",
    "CompletionListener",
    "ConfigurationError",
    "Connection",
    "ConnectionFactory",
    "ConnectionFailedError",
    "DeliveryMode",
    "Destination",
    "FactorySettings",
    "IllegalStateError",
    "InvalidArgumentError",
    "InvalidClientIDError",
    "InvalidDestinationError",
    "InvalidOrderingGroupError",
    "InvalidSelectorError",
    "JMSConsumer",
    "JMSContext",
    "JMSException",
    "JMSProducer",
    "JMSSecurityError",
    "ListenerError",
    "MapMessage",
    "Message",
    "MessageConsumer",
    "MessageEOFError",
    "MessageFormatError",
    "MessageListenerContainer",
    "MessageNotReadableError",
    "MessageNotWriteableError",
    "MessageProducer",
    "OrderingError",
    "OrderingMode",
    "Queue",
    "QueueBrowser",
    "QueueDeclaration",
    "QueueRequestor",
    "SendInDoubtError",
    "Session",
    "TemporaryQueue",
    "TemporaryTopic",
    "TextMessage",
    "Topic",
    "TopicRequestor",
    "TransactionInDoubtError",
    "TransactionInProgressError",
    "TransactionRolledBackError",
    "__version__",
]
