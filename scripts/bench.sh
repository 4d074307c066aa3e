#!/usr/bin/env bash
# Regenerates every figure of docs/performance.md's "jmslike bench" section: the table
# (printed, and kept in docs/performance/bench.txt), the JSON and the PNG plots. Needs the
# bench extra (pip install 'jmslike[bench]'; test.sh installs it), the brokers
# (scripts/brokers.sh start) and, for the Java column, Maven and Java 17. Took about 25
# minutes on a 2-core machine with N = 5,000; since issue 17 the default is 20,000, with a
# warm-up run of each workload by every client (one warm JVM per target for Java), so
# expect longer. Extra arguments go to both runs (e.g. --runs 5).
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/performance
mkdir -p "$out"
if [ -f "${JMSLIKE_BROKERS_DIR:-.brokers}/brokers.env" ]; then
  set -a
  # shellcheck source=/dev/null
  . "${JMSLIKE_BROKERS_DIR:-.brokers}/brokers.env"
  set +a
fi
# --isolate: one process per broker and protocol, so that a crash in a native library
# (seen once: "malloc_consolidate(): invalid chunk size" with Proton) costs one target.
# Issue 8: every workload, every reachable broker and protocol, every client (jmslike
# tuned and with its defaults, the raw library, Java).
.venv/bin/jmslike bench --isolate --runs 3 --json "$out/bench.json" --plots "$out" \
  --markdown "$out/bench.md" "$@" \
  | tee "$out/bench.txt"
# Issue 5: AMQP, 20,000 x 1 KiB sent then received, jmslike against raw Proton and Qpid JMS.
.venv/bin/jmslike bench --isolate --protocols amqp --workloads send,receive --count 20000 --runs 3 \
  --json "$out/amqp-20k.json" --plots "$out/amqp-20k" \
  --markdown "$out/amqp-20k.md" "$@" | tee "$out/amqp-20k.txt"
