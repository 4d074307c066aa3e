"""Broker restarts at full scale: the restart scenarios of issue 18 with 10,000 messages.

Runs tests/integration/test_broker_restart.py (each broker of a second set, on moved
ports, stopped and started on its store, then killed with kill -9 and started, while a
producer sends persistent messages in ordering groups and a CLIENT_ACKNOWLEDGE and a
transacted consumer take them; STOMP through failover, AMQP through an application
reconnect loop) with ``--messages`` (10,000) in ``--groups`` (100) groups at ``--rate``
messages a second, and prints the figures as the tables of docs/reliability.md.

    python benchmarks/broker_restart.py [--brokers activemq,rabbitmq,artemis]
        [--messages 10000] [--groups 100] [--rate 250] [--json FILE] [--markdown FILE]
    python benchmarks/broker_restart.py --from-json FILE   # tables of an earlier run

Needs what the test needs: root (scripts/brokers.sh installs and starts the second set
itself); the shared brokers are not touched. A failed check fails the run (exit 1), and
the tables still say what was found.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[1]
_TEST = "tests/integration/test_broker_restart.py"


def markdown(report: dict[str, list[dict[str, Any]]]) -> str:
    """A row per broker and route. One run holds both outages (a graceful restart at a
    third of the sends, kill -9 at two thirds), so the counts are the run's; the times
    are per outage: broker down (the stop or kill until it answered again), and from the
    outage's start until the route had a send confirmed and a message acknowledged or
    committed again."""
    out = [
        "| broker | route | sent | confirmed | send raised (received) | received | lost "
        "| unflagged dup. (at the kill) | misordered | redelivered "
        "| restart: down / send / consume (s) | kill -9: down / send / consume (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for broker, figures in report.items():
        for f in figures:
            times = []
            for event in ("restart", "kill -9"):
                r = next((r for r in f["recover"] if r["event"] == event), {})
                times.append(
                    f"{r.get('broker_down_s')} / {r.get('send_again_s')} / "
                    f"{r.get('consume_again_s')}"
                )
            out.append(
                f"| {broker} | {f['route']} | {f['sent']} | {f['confirmed']} | "
                f"{f['send_raised']} ({f['send_raised_received']}) | {f['received']} | "
                f"{f['lost']} | {f['unflagged_duplicates']} "
                f"({f.get('unflagged_after_crash', 0)}) | {f['misordered']} | "
                f"{f['redelivered']} | {times[0]} | {times[1]} |"
            )
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="activemq,rabbitmq,artemis")
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--rate", type=float, default=250.0)
    parser.add_argument("--json", type=Path, help="where the figures go (a temp file)")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    parser.add_argument("--from-json", type=Path, help="only print the tables of FILE")
    args = parser.parse_args()
    status = 0
    if args.from_json is None:
        path = args.json or Path(tempfile.mkdtemp(prefix="broker-restart-")) / "report.json"
        path.unlink(missing_ok=True)
        env = {
            **os.environ,
            "JMSLIKE_RESTART_MESSAGES": str(args.messages),
            "JMSLIKE_RESTART_GROUPS": str(args.groups),
            "JMSLIKE_RESTART_RATE": str(args.rate),
            "JMSLIKE_RESTART_REPORT": str(path),
        }
        selection = " or ".join(b.strip() for b in args.brokers.split(",") if b.strip())
        command = [sys.executable, "-m", "pytest", _TEST, "-q", "-s", "-p", "no:cacheprovider"]
        done = subprocess.run([*command, "-k", selection], cwd=_REPO, env=env, check=False)
        status = 0 if done.returncode == 0 else 1
    else:
        path = args.from_json
    tables = markdown(json.loads(path.read_text()))
    print(f"\nfigures: {path}\n\n{tables}")
    if args.markdown is not None:
        args.markdown.write_text(tables)
    return status


if __name__ == "__main__":
    sys.exit(main())
