#!/usr/bin/env bash
# Regenerates every figure of docs/reliability.md, one command: the fault scenarios on
# every broker x protocol (connection cut, stalled, slowed and half-closed through the
# fault relay, failover, consumer processes killed and frozen: benchmarks/faults.py), the
# broker restarts at full scale (benchmarks/broker_restart.py, on a second set of brokers
# of its own) and the ten-minute soak (benchmarks/soak.py). Needs the test brokers
# (scripts/brokers.sh start) and root for the restarts, as scripts/test.sh does. About
# 40 minutes on a 2-core machine. Keeps its reports in docs/reliability/ and exits
# non-zero if any check failed (every table is printed still).
set -uo pipefail
cd "$(dirname "$0")/.."
out=docs/reliability
mkdir -p "$out"
if [ -f "${JMSLIKE_BROKERS_DIR:-.brokers}/brokers.env" ]; then
  set -a
  # shellcheck source=/dev/null
  . "${JMSLIKE_BROKERS_DIR:-.brokers}/brokers.env"
  set +a
fi
status=0
.venv/bin/python benchmarks/faults.py --json "$out/faults.jsonl" | tee "$out/faults.txt" || status=1
.venv/bin/python benchmarks/broker_restart.py --json "$out/restart.json" \
  | tee "$out/restart.txt" || status=1
.venv/bin/python benchmarks/soak.py | tee "$out/soak.txt" || status=1
exit "$status"
