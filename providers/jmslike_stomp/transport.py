"""One STOMP connection over stomp.py: frames out, frames in, receipts, errors.

stomp.py runs one receiver thread per connection and calls its listener there. This
class is that listener, and it does only bookkeeping on that thread: a MESSAGE frame is
decoded and pushed to its subscription's sink (which only appends to a buffer), a RECEIPT
wakes the caller waiting for it, an ERROR fails the waiter it names or goes to the
exception callback. No user code ever runs on stomp.py's thread (docs/threading.md).

A call that must be confirmed (persistent SEND, COMMIT, ABORT, UNSUBSCRIBE) carries a
``receipt`` header and waits for the RECEIPT; an ERROR naming the receipt raises in the
caller, mapped to the jmslike error tree, so nothing is lost silently.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import stomp
import stomp.utils
from stomp.exception import ConnectFailedException, NotConnectedException, StompException
from stomp.protocol import Protocol12

from jmslike.config import ParsedURL
from jmslike.errors import (
    ConnectionFailedError,
    IllegalStateError,
    InvalidDestinationError,
    InvalidSelectorError,
    JMSException,
    JMSSecurityError,
    MessageFormatError,
)
from jmslike.placement import FREE, Placement
from jmslike.spi.diagnose import clip, inequivalent_note, size_note, wrong_port_hint
from jmslike.spi.provider import SendDone
from jmslike.spi.reconnect import Reconnect
from jmslike_stomp.wire import (
    ACK_DELAY,
    POST_BACKLOG,
    Queued,
    Wire,
    encode_frame,
    install,
    parse_header_lines,
)

__all__ = ["FrameHandler", "Receipted", "Reconnect", "StompTransport"]

log = logging.getLogger("jmslike.stomp")

FrameHandler = Callable[[dict[str, str], bytes], None]


class _HidePasscode(logging.Filter):
    """stomp.py logs every frame it sends at DEBUG, CONNECT's ``passcode`` included; jmslike
    never lets a password reach a log, so the filter blanks it in stomp.py's records."""

    _PASSCODE = re.compile(r"(passcode:)[^\\'\n]*")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and "passcode" in str(record.args):
            record.msg = self._PASSCODE.sub(r"\1***", record.getMessage())
            record.args = ()
        elif "passcode" in str(record.msg):
            record.msg = self._PASSCODE.sub(r"\1***", str(record.msg))
        return True


class _StrayBytes(logging.Filter):
    """stomp.py warns once per line of whatever a non-STOMP peer sends (23 lines for
    ActiveMQ's OpenWire greeting); the connect error names the protocol instead
    (``jmslike.spi.diagnose``), so those lines go to jmslike's DEBUG log only. Its
    warning that a connect attempt failed repeats the ``ConnectionFailedError`` the
    caller gets (address and cause), and printed on its own line through logging's last
    resort before the caller had the error: it goes to jmslike's INFO log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(("unknown response frame type", "error sending frame")):
            # (A failed send raises the jmslike error that says why; stomp.py's own
            # traceback of it is noise.)
            log.debug("stomp.py: %s", record.getMessage())
            return False
        if str(record.msg).startswith("could not connect to host"):
            log.info("stomp.py: %s", record.getMessage())
            return False
        return True


logging.getLogger("stomp.py").addFilter(_HidePasscode())
logging.getLogger("stomp.py").addFilter(_StrayBytes())

_STOMP_PARSE_HEADERS = stomp.utils.parse_headers
"""stomp.py's own (tests compare the two)."""
# The faster one for frames stomp.py still reads itself (a TLS connection, wire.py).
stomp.utils.parse_headers = parse_header_lines

_SECURITY_WORDS = (
    "authenticat",
    "password",
    "login",
    "access refused",
    "not authorized",
    "security",
)
_SELECTOR_WORDS = ("invalidselector", "invalid selector", "invalid filter")
"""A selector the broker's parser refused (Classic: javax.jms.InvalidSelectorException;
Artemis: 'Invalid selector "..."'), where jmslike's own parser had taken it (Classic's and
Artemis's grammars take no letters outside ASCII in a name)."""
_DESTINATION_WORDS = ("destination", "queue", "not_found", "not found", "no exchange")


def _first_line(detail: str, message: str) -> str:
    """The ERROR body's first line, unless it only repeats ``message`` with a Java
    exception class in front (ActiveMQ sends its whole stack trace as the body)."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0][:300]
    return "" if message and first.endswith(message) else first


def error_for(what: str, message: str, detail: str = "") -> JMSException:
    """Map an ERROR frame's ``message`` header to the jmslike error tree."""
    shown = _first_line(detail, message)
    text = f"{what}: {clip(message)}" + (f" ({shown})" if shown else "") + inequivalent_note(detail)
    # The whole body classifies (a Java exception class such as
    # javax.jms.InvalidDestinationException says more than the words).
    lowered = (message + " " + detail).lower()
    if any(word in lowered for word in _SECURITY_WORDS):
        return JMSSecurityError(text)
    if any(words in lowered for words in _SELECTOR_WORDS):
        # Before the destination words: ActiveMQ's stack trace under a refused selector
        # names its subscription's destination classes.
        return InvalidSelectorError(text)
    if any(word in lowered for word in _DESTINATION_WORDS):
        return InvalidDestinationError(text)
    return JMSException(text)


LATER_WINDOW = 1000
"""Frames sent with ``later`` that may wait for their RECEIPT at once; the next one waits
for the oldest (a bound on what a close has to wait for, and on memory)."""


_UNWAITED = frozenset(("ACK", "NACK"))
"""Frames whose sender need not see them written: a failure of the connection reaches the
session anyway (its deliveries come back), and an ACK lost with it is one in any case."""
_NOT_PUSHED = frozenset(("UNSUBSCRIBE", "DISCONNECT"))
"""Waited-for frames left to Nagle where it stays on (``Wire.push``): closing a consumer
on ActiveMQ Classic relies on its UNSUBSCRIBE waiting behind the ACK before it
(``Dialect.tcp_no_delay``)."""

STREAM_GAP = 0.0001
"""Seconds between two SENDs nobody waits for under which the second may be held for
company (``StompTransport._streams``): a loop sends every 10-50 microseconds. A producer
paced at 10,000 messages a second or fewer never waits: latency matters more there, and
each of its sends is written at once, as before."""

ASYNC_STREAM_GAP = 0.001
""":data:`STREAM_GAP` for asynchronous sends: a persistent asynchronous send takes 50 to
100 microseconds of the sender's time, more than STREAM_GAP, so that half of a loop's
SENDs went one to a ``sendall`` (about 90 µs each on Artemis, which sets
``TCP_NODELAY``). The sender waits for none of them, and a held one is written within
:data:`~jmslike_stomp.wire.ACK_DELAY`: its completion comes at most that much later."""


class UnconfirmedError(ConnectionFailedError):
    """A frame was written and its RECEIPT never came (connection lost, or too slow): the
    broker may have acted on it. A COMMIT that ends so is in doubt, not rolled back."""


_NO_EVENT = threading.Event()
"""A waiter's event where nobody waits on it (an asynchronous send's): never set."""


class _Waiter:
    __slots__ = ("after", "done", "error", "event", "what")

    def __init__(self, what: str, done: SendDone | None = None, *, after: bool = False) -> None:
        self.event = _NO_EVENT if done is not None else threading.Event()
        """Set once answered; none where ``done`` is told instead (an Event per message
        was a tenth of an asynchronous send's time)."""
        self.error: JMSException | None = None
        self.what = what
        """The frame waited for, for messages: ``SEND to /queue/orders``."""
        self.done = done
        """Told the answer where nobody waits (an asynchronous send)."""
        self.after = after
        """Answered after frames sent later (a transaction's SEND, after its COMMIT):
        never the frame an ERROR that names no receipt answers."""

    def settle(self, error: JMSException | None = None) -> None:
        """The broker answered (a RECEIPT, or ``error``), or the connection was lost."""
        self.error = error
        if self.done is None:
            self.event.set()
        else:
            self.done(error)


class Receipted:
    """A frame whose RECEIPT its caller waits for, told (``Queued``) once the frame is in
    the outbox, and given the waiter for that RECEIPT: a call that Ctrl-C stopped while
    it waited (a COMMIT, most often) can wait for the same answer again
    (:meth:`StompTransport.await_answer`) instead of sending the frame a second time,
    which the broker refuses (Artemis answers a second COMMIT of one transaction with
    an ERROR and closes the connection)."""

    __slots__ = ("queued", "receipt", "waiter")

    def __init__(self) -> None:
        self.queued = False
        self.receipt = ""
        self.waiter: _Waiter | None = None


def _place_threads(conn: stomp.Connection12, placement: Placement) -> None:
    """stomp.py starts its receiver thread through the transport's thread factory
    (``override_threading``); the heart-beat thread, started by that one, inherits its
    CPUs (Linux does so for every new thread)."""

    def start(callback: Callable[[], object]) -> threading.Thread:
        thread = placement.thread(callback, f"jmslike-stomp-{callback.__name__.strip('_')}")
        thread.start()
        return thread

    conn.transport.override_threading(start)


def _plain_send_lock(conn: stomp.Connection12) -> None:
    """stomp.py serializes writes to the socket with a ``threading.BoundedSemaphore``,
    which is Python code on a ``Condition``: with a listener container's sessions
    acknowledging on one connection, releasing it (and its ``notify``) took an eighth of
    their threads' time (py-spy, 8 sessions on ActiveMQ Classic). A plain lock, which
    is C, does the same job; stomp.py only ever uses it in ``with``."""
    transport = getattr(conn, "transport", None)
    name = "_Transport__socket_semaphore"
    if isinstance(getattr(transport, name, None), threading.BoundedSemaphore):
        setattr(transport, name, threading.Lock())


class _Link(stomp.ConnectionListener):  # type: ignore[misc]
    """stomp.py's listener for one physical connection; a link of a connection that was
    replaced after a reconnect says nothing any more."""

    def __init__(self, transport: StompTransport, generation: int) -> None:
        self._transport = transport
        self._generation = generation

    def _live(self) -> bool:
        return self._transport.generation == self._generation

    def on_connected(self, frame: Any) -> None:
        if self._live():
            self._transport.on_connected(frame)

    def on_message(self, frame: Any) -> None:
        if self._live():
            self._transport.on_message(frame)

    def on_receipt(self, frame: Any) -> None:
        if self._live():
            self._transport.on_receipt(frame)

    def on_error(self, frame: Any) -> None:
        if self._live():
            self._transport.on_error(frame)

    def on_disconnected(self) -> None:
        if self._live():
            self._transport.on_disconnected()


class StompTransport:
    """A connected STOMP 1.2 session with receipts and per-subscription dispatch.

    With a :class:`Reconnect` policy it survives losing the broker: a thread of its own
    connects again (to the next ``failover:`` member that answers, with back-off), sends
    every active SUBSCRIBE again, raises ``generation`` (deliveries of an older generation
    can no longer be acknowledged; the broker hands them out again, flagged redelivered)
    and calls ``on_reconnect``. Calls made meanwhile wait for it, up to the timeout.
    """

    def __init__(
        self,
        url: ParsedURL,
        user: str | None,
        password: str | None,
        *,
        client_id: str | None,
        heartbeats: tuple[int, int],
        timeout: float,
        on_exception: Callable[[JMSException], None],
        reconnect: Reconnect | None = None,
        on_reconnect: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        ssl_ca_file: str | None = None,
        no_delay: bool = False,
        send_batch: int = 0,
        placement: Placement = FREE,
    ) -> None:
        members = url.members or (url,)
        self._placement = placement
        """Where stomp.py's receiver and heart-beat threads run (``thread_cpus``)."""
        self._send_batch = send_batch
        """SENDs written together while a producer streams (``sendBatch``; see _send)."""
        self._last_send = 0.0
        """When the last SEND nobody waits for was queued (``time.monotonic()``)."""
        self._no_delay = no_delay
        """``TCP_NODELAY`` on the socket (jmslike's frame writing only; see wire.py). Off
        until the broker is known (:meth:`set_no_delay`), as stomp.py leaves it."""
        self._wire: Wire | None = None
        self._quick_ack = True
        """``TCP_QUICKACK`` after every read (wire.py); off once the broker is known not to
        need it (:meth:`set_quick_ack`)."""
        self._ssl_ca_file = ssl_ca_file
        """``stomp+ssl://``: the CA file to trust (None: the system's)."""
        self.address = ",".join(f"{m.host}:{m.port or 61613}" for m in members)
        self._members = members
        self._user = user
        self._password = password
        self._connect_headers = {"client-id": client_id} if client_id else {}
        self._heartbeats = heartbeats
        self._timeout = timeout
        # STOMP's host header names the virtual host: RabbitMQ refuses one it does not
        # know, so send the URL's path (stomp://h:61614/vhost), "/" by default.
        self.vhost = (url.path or members[0].path or "/").removeprefix("/") or "/"
        self._on_exception = on_exception
        self._reconnect = reconnect or Reconnect()
        self.on_reconnect = on_reconnect
        self.on_lost = on_lost
        """Called (on stomp.py's thread, so it must not block) as soon as the connection
        is lost: what was delivered over it can no longer be acknowledged."""
        self._subscriptions: dict[str, FrameHandler] = {}
        self._subscribe_headers: dict[str, dict[str, str]] = {}
        self._prepare: dict[str, Callable[[], None]] = {}
        """Subscription id -> what to do before subscribing again after a reconnect."""
        self._waiters: dict[str, _Waiter] = {}
        self._aliases: dict[str, str] = {}
        """Subscription id -> the other name its MESSAGEs may come under (RabbitMQ's
        temporary queues), dropped with the subscription."""
        self._later: deque[_Waiter] = deque()
        """Frames sent with ``later``, oldest first, whose RECEIPT nobody waited for yet."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._back = threading.Event()
        self._back.set()
        self.generation = 0
        self.server = ""
        self.closing = False
        self.quiet = False
        """Its loss is the caller's business alone: a standby's own connection while its
        SUBSCRIBE may be refused (StompConsumer.promote) holds nothing yet, and the
        refusal reaches the caller that sent it."""
        self.connected = False
        self.lost = False
        """The connection was lost for good (no failover, or it gave up reconnecting):
        nothing sent on it reaches the broker again, so a transaction open on it can
        never be committed."""
        self._connect_refusal = ""
        self._last_error: JMSException | None = None
        self._errors = 0
        self._answered = threading.Event()
        """Set by CONNECTED, or by the ERROR or disconnect that ends a CONNECT."""
        self._conn = self._open()

    def _open(self) -> stomp.Connection12:
        """Connect (to the first member that answers); raise the jmslike error if none."""
        conn = stomp.Connection12(
            host_and_ports=[(m.host or "127.0.0.1", m.port or 61613) for m in self._members],
            heartbeats=self._heartbeats,
            auto_decode=False,
            auto_content_length=False,
            reconnect_attempts_max=1,
            timeout=self._timeout,
            vhost=self.vhost,
        )
        for member in self._members:
            if member.scheme.endswith("+ssl"):
                conn.set_ssl(
                    for_hosts=[(member.host, member.port or 61613)], ca_certs=self._ssl_ca_file
                )
        if self._placement.cpus is not None:
            _place_threads(conn, self._placement)
        link = _Link(self, self.generation)
        conn.set_listener("jmslike", link)
        wire = self._wire = install(
            conn, link.on_message, no_delay=self._no_delay, quick_ack=self._quick_ack
        )
        if wire is None:  # stomp.py writes, under its own lock
            _plain_send_lock(conn)
        self._connect_refusal = ""
        self._answered.clear()
        try:
            # wait=False: stomp.py's own wait has no time limit, and a peer that accepts
            # TCP but never answers would hold create_connection() for ever.
            conn.connect(self._user, self._password, wait=False, headers=self._connect_headers)
        except ConnectFailedException:
            raise ConnectionFailedError(
                f"cannot connect to STOMP broker {self.address}: {self._why_unreachable()}"
            ) from None
        except (OSError, StompException) as exc:
            raise ConnectionFailedError(
                f"cannot connect to STOMP broker {self.address}: {exc}"
            ) from exc
        self._answered.wait(self._timeout)
        if not self.connected:
            with contextlib.suppress(StompException, OSError):
                conn.disconnect()
            hint = self._wrong_port()
            if hint:
                raise ConnectionFailedError(
                    f"cannot connect to STOMP broker {self.address}: {hint}"
                )
            if not self._answered.is_set():
                raise ConnectionFailedError(
                    f"STOMP broker {self.address} did not answer CONNECT within "
                    f"{self._timeout} s (is it a STOMP port?)"
                )
            raise self._connect_error(None)
        self._wire = wire
        return conn

    def _wrong_port(self) -> str | None:
        """After a failed CONNECT: the protocol the port speaks instead, if it is not
        STOMP (plain TCP members only; a TLS port answers TLS to anything)."""
        if self._connect_refusal:
            return None  # the broker answered in STOMP: its reason is the message
        for member in self._members:
            if not member.scheme.endswith("+ssl"):
                hint = wrong_port_hint(member.host or "127.0.0.1", member.port or 61613, "STOMP")
                if hint:
                    return hint
        return None

    def _why_unreachable(self) -> str:
        """stomp.py keeps the socket error to itself: find it out again, for the message."""
        reasons = []
        for member in self._members:
            where = f"{member.host or '127.0.0.1'}:{member.port or 61613}"
            host = member.host or "127.0.0.1"
            try:
                with socket.create_connection((host, member.port or 61613), timeout=2.0) as sock:
                    if member.scheme.endswith("+ssl"):
                        # The handshake stomp.py tried, with the same trust: its reason.
                        context = ssl.create_default_context(cafile=self._ssl_ca_file)
                        context.wrap_socket(sock, server_hostname=host).close()
                    reasons.append(f"{where} accepted TCP but not the STOMP connection")
            except ssl.SSLError as exc:
                reasons.append(f"{where}: TLS handshake failed: {exc.reason or exc}")
            except OSError as exc:
                reasons.append(f"{where}: {exc.strerror or exc}")
        return "; ".join(reasons)

    def _connect_error(self, exc: BaseException | None) -> JMSException:
        reason = self._connect_refusal or (str(exc) if exc else "no CONNECTED")
        error = error_for(f"STOMP broker {self.address} refused the connection", reason)
        if type(error) is JMSException or isinstance(error, InvalidDestinationError):
            return ConnectionFailedError(str(error))
        return error

    # ------------------------------------------------------------- listener
    def on_connected(self, frame: Any) -> None:
        self.server = frame.headers.get("server", "")
        self.connected = True
        self._answered.set()

    def on_message(self, frame: Any) -> None:
        handler = self._subscriptions.get(frame.headers.get("subscription", ""))
        if handler is None:
            log.debug("MESSAGE for unknown subscription %s", frame.headers.get("subscription"))
            return
        try:
            handler(frame.headers, frame.body or b"")
        except JMSException as exc:
            # A MESSAGE jmslike cannot read (a Map body that is not its JSON): the
            # application hears of it, typed, rather than a line in a log only
            # (tests/integration/test_fuzz_brokers.py). The connection goes on: the
            # message may be another client's doing, not the broker's.
            log.warning("STOMP %s: a delivery could not be read: %s", self.address, exc)
            self._on_exception(exc)
        except Exception as exc:  # never let a decoding bug kill stomp.py's receiver thread
            log.exception("STOMP %s: delivery failed", self.address)
            self._on_exception(
                MessageFormatError(f"STOMP {self.address}: a delivery failed: {exc!r}")
            )

    def on_receipt(self, frame: Any) -> None:
        waiter = self._waiters.pop(frame.headers.get("receipt-id", ""), None)
        if waiter is not None:
            waiter.settle()

    def on_error(self, frame: Any) -> None:
        message = frame.headers.get("message", "error")
        body = frame.body.decode("utf-8", "replace") if isinstance(frame.body, bytes) else ""
        if not self.connected:
            self._connect_refusal = f"{message} {body}".strip()
            self._answered.set()
            return
        error = error_for(f"STOMP broker {self.address}", message, body)
        self._last_error = error
        self._errors += 1
        waiter = self._waiters.pop(frame.headers.get("receipt-id", ""), None)
        if waiter is not None:
            waiter.settle(error)
            return
        # An ERROR that names no receipt (RabbitMQ's, for one) answers the oldest frame the
        # broker has not confirmed yet (it handles frames in order, and would have sent the
        # receipts of earlier ones): that caller gets the error rather than waiting in vain.
        with self._lock:
            oldest = next((key for key, w in self._waiters.items() if not w.after), None)
            pending = self._waiters.pop(oldest) if oldest is not None else None
        if pending is not None:
            pending.settle(error)
            return
        self._on_exception(error)

    def on_disconnected(self) -> None:
        was = self.connected
        self.connected = False
        self._answered.set()
        with self._lock:
            waiters, self._waiters = list(self._waiters.values()), {}
        for waiter in waiters:
            waiter.settle(
                UnconfirmedError(
                    f"STOMP connection to {self.address} was lost before the broker confirmed "
                    f"{waiter.what} (a broker that refuses a frame may just drop the "
                    "connection: see its log)"
                )
            )
        if not was or self.closing:
            return
        if self.quiet:
            self.lost = True
            log.debug("STOMP connection to %s lost%s", self.address, self._why())
            return
        if self.reconnects:
            log.warning("STOMP connection to %s lost: reconnecting", self.address)
            self._back.clear()
            self.generation += 1  # deliveries of the lost connection are stale from now
            if self.on_lost is not None:
                self.on_lost()
            threading.Thread(
                target=self._reconnect_loop, name="jmslike-stomp-reconnect", daemon=True
            ).start()
            return
        self.lost = True
        self._on_exception(
            ConnectionFailedError(f"STOMP connection to {self.address} was lost{self._why()}")
        )

    def _why(self) -> str:
        """The broker's last ERROR, if it sent one: a broker that refuses a frame often
        says why and then drops the connection, and the reason must not be lost."""
        error = self._last_error
        return f" (the broker's last error: {error})" if error is not None else ""

    def _reconnect_loop(self) -> None:
        """Connect again with back-off, resubscribe, and tell the owner; or give up."""
        policy = self._reconnect
        attempt, last = 0, "no attempt"
        while not self.closing and (policy.attempts < 0 or attempt < policy.attempts):
            attempt += 1
            time.sleep(policy.delay_before(attempt))
            self.generation += 1
            try:
                self._conn = self._open()
                for sub_id, headers in list(self._subscribe_headers.items()):
                    prepare = self._prepare.get(sub_id)
                    if prepare is not None:
                        prepare()
                    self._send(
                        "SUBSCRIBE", {**headers, "id": sub_id}, b"", confirm=True, later=False
                    )
            except JMSException as exc:
                last = str(exc)
                log.info("STOMP reconnect to %s, attempt %d: %s", self.address, attempt, exc)
                continue
            log.warning("STOMP connection to %s is back (attempt %d)", self.address, attempt)
            self._back.set()
            if self.on_reconnect is not None:
                self.on_reconnect()
            return
        self.lost = True
        self._back.set()
        if not self.closing:
            self._on_exception(
                ConnectionFailedError(
                    f"STOMP connection to {self.address} was lost; gave up after {attempt} "
                    f"reconnect attempts: {last}"
                )
            )

    # --------------------------------------------------------------- frames
    def next_id(self) -> str:
        return str(next(self._ids))

    def frame(
        self,
        command: str,
        headers: dict[str, str],
        body: bytes = b"",
        *,
        confirm: bool,
        later: bool = False,
        done: SendDone | None = None,
        hold: list[tuple[str, _Waiter]] | None = None,
        mark: Queued | None = None,
    ) -> None:
        """Send a frame; with ``confirm`` wait for its RECEIPT and raise an ERROR's error.
        With ``later`` ask for the RECEIPT without waiting: :meth:`settle` (and close)
        waits for all of them. With ``done`` (and ``confirm``) return once the frame is
        written and hand the answer to ``done`` (an asynchronous send), on the thread that
        reads the connection. With ``hold`` ask for a RECEIPT that comes after frames sent
        later and add its waiter to ``hold``, for :meth:`await_receipts` or
        :meth:`forget_receipts` (a transaction's SEND, whose RECEIPT RabbitMQ sends after
        the COMMIT's). While a reconnect is under way, wait for it first (up to the
        timeout). ``mark``: told once the frame is queued (``Wire.write``)."""
        generation = self.generation
        if not self.connected and not self._back.is_set() and not self.closing:
            self._back.wait(self._timeout)
        acknowledging = command in ("ACK", "NACK")
        if acknowledging and self.generation != generation:
            return  # for a delivery of the lost connection: the broker delivers it again
        try:
            self._send(
                command,
                headers,
                body,
                confirm=confirm,
                later=later,
                done=done,
                hold=hold,
                mark=mark,
            )
        except ConnectionFailedError:
            if acknowledging and self.reconnects and not confirm:
                log.debug("STOMP %s lost with the connection to %s", command, self.address)
                return
            raise  # a confirmed ACK (CLIENT_ACKNOWLEDGE) says it was lost: the caller tells

    def hold_ack(
        self,
        ack_id: str,
        batch: int,
        written: Callable[[bool], None] | None = None,
        *,
        cumulative: str | None = None,
        delay: float = ACK_DELAY,
        mark: Queued | None = None,
    ) -> None:
        """An ACK nobody waits for that may wait for company (``Wire.hold``): it goes
        with the next frame written, with ``batch`` held ones, or ``delay`` later;
        then ``written(ok)`` is called (``Wire.hold``). ``cumulative``: the id of an
        ``ack:client`` subscription, whose held ACK the next one replaces. Where stomp.py
        writes (no wire) or the connection is down, as :meth:`frame`, and ``written``
        right after."""
        wire = self._wire
        if wire is None or not wire.writes or not self.connected:
            try:
                self.frame("ACK", {"id": ack_id}, confirm=False, mark=mark)
            except ConnectionFailedError:
                if written is not None:
                    written(False)
                raise
            if written is not None:
                written(True)
            return
        try:
            wire.hold(
                encode_frame("ACK", {"id": ack_id}),
                batch,
                written,
                key=cumulative,
                delay=delay,
                mark=mark,
            )
        except (NotConnectedException, OSError, AttributeError) as exc:
            if self.reconnects:
                return  # as frame(): the broker delivers it again, flagged
            raise ConnectionFailedError(f"STOMP ACK to {self.address} failed: {exc}") from exc

    def write_queued(self) -> None:
        """Write what the outbox holds now: a frame that a call stopped by Ctrl-C queued
        (``Queued``) waits there for the next frame written otherwise; an ACK is what
        lets the broker deliver the next message over STOMP, and a COMMIT's RECEIPT is
        waited for. A failed write is the connection's failure, which its reader
        reports."""
        wire = self._wire
        if wire is not None and wire.writes and self.connected:
            with contextlib.suppress(NotConnectedException, OSError, AttributeError):
                wire.write_held()

    def _streams(self, gap: float = STREAM_GAP) -> bool:
        """Whether a SEND nobody waits for (an asynchronous one included: its RECEIPT is
        waited for by nobody either) may wait for company (``Wire.hold``): it follows the
        last one within ``gap`` (:data:`STREAM_GAP`; :data:`ASYNC_STREAM_GAP` for an
        asynchronous send), as in a send loop. One
        ``sendall`` per message made Artemis over STOMP take a third fewer messages a
        second (docs/performance.md); a send on its own still goes before ``send``
        returns, and a held one goes with the next frame written, with ``sendBatch``
        held ones, or :data:`~jmslike_stomp.wire.ACK_DELAY` later. Not under a
        ``failover:`` URL, where a SEND that fails to be written must say so to its
        sender, who may send it again."""
        if self._send_batch < 2 or self._reconnect.attempts != 0:  # reconnects, inlined
            return False
        now = time.monotonic()
        last, self._last_send = self._last_send, now
        return now - last < gap

    def posts(self) -> bool:
        """Whether a frame nobody waits for may be posted (:meth:`post`) and the writer
        keeps up (:data:`~jmslike_stomp.wire.POST_BACKLOG`)."""
        wire = self._postable_wire()
        return wire is not None and wire.backlog < POST_BACKLOG

    def _postable_wire(self) -> Wire | None:
        """The wire, where a frame may be posted: jmslike writes this connection's frames,
        it is up, and with no ``failover:`` URL (where a SEND that fails to be written
        must say so to its sender)."""
        wire = self._wire
        if wire is None or not self.connected or self.reconnects:
            return None
        return wire if wire.writes else None

    def post(self, command: str, headers: dict[str, str], body: bytes) -> bool:
        """Queue a frame nobody waits for (a SEND the asyncio API makes on its event loop,
        allowed by :meth:`posts` a moment ago: the backlog is not looked at again, as the
        loop must not wait) for the connection's writer thread (``Wire.post``); False,
        having done nothing, where the connection went meanwhile."""
        wire = self._postable_wire()
        if wire is None:
            return False
        wire.post(encode_frame(command, headers, body))
        return True

    @property
    def reconnects(self) -> bool:
        """Whether a lost connection is made again (a ``failover:`` URL)."""
        return self._reconnect.attempts != 0

    def _send(
        self,
        command: str,
        headers: dict[str, str],
        body: bytes,
        *,
        confirm: bool,
        later: bool,
        done: SendDone | None = None,
        hold: list[tuple[str, _Waiter]] | None = None,
        mark: Queued | None = None,
    ) -> None:
        if not self.connected:
            raise ConnectionFailedError(
                f"STOMP connection to {self.address} is closed{self._why()}"
            )
        if later and len(self._later) >= LATER_WINDOW:
            try:
                self._settle_oldest()
            except JMSException as exc:  # an earlier send's, not this one's: told, not raised
                log.warning("STOMP %s: a send may be lost: %s", self.address, exc)
        waiter = None
        if confirm or later or hold is not None:
            receipt = f"r{self.next_id()}"
            headers = {**headers, "receipt": receipt}
            what = command + (f" to {headers['destination']}" if "destination" in headers else "")
            waiter = self._waiters[receipt] = _Waiter(what, done, after=hold is not None)
            if isinstance(mark, Receipted):
                mark.receipt, mark.waiter = receipt, waiter
        errors_before = self._errors
        try:
            wire = self._wire
            if wire is not None and wire.writes:
                frame = encode_frame(command, headers, body)
                if (waiter is None or hold is not None) and command == "SEND" and self._streams():
                    wire.hold(frame, self._send_batch)  # (a held RECEIPT comes after more)
                elif done is not None and waiter is not None and self._streams(ASYNC_STREAM_GAP):
                    # An asynchronous send streams too: nobody waits for its writing. A
                    # write that fails is told to ``done`` (_held_send_written), never
                    # raised as well: the sender would withdraw what ``done`` was told.
                    with contextlib.suppress(NotConnectedException, OSError, AttributeError):
                        wire.hold(
                            frame, self._send_batch, partial(self._held_send_written, receipt)
                        )
                else:
                    # An ACK or NACK nobody waits for goes with the next write (wire.py).
                    wait = waiter is not None or command not in _UNWAITED
                    wire.write(frame, wait=wait, mark=mark)
                    if (
                        waiter is not None
                        and not later
                        and hold is None
                        and done is None  # sends that follow will carry it out
                        and command not in _NOT_PUSHED
                    ):
                        wire.push()
            else:
                self._conn.send_frame(command, headers, body)
                if mark is not None:
                    mark.queued = True
        except (NotConnectedException, OSError, AttributeError) as exc:
            # (AttributeError: stomp.py sets its socket to None when its receiver thread
            # sees the connection drop, under a sender already past its own check.)
            # A broker that refuses a frame (too large, say) may send ERROR and close
            # while the frame is still being written: give its reason a moment to arrive.
            deadline = time.monotonic() + 0.5
            while self._errors == errors_before and time.monotonic() < deadline:
                time.sleep(0.01)
            reason = str(self._last_error) if self._errors != errors_before else str(exc)
            target = f" to {headers['destination']}" if "destination" in headers else ""
            raise ConnectionFailedError(
                f"STOMP {command}{target} to {self.address} failed: {reason}" + size_note(len(body))
            ) from exc
        if later and waiter is not None:
            self._later.append(waiter)
            return
        if hold is not None and waiter is not None:
            hold.append((headers["receipt"], waiter))
            return
        if done is not None:
            return
        if waiter is not None:
            self._await(waiter, headers["receipt"], command)

    def _await(self, waiter: _Waiter, receipt: str, command: str) -> None:
        """Wait for ``waiter``'s RECEIPT (up to the timeout); raise what answered it."""
        if not waiter.event.wait(self._timeout):
            self._waiters.pop(receipt, None)
            raise UnconfirmedError(
                f"STOMP broker {self.address} did not confirm {command} within {self._timeout} s"
            )
        if waiter.error is not None:
            raise waiter.error

    def await_answer(self, mark: Receipted, command: str) -> None:
        """The answer to a frame sent with ``mark`` (queued: ``mark.queued``), whose
        sender a Ctrl-C stopped; at once if it came meanwhile."""
        waiter = mark.waiter
        assert waiter is not None, "a Receipted frame queued without its waiter"
        self.write_queued()  # the Ctrl-C may have come before the frame was written
        self._await(waiter, mark.receipt, command)

    def _held_send_written(self, receipt: str, ok: bool) -> None:
        """A held asynchronous SEND went (its RECEIPT answers it) or could not be written:
        then its sender hears so now, unless the lost connection told it already."""
        if ok:
            return
        waiter = self._waiters.pop(receipt, None)
        if waiter is not None:
            waiter.settle(
                UnconfirmedError(
                    f"STOMP connection to {self.address} was lost while {waiter.what} was "
                    f"written{self._why()}"
                )
            )

    def _settle_oldest(self) -> None:
        waiter = self._later.popleft()
        if not waiter.event.wait(self._timeout):
            raise UnconfirmedError(
                f"STOMP broker {self.address} did not confirm {waiter.what} within "
                f"{self._timeout} s"
            )
        if waiter.error is not None:
            raise waiter.error

    def await_receipts(self, held: list[tuple[str, _Waiter]]) -> None:
        """Wait for the RECEIPTs of frames sent with ``hold`` (up to the timeout, for all
        of them); raise the first failure, and forget the rest."""
        deadline = time.monotonic() + self._timeout
        try:
            for _receipt, waiter in held:
                if not waiter.event.wait(max(0.0, deadline - time.monotonic())):
                    raise UnconfirmedError(
                        f"STOMP broker {self.address} did not confirm {waiter.what} within "
                        f"{self._timeout} s"
                    )
                if waiter.error is not None:
                    raise waiter.error
        finally:
            self.forget_receipts(held)

    def forget_receipts(self, held: list[tuple[str, _Waiter]]) -> None:
        """Stop waiting for RECEIPTs asked for with ``hold`` (those of a transaction that
        was aborted never come)."""
        with self._lock:
            for receipt, _waiter in held:
                self._waiters.pop(receipt, None)

    def settle(self) -> None:
        """Wait for the RECEIPTs of every frame sent with ``later``; raise the first
        failure (the others are logged)."""
        first: JMSException | None = None
        while self._later:
            try:
                self._settle_oldest()
            except JMSException as exc:
                if first is None:
                    first = exc
                else:
                    log.warning("STOMP %s: %s", self.address, exc)
        if first is not None:
            raise first

    def subscribe(
        self,
        sub_id: str,
        headers: dict[str, str],
        handler: FrameHandler,
        *,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        """SUBSCRIBE (again after each reconnect, ``prepare()`` first: a JMSException
        from it fails that attempt, and the next one tries again)."""
        self._subscriptions[sub_id] = handler
        self._subscribe_headers[sub_id] = dict(headers)
        if prepare is not None:
            self._prepare[sub_id] = prepare
        destination = headers.get("destination", "")
        if destination.startswith("/temp-queue/"):
            # RabbitMQ delivers replies to a temporary queue under the queue's name as the
            # subscription, whatever id the SUBSCRIBE had.
            self._subscriptions[destination] = handler
            self._aliases[sub_id] = destination
        try:
            self.frame("SUBSCRIBE", {**headers, "id": sub_id}, confirm=True)
        except JMSException:
            self._forget(sub_id)
            raise

    def _forget(self, sub_id: str) -> None:
        self._subscriptions.pop(sub_id, None)
        self._subscribe_headers.pop(sub_id, None)
        self._prepare.pop(sub_id, None)
        alias = self._aliases.pop(sub_id, None)
        if alias is not None:
            self._subscriptions.pop(alias, None)

    def listen(self, name: str, handler: FrameHandler) -> None:
        """Dispatch MESSAGE frames whose ``subscription`` is ``name`` (no SUBSCRIBE sent)."""
        self._subscriptions[name] = handler

    def unlisten(self, name: str) -> None:
        self._subscriptions.pop(name, None)

    @property
    def no_delay(self) -> bool:
        """Whether frames go out with ``TCP_NODELAY`` (and not held by Nagle's algorithm)."""
        return self._no_delay and self._wire is not None

    def set_no_delay(self) -> None:
        """Set ``TCP_NODELAY`` from now on, on this socket and the reconnects' ones."""
        self._no_delay = True
        if self._wire is not None:
            self._wire.set_no_delay()

    def set_quick_ack(self, on: bool) -> None:
        """``TCP_QUICKACK`` after every read, or not, on this socket and the reconnects'."""
        self._quick_ack = on
        if self._wire is not None:
            self._wire.quick_ack = on

    def unsubscribe(self, sub_id: str, headers: dict[str, str] | None = None) -> None:
        self._subscribe_headers.pop(sub_id, None)
        try:
            self.frame("UNSUBSCRIBE", {**(headers or {}), "id": sub_id}, confirm=True)
        finally:
            self._forget(sub_id)

    def close(self) -> None:
        """DISCONNECT, and wait for the broker's receipt: every MESSAGE it sent before has
        then been handled (frames arrive in order), so nothing handed back by the close is
        still on its way to this connection's consumers when another connection gets it."""
        if self._later and self.connected:
            try:
                self.settle()
            except JMSException as exc:
                log.error(
                    "STOMP %s: sends not confirmed before the close may be lost: %s",
                    self.address,
                    exc,
                )
        self.closing = True
        self._back.set()
        if self.connected:
            self._answered.clear()
            with contextlib.suppress(StompException, OSError):
                # The frame only: stomp.py's disconnect() then waits for its receiver
                # thread without a time limit, for ever if the broker neither confirms
                # nor closes (tests/integration/test_fuzz_brokers.py).
                Protocol12.disconnect(self._conn, receipt=f"bye{self.next_id()}")
            wait = min(self._timeout, 5.0)
            if not self._answered.wait(wait):  # set by on_disconnected
                with contextlib.suppress(StompException, OSError):
                    self._conn.transport.disconnect_socket()
            receiver = getattr(self._conn.transport, "io_thread", None)
            if receiver is not None and receiver is not threading.current_thread():
                receiver.join(wait)
        self.connected = False

    def check_open(self) -> None:
        if not self.connected:
            raise IllegalStateError(f"STOMP connection to {self.address} is closed")
