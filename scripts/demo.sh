#!/usr/bin/env bash
# One command for a newcomer: install jmslike into ./.venv and run the ordering demo on
# the embedded broker (no server anywhere). Extra arguments go to `jmslike demo`.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
.venv/bin/python -m pip install --quiet --config-settings editable_mode=strict -e .
exec .venv/bin/jmslike demo "$@"
