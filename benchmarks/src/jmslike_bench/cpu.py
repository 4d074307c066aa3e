"""CPU time per message, of this process and of the broker's: what the STOMP scripts
(``benchmarks/stomp_acks.py``, ``benchmarks/stomp_sends.py``) report beside msg/s, so
that a change's effect on the broker shows even where the rate is the machine's."""

from __future__ import annotations

import os
import resource
from pathlib import Path

__all__ = ["cpu_of", "listening_pid", "own_cpu"]


def listening_pid(port: int) -> int | None:
    """The pid of the process with a socket listening on ``port`` (IPv4 or IPv6)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    return int(pid)
        except OSError:
            continue
    return None


def cpu_of(pid: int | None) -> float | None:
    """Seconds of CPU the process has used (user + system), or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """Seconds of CPU this process has used (user + system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
