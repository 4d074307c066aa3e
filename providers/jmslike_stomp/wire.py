"""STOMP frames to and from the socket, on stomp.py's connection but not its per-frame code.

stomp.py keeps the connection: CONNECT, heart-beats, TLS, DISCONNECT, noticing a dead
socket. What it does per frame cost more than the rest of jmslike together where a
listener container's sessions share one subscription (py-spy ``--gil``, eight sessions
on RabbitMQ, 1 ms handler): its receiver thread reads 1 KiB at a time, copies the
buffer after each frame, parses with regular expressions and calls every listener
twice per MESSAGE; every ACK built a ``Frame``, sorted the listeners and headers and
took the socket lock around ``sendall``, so a session that lost the GIL inside
``sendall`` kept the other seven waiting at the lock.

:class:`Wire` replaces just those two paths on one stomp.py connection:

* **Reading**: 64 KiB per ``recv``; :func:`split_frames` cuts complete frames off the
  buffer (``content-length`` honoured, so a body may hold NUL bytes); a MESSAGE goes
  straight to jmslike's handler; every other frame goes through stomp.py's own
  ``process_frame`` as before (CONNECTED, RECEIPT, ERROR keep their meaning there). Any
  bytes received count as a heart-beat from the broker, as any frame does in stomp.py.
* **Writing**: frames queue in one outbox and whoever finds the socket free writes
  everything queued in one ``sendall``. A frame that nobody waits for (an ACK in AUTO
  mode) is queued and the caller goes on; a frame whose caller must hear of a failure
  (anything stomp.py sends, a SEND, a frame with a receipt) waits until it is written.
  One outbox keeps the order frames were queued in, so an ACK still goes before the
  UNSUBSCRIBE or NACK that follows it.
* **Holding**: an AUTO or DUPS_OK receive loop that has more messages waiting in its
  buffer *holds* its ACK (:meth:`Wire.hold`): the frame waits in the outbox for company
  and goes with the next frame written, once a few are held, or :data:`ACK_DELAY` later
  (:class:`_Flusher`). A ``sendall`` per message was a sixth of a receive loop's time.
  A held frame may come with a ``written`` callback (the client gate frees the group of
  the message acknowledged only once its ACK is written): it is called after the
  ``sendall`` that carried the frame, but only by the thread that held a frame, the
  flusher or a wire's writer thread (below), never by another writer (an application's
  SEND, stomp.py's heart-beat, a close), which may hold locks the callback needs.
* **Streaming SENDs**: a SEND nobody waits for (non-persistent, in a transaction, or a
  JMS 2.0 asynchronous send, whose RECEIPT is told to its completion listener) that
  follows the previous one within 0.1 ms (1 ms for an asynchronous one) is held the same way
  (``StompTransport._streams``): a send loop writes a few frames per ``sendall``, and
  the broker reads them so (on Artemis, which sets ``TCP_NODELAY``, a third more
  messages a second). A send on its own is written before ``send`` returns.
* **Posted SENDs**: a SEND the asyncio API makes on its event loop
  (``jmslike.spi.provider.AT_ONCE``) must not wait for the socket, which a broker
  applying flow control stops reading. It is *posted* (:meth:`Wire.post`): queued in the
  outbox for a writer thread of this wire's own (started on the first post, ended after
  a second with nothing to do), which writes whatever the outbox holds. Not the
  process-wide flusher: one broker that stops reading would hold up every connection's
  held ACKs. While :data:`POST_BACKLOG` frames wait, no more are posted (the sender is
  handed to its session's thread, which waits for the socket as any sender does).
* **Cumulative ACKs**: on a subscription with ``ack:client`` one ACK covers every
  earlier message, so a held ACK of such a subscription (``hold(..., key=sub_id)``)
  replaces the one it held last, as long as nothing was queued after that one (a *cell*
  in the outbox, written with whatever it holds then): one ACK goes per ``batch``
  messages, or per :data:`ACK_DELAY`, never after a later frame it should have preceded.

:func:`encode_frame` builds the same bytes as stomp.py 1.2's ``send_frame`` (values
escaped, headers sorted; tests compare the two). Where stomp.py's internals are not the
ones this module knows (another major version), :func:`install` leaves the connection
as stomp.py made it: slower, never wrong.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import itertools
import logging
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import stomp
import stomp.exception
import stomp.utils

__all__ = [
    "ACK_DELAY",
    "FEED_ACK_DELAY",
    "POST_BACKLOG",
    "RECV_BYTES",
    "Queued",
    "Wire",
    "encode_frame",
    "install",
    "parse_header_lines",
    "split_frames",
]

log = logging.getLogger("jmslike.stomp.wire")

RECV_BYTES = 65536
"""Bytes asked of one ``recv``: many MESSAGE frames at once under load (stomp.py: 1 KiB)."""

ACK_DELAY = 0.002
"""Seconds a held frame (:meth:`Wire.hold`) waits at most for others to go with it.

Short beside any broker's redelivery or heart-beat times, long beside the 30 to 40 µs a
receive loop spends per message, so that a loop going at speed writes its ACKs several
at a time and one that stops leaves none behind for long."""

FEED_ACK_DELAY = 0.010
""":data:`ACK_DELAY` for the ACKs of a listener container's sessions (their shared
subscription, ``jmslike._feed``). Each time the flusher writes held frames it wakes
twice and takes the interpreter lock from the container's sessions; with a 1 ms handler
at concurrency 1 the 2 ms came before the feed's batch (a quarter of its window) filled,
so the flusher woke every other message. Held up to 10 ms, the batch fills first and
the session writes it: 40% fewer thread switches and 11-13% less client CPU a message at
concurrency 1, the rate at concurrency 8 unchanged (docs/performance.md, "Fewer thread
switches a message"). Below such rates an ACK waits 10 ms at most. Where the client gate
keeps the groups (RabbitMQ), a group stays with the session that finished it until its
ACK is written: up to 10 ms, not 2."""

POST_BACKLOG = 1000
"""Frames a wire's outbox may hold for a new SEND still to be posted (:meth:`Wire.post`):
about a megabyte of 1 KiB messages, a few milliseconds of a broker's reading."""

_READ = "_BaseTransport__read_frames"
"""stomp.py's receiver loop calls this (name-mangled ``__read_frames``) for more frames."""

ParsedFrame = tuple[str, dict[str, str], bytes]

_BROKER_FRAMES = frozenset(("CONNECTED", "MESSAGE", "RECEIPT", "ERROR"))
"""The frames a STOMP 1.2 broker sends (stomp.py reads the command case-insensitively)."""

_ESCAPES = {ord("\\"): "\\\\", ord("\n"): "\\n", ord(":"): "\\c", ord("\r"): "\\r"}
_ESCAPED = re.compile(r"\\.")
_UNESCAPES = {"\\\\": "\\", "\\n": "\n", "\\c": ":", "\\r": "\r"}


def _unescape(match: re.Match[str]) -> str:
    """STOMP 1.2 escapes; an unknown one stays as it is, as in stomp.py."""
    return _UNESCAPES.get(match.group(0), match.group(0))


def _unescape_text(text: str) -> str:
    if "\\\\" in text:  # an escaped backslash: replacing one escape at a time is wrong
        return _ESCAPED.sub(_unescape, text)
    # (the common case: ID\cabc, a JMSMessageID, in every message)
    return text.replace("\\c", ":").replace("\\n", "\n").replace("\\r", "\r")


def parse_header_lines(lines: list[str], offset: int = 0) -> dict[str, str]:
    """stomp.py's ``utils.parse_headers``, same result, without a regular expression per
    line and two ``re.sub`` per header: a line is split at its first colon (a line with
    none, or with nothing before it, is no header), escapes are undone only where there
    is a backslash, and the first of repeated headers counts (STOMP 1.2). It took the
    cost per MESSAGE frame from 27 to 12 microseconds."""
    headers: dict[str, str] = {}
    for line in lines[offset:]:
        key, colon, value = line.partition(":")
        if not colon or not key:
            continue
        if "\\" in key:
            key = _unescape_text(key)
        if key not in headers:
            if "\\" in value:
                value = _unescape_text(value)
            headers[key] = value
    return headers


def _escape(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if "\\" in text or "\n" in text or ":" in text or "\r" in text:
        return text.translate(_ESCAPES)
    return text


def header_line_length(name: str, value: Any) -> int:
    """Bytes of the header line ``name:value`` as ``encode_frame`` writes it."""
    return len(name.encode()) + 1 + len(_escape(value).encode())


def encode_frame(command: str, headers: dict[str, Any], body: bytes | str = b"") -> bytes:
    """One STOMP 1.2 frame as stomp.py writes it: header values escaped (keys as given),
    headers sorted, ``None`` values left out, a ``content-length`` header corrected to the
    body's length in bytes."""
    data = body.encode("utf-8", errors="replace") if isinstance(body, str) else body
    if not data and len(headers) == 1:  # an ACK or NACK: one per message received
        ((key, value),) = headers.items()
        if value is not None:
            return f"{command}\n{key}:{_escape(value)}\n\n\x00".encode("utf-8", errors="replace")
    parts = [command, "\n"]
    for key in sorted(headers):
        value = headers[key]
        if value is None:
            continue
        if key == "content-length" and data:
            value = len(data)
        parts.append(f"{key}:{_escape(value)}\n")
    parts.append("\n")
    head = "".join(parts).encode("utf-8", errors="replace")
    return head + data + b"\x00" if data else head + b"\x00"


def split_frames(buffer: bytes) -> tuple[list[ParsedFrame], bytes, bool]:
    """Complete frames at the front of ``buffer``, the bytes left after them, and whether
    any end-of-line stood between frames (a heart-beat; the optional EOLs after a
    frame's NUL count too, which only says again that the broker is alive).

    A frame's headers end at the first empty line (LF or CRLF line ends); with a
    ``content-length`` its body is exactly that long (and may hold NUL bytes), otherwise
    it ends at the first NUL. Header lines are read as stomp.py 1.2 reads them: escapes
    undone, the first of repeated headers kept."""
    frames, pos, beat, _ = _split(buffer)
    return frames, buffer[pos:], beat


def _split(buffer: bytes) -> tuple[list[ParsedFrame], int, bool, int]:
    """:func:`split_frames`, with the offset of the bytes left instead of a copy, and what
    the incomplete frame there needs before it can complete: its whole size from that
    offset where ``content-length`` gave it, -1 where its body ends at a NUL not yet
    come, 0 where its headers are not complete (any bytes may complete them)."""
    frames: list[ParsedFrame] = []
    beat = False
    pos = 0
    wanted = 0
    size = len(buffer)
    while pos < size:
        first = buffer[pos]
        if first == 10:  # \n
            beat = True
            pos += 1
            continue
        if first == 13 and buffer[pos + 1 : pos + 2] == b"\n":
            beat = True
            pos += 2
            continue
        lf = buffer.find(b"\n\n", pos)
        # (bounded by lf: a search to the end of a 64 KiB buffer per frame was a third
        # of this function's time)
        crlf = buffer.find(b"\n\r\n", pos, lf if lf >= 0 else size)
        if crlf >= 0 and (lf < 0 or crlf < lf):
            head_end, body_start = crlf, crlf + 3
        elif lf >= 0:
            head_end, body_start = lf, lf + 2
        else:
            break  # headers not complete yet
        head = buffer[pos:head_end].decode("utf-8", errors="replace")
        lines = head.split("\n")
        if "\r" in head:
            lines = [line.removesuffix("\r") for line in lines]
        headers = parse_header_lines(lines, 1)
        length = headers.get("content-length")
        if length is not None and length.isdigit():
            body_end = body_start + int(length)
            if body_end >= size:
                wanted = body_end + 1 - pos
                break  # body (or its NUL) not complete yet
        else:
            body_end = buffer.find(b"\x00", body_start)
            if body_end < 0:
                wanted = -1
                break
        frames.append((lines[0], headers, buffer[body_start:body_end]))
        pos = body_end + 1
    return frames, pos, beat, wanted


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def _quick_ack(sock: Any) -> None:
    """Have the kernel acknowledge what came in at once. ActiveMQ Classic leaves Nagle's
    algorithm on at its end (its connector's ``tcpNoDelay``): a RECEIPT it writes while
    its MESSAGE frames are still unacknowledged at the TCP level waits for the client's
    delayed acknowledgement, up to 40 ms on Linux, so CLIENT_ACKNOWLEDGE (whose
    ``acknowledge()`` waits for the RECEIPT) made 50 msg/s there (docs/performance.md).
    Linux clears ``TCP_QUICKACK`` again as it sees fit: it is set after every read.
    Elsewhere, or on a socket that is not TCP, this does nothing."""
    if _QUICKACK is not None:
        with contextlib.suppress(OSError, AttributeError):
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


def _set_no_delay(sock: Any) -> None:
    """Frames go out when written. stomp.py leaves Nagle's algorithm on: a small frame
    written while the previous one is unacknowledged waits for the peer's delayed TCP
    acknowledgement, 40 ms on Linux. Four competing consumers of ordering groups on
    Artemis over STOMP, prefetch 1, made 123 msg/s that way, with 40 to 48 ms gaps."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (OSError, AttributeError):  # not TCP (a test's socket), or already closed
        log.debug("STOMP: TCP_NODELAY not set on %r", sock)


class Queued(Protocol):
    """What a frame is for (a delivery whose ACK it is, a commit whose COMMIT), told once
    the frame is in the outbox: from then on it goes to the broker without another call,
    so a caller that a KeyboardInterrupt (Ctrl-C) stopped half-way must not queue it
    again (a second ACK of one message makes RabbitMQ close the connection, and Classic
    and Artemis answer with an ERROR; both refuse a second COMMIT). The flag is set
    right after the frame is queued, with no Python call between, where CPython raises
    a KeyboardInterrupt (a function starting, a loop going round); a Ctrl-C landing
    exactly between the two is the remaining window."""

    queued: bool


class _Cell:
    """A held cumulative ACK in the outbox, replaced by the next one of its subscription
    while it is the outbox's last frame; the flush pops it, then reads it (both under
    ``Wire._cell_lock``), so a popped cell is never the last and never replaced."""

    __slots__ = ("count", "data", "key")

    def __init__(self, key: str, data: bytes) -> None:
        self.key = key
        self.data = data
        self.count = 1


class Wire:
    """The reading and writing paths of one stomp.py connection (see the module)."""

    def __init__(
        self,
        conn: stomp.Connection12,
        on_message: Callable[[Any], None],
        *,
        no_delay: bool = False,
        quick_ack: bool = True,
    ) -> None:
        self._conn = conn
        self._no_delay = no_delay
        self.quick_ack = quick_ack
        """Set ``TCP_QUICKACK`` after every read (:func:`_quick_ack`): the connection turns
        it off once CONNECTED names a broker that does not need it."""
        self._transport: Any = conn.transport
        self._on_message = on_message
        self._parts: list[bytes] = []
        """The bytes of an incomplete frame, as they came: joined only once the frame can
        be complete (:meth:`_complete`), so that a frame of many reads costs its size to
        read, not its size times the number of reads (a 100 MiB body took over 30 s
        when every read copied and searched the whole frame so far)."""
        self._have = 0
        self._wanted = 0
        self._outbox: deque[bytes | _Cell] = deque()
        self._cells: dict[str, _Cell] = {}
        """Each subscription's cell still in the outbox (:meth:`hold` with a key)."""
        self._cell_lock = threading.Lock()
        self._written: deque[Callable[[bool], None]] = deque()
        """Callbacks of held frames (:meth:`hold`), each queued after its frame."""
        self._done: deque[tuple[Callable[[bool], None], bool]] = deque()
        """Callbacks whose frames went (True) or failed (False), to be called by
        :meth:`write_held` (see the module's docstring)."""
        self._writing = threading.Lock()
        """Held by the one thread writing the outbox to the socket."""
        self._due_at: float | None = None
        """When the flusher writes the frames held (set by :meth:`_schedule`, cleared by
        the flusher); None: nothing is held, or the flusher is writing it now."""
        self._tuned: Any = None
        """The socket ``TCP_NODELAY`` was looked at for (stomp.py makes one per connect)."""
        self._stomp_read: Callable[[], None] = getattr(self._transport, _READ)
        """stomp.py's own reading (``install`` puts :meth:`read_frames` in its place)."""
        self._writer: _Writer | None = None
        """The thread writing posted frames (:meth:`post`), while there is one."""

    @property
    def writes(self) -> bool:
        """Whether frames go through :meth:`write`: stomp.py 9 turns a TLS connection
        non-blocking once connected and writes it from its own loop; so does this
        module's reading then."""
        return bool(self._transport.blocking)

    # -- writing -------------------------------------------------------------------

    def write(self, data: bytes, *, wait: bool = True, mark: Queued | None = None) -> None:
        """Queue ``data`` and write the outbox if the socket is free. ``wait``: return only
        once ``data`` is written (raising if writing failed); otherwise leave it to the
        thread writing now, which writes the outbox again before it lets go. ``mark``: see
        :class:`Queued`."""
        outbox = self._outbox
        outbox.append(data)
        if mark is not None:  # (no call between: see Queued)
            mark.queued = True
        try:
            while outbox:
                if not self._writing.acquire(blocking=wait):
                    return  # the writer re-checks the outbox after letting go
                try:
                    self._flush()
                finally:
                    self._writing.release()
                wait = False  # ours is written: only help with what came meanwhile
        finally:
            if self._done:  # held frames went with ours: the flusher calls their callbacks
                self._schedule(ACK_DELAY)

    def post(self, data: bytes) -> None:
        """Queue ``data`` (a SEND nobody waits for, made on an event loop) for this wire's
        writer thread, never writing on the caller's (see the module). Order holds as for
        :meth:`write`; a write that fails is the connection's failure, which its reader
        reports."""
        self._outbox.append(data)
        writer = self._writer
        if writer is None or not writer.wake():
            writer = self._writer = _Writer(self)
            writer.wake()

    @property
    def backlog(self) -> int:
        """Frames queued and not written yet."""
        return len(self._outbox)

    def hold(
        self,
        data: bytes,
        batch: int,
        written: Callable[[bool], None] | None = None,
        *,
        key: str | None = None,
        delay: float = ACK_DELAY,
        mark: Queued | None = None,
    ) -> None:
        """Queue ``data`` (an ACK nobody waits for, or a SEND of a producer that streams)
        without writing it, unless ``batch``
        frames now wait: it goes with the next frame written, or ``delay`` seconds from
        now (:data:`ACK_DELAY`; :data:`FEED_ACK_DELAY` for a listener container's ACKs).
        Order holds as for :meth:`write`: whatever is written next goes after it.
        ``written(ok)`` is called once it went (True) or failed (False), by this thread
        or the flusher. ``key``: a cumulative ACK of that subscription (see the module);
        the ACKs of one subscription must come from one thread at a time. ``mark``: see
        :class:`Queued`."""
        if key is not None and written is None:
            self._hold_cumulative(key, data, batch, delay, mark)
            return
        outbox = self._outbox
        outbox.append(data)  # (before _due_at is read: see _Flusher.run)
        if written is not None:
            self._written.append(written)  # after its frame: see _flush
        if mark is not None:  # (no call since the frame was queued: see Queued)
            mark.queued = True  # (and ``written`` is told: it must not be given again)
        if len(outbox) >= batch:
            self.write_held()
        else:
            self._schedule(delay)

    def _hold_cumulative(
        self, key: str, data: bytes, batch: int, delay: float, mark: Queued | None
    ) -> None:
        outbox = self._outbox
        with self._cell_lock:
            cell = self._cells.get(key)
            try:
                last = outbox[-1]
            except IndexError:  # empty, or the flusher took the last one meanwhile
                last = None
            if cell is not None and last is cell:
                cell.data = data
                if mark is not None:
                    mark.queued = True
                cell.count += 1
                count = cell.count
            else:  # a frame went in after it (or it went): this one comes after that
                cell = self._cells[key] = _Cell(key, data)
                outbox.append(cell)  # (before _due_at is read: see _Flusher.run)
                if mark is not None:
                    mark.queued = True
                count = 1
        if count >= batch:
            self.write_held()
        else:
            self._schedule(delay)

    def _schedule(self, delay: float) -> None:
        """Have the flusher write the outbox ``delay`` seconds from now, unless it is
        due sooner already. (Unlocked: two holders racing may both tell the flusher, or
        the later time may win; either way the frames go, at the latest delay asked.)"""
        at = time.monotonic() + delay
        due_at = self._due_at
        if due_at is None or at < due_at:
            self._due_at = at
            _FLUSHER.add(self, at)

    def write_held(self) -> None:
        """Write what the outbox holds, unless another thread is writing (it writes the
        outbox again before it lets go; the flusher calls the callbacks its frames
        carried), then call the callbacks of the frames written."""
        try:
            while self._outbox or self._written:
                if not self._writing.acquire(blocking=False):
                    if self._written or self._done:
                        self._schedule(ACK_DELAY)  # the writer calls no callbacks: come back
                    return
                try:
                    self._flush()
                finally:
                    self._writing.release()
        finally:
            done = self._done
            while done:
                try:
                    callback, ok = done.popleft()
                except IndexError:  # the flusher (or a holder) took the last one
                    break
                try:
                    callback(ok)
                except Exception:  # one consumer's bookkeeping must not stop the others'
                    log.exception("STOMP: callback of a held frame failed")

    def _flush(self) -> None:
        written = self._written
        taken = [written.popleft() for _ in range(len(written))]
        # Taken before the outbox is read: each callback was queued after its frame, so
        # its frame is in the outbox now, or went with an earlier write.
        chunks: list[bytes] = []
        outbox = self._outbox
        while outbox:
            item = outbox.popleft()
            if isinstance(item, _Cell):
                with self._cell_lock:
                    if self._cells.get(item.key) is item:
                        del self._cells[item.key]
                    chunks.append(item.data)
            else:
                chunks.append(item)
        sock = self._transport.socket
        if not chunks:
            self._done.extend((callback, sock is not None) for callback in taken)
            return
        try:
            if sock is None:
                raise stomp.exception.NotConnectedException()
            if sock is not self._tuned:
                self._tuned = sock
                if self._no_delay:
                    _set_no_delay(sock)
            sock.sendall(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        except BaseException:
            self._done.extend((callback, False) for callback in taken)
            raise
        if taken:
            self._done.extend((callback, True) for callback in taken)

    def push(self) -> None:
        """Where Nagle's algorithm stays on (ActiveMQ Classic, ``Dialect.tcp_no_delay``, and
        the connections RabbitMQ consumers get of their own):
        send what the socket holds back now, for a frame whose RECEIPT the caller waits
        for. A COMMIT written while the transaction's SEND was not yet acknowledged at the
        TCP level waited for the broker's delayed acknowledgement, 40 ms on Linux: a
        transacted producer made about 22 commits a second on Classic. Turning
        ``TCP_NODELAY`` on pushes the queued data out; turned off again, Nagle holds the
        next small write as before (Linux clears the push with the next write queued), so
        an UNSUBSCRIBE still waits behind its ACK (the reason Nagle stays on there)."""
        if self._no_delay:
            return
        sock = self._transport.socket
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        except (OSError, AttributeError):  # not TCP (a test's socket), or already closed
            log.debug("STOMP: could not push %r", sock)

    def set_no_delay(self) -> None:
        """Set ``TCP_NODELAY`` from the next write on (the connection learns from CONNECTED
        which broker it talks to, and so whether it wants it)."""
        self._no_delay = True
        self._tuned = None

    def send(self, encoded_frame: bytes) -> None:
        """stomp.py's ``Transport.send`` (CONNECT, heart-beats, DISCONNECT, frames jmslike
        has stomp.py build): through the outbox, so that order holds, and waited for."""
        self.write(encoded_frame)

    # -- reading -------------------------------------------------------------------

    def read_frames(self) -> None:
        """stomp.py's ``__read_frames``: called by its receiver loop while it runs; raises
        its ``ConnectionClosedException`` when the broker closed the socket."""
        transport = self._transport
        if not transport.blocking:
            self._stomp_read()
            return
        if not transport.running:
            return
        sock = transport.socket
        try:
            if sock is None:
                raise OSError("socket closed")
            chunk = sock.recv(RECV_BYTES)
            if self.quick_ack:
                _quick_ack(sock)
        except (TimeoutError, BlockingIOError):
            return
        except OSError as exc:
            if getattr(exc, "errno", None) in (errno.EAGAIN, errno.EINTR):
                return
            log.debug("STOMP socket read failed: %s", exc)
            chunk = b""
        if not chunk:
            raise stomp.exception.ConnectionClosedException()
        self._conn.on_heartbeat()  # bytes came: the broker is alive
        parts = self._parts
        if parts:
            parts.append(chunk)
            self._have += len(chunk)
            if not self._complete(chunk):
                return
            buffer = b"".join(parts)
        else:
            buffer = chunk
        frames, pos, _, wanted = _split(buffer)
        if pos < len(buffer):
            self._parts = [buffer[pos:] if pos else buffer]
            self._have = len(buffer) - pos
            self._wanted = wanted
        elif parts:
            self._parts = []
        for command, headers, body in frames:
            frame = stomp.utils.Frame(command, headers, body)
            if command == "MESSAGE":
                self._on_message(frame)
            elif command.upper() in _BROKER_FRAMES:
                transport.process_frame(frame, body)
            else:
                # No STOMP broker sends this: the peer is broken or lying, and what else
                # it sends cannot be trusted. stomp.py only logged it and read on; the
                # connection is dropped instead (socket closed), so the application
                # hears of it, typed (tests/integration/test_fuzz_brokers.py).
                level = logging.WARNING if transport.is_connected() else logging.DEBUG
                log.log(level, "STOMP: the broker sent %r, not a STOMP frame", command[:40])
                raise stomp.exception.ConnectionClosedException()

    def _complete(self, chunk: bytes) -> bool:
        """Whether the incomplete frame may be complete now that ``chunk`` came."""
        wanted = self._wanted
        if wanted > 0:
            return self._have >= wanted
        if wanted < 0:
            return b"\x00" in chunk
        return True


class _Flusher:
    """One thread for the process: writes the frames wires hold (:meth:`Wire.hold`) when
    they are due (:meth:`Wire._schedule`: :data:`ACK_DELAY` or :data:`FEED_ACK_DELAY`
    after the first of them was held). It ends after a second with nothing to do, and
    the next hold starts it again."""

    IDLE = 1.0

    def __init__(self) -> None:
        self._lock = threading.Condition(threading.Lock())
        self._due: list[tuple[float, int, Wire]] = []
        """(when, order, wire): a heap, soonest first; an entry whose wire was written
        or put later since is skipped (:meth:`run`)."""
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, wire: Wire, at: float) -> None:
        with self._lock:
            due = self._due
            heapq.heappush(due, (at, next(self._order), wire))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self.run, name="jmslike-stomp-acks", daemon=True
                )
                self._thread.start()
            elif due[0][2] is wire and due[0][0] == at:
                self._lock.notify()  # sooner than what the thread waits for

    def run(self) -> None:
        lock, due = self._lock, self._due
        while True:
            with lock:
                if not due:
                    lock.wait(self.IDLE)
                    if not due:
                        self._thread = None
                        return
                now = time.monotonic()
                if due[0][0] > now:
                    lock.wait(due[0][0] - now)  # an earlier one wakes it (add)
                    continue
                wires = []
                while due and due[0][0] <= now:
                    wires.append(heapq.heappop(due)[2])
            for wire in wires:
                due_at = wire._due_at
                if due_at is None or due_at > now:
                    continue  # written since, or put later: another entry says when
                # Cleared before the outbox is read: a frame held after this line sees
                # no time set and tells the flusher again; one held before it is in the
                # outbox.
                wire._due_at = None
                try:
                    wire.write_held()
                except Exception as exc:  # the connection went: its reader says so
                    log.debug("STOMP: held frames not written: %r", exc)


_FLUSHER = _Flusher()


class _Writer:
    """The thread that writes one wire's posted frames (:meth:`Wire.post`). It ends after
    :attr:`IDLE` seconds with nothing posted; a post after that starts another."""

    IDLE = 1.0

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._posted = threading.Event()
        self._lock = threading.Lock()
        self._alive = True
        threading.Thread(target=self._run, name="jmslike-stomp-writer", daemon=True).start()

    def wake(self) -> bool:
        """Have the thread write the outbox; False if it has ended (start another)."""
        with self._lock:
            if not self._alive:
                return False
            if not self._posted.is_set():
                self._posted.set()
            return True

    def _run(self) -> None:
        posted, wire = self._posted, self._wire
        while True:
            if not posted.wait(self.IDLE):
                with self._lock:
                    if not posted.is_set():  # (a post under the lock would have set it)
                        self._alive = False
                        return
            posted.clear()  # before the outbox is read: a later post wakes it again
            try:
                wire.write_held()
            except Exception as exc:  # the connection went: its reader says so
                log.debug("STOMP: posted frames not written: %r", exc)


def install(
    conn: stomp.Connection12,
    on_message: Callable[[Any], None],
    *,
    no_delay: bool = False,
    quick_ack: bool = True,
) -> Wire | None:
    """Put a :class:`Wire` on ``conn`` before it connects; None (and stomp.py's own paths
    kept) where its transport is not the kind this module knows. ``no_delay``: set
    ``TCP_NODELAY`` on the socket (see :func:`_set_no_delay`); ``quick_ack``: set
    ``TCP_QUICKACK`` after every read (see :func:`_quick_ack`)."""
    transport: Any = getattr(conn, "transport", None)
    known = (
        transport is not None
        and callable(getattr(transport, _READ, None))
        and callable(getattr(transport, "process_frame", None))
        and getattr(transport, "blocking", None) is True
        and callable(getattr(conn, "on_heartbeat", None))
        and "socket" in vars(transport)
    )
    if not known:
        log.debug("stomp.py %s: its own frame paths kept", getattr(stomp, "__version__", "?"))
        return None
    wire = Wire(conn, on_message, no_delay=no_delay, quick_ack=quick_ack)
    setattr(transport, _READ, wire.read_frames)
    transport.send = wire.send
    return wire
