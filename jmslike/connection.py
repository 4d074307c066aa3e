"""ConnectionFactory and Connection: settings in, a provider connection out.

The factory resolves the URL to a provider through the plugin registry and folds its
settings (keyword arguments over the URL query over defaults, see ``jmslike.config``)
once, so a bad URL or setting fails at construction, before anything is sent.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from jmslike._dispatch import ExceptionNotifier
from jmslike._process import track
from jmslike.config import (
    UNSET_URL,
    FactorySettings,
    ParsedURL,
    effective_url,
    parse_url,
    resolve_settings,
    setting_name,
)
from jmslike.configfile import misspelling_hint
from jmslike.context import JMSContext
from jmslike.declare import QueueDeclaration, declare_queue
from jmslike.destination import Destination
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidArgumentError,
    InvalidClientIDError,
    InvalidDestinationError,
    JavaNames,
    JMSException,
    not_callable,
)
from jmslike.middleware import (
    Interceptor,
    collect,
    deliver_to_handler,
    fold_delivery,
    fold_send,
    send_to_provider,
)
from jmslike.ordering import StripedGroupGate, acquire_client_gate, release_client_gate
from jmslike.placement import placement_of
from jmslike.session import Session, deliver_released
from jmslike.spi.provider import Capabilities, OrderingMode, Provider
from jmslike.spi.registry import get_registry

__all__ = ["Connection", "ConnectionFactory", "ExceptionListener"]

log = logging.getLogger("jmslike.connection")

ExceptionListener = Callable[[JMSException], object]


class ConnectionFactory(JavaNames):
    """Creates connections to one broker URL with one set of settings (JMS ConnectionFactory).

    ``ConnectionFactory("embedded://")`` needs no server; ``stomp://``, ``amqp://`` and
    others come from provider plugins. Keyword arguments are settings of
    :class:`jmslike.config.FactorySettings` (``enable_ordering_group``, ``client_id``,
    ``prefetch``, ``max_redeliveries``...); they override the same keys in the URL query.
    """

    def __init__(
        self,
        url: str = UNSET_URL,
        *,
        user: str | None = None,
        password: str | None = None,
        interceptors: Sequence[Interceptor] = (),
        **settings: Any,
    ) -> None:
        self.interceptors: list[Interceptor] = list(interceptors)
        """Interceptors for every connection of this factory, before the plugins' ones
        (jmslike.middleware)."""
        self._configure(effective_url(url), settings, "ConnectionFactory keyword arguments")
        self._user = user if user is not None else self.url.user
        self._password = password if password is not None else self.url.password

    def _configure(
        self,
        url: str,
        settings: dict[str, Any],
        source: str,
        factory: str | None = None,
        config_path: str | None = None,
    ) -> None:
        """Resolve the provider and fold the settings from every source, in the order of
        jmslike.config; every error names where the bad value came from."""
        parsed = parse_url(url)
        scheme = parsed.members[0].scheme if parsed.members else parsed.scheme
        self._provider: Provider = get_registry().provider_for(scheme)
        self._provider.check_url(parsed)
        resolved = resolve_settings(
            parsed,
            settings,
            provider_names=self._provider.setting_names,
            source=source,
            factory=factory,
            config_path=config_path,
        )
        self._provider.check_settings(resolved)
        # Past __setattr__, which refuses them to applications (see there).
        object.__setattr__(self, "url", parsed)
        object.__setattr__(self, "settings", resolved)

    url: ParsedURL
    settings: FactorySettings

    def __setattr__(self, name: str, value: Any) -> None:
        """Only ``interceptors`` (and private names) may be assigned. A setting assigned
        here, ``factory.enable_ordering_group = True`` as a Java factory's setter would
        be, was kept where no connection read it: ordering stayed off, with no error."""
        if name.startswith("_") or name == "interceptors":
            object.__setattr__(self, name, value)
            return
        provider = self.__dict__.get("_provider")
        names = provider.setting_names if provider is not None else frozenset()
        if setting_name(name, names) is not None:
            raise AttributeError(
                f"{name!r} is a setting, fixed when the factory is made: "
                f"ConnectionFactory(url, {name}=...), the URL's query or jmslike.toml "
                "(a factory's settings do not change; make another factory)"
            )
        if name in ("url", "settings"):
            raise AttributeError(f"a ConnectionFactory's {name} is read-only: make another")
        hint = misspelling_hint(name, [*FactorySettings.names(), *names])
        raise AttributeError(f"'ConnectionFactory' object has no attribute {name!r}{hint}")

    def __repr__(self) -> str:
        return f"<ConnectionFactory {self.url} provider={self._provider.name}>"

    @classmethod
    def from_config(cls, name: str, path: str | None = None) -> ConnectionFactory:
        """A named factory from ``jmslike.toml`` (``$JMSLIKE_CONFIG`` or the working dir)."""
        from jmslike.configfile import load_factory_config

        url, user, password, _settings, source = load_factory_config(name, path)
        factory = cls.__new__(cls)
        factory.interceptors = []
        factory._configure(url, {}, source, factory=name, config_path=path)
        factory._user = user if user is not None else factory.url.user
        factory._password = password if password is not None else factory.url.password
        return factory

    def create_connection(self, user: str | None = None, password: str | None = None) -> Connection:
        """Open a connection (stopped: call ``start()`` to receive)."""
        return Connection(
            self,
            user if user is not None else self._user,
            password if password is not None else self._password,
        )

    def create_context(
        self,
        session_mode: int = Session.AUTO_ACKNOWLEDGE,
        *,
        user: str | None = None,
        password: str | None = None,
    ) -> JMSContext:
        """A JMS 2.0 JMSContext: a new connection with one session of ``session_mode``
        (``JMSContext.AUTO_ACKNOWLEDGE`` ...), closed with the last context on it."""
        return JMSContext._open(self.create_connection(user, password), session_mode)

    def _internal_connection(self) -> Connection:
        """A connection for jmslike's own traffic (partition heart-beats): no
        interceptors, so tracing and metrics see only the application's messages."""
        return Connection(self, self._user, self._password, internal=True)


class Connection:
    """An open connection to a broker (JMS Connection); a context manager."""

    def __init__(
        self,
        factory: ConnectionFactory,
        user: str | None,
        password: str | None,
        *,
        internal: bool = False,
    ) -> None:
        self._factory = factory
        self._settings = factory.settings
        self._placement = placement_of(self._settings.thread_cpus)
        """Where the threads jmslike starts for this connection run (``thread_cpus``)."""
        self._ids = itertools.count(1)
        self._id_prefix = f"{secrets.token_hex(6)}-{int(time.time()) & 0xFFFFFF:x}"
        self._notifier = ExceptionNotifier(f"jmslike-exceptions-{self._id_prefix}")
        self._provider = factory._provider.connect(
            factory.url, self._settings, user, password, self._report
        )
        self._gate, self._gate_scope = self._acquire_gate()
        self._interceptors = (
            [] if internal else [*factory.interceptors, *self._plugin_interceptors()]
        )
        self._send_chain = fold_send(self._interceptors, send_to_provider)
        self._delivery_chain = fold_delivery(self._interceptors, deliver_to_handler, self._report)
        self._dead_letter_observers = [
            i for i in self._interceptors if type(i).dead_lettered is not Interceptor.dead_lettered
        ]
        self._sessions: list[Session] = []
        self._lock = threading.RLock()
        self._start_cond = threading.Condition()
        self._started = False
        self._ever_started = False
        self._told_not_started = False
        self._closed = False
        self._failed: ConnectionFailedError | None = None
        """The provider's report that the connection is lost for good (after any
        reconnect attempts): from then on receive() raises it, and nothing buffered from
        the lost connection is handed out, since the broker gives those messages to
        other consumers again."""
        self._sent_at = 0
        """When this connection last began a send (ms since the epoch, as JMSTimestamp)."""
        self._sent_done = 0.0
        """When a send of this connection last returned (``time.monotonic()``): a
        ``receive_no_wait()`` on a fixed window (STOMP) gives a message just sent the
        broker's answer time to arrive, and waits for nothing otherwise. Counted from the
        return, not the start: a persistent send that waited 30 ms for its receipt on a
        busy machine left no time at all to a 20 ms answer counted from its start (the
        contract scenario ``test_receive_no_wait_takes_a_message_the_queue_holds`` on
        Artemis over STOMP, once in a CI run)."""
        self._used = False
        self._pid = os.getpid()
        self._forked = False
        """True in a child of ``os.fork()``: the connection is the parent's (``_process``)."""
        self._client_id: str | None = None
        if self._settings.client_id:
            try:
                self._claim_client_id(self._settings.client_id)
            except BaseException:
                # Refused (the id is taken): nothing of this connection may outlive the
                # error. A loop retrying it had gathered 900 threads and 460 sockets, and
                # ActiveMQ then refused every new STOMP connection.
                self.close()
                raise
        if not internal:
            track(self)  # closed at the interpreter's exit if the application did not

    def _plugin_interceptors(self) -> list[Interceptor]:
        """What ``jmslike_middleware`` implementations contribute, asked once."""
        return collect(get_registry().plugin_manager.hook.jmslike_middleware(connection=self))

    def _acquire_gate(self) -> tuple[StripedGroupGate[Any] | None, str]:
        """The process-wide client gate for this broker, where the broker ignores groups
        (ORD-16); shared by every connection of the process to the same broker."""
        capabilities = self._provider.capabilities
        if capabilities.ordering_mode != OrderingMode.CLIENT_GATE:
            return None, ""
        scope = str(capabilities.extra.get("gate_scope") or self._factory.url)
        gate = acquire_client_gate(scope, deliver_released, self._settings.request_timeout)
        return gate, scope

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("started" if self._started else "stopped")
        return f"<Connection {self._factory.url} {state}>"

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_id(self) -> int:
        return next(self._ids)

    # ------------------------------------------------------------- identity
    @property
    def capabilities(self) -> Capabilities:
        """What the broker does natively, and how ordering is kept (ORD-16)."""
        return self._provider.capabilities

    @property
    def url(self) -> ParsedURL:
        """The broker URL this connection was made from; its ``str()`` hides the password,
        so it is safe to log."""
        return self._factory.url

    @property
    def client_id(self) -> str | None:
        return self._client_id

    @client_id.setter
    def client_id(self, value: str) -> None:
        self.set_client_id(value)

    def get_client_id(self) -> str | None:
        return self._client_id

    def set_client_id(self, client_id: str) -> None:
        """Set the client id; only before the connection is first used (JMS setClientID)."""
        self._check_open()
        if not isinstance(client_id, str) or not client_id:
            raise InvalidArgumentError(f"client id {client_id!r}: need a non-empty str")
        if self._client_id is not None or self._used:
            raise IllegalStateError(
                f"client id can only be set once, before the connection is used "
                f"(it is {self._client_id!r})"
            )
        self._claim_client_id(client_id)

    def _claim_client_id(self, client_id: str) -> None:
        try:
            self._provider.set_client_id(client_id)
        except InvalidClientIDError:
            raise
        self._client_id = client_id

    # ------------------------------------------------------------ listeners
    @property
    def exception_listener(self) -> ExceptionListener | None:
        return self._notifier.listener

    @exception_listener.setter
    def exception_listener(self, listener: ExceptionListener | None) -> None:
        self.set_exception_listener(listener)

    def set_exception_listener(self, listener: ExceptionListener | None) -> None:
        """Errors that no call returns (lost connection, a raising message listener) go
        here, on a notifier thread of this connection."""
        self._check_open()
        if listener is not None and not callable(listener):
            raise not_callable("exception listener", listener, "on_exception")
        self._notifier.listener = listener

    def get_exception_listener(self) -> ExceptionListener | None:
        return self._notifier.listener

    def _report(self, exc: JMSException) -> None:
        if isinstance(exc, ConnectionFailedError) and self._failed is None:
            self._failed = exc
            for session in list(self._sessions):
                for consumer in list(session._consumers):
                    consumer._lost()
        self._notifier.report(exc)

    # --------------------------------------------------------------- sessions
    def create_session(
        self, transacted: bool = False, acknowledge_mode: int = Session.AUTO_ACKNOWLEDGE
    ) -> Session:
        """A new session; ``transacted=True`` or ``Session.SESSION_TRANSACTED`` for a
        transacted one."""
        self._check_open()
        self._used = True
        session = Session(self, transacted, acknowledge_mode)
        with self._lock:
            self._sessions.append(session)
        return session

    def declare_queue(self, queue: Destination | str) -> QueueDeclaration:
        """Make ``queue`` ready at the broker now, as its first use would (its partitions
        or itself held to one consumer where the settings say so, else a durable queue):
        a deploy step, so that no queue is made in the first moments of production
        traffic (jmslike.declare says why). Safe to repeat; an existing queue is kept."""
        self._check_open()
        return declare_queue(self._provider, self._settings, queue)

    def delete_temporary(self, destination: Destination) -> None:
        """Delete a temporary queue or topic this connection made (JMS
        ``TemporaryQueue.delete()``): sends to it fail from now on, and a request/reply
        client that makes one per request keeps nothing per request. A consumer still
        open on it raises IllegalStateError (JMS)."""
        self._check_open()
        if not destination.is_temporary:
            raise InvalidDestinationError(f"{destination} is not a temporary destination")
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            for consumer in list(session._consumers):
                if consumer.destination == destination:
                    raise IllegalStateError(
                        f"{destination} still has a consumer: close it before deleting"
                    )
        self._provider.delete_temporary(destination)

    def _check_durable_free(self, name: str, topic: Destination) -> None:
        """JMS 2.0: an unshared durable subscription has one active consumer at a time,
        and a second must raise. Checked here, before the broker sees it: over AMQP 1.0
        ActiveMQ Classic closed the whole connection (decode-error) and Artemis did after
        30 s (a NullPointerException of its own), while Artemis over STOMP and RabbitMQ
        took a second consumer, which then split the subscription's messages."""
        with self._lock:
            sessions = list(self._sessions)
        for session in sessions:
            for consumer in list(session._consumers):
                if (
                    consumer._unshared_durable
                    and consumer.subscription_name == name
                    and not consumer.closed
                    and not consumer.strictly_ordered  # ORD-18 has its own refusal
                ):
                    raise IllegalStateError(
                        f"durable subscription {name!r} of client {self.client_id!r} on "
                        f"{topic} already has an active consumer (use a shared durable "
                        "subscription for several)"
                    )

    def _forget_session(self, session: Session) -> None:
        with self._lock:
            if session in self._sessions:
                self._sessions.remove(session)

    # ------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start (or resume) delivery to receivers and listeners."""
        self._check_open()
        self._used = True
        with self._start_cond:
            if self._started:
                return
            self._started = self._ever_started = True
            self._start_cond.notify_all()
        self._provider.start()
        for session in list(self._sessions):
            session._on_start()

    def stop(self) -> None:
        """Pause delivery; returns once running listeners have finished (JMS stop)."""
        self._check_open()
        if self._in_own_listener():
            raise IllegalStateError(
                "a connection cannot be stopped from its own message or completion listener"
            )
        with self._start_cond:
            self._started = False
        self._provider.stop()
        for session in list(self._sessions):
            if session._dispatcher is not None:
                session._dispatcher.wait_idle()

    def _receive_before_start(self, destination: object) -> None:
        """A receive() that waited and got nothing on a connection never started. JMS
        delivers nothing before ``start()``, and forgetting it is the first hour's usual
        mistake, which looked like an empty queue: said once per connection. Not after
        ``stop()`` (a pause on purpose), nor for a receive that did not wait."""
        if self._ever_started or self._told_not_started:
            return
        self._told_not_started = True
        log.warning(
            "receive() on %s waited and got nothing: its connection (%s) was never "
            "started, and a connection delivers nothing before connection.start()",
            destination,
            self._factory.url,
        )

    def _wait_started(self, timeout: float | None) -> bool:
        with self._start_cond:
            return self._start_cond.wait_for(lambda: self._started or self._closed, timeout)

    def _in_own_listener(self) -> bool:
        """On a thread that runs this connection's listeners (message or completion)."""
        return any(
            (s._dispatcher is not None and s._dispatcher.in_dispatcher())
            or (s._completions is not None and s._completions.in_callback())
            for s in self._sessions
        )

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def started(self) -> bool:
        return self._started

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("connection is closed")
        if self._forked and self._failed is not None:
            raise self._failed

    def _inherited_by_fork(self, pid: int) -> None:
        """In the child ``pid`` of ``os.fork()`` (``jmslike._process``): the connection is
        the parent's. Marked lost, so that sends and receives raise at once, saying what
        to do, where they waited for ever (the I/O threads stayed in the parent)."""
        self._forked = True
        self._failed = ConnectionFailedError(
            f"this connection to {self.url} was made in process {self._pid}, and process "
            f"{pid} is a child of it made by os.fork(): the child has none of the "
            "connection's threads and shares its socket with the parent, so it cannot use "
            "it. Make a connection in each process, after the fork (with multiprocessing, "
            "or use its 'spawn' start method)"
        )

    def close(self) -> None:
        """Close sessions (giving back unfinished messages, ORD-10) and the connection."""
        if self._closed:
            return
        if self._forked:  # the parent's connection: let go of it without a word to the broker
            self._closed = True
            return
        if self._in_own_listener():
            raise IllegalStateError(
                "a connection cannot be closed from its own message or completion listener"
            )
        with self._start_cond:
            self._started = False
            self._start_cond.notify_all()
        errors: list[BaseException] = []
        for session in list(self._sessions):
            try:
                session.close()
            except ConnectionFailedError as exc:
                # Lost already: the broker gave back what the sessions held when it
                # dropped the connection, so there is nothing left to close there.
                log.info("closing %r after the connection was lost: %s", self, exc)
            except Exception as exc:  # keep closing the rest
                errors.append(exc)
        self._closed = True
        with self._start_cond:
            self._start_cond.notify_all()
        try:
            self._provider.close()
        except ConnectionFailedError as exc:
            log.info("closing %r after the connection was lost: %s", self, exc)
        finally:
            self._notifier.close()
            if self._gate is not None:
                release_client_gate(self._gate_scope)
        if errors:
            first = errors[0]
            if isinstance(first, JMSException):
                raise first
            raise JMSException(f"error while closing {self!r}: {first}") from first
