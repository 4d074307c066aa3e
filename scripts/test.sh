#!/usr/bin/env bash
# One command for a newcomer and for CI: install jmslike with every extra and the test
# tools into ./.venv, start the real brokers the suite talks to (scripts/brokers.sh:
# ActiveMQ Classic and RabbitMQ from Debian, Artemis from Maven Central, all on 127.0.0.1
# only, left running for the next run; `scripts/brokers.sh stop` stops them), then lint,
# type-check, build the documentation site (mkdocs.yml, warnings are errors) and run the
# whole test suite. Extra arguments go to pytest.
#
# JMSLIKE_NO_BROKERS=1 skips starting the brokers: then select the embedded tests only
# (`scripts/test.sh -m "not stomp"`), since a broker test that cannot reach its broker
# fails; it never skips.
#
# The Spark tests then run a second time on the oldest PySpark pyproject.toml allows, in
# ./.venv-spark-floor (JMSLIKE_NO_SPARK_FLOOR=1 skips that run).
#
# pytest exit code 5 ("no tests collected") is turned into a failure: a suite that ran
# nothing must never look green.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
# editable_mode=strict: a static .pth to a link tree, which mypy (and other tools that
# do not run import hooks) can read; the default mode's import hook hides the three package
# roots (., providers/, plugins/) from them. New modules need this install again.
.venv/bin/python -m pip install --quiet --config-settings editable_mode=strict -e '.[all,dev]'

spark_floor=
[ -n "${JMSLIKE_NO_BROKERS:-}" ] || [ -n "${JMSLIKE_NO_SPARK_FLOOR:-}" ] ||
  spark_floor=${JMSLIKE_PYSPARK_FLOOR:-4.0.5}
proton_floor=
[ -n "${JMSLIKE_NO_BROKERS:-}" ] || [ -n "${JMSLIKE_NO_PROTON_FLOOR:-}" ] ||
  proton_floor=${JMSLIKE_PROTON_FLOOR:-0.39.0}

# The brokers start (JVMs and an Erlang VM, about a minute) and the floor venvs install
# (below; Proton 0.39.0 is built from source) while ruff, mypy and the docs run: none of
# them needs another, and CI's budget is an hour. Their output is shown once they end.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
if [ -z "${JMSLIKE_NO_BROKERS:-}" ]; then
  bash "$(dirname "$0")/brokers.sh" start >"$logs/brokers" 2>&1 &
  brokers_job=$!
fi
install_floors() {
  if [ -n "$spark_floor" ]; then
    [ -x .venv-spark-floor/bin/python ] || "${PYTHON:-python3}" -m venv .venv-spark-floor
    .venv-spark-floor/bin/python -m pip install --quiet --upgrade pip
    .venv-spark-floor/bin/python -m pip install --quiet --config-settings editable_mode=strict \
      -e '.[all,dev]' "pyspark==$spark_floor"
  fi
  if [ -n "$proton_floor" ]; then
    [ -x .venv-proton-floor/bin/python ] || "${PYTHON:-python3}" -m venv .venv-proton-floor
    .venv-proton-floor/bin/python -m pip install --quiet --upgrade pip
    .venv-proton-floor/bin/python -m pip install --quiet --config-settings editable_mode=strict \
      -e '.[stomp,amqp,dev]' "python-qpid-proton==$proton_floor"
  fi
}
install_floors >"$logs/floors" 2>&1 &
floors_job=$!

echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== docs"
docs_site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$docs_site"
rm -rf "$docs_site"

if [ -z "${JMSLIKE_NO_BROKERS:-}" ]; then
  echo "== brokers"
  brokers_status=0
  wait "$brokers_job" || brokers_status=$?
  cat "$logs/brokers"
  [ "$brokers_status" -eq 0 ] || exit "$brokers_status"
  set -a
  # shellcheck source=/dev/null
  . "${JMSLIKE_BROKERS_DIR:-.brokers}/brokers.env"
  set +a
fi
echo "== floor venvs (PySpark ${spark_floor:-skipped}, python-qpid-proton ${proton_floor:-skipped})"
floors_status=0
wait "$floors_job" || floors_status=$?
cat "$logs/floors"
[ "$floors_status" -eq 0 ] || exit "$floors_status"

echo "== pytest"
set +e
# --durations: the slowest tests, where the run's time goes (CI's budget is an hour).
.venv/bin/python -m pytest --durations=30 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"

# The Spark tests once more on the oldest PySpark that pyproject.toml allows (the Data
# Source API came with 4.0; docs/spark.md, "PySpark versions"), in a venv of its own.
if [ -n "$spark_floor" ]; then
  echo "== pytest -m spark on PySpark $spark_floor"
  # PySpark 4.0.5's DataFrame.collect leaves its socket to the JVM open (pyspark's
  # _load_from_socket); the suite turns that ResourceWarning into an error, so this run
  # ignores unclosed sockets (the run above, on the newest PySpark, does not). The
  # killed-driver scenarios (80-90 s of this run's 150) stay with the run above: they kill
  # Spark's driver and test jmslike's spool, not which Data Source API calls PySpark has.
  set +e
  .venv-spark-floor/bin/python -m pytest -q -m spark -p no:cacheprovider \
    -W "ignore:unclosed <socket.socket:ResourceWarning" -k "not killed_driver" tests/integration
  status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no Spark tests on PySpark $spark_floor: failing on purpose" >&2
    exit 1
  fi
fi

# The AMQP provider reaches into Proton (Link._impl, the collector, _post_decode), so
# pyproject.toml pins python-qpid-proton to the tested range; its floor gets the AMQP
# tests once more (0.39.0 has no wheel for this Python: pip builds it, about a minute).
if [ "$status" -eq 0 ] && [ -n "$proton_floor" ]; then
  echo "== pytest -m amqp on python-qpid-proton $proton_floor"
  set +e
  .venv-proton-floor/bin/python -m pytest -q -p no:cacheprovider -m amqp \
    tests/integration/test_amqp_transport.py tests/integration/test_amqp_codec_artemis.py \
    tests/contract/test_messaging.py tests/contract/test_ack_modes.py &&
    .venv-proton-floor/bin/python -m pytest -q -p no:cacheprovider tests/unit/test_amqp_codec.py
  status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no AMQP tests on python-qpid-proton $proton_floor: failing on purpose" >&2
    exit 1
  fi
fi
exit "$status"
