#!/usr/bin/env bash
# One command for a newcomer: install jmslike into ./.venv and run the ordering demo on
# the embedded broker (no server anywhere). Extra arguments go to `jmslike demo`.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
# The build backend's notes (setuptools explains what a strict editable install is) are
# kept in a log, shown only if the install fails.
if ! .venv/bin/python -m pip install --quiet --config-settings editable_mode=strict -e . \
    > .venv/install.log 2>&1; then
    cat .venv/install.log >&2
    exit 1
fi
exec .venv/bin/jmslike demo "$@"
