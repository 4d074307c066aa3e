# Sourced by demo.sh and test.sh: make ./.venv (with $PYTHON, default python3) and an
# up-to-date pip in it. Installing the project is left to the caller.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
