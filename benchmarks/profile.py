"""Where jmslike's time goes in one bench workload: py-spy over ``jmslike bench``.

Runs ``python -m jmslike bench --clients jmslike`` with the given arguments under
``py-spy record`` (every thread, idle ones left out, 250 samples a second), then prints
what the samples say: each thread's share, the share of each library (jmslike, its
providers, stomp.py, Proton, the standard library), and the functions with the most
samples of their own (self time). The raw stacks stay in ``--out`` for a flame graph.

    python benchmarks/profile.py --out prof.txt -- --brokers activemq --protocols stomp \\
        --workloads receive --count 20000

Needs py-spy (``pip install -e '.[dev]'``) and permission to trace a child process.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _library(file: str) -> str:
    for marker, name in (
        ("jmslike_stomp", "jmslike_stomp"),
        ("jmslike_amqp", "jmslike_amqp"),
        ("jmslike_bench", "bench harness"),
        ("jmslike", "jmslike"),
        ("stomp/", "stomp.py"),
        ("proton", "proton"),
    ):
        if marker in file:
            return name
    return "stdlib/other"


def _short(frame: str) -> str:
    """``function (file:line)`` -> ``function (file)``: lines apart, one function."""
    match = _FRAME.match(frame)
    if match is None:
        return frame
    return f"{match.group('function')} ({Path(match.group('file')).name})"


def summarize(raw: Path, top: int = 15) -> str:
    """A text summary of py-spy's raw (collapsed) stacks."""
    threads: Counter[str] = Counter()
    libraries: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(encoding="utf-8").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        threads[frames[0]] += count
        for frame in {f for f in frames[1:] if "jmslike" in f and "bench" not in f}:
            inclusive[_short(frame)] += count
        match = _FRAME.match(frames[-1])
        file = match.group("file") if match else ""
        libraries[_library(file)] += count
        own[_short(frames[-1])] += count
    out = [f"{total} samples"]
    out.append("threads: " + ", ".join(f"{n} {c / total:.0%}" for n, c in threads.most_common()))
    out.append(
        "self time by library: "
        + ", ".join(f"{n} {c / total:.0%}" for n, c in libraries.most_common())
    )
    out.append("top functions by self time:")
    out += [f"  {c / total:5.1%}  {name}" for name, c in own.most_common(top)]
    out.append("jmslike functions by inclusive time (their callees counted):")
    out += [f"  {c / total:5.1%}  {name}" for name, c in inclusive.most_common(top)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("profile.txt"))
    parser.add_argument("--rate", type=int, default=250)
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- then jmslike bench args")
    args = parser.parse_args(argv)
    bench = [a for a in args.bench if a != "--"]
    command = [
        str(Path(sys.executable).with_name("py-spy")),
        "record",
        "--threads",
        "--format",
        "raw",
        "--rate",
        str(args.rate),
        "-o",
        str(args.out),
        "--",
        sys.executable,
        "-m",
        "jmslike",
        "bench",
        "--clients",
        "jmslike",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--no-progress",
        *bench,
    ]
    subprocess.run(command, check=True)
    print(summarize(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
