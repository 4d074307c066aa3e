#!/usr/bin/env bash
# One command for a newcomer: install jmslike into ./.venv and run the ordering demo on
# the embedded broker (no server anywhere). Extra arguments go to `jmslike demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/jmslike demo "$@"
