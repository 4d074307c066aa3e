"""Brokers that a test may stop, kill and restart: a second set, never the shared one.

The shared test brokers (``scripts/brokers.sh start``, standard ports) serve everyone's
tests at once, so a restart test must not touch them. :class:`RestartableBrokers` runs
its own set with ``scripts/brokers.sh`` in a state dir of its own
(``.brokers/restartable-<offset>``) and ``JMSLIKE_BROKERS_PORT_OFFSET``: every port moved
by the offset (1000, else 1100, 1200, ...). An offset is taken under a machine-wide lock
file, so two test sessions (two clones, two engineers) never share or stop each other's
brokers; brokers a dead session left on a free offset are stopped first, and an offset
whose ports something else holds is passed over. Each broker is started on an
empty store when a test first asks for it, and stopped when the session ends.

``restart`` and ``kill`` go through ``scripts/brokers.sh`` too: ``restart`` keeps the
store, ``kill`` is a ``kill -9`` of the broker process; see the script's header.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

__all__ = ["BROKER_PORTS", "RestartableBrokers", "url_in"]

log = logging.getLogger("jmslike.tests.restartable")

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "brokers.sh"

BROKER_PORTS = {
    "activemq": (61616, 61613, 5674),
    "rabbitmq": (5672, 61614, 15672, 25672, 4369, 35672),
    "artemis": (61617, 61618, 8162),
}
"""The standard ports of each broker (scripts/brokers.sh), before the offset; 35672 is
the first of RabbitMQ's CLI distribution ports."""

_OFFSETS = range(1000, 3001, 100)


def url_in(env: dict[str, str], broker: str, protocol: str) -> str:
    """The URL of ``broker`` over ``protocol`` (``stomp``, ``amqp``) in a set's
    :meth:`RestartableBrokers.env`."""
    url = env[f"JMSLIKE_TEST_{broker.upper()}_{protocol.upper()}_URL"]
    # RabbitMQ's AMQP 1.0 tests have a vhost of their own (scripts/brokers/rabbitmq.sh).
    return url + "/jmslike-amqp" if broker == "rabbitmq" and protocol == "amqp" else url


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class RestartableBrokers:
    """One set of brokers on moved ports, owned by this test session."""

    def __init__(self, offsets: range = _OFFSETS) -> None:
        self._base = Path(os.environ.get("JMSLIKE_BROKERS_DIR", REPO / ".brokers"))
        self.started: list[str] = []
        self.log: list[str] = []
        """What each script call printed, for a failing test's report."""
        self.offset = 0
        self._lock: IO[str] | None = None
        self._claim(offsets)

    @property
    def state(self) -> Path:
        return self._base / f"restartable-{self.offset}"

    def _taken(self) -> list[int]:
        return [
            port + self.offset
            for ports in BROKER_PORTS.values()
            for port in ports
            if _listening(port + self.offset)
        ]

    def _claim(self, offsets: range) -> None:
        """Take the first offset whose lock is free and whose ports are (or can be made)
        free.

        The lock is held for the whole session and released when the process ends,
        however it ends. A free lock means no session owns the offset: a broker found on
        its ports is one a dead session left (brokers.sh stops only processes that are
        brokers); anything still listening after that is someone else's, and the offset
        is passed over."""
        for offset in offsets:
            lock = open(f"/tmp/jmslike-restartable-brokers-{offset}.lock", "w")  # noqa: SIM115
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock.close()
                continue
            self.offset, self._lock = offset, lock
            if self._taken():
                log.warning("broker port offset %d: stopping left-over brokers", offset)
                try:
                    self._run("stop", "all")
                except RuntimeError as exc:
                    log.warning("%s", exc)
            taken = self._taken()
            if not taken:
                return
            log.warning("broker port offset %d: ports %s in use, trying the next", offset, taken)
            self._lock = None
            lock.close()
        raise RuntimeError(f"no free broker port offset in {offsets}: every one is in use")

    def _run(self, *args: str, timeout: float = 600.0) -> float:
        """Run ``scripts/brokers.sh args`` on this set; the seconds it took."""
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))},
            "JMSLIKE_BROKERS_DIR": str(self.state),
            "JMSLIKE_BROKERS_PORT_OFFSET": str(self.offset),
            # A delivery before a restart comes back flagged (the script's header);
            # JMSLIKE_RESTART_DURABLE_REDELIVERY=0 shows the brokers' defaults.
            "JMSLIKE_BROKERS_DURABLE_REDELIVERY": os.environ.get(
                "JMSLIKE_RESTART_DURABLE_REDELIVERY", "1"
            ),
        }
        started = time.monotonic()
        done = subprocess.run(
            ["bash", str(SCRIPT), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        took = time.monotonic() - started
        self.log.append(f"brokers.sh {' '.join(args)} ({took:.1f} s): {done.stdout}{done.stderr}")
        if done.returncode != 0:
            raise RuntimeError(
                f"scripts/brokers.sh {' '.join(args)} (offset {self.offset}, state "
                f"{self.state}) failed with {done.returncode}:\n{done.stdout}{done.stderr}"
            )
        return took

    def start(self, broker: str) -> None:
        """Start ``broker`` on an empty store (once per session)."""
        if broker in self.started:
            return
        self.started.append(broker)  # stopped at the end even if the start fails half-way
        self._run("reset", broker)

    def restart(self, broker: str) -> float:
        """Graceful stop, then start on the same store; seconds from stop to answering."""
        return self._run("restart", broker)

    def kill(self, broker: str) -> float:
        """``kill -9`` of the broker process; the store stays. Seconds it took."""
        return self._run("kill", broker)

    def pid(self, broker: str) -> int:
        """The broker's process id, looked up ahead of a kill that must follow an event
        at once (``scripts/brokers.sh kill`` takes tens of milliseconds to find it)."""
        self._run("status", broker)
        found = re.search(r"running\s+pid (\d+)", self.log[-1])
        if found is None:
            raise RuntimeError(f"{broker} is not running: {self.log[-1]}")
        return int(found.group(1))

    def env(self) -> dict[str, str]:
        """The ``JMSLIKE_TEST_*`` URLs of this set, from its own brokers.env (never the
        environment's, which name the shared brokers)."""
        settings: dict[str, str] = {}
        for line in (self.state / "brokers.env").read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.startswith("#"):
                settings[key.strip()] = value.strip()
        return settings

    def close(self) -> None:
        """Stop what this session started; the state dir stays for the next session
        (downloads, Artemis' instance)."""
        try:
            for broker in self.started:
                self._run("stop", broker)
        finally:
            self.started.clear()
            if self._lock is not None:
                self._lock.close()
                self._lock = None
