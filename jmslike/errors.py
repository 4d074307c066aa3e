"""The one error hierarchy of jmslike.

Every error jmslike raises is a :class:`JMSException`, so ``except jmslike.JMSException``
catches all of them. Errors from a broker client library (stomp.py, Proton, sqlite3,
sockets) are wrapped at the provider boundary by :func:`map_provider_errors` and keep the
original on ``__cause__``; nothing below the API leaks a foreign exception type.

The tree::

    JMSException                      (error_code, the Java JMSException's errorCode)
    +-- IllegalStateError             call on a closed object, or at the wrong time
    |   +-- TransactionInProgressError  commit/rollback/recover that does not fit the
    |                                   session mode (IllegalStateException in JMS)
    +-- InvalidArgumentError          an argument JMS does not allow (also a ValueError)
    |   +-- ConfigurationError        a URL, setting or config file that cannot be used
    +-- InvalidDestinationError       no destination, or one the broker rejects
    +-- InvalidSelectorError          selector syntax error (position attribute)
    +-- InvalidClientIDError          client id taken or set too late
    +-- MessageFormatError            property name/value or body JMS does not allow
    |   +-- MessageNotWriteableError  changing a received message
    |   +-- MessageNotReadableError   (reserved for stream messages)
    |   +-- MessageEOFError           a typed read past the end of a BytesMessage body
    +-- JMSSecurityError              credentials refused
    +-- TransactionRolledBackError    commit could not complete, so it rolled back
    +-- TransactionInDoubtError       commit sent, connection lost before the answer
    +-- InvalidOrderingGroupError     a group name that breaks ORD-1
    +-- OrderingError                 a send that would break group order (ORD-19)
    +-- ConnectionFailedError         broker unreachable, or the link to it broke
    +-- ListenerError                 a message listener raised (given to the exception
                                      listener; the original is ``__cause__``)

Names follow the JMS 2.0 exceptions with ``Exception`` turned into ``Error`` for Python.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

__all__ = [
    "AcknowledgeInDoubtError",
    "ConfigurationError",
    "ConnectionFailedError",
    "IllegalStateError",
    "InvalidArgumentError",
    "InvalidClientIDError",
    "InvalidDestinationError",
    "InvalidOrderingGroupError",
    "InvalidSelectorError",
    "JMSException",
    "JMSSecurityError",
    "ListenerError",
    "MessageEOFError",
    "MessageFormatError",
    "MessageNotReadableError",
    "MessageNotWriteableError",
    "OrderingError",
    "TransactionInDoubtError",
    "TransactionInProgressError",
    "TransactionRolledBackError",
    "map_provider_errors",
    "not_callable",
]


class JMSException(Exception):  # noqa: N818 - the JMS name users search for
    """Root of every jmslike error; ``error_code`` mirrors JMSException.getErrorCode()."""

    def __init__(self, message: str, error_code: str | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


class IllegalStateError(JMSException):
    """A call on a closed object, or one the object's state does not allow now."""


class InvalidArgumentError(JMSException, ValueError):
    """An argument out of range or of the wrong kind (acknowledge mode, priority, ...)."""


class ConfigurationError(InvalidArgumentError):
    """A broker URL, factory setting or configuration file that cannot be used as given."""


class InvalidDestinationError(JMSException):
    """No destination where one is needed, or one the broker does not accept."""


class InvalidSelectorError(JMSException):
    """A message selector that does not parse; ``position`` is the 0-based offset."""

    def __init__(self, message: str, selector: str = "", position: int = -1) -> None:
        super().__init__(message)
        self.selector = selector
        self.position = position


class InvalidClientIDError(JMSException):
    """The client id is in use by another connection, or was set after first use."""


class MessageFormatError(JMSException):
    """A property name, property value or body of a type or form JMS does not allow."""


class MessageNotWriteableError(MessageFormatError):
    """A received message's body or properties were changed without clearing them first."""


class MessageNotReadableError(MessageFormatError):
    """Reading a message body that is in write-only mode."""


class MessageEOFError(MessageFormatError):
    """A typed read (``read_int``...) found the body shorter than the value (JMS
    ``MessageEOFException``); the read position stays where it was."""


class JMSSecurityError(JMSException):
    """The broker refused the credentials or the operation."""


class TransactionRolledBackError(JMSException):
    """A commit that could not complete: the transaction was rolled back instead."""


class TransactionInDoubtError(JMSException):
    """A commit that reached the broker, whose answer was lost with the connection.

    It may have taken effect or not; no client can tell (JMS calls this "in doubt"). If it
    did not, the broker delivers the consumed messages again, flagged redelivered, and the
    sends are gone; if it did, they are done. Not a TransactionRolledBackError, because
    redoing the work as if it had rolled back could do it twice: an application that must
    know checks its own effects (an idempotent write, a processed-id table).
    """


class TransactionInProgressError(IllegalStateError):
    """A transaction call on a session that has no transaction, or the reverse.

    An ``IllegalStateError`` too: JMS names IllegalStateException for ``commit()`` or
    ``rollback()`` on a session that is not transacted and ``recover()`` on one that is,
    so Java code ported with its ``catch`` blocks still catches these."""


class InvalidOrderingGroupError(JMSException):
    """A group name that breaks ORD-1: empty, not a str, too long, or None where not allowed."""


class OrderingError(JMSException):
    """A send or delivery that would break an ordering group's order (ORD-19)."""


class ConnectionFailedError(JMSException):
    """The broker could not be reached, or the connection to it was lost."""


class SendInDoubtError(ConnectionFailedError):
    """A persistent send that reached the wire, whose confirmation was lost with the
    connection (or did not come within ``request_timeout``): the broker may have stored
    the message, or not.

    A send that raises any other ConnectionFailedError was not stored; one that returned
    was. jmslike never sends this one again by itself, since two stored copies would both
    be delivered unflagged; an application that must not lose it and must not have it
    twice resends it with a key its consumers deduplicate on, or looks for it first.
    """


class AcknowledgeInDoubtError(ConnectionFailedError):
    """A CLIENT_ACKNOWLEDGE ``acknowledge()`` whose acknowledgement reached the wire and
    whose confirmation was lost with the connection (or did not come within
    ``request_timeout``): the broker may have taken it, and the messages never come
    again, or not, and they come again flagged redelivered.

    Any other ConnectionFailedError from ``acknowledge()`` means no acknowledgement
    reached the broker: the messages come again. As with TransactionInDoubtError, an
    application that must not do the work twice checks its own effects when a message
    comes again; one that must not lose it keeps what it did.
    """


class ListenerError(JMSException):
    """A message listener raised; the listener's exception is ``__cause__``."""


@contextlib.contextmanager
def map_provider_errors(
    what: str,
    mapping: dict[type[BaseException], type[JMSException]] | None = None,
) -> Iterator[None]:
    """Turn a foreign exception raised inside the block into a :class:`JMSException`.

    Providers wrap each call into their client library with this, so callers only ever
    see the jmslike tree. ``what`` names the operation (and broker) for the message; the
    original exception stays reachable as ``__cause__``. Exceptions not in ``mapping`` and
    not already a JMSException become a plain :class:`JMSException`.
    """
    try:
        yield
    except JMSException:
        raise
    except Exception as exc:
        target: type[JMSException] = JMSException
        for source, mapped in (mapping or {}).items():
            if isinstance(exc, source):
                target = mapped
                break
        raise target(f"{what}: {type(exc).__name__}: {exc}") from exc


def not_callable(what: str, value: object, method: str) -> InvalidArgumentError:
    """The error for a listener that is not callable. An object with the JMS interface's
    method (``on_message``, Java's ``onMessage``) is what a ported listener class is:
    the error says to pass that method."""
    hint = ""
    if callable(getattr(value, method, None)):
        hint = f"; pass its {method} method (for example listener.{method})"
    return InvalidArgumentError(f"{what} {value!r} is not callable{hint}")


_CAMEL = re.compile(r"[a-z][A-Z]")


def _snake(name: str) -> str:
    """``setJMSCorrelationID`` -> ``set_jms_correlation_id``."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def java_name_error(obj: object, name: str) -> AttributeError:
    """The ``AttributeError`` for a missing attribute, saying what a Java JMS name
    (``createConnection``, ``createContext``, ``getDestination``, or a getter in
    snake_case) is here: code ported line by line meets these first, and Python's own
    "did you mean" finds none of them.

    Raised by the ``__getattr__`` of the objects a port starts from and that no
    message passes through: ``ConnectionFactory``, ``JMSContext``, the listener
    container and the requestors. Not on sessions, producers, consumers or messages:
    in CPython 3.11 a class with ``__getattr__`` loses the specialised attribute reads,
    and every attribute of its instances reads 3.5 times slower (7 to 24 ns measured
    here), which the send and receive paths would pay for each message."""
    text = f"{type(obj).__name__!r} object has no attribute {name!r}"
    java = _CAMEL.search(name) is not None
    if name.startswith("_"):
        return AttributeError(text, name=name, obj=obj)
    snake = _snake(name) if java else name
    verb, _, rest = snake.partition("_")

    def has(attribute: str) -> bool:  # without running a property's getter
        return hasattr(type(obj), attribute) or attribute in getattr(obj, "__dict__", ())

    if java and has(snake):
        hint = f"jmslike's name is {snake}"
    elif verb in ("get", "is") and rest and has(rest):
        hint = f"{name}() is the attribute {rest} here"
    elif verb == "set" and rest and has(rest):
        hint = f"{name}(value) is {rest} = value here"
    elif java:
        hint = "a Java JMS name"
    else:
        return AttributeError(text, name=name, obj=obj)
    if java:
        hint += " (import jmslike.compat to give jmslike's objects Java's names)"
    return AttributeError(f"{text}: {hint}", name=name, obj=obj)


class JavaNames:
    """Base of the classes whose missing attributes raise :func:`java_name_error`."""

    __slots__ = ()

    if not TYPE_CHECKING:  # else a type checker would take every unknown name

        def __getattr__(self, name: str) -> object:
            """Only for names the object lacks: Java's say what they are here."""
            raise java_name_error(self, name)
