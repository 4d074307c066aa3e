"""jmslike_stomp.wire reads and writes frames as stomp.py does (tests compare the two on
generated frames), and its outbox loses no frame and keeps their order."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("stomp")

from hypothesis import given, settings
from hypothesis import strategies as st
from stomp import utils

from jmslike_stomp import transport, wire

_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_KEYS = st.text(
    st.characters(codec="utf-8", blacklist_characters=":\\\n\r"),
    min_size=1,
    max_size=8,
)
_HEADERS = st.dictionaries(_KEYS, _TEXT, max_size=5)
_COMMANDS = st.sampled_from(["MESSAGE", "RECEIPT", "ERROR", "CONNECTED"])


def _stomp_py_bytes(command: str, headers: dict[str, str], body: bytes) -> bytes:
    """What stomp.py 1.2's ``send_frame`` writes for a frame (its escaping, then its
    ``convert_frame`` and ``pack``)."""
    escaped = {}
    for key, value in headers.items():
        half = value.replace("\\", "\\\\").replace("\n", "\\n")
        escaped[key] = half.replace(":", "\\c").replace("\r", "\\r")
    packed: bytes = utils.pack(utils.convert_frame(utils.Frame(command, escaped, body)))
    return packed


@settings(max_examples=300, deadline=None)
@given(_COMMANDS, _HEADERS, st.binary(max_size=40))
def test_encode_frame_writes_what_stomp_py_writes(
    command: str, headers: dict[str, str], body: bytes
) -> None:
    assert wire.encode_frame(command, headers, body) == _stomp_py_bytes(command, headers, body)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_COMMANDS, _HEADERS, st.binary(max_size=40)), min_size=1, max_size=6),
    st.data(),
)
def test_split_frames_reads_back_any_cut_of_a_stream(
    frames: list[tuple[str, dict[str, str], bytes]], data: st.DataObject
) -> None:
    """Frames with a content-length (the body may hold NUL), without one (a body without
    NUL), EOLs between them (heart-beats), the stream cut anywhere: each frame comes out
    once, whole, in order, with stomp.py's reading of its headers."""
    stream = b""
    expected = []
    for command, drawn, body in frames:
        headers = {**drawn, "content-length": str(len(body))} if b"\x00" in body else drawn
        encoded = wire.encode_frame(command, headers, body)
        stream += encoded + data.draw(st.sampled_from([b"", b"\n", b"\r\n", b"\n\n"]))
        parsed = utils.parse_frame(encoded[:-1])
        parsed_headers = transport._STOMP_PARSE_HEADERS(
            encoded.split(b"\n\n", 1)[0].decode().split("\n"), 1
        )
        expected.append((parsed.cmd, parsed_headers, body))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=4)))
    got = []
    buffer = b""
    start = 0
    chunks = []
    for cut in [*cuts, len(stream)]:
        chunks.append(stream[start:cut])
        buffer += stream[start:cut]
        start = cut
        out, buffer, _ = wire.split_frames(buffer)
        got.extend(out)
    assert got == expected
    assert buffer.strip(b"\r\n") == b""
    # The connection's own read path, fed the same reads, hands out the same frames.
    assert _read_through_wire([chunk for chunk in chunks if chunk]) == expected


class _Reads:
    """A socket whose ``recv`` returns the given reads, one per call."""

    def __init__(self, reads: list[bytes]) -> None:
        self.reads = list(reads)

    def recv(self, size: int) -> bytes:
        assert len(self.reads[0]) <= size
        return self.reads.pop(0)


class _ReadConn:
    def __init__(self, reads: list[bytes]) -> None:
        self.transport = _Transport()
        self.transport.socket = _Reads(reads)  # type: ignore[assignment]
        self.transport.process_frame = self._frame
        self.frames: list[tuple[str, dict[str, str], bytes]] = []

    def _frame(self, frame: Any, body: bytes) -> None:
        self.frames.append((frame.cmd, frame.headers, body))

    def on_heartbeat(self) -> None:
        pass


def _read_through_wire(reads: list[bytes]) -> list[tuple[str, dict[str, str], bytes]]:
    conn = _ReadConn(reads)
    w = wire.Wire(
        conn,  # type: ignore[arg-type]
        lambda frame: conn.frames.append((frame.cmd, frame.headers, frame.body)),
        quick_ack=False,
    )
    for _ in range(len(reads)):
        w.read_frames()
    return conn.frames


def test_a_frame_of_many_reads_is_joined_once_it_can_be_complete() -> None:
    """A large body comes in many reads: the wire keeps them apart until the frame's
    ``content-length`` (or, without one, a NUL) says it can be complete, then hands out
    the frame whole. Every read copied and searched the whole frame so far before, and a
    100 MiB message took longer than a 30 s receive over STOMP."""
    body = bytes(range(256)) * 1024  # NUL bytes inside: only content-length can end it
    frame = wire.encode_frame("MESSAGE", {"content-length": str(len(body))}, body)
    reads = [frame[i : i + 4096] for i in range(0, len(frame), 4096)]
    conn = _ReadConn(reads)
    w = wire.Wire(
        conn,  # type: ignore[arg-type]
        lambda f: conn.frames.append((f.cmd, f.headers, f.body)),
        quick_ack=False,
    )
    joins = 0
    for _ in range(len(reads) - 1):
        w.read_frames()
        joins += len(w._parts) == 1  # a parse left the rest as one piece
    assert joins == 1  # only the first read was parsed; the others were kept apart
    w.read_frames()
    assert conn.frames == [("MESSAGE", {"content-length": str(len(body))}, body)]
    assert w._parts == []
    text = "é" * 100_000  # no content-length: the NUL ends it
    frame = wire.encode_frame("MESSAGE", {"destination": "/queue/q"}, text.encode())
    assert _read_through_wire([frame[i : i + 4096] for i in range(0, len(frame), 4096)]) == [
        ("MESSAGE", {"destination": "/queue/q"}, text.encode())
    ]


def test_split_frames_waits_for_a_body_longer_than_what_came() -> None:
    head = b"MESSAGE\ncontent-length:5\nsubscription:1\n\n"
    assert wire.split_frames(head + b"a\x00b") == ([], head + b"a\x00b", False)
    frames, rest, beat = wire.split_frames(b"\n" + head + b"a\x00bcd\x00\n")
    assert frames == [("MESSAGE", {"content-length": "5", "subscription": "1"}, b"a\x00bcd")]
    assert (rest, beat) == (b"", True)


def test_split_frames_reads_crlf_line_ends() -> None:
    frames, rest, _ = wire.split_frames(b"RECEIPT\r\nreceipt-id:r1\r\n\r\n\x00")
    assert frames == [("RECEIPT", {"receipt-id": "r1"}, b"")]
    assert rest == b""


class _Socket:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.gate = threading.Event()

    def sendall(self, data: bytes) -> None:
        self.gate.wait(5)
        self.written.append(data)


class _Transport:
    blocking = True
    running = True

    def __init__(self) -> None:
        self.socket = _Socket()

    def _BaseTransport__read_frames(self) -> None:  # noqa: N802 (stomp.py's name)
        raise AssertionError("not read here")


class _Conn:
    def __init__(self) -> None:
        self.transport = _Transport()


def test_outbox_keeps_order_and_loses_nothing_while_a_write_is_under_way() -> None:
    """A writer blocked in sendall: frames queued meanwhile without waiting are written
    by it afterwards, in the order queued, and one that waits returns once written."""
    conn = _Conn()
    w = wire.Wire(conn, lambda frame: None)
    first = threading.Thread(target=w.write, args=(b"1",))
    first.start()
    while not w._writing.locked():
        pass
    for number in range(2, 6):
        w.write(str(number).encode(), wait=False)  # returns at once: the writer has them
    waited = threading.Thread(target=w.write, args=(b"6",))
    waited.start()
    conn.transport.socket.gate.set()
    first.join(5)
    waited.join(5)
    assert b"".join(conn.transport.socket.written) == b"123456"
    assert not w._outbox


def test_held_frames_go_with_the_next_write_a_full_batch_or_the_flusher() -> None:
    """Wire.hold: an ACK held back is written with the next frame, in order; a batch of
    held frames goes in one write; a lone one goes within ACK_DELAY (the flusher)."""
    conn = _Conn()
    conn.transport.socket.gate.set()
    written = conn.transport.socket.written
    w = wire.Wire(conn, lambda frame: None)
    w.hold(b"a", 3)
    w.hold(b"b", 3)
    assert written == []
    w.write(b"c")
    assert written == [b"abc"]
    for data in (b"d", b"e", b"f"):
        w.hold(data, 3)
    assert written == [b"abc", b"def"]
    w.hold(b"g", 3)
    deadline = time.monotonic() + 5
    while written[-1] != b"g" and time.monotonic() < deadline:
        time.sleep(0.001)
    assert written == [b"abc", b"def", b"g"]
    assert not w._outbox


def test_each_held_frame_goes_by_its_own_delay_the_sooner_one_taking_the_rest_along() -> None:
    """Wire.hold's ``delay``: a listener container's ACK (FEED_ACK_DELAY) waits longer
    than a receive loop's (ACK_DELAY), and a frame held with the shorter delay takes the
    longer-held ones along, in order. Two wires' deadlines are kept apart by the one
    flusher."""
    long_delay = 0.3  # long beside a loaded test machine's scheduling, short for a test
    conn, other_conn = _Conn(), _Conn()
    for c in (conn, other_conn):
        c.transport.socket.gate.set()
    written, other_written = conn.transport.socket.written, other_conn.transport.socket.written
    w = wire.Wire(conn, lambda frame: None)
    other = wire.Wire(other_conn, lambda frame: None)

    def wait_for(frames: list[bytes], count: int) -> float:
        """Seconds until ``frames`` has ``count`` writes (5 at most)."""
        started = time.monotonic()
        while len(frames) < count and time.monotonic() - started < 5:
            time.sleep(0.001)
        return time.monotonic() - started

    held = time.monotonic()
    w.hold(b"a", 10, delay=long_delay)
    other.hold(b"x", 10, delay=long_delay)
    w.hold(b"b", 10)  # ACK_DELAY: sooner, and it takes "a" along
    assert wait_for(written, 1) < long_delay
    assert written == [b"ab"]
    assert other_written == []  # its own deadline has not come
    wait_for(other_written, 1)
    assert other_written == [b"x"]
    assert time.monotonic() - held >= long_delay * 0.9
    w.hold(b"c", 10, delay=long_delay)
    assert long_delay * 0.9 <= wait_for(written, 2) < 5
    assert written == [b"ab", b"c"]
    assert not w._outbox and not other._outbox
    assert w._due_at is None and other._due_at is None


def test_a_held_frames_callback_comes_after_its_write_from_the_holder_or_the_flusher() -> None:
    """Wire.hold's ``written``: called once the frame went, never before; by the thread
    that fills a batch, or by the flusher, never by another writer (which may hold locks
    the callback needs); False when the write failed."""
    conn = _Conn()
    socket = conn.transport.socket
    socket.gate.set()
    w = wire.Wire(conn, lambda frame: None)
    calls: list[tuple[bytes, bool, str]] = []

    def note(data: bytes) -> Callable[[bool], None]:
        def written(ok: bool) -> None:
            assert data in b"".join(socket.written) or not ok
            calls.append((data, ok, threading.current_thread().name))

        return written

    def settled(count: int) -> None:
        deadline = time.monotonic() + 5
        while len(calls) < count and time.monotonic() < deadline:
            time.sleep(0.001)

    w.hold(b"a", 2, note(b"a"))
    w.hold(b"b", 2, note(b"b"))  # a full batch: written and called here
    assert calls == [(b"a", True, "MainThread"), (b"b", True, "MainThread")]
    w.hold(b"c", 3, note(b"c"))
    other = threading.Thread(target=w.write, args=(b"d",), name="an-application-send")
    other.start()
    other.join(5)
    assert socket.written[-1] == b"cd"
    settled(3)  # the SEND carried it; the flusher calls back
    assert calls[2] == (b"c", True, "jmslike-stomp-acks")
    w.hold(b"e", 3, note(b"e"))
    settled(4)  # alone: the flusher writes it and calls back
    assert calls[3] == (b"e", True, "jmslike-stomp-acks")
    conn.transport.socket = None  # the connection went
    w.hold(b"f", 3, note(b"f"))
    settled(5)
    assert calls[4] == (b"f", False, "jmslike-stomp-acks")
    assert not w._written and not w._done


def test_a_cumulative_ack_replaces_the_one_held_before_it_until_a_frame_follows() -> None:
    """Wire.hold with a key (a subscription with ``ack:client``): the newest ACK takes the
    place of the one held before it, so one goes per batch; once any frame is queued
    after it, the next ACK comes after that frame (an ACK never moves past a frame it
    followed); subscriptions do not replace each other's; a lone one goes within
    ACK_DELAY; nothing is left behind."""
    conn = _Conn()
    conn.transport.socket.gate.set()
    written = conn.transport.socket.written
    w = wire.Wire(conn, lambda frame: None)
    w.hold(b"a1", 3, key="a")
    w.hold(b"a2", 3, key="a")
    assert written == []
    w.hold(b"a3", 3, key="a")  # the third of the batch: only the newest is written
    assert written == [b"a3"]
    w.hold(b"a4", 3, key="a")
    w.hold(b"b1", 3, key="b")  # another subscription's: a cell of its own
    w.hold(b"a5", 3, key="a")  # b1 follows a4 now: a5 comes after b1
    w.write(b"S")
    assert written[-1] == b"a4b1a5S"
    w.hold(b"a6", 3, key="a")
    w.hold(b"a7", 3, key="a")
    deadline = time.monotonic() + 5
    while written[-1] != b"a7" and time.monotonic() < deadline:
        time.sleep(0.001)
    assert written[-1] == b"a7"  # the flusher wrote the newest alone
    assert not w._outbox and not w._cells


def test_cumulative_acks_of_one_subscription_are_never_lost_or_reordered() -> None:
    """One thread holds a subscription's ACKs in order while others write and the flusher
    runs: the last ACK of every write is the newest held before it, each write's ACKs
    ascend, and the last one written is the last one held."""
    conn = _Conn()
    conn.transport.socket.gate.set()
    written = conn.transport.socket.written
    w = wire.Wire(conn, lambda frame: None)
    stop = threading.Event()

    def sends() -> None:
        while not stop.is_set():
            w.write(b"S;", wait=False)
            time.sleep(0.0001)

    other = threading.Thread(target=sends)
    other.start()
    try:
        for number in range(1, 3001):
            w.hold(f"{number};".encode(), 16, key="x")
    finally:
        stop.set()
        other.join(5)
    deadline = time.monotonic() + 5
    while w._outbox and time.monotonic() < deadline:
        time.sleep(0.001)
    acks = [int(part) for part in b"".join(written).decode().split(";") if part.isdigit()]
    assert acks == sorted(acks) and len(set(acks)) == len(acks)
    assert acks[-1] == 3000


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(st.sampled_from("\\cnrq:ab"), max_size=10), max_size=6))
def test_header_lines_read_as_stomp_py_reads_them(lines: list[str]) -> None:
    """Escapes anywhere, escaped backslashes before c/n/r, unknown escapes, repeated keys."""
    assert wire.parse_header_lines(lines) == transport._STOMP_PARSE_HEADERS(lines, 0)


class _RecordingSocket(socket.socket):
    """A real TCP socket that notes its ``setsockopt`` calls."""

    def __init__(self) -> None:
        super().__init__(socket.AF_INET, socket.SOCK_STREAM)
        self.options: list[tuple[int, int, int]] = []

    def setsockopt(self, level: int, option: int, value: Any, *rest: Any) -> None:  # type: ignore[override]
        self.options.append((level, option, value))
        super().setsockopt(level, option, value, *rest)


@pytest.mark.parametrize("no_delay", [False, True])
def test_push_sends_what_nagle_holds_and_leaves_nagle_as_it_was(no_delay: bool) -> None:
    """Where Nagle's algorithm stays on (ActiveMQ Classic), a frame whose RECEIPT the
    caller waits for is pushed out (``TCP_NODELAY`` on, then off again: a COMMIT behind
    an unacknowledged SEND waited 40 ms for the broker's delayed acknowledgement); Nagle
    is on again afterwards. Where ``TCP_NODELAY`` is set for good, nothing to do."""
    with socket.create_server(("127.0.0.1", 0)) as server, _RecordingSocket() as sock:
        sock.connect(server.getsockname())
        conn = _Conn()
        conn.transport.socket = sock  # type: ignore[assignment]
        frames = wire.Wire(conn, lambda frame: None, no_delay=no_delay)  # type: ignore[arg-type]
        frames.push()
        nodelay = (socket.IPPROTO_TCP, socket.TCP_NODELAY)
        assert sock.options == ([] if no_delay else [(*nodelay, 1), (*nodelay, 0)])
        assert sock.getsockopt(*nodelay) == 0
