"""The Java JMS client, one process per workload run (``Bench.java`` in the checkout's
Java project): Qpid JMS for AMQP 1.0, Artemis' core client, ActiveMQ's OpenWire client.

It is the reference for what the broker itself can take, so it runs with each client's
defaults except the prefetch, set to the Python clients' (``jms.prefetchPolicy.all`` for
Qpid JMS and OpenWire; Artemis' core client keeps its byte window, 1 MiB, about a
thousand 1 KiB messages). The JVM's start-up is outside the timed part.
"""

from __future__ import annotations

import logging
import shutil
import urllib.parse
from pathlib import Path

from jmslike_bench.env import delete_rabbitmq_queue
from jmslike_bench.javabuild import build_jar
from jmslike_bench.runners.base import Measurement, Runner, run_child
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

    def __init__(self, target: Target, sizes: Sizes) -> None:
        super().__init__(target, sizes)
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

    def _queue(self, queue: str) -> str:
        # RabbitMQ's AMQP 1.0 plugin wants /queue/x (Qpid JMS sends the name as the address).
        return f"/queue/{queue}" if self.target.broker == "rabbitmq" else queue

    def cleanup(self, queue: str) -> None:
        if self.target.broker == "rabbitmq":
            delete_rabbitmq_queue(queue)

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
        command = [
            "java",
            "-cp",
            str(self.jar),
            "jmslike.interop.Bench",
            mode,
            "--protocol",
            self.protocol,
            "--url",
            self.url,
            *self.credentials,
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
        ]
        return run_child(command, f"java Bench {mode}")
