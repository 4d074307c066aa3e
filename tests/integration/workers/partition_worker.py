"""A consumer process of the cross-process partition tests (test_partitions_processes.py).

It consumes one partitioned queue, declared so by the jmslike.toml that
``$JMSLIKE_CONFIG`` names (the process itself knows nothing of partitions), with
``--sessions`` sessions, each in a thread of its own with a plain ``receive()`` loop. For
every message it logs one JSON line: which process, the body, whether it came flagged
redelivered, when the work started and ended (before the acknowledgement: a process
frozen after writing its COMMIT finishes it only when it wakes), and whether the
acknowledgement (or the commit) succeeded, or is in doubt. Only a successful one counts
as processed, or one in doubt whose message never came again: a commit in doubt, and any
failed CLIENT_ACKNOWLEDGE acknowledge (the work is done; the broker may have taken the
ACK). Work whose commit was rolled back is not an effect.

Every half second it writes which partitions its consumers own to ``<log>.owned``. It
runs until its standard input closes, then closes its connection, logs the CPU time
it used (``{"pid", "cpu_s"}``, for benchmarks/partitions.py) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import threading
import time

from jmslike import ConnectionFactory, JMSException, Session, TransactionInDoubtError


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--mode", choices=("client", "transacted"), default="client")
    parser.add_argument("--log", required=True)
    parser.add_argument("--work-ms", type=float, nargs=2, default=(0.5, 4.0))
    args = parser.parse_args()

    rng = random.Random(os.getpid())
    lock = threading.Lock()
    log = open(args.log, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    stop = threading.Event()

    def write(record: dict[str, object]) -> None:
        with lock:
            log.write(json.dumps(record) + "\n")
            log.flush()

    connection = ConnectionFactory(args.url).create_connection()
    connection.set_exception_listener(
        lambda exc: write({"pid": os.getpid(), "error": str(exc), "at": time.time()})
    )
    transacted = args.mode == "transacted"
    consumers = []
    for _ in range(args.sessions):
        session = connection.create_session(transacted, Session.CLIENT_ACKNOWLEDGE)
        consumers.append((session, session.create_consumer(args.queue)))

    def work(index: int, session: Session, consumer) -> None:  # type: ignore[no-untyped-def]
        while not stop.is_set():
            try:
                message = consumer.receive(0.3)
            except JMSException as exc:
                write({"pid": os.getpid(), "error": f"receive: {exc}", "at": time.time()})
                time.sleep(0.3)
                continue
            if message is None:
                continue
            start = time.time()
            if os.environ.get("PARTITION_WORKER_TRACE"):
                write({"pid": os.getpid(), "got": message.text, "at": start})
            time.sleep(rng.uniform(*args.work_ms) / 1000)
            # The work ends here. A process frozen after its COMMIT or ACK was written
            # wakes with the broker's answer waiting: the message was done before the
            # freeze, not when the call returned seconds later.
            end = time.time()
            in_doubt = False
            # Logged before the acknowledgement, replaced by the record after it: a
            # process killed while its ACK or COMMIT is on the wire leaves this one, in
            # doubt (the broker may have taken it: the message is then never seen again).
            pending = {
                "pid": os.getpid(), "session": index, "text": message.text,
                "start": start, "end": end,
            }  # fmt: skip
            write(
                {**pending, "redelivered": message.jms_redelivered, "ok": False, "in_doubt": True}
            )
            try:
                if transacted:
                    session.commit()
                else:
                    message.acknowledge()
                ok = True
            except JMSException as exc:
                # A commit in doubt may have taken effect: the checker counts it as
                # processed unless the message comes again. So may an acknowledge that
                # failed (CLIENT_ACKNOWLEDGE): the work was done and, if the broker took
                # the ACK before the connection died (a process frozen with its ACK on
                # the wire), the message never comes again (seen in CI: g01:21).
                ok = False
                in_doubt = isinstance(exc, TransactionInDoubtError) or not transacted
                write({"pid": os.getpid(), "error": f"finish: {exc}", "at": time.time()})
            write(
                {
                    **pending,
                    "redelivered": message.jms_redelivered,
                    "finished": time.time(),
                    "ok": ok,
                    "in_doubt": in_doubt,
                }
            )

    threads = [
        threading.Thread(target=work, args=(i, *pair), daemon=True, name=f"worker-{i}")
        for i, pair in enumerate(consumers)
    ]
    connection.start()
    for thread in threads:
        thread.start()

    def report_owned() -> None:
        while not stop.wait(0.5):
            owned = sorted(p for _s, c in consumers for p in (c.partitions or []))
            with open(args.log + ".owned.tmp", "w", encoding="utf-8") as out:
                json.dump({"pid": os.getpid(), "owned": owned, "at": time.time()}, out)
            os.replace(args.log + ".owned.tmp", args.log + ".owned")

    threading.Thread(target=report_owned, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    stop.set()
    for thread in threads:
        thread.join(10.0)
    connection.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    write({"pid": os.getpid(), "cpu_s": usage.ru_utime + usage.ru_stime})
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
