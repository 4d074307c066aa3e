"""The Java JMS client (``Bench.java`` in the checkout's Java project): Qpid JMS for AMQP
1.0, Artemis' core client, ActiveMQ's OpenWire client.

It is the reference for what the broker itself can take, so it runs with each client's
defaults except the prefetch, set to the Python clients' (``jms.prefetchPolicy.all`` for
Qpid JMS and OpenWire; Artemis' core client keeps its byte window, 1 MiB, about a
thousand 1 KiB messages).

One JVM per target serves every run (``Bench serve``: a workload per stdin line, a JSON
line back), the suite's untimed warm-up runs included: a JVM started for each run timed
the interpreter and the class loader, not the client, and made Java look slower than it
is. The JVM's start-up is outside the timed part.
"""

from __future__ import annotations

import collections
import json
import logging
import shutil
import subprocess
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from queue import Empty, Queue
from typing import IO

from jmslike_bench.env import declare_rabbitmq_queue
from jmslike_bench.javabuild import build_jar
from jmslike_bench.runners.base import IDLE, Measurement, Runner
from jmslike_bench.targets import Target
from jmslike_bench.workloads import Kind, Sizes, Workload

__all__ = ["JavaRunner", "java_unavailable"]

log = logging.getLogger("jmslike.bench.java")

_LIBRARIES = {
    "amqp": "Qpid JMS 1.14.0",
    "core": "artemis-jms-client 2.54.0",
    "openwire": "activemq-client 5.19.1",
}


def java_unavailable() -> str | None:
    """Why the Java side cannot run here, or None; builds the jar if needed."""
    if shutil.which("java") is None:
        return "no java on PATH"
    try:
        build_jar()
    except Exception as exc:
        return str(exc).splitlines()[0]
    return None


class JavaRunner(Runner):
    """Runs ``jmslike.interop.Bench`` for each workload and reads its JSON line."""

    client = "java"

    def __init__(self, target: Target, sizes: Sizes, *, idle: float = IDLE) -> None:
        """``idle``: seconds a run waits for a message before the JVM calls it failed."""
        super().__init__(target, sizes)
        self.idle = idle
        if target.java_protocol is None or target.java_url is None:
            raise ValueError(f"no Java client for {target.name}")
        self.protocol = target.java_protocol
        self.library = _LIBRARIES[self.protocol]
        self.jar: Path = build_jar()
        parsed = urllib.parse.urlsplit(target.java_url)
        scheme = "amqp" if self.protocol == "amqp" else "tcp"
        url = f"{scheme}://{parsed.hostname}:{parsed.port}"
        if self.protocol != "core":
            url += f"?jms.prefetchPolicy.all={sizes.prefetch}"
        self.url = url
        self._jvm: subprocess.Popen[str] | None = None
        self._pumps: list[threading.Thread] = []
        self._lines: Queue[str | None] = Queue()
        self._errors: collections.deque[str] = collections.deque(maxlen=40)
        # The OpenWire/core URLs in brokers.env carry no login: the broker's is in the
        # jmslike URL of the same broker (Artemis wants one on every protocol).
        login = parsed if parsed.username else urllib.parse.urlsplit(target.url)
        self.credentials: list[str] = []
        if login.username:
            self.credentials = [
                "--user",
                urllib.parse.unquote(login.username),
                "--password",
                urllib.parse.unquote(login.password or ""),
            ]

    def supports(self, workload: Workload) -> bool:
        """Not the asynchronous send: the Java bench sends synchronously only."""
        return super().supports(workload) and not workload.pipelined

    def _queue(self, queue: str) -> str:
        # RabbitMQ's AMQP 1.0 plugin: /queue/x from Qpid JMS declares a non-durable queue;
        # jmslike's are durable (jmslike_amqp.durability), so the same guarantee here: a
        # durable queue declared beforehand, used as it is through /amq/queue/x.
        if self.target.broker != "rabbitmq":
            return queue
        declare_rabbitmq_queue(queue)
        return f"/amq/queue/{queue}"

    def _serve(self) -> subprocess.Popen[str]:
        """The JVM of this target, started on first use and kept until :meth:`close`."""
        if self._jvm is not None and self._jvm.poll() is None:
            return self._jvm
        command = ["java", "-cp", str(self.jar), "jmslike.interop.Bench", "serve"]
        command += ["--protocol", self.protocol, "--url", self.url, *self.credentials]
        self._lines = Queue()
        jvm = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        assert jvm.stdout is not None and jvm.stderr is not None
        lines = self._lines
        self._pumps = [
            threading.Thread(
                target=_pump, args=(jvm.stdout, lines.put, lambda: lines.put(None)), daemon=True
            ),
            threading.Thread(
                target=_pump, args=(jvm.stderr, self._errors.append, lambda: None), daemon=True
            ),
        ]
        for pump in self._pumps:
            pump.start()
        self._jvm = jvm
        log.info("started a JVM for %s (%s)", self.target.name, self.library)
        return jvm

    def close(self) -> None:
        jvm, self._jvm = self._jvm, None
        if jvm is None:
            return
        try:
            if jvm.stdin is not None:
                jvm.stdin.close()  # end of input: Bench serve exits
            jvm.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            jvm.kill()
            jvm.wait()
        for pump in self._pumps:  # they end at the pipes' end, which the exit brings
            pump.join(timeout=5)
        for stream in (jvm.stdout, jvm.stderr):
            if stream is not None:
                stream.close()

    def _ask(self, line: str, what: str) -> Measurement:
        """Send one workload line to the JVM and read its JSON answer."""
        jvm = self._serve()
        assert jvm.stdin is not None
        try:
            jvm.stdin.write(line + "\n")
            jvm.stdin.flush()
        except OSError as exc:
            raise RuntimeError(f"{what}: the JVM is gone ({exc}): {self._stderr()}") from None
        while True:
            try:
                answer = self._lines.get(timeout=IDLE * 15)
            except Empty:
                self.close()  # a stuck run: the next one gets a fresh JVM
                raise RuntimeError(f"{what}: no answer in {IDLE * 15:.0f} s") from None
            if answer is None:
                self._jvm = None
                raise RuntimeError(f"{what}: the JVM exited ({jvm.wait()}): {self._stderr()}")
            if answer.startswith("{"):
                break
        result = json.loads(answer)
        if "error" in result:
            raise RuntimeError(f"{what}: {result['error']}")
        return Measurement(result["msgs_per_s"], result.get("p50_ms"), result.get("p99_ms"))

    def _stderr(self) -> str:
        return " | ".join(self._errors)[-2000:]

    def run(self, workload: Workload, queue: str) -> Measurement:
        mode = {
            Kind.SEND: "send",
            Kind.RECEIVE: "receive",
            Kind.SEND_RECEIVE: "sendrecv",
            Kind.COMPETING: "groups",
            Kind.LATENCY: "latency",
        }.get(workload.kind)
        if mode is None:
            raise ValueError(f"the Java side has no {workload.name}")
        sizes = self.sizes
        words = [
            mode,
            "--queue",
            self._queue(queue),
            "--count",
            str(sizes.count_for(workload)),
            "--size",
            str(sizes.size),
            "--persistent",
            "true" if workload.persistent else "false",
            "--groups",
            str(workload.groups),
            "--consumers",
            str(workload.consumers),
            "--rate",
            str(sizes.rate),
            "--idle-ms",
            str(round(self.idle * 1000)),
        ]
        return self._ask(" ".join(words), f"java Bench {mode}")


def _pump(stream: IO[str], sink: Callable[[str], None], ended: Callable[[], None]) -> None:
    """Copy a pipe's lines into ``sink`` on a thread of its own (a full pipe would stall
    the JVM), then call ``ended``: stdout's end is the JVM's."""
    try:
        for line in stream:
            sink(line.rstrip("\n"))
    except (OSError, ValueError):
        pass
    finally:
        ended()
