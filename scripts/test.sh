#!/usr/bin/env bash
# One command for a newcomer and for CI: install jmslike with every extra and the test
# tools into ./.venv, start the real brokers the suite talks to (scripts/brokers.sh:
# ActiveMQ Classic and RabbitMQ from Debian, Artemis from Maven Central, all on 127.0.0.1
# only, left running for the next run; `scripts/brokers.sh stop` stops them), then lint,
# type-check and run the whole test suite. Extra arguments go to pytest.
#
# JMSLIKE_NO_BROKERS=1 skips starting the brokers: then select the embedded tests only
# (`scripts/test.sh -m "not stomp"`), since a broker test that cannot reach its broker
# fails; it never skips.
#
# pytest exit code 5 ("no tests collected") is turned into a failure: a suite that ran
# nothing must never look green.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
.venv/bin/python -m pip install --quiet -e '.[all,dev]'

if [ -z "${JMSLIKE_NO_BROKERS:-}" ]; then
  echo "== brokers"
  bash "$(dirname "$0")/brokers.sh" start
  set -a
  # shellcheck source=/dev/null
  . "${JMSLIKE_BROKERS_DIR:-.brokers}/brokers.env"
  set +a
fi

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
