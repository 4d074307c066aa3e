#!/usr/bin/env bash
# One command for a newcomer and for CI: install jmslike with every extra and the test
# tools into ./.venv, then lint, type-check and run the whole test suite. (Tests that
# need a real broker will start it themselves, installed from Debian or Maven Central and
# bound to 127.0.0.1 only, once broker providers exist.) Extra arguments go to pytest.
#
# pytest exit code 5 ("no tests collected") is turned into a failure: a suite that ran
# nothing must never look green.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
.venv/bin/python -m pip install --quiet -e '.[all,dev]'

echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$status"
