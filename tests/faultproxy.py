"""A TCP relay between a client and a real broker that a test can break on purpose.

``127.0.0.1:<port>`` (a free port, or the one asked for) forwards to the broker. What it
can do to every connection through it, as networks and broker restarts do:

* ``cut()``: close both sides at once (a broker restart, a reset connection);
  ``cut_one(index)`` does it to one connection only (the others stay up);
* ``stall()`` / ``resume()``: stop moving bytes with both sockets left open (a frozen
  peer, a black-holed route); only heart-beats or idle timeouts can notice it;
* ``mute()``: stop moving the broker's bytes only (what the client writes still reaches
  the broker, its answers wait): a frame taken whose answer is lost with a cut;
* ``half_close()``: shut the broker-to-client direction only (the client reads EOF while
  its writes still go through);
* ``slow(bytes_per_second)`` / ``fast()``: move bytes at that rate, both ways, reading
  little at a time, so the kernel buffers behind the relay fill (a slow reader, a thin
  link): the peer is slow, not dead, and must not be taken for dead.

Threads, not asyncio, so that a test thread can call it while jmslike runs its own
threads. Used by tests/integration/test_faults.py and test_failover.py.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

__all__ = ["Relay"]

SLOW_CHUNK = 1024
"""Bytes read and written at a time while slowed."""


class Relay:
    """127.0.0.1:<port> -> ``target``, with faults to inject."""

    def __init__(self, target: tuple[str, int], name: str = "", port: int = 0) -> None:
        self.target = target
        self.name = name
        """What the relay stands for (a test case's id), for reports."""
        self._server = socket.create_server(("127.0.0.1", port))
        self.port = self._server.getsockname()[1]
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._flowing = threading.Event()
        self._flowing.set()
        self._answering = threading.Event()
        """Clear while muted: the broker's bytes wait."""
        self._answering.set()
        self._rate: float | None = None
        """Bytes a second each way while ``slow``; None: as fast as the sockets go."""
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True, name="relay-accept").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.accepted += 1
                self._pairs.append((client, upstream))
            for a, b, answers in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pump, args=(a, b, answers), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, answers: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(SLOW_CHUNK if self._rate else 65536):
                self._flowing.wait()
                if answers:
                    self._answering.wait()
                rate = self._rate
                if rate is None:
                    dst.sendall(data)
                    continue
                for start in range(0, len(data), SLOW_CHUNK):
                    piece = data[start : start + SLOW_CHUNK]
                    dst.sendall(piece)
                    time.sleep(len(piece) / rate)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        # Over: ``cut_one``'s indexes count the connections still open (a connection the
        # client opens and closes on its own, such as jmslike's probe of a RabbitMQ
        # queue over AMQP, must not shift them).
        with self._lock:
            self._pairs = [pair for pair in self._pairs if src not in pair]
        for s in (src, dst):  # (the other direction's thread, woken above, ends too)
            s.close()

    def cut(self) -> None:
        """Drop every connection through the relay, both ways. Bytes a stall held back
        are dropped with them, as a cut connection's are: the sockets are closed before
        the stall is lifted (new connections then flow), never the other way round."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        self._drop(pairs)
        self._flowing.set()
        self._answering.set()

    def cut_one(self, index: int) -> None:
        """Drop one connection, both ways: the ``index``-th of those still open through
        the relay, in the order it accepted them (0: the oldest). A client with several
        connections to one broker loses that one; the others stay up."""
        with self._lock:
            pair = self._pairs.pop(index)
        self._drop([pair])

    @staticmethod
    def _drop(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def stall(self) -> None:
        """Stop forwarding; the sockets stay open and bytes wait (until resume or cut)."""
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()
        self._answering.set()

    def mute(self) -> None:
        """Hold the broker's bytes (until resume or cut); the client's still go through."""
        self._answering.clear()

    def slow(self, bytes_per_second: float) -> None:
        """From now on move at most ``bytes_per_second`` each way (per connection)."""
        if bytes_per_second <= 0:
            raise ValueError(f"bytes_per_second must be positive, not {bytes_per_second!r}")
        self._rate = float(bytes_per_second)

    def fast(self) -> None:
        self._rate = None

    def half_close(self) -> None:
        """The client reads EOF; what it writes still reaches the broker."""
        with self._lock:
            pairs = list(self._pairs)
        for client, _upstream in pairs:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Stop listening (a thread blocked in accept() would otherwise go on accepting:
        closing the socket alone does not wake it on Linux) and cut what is open."""
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self.cut()
