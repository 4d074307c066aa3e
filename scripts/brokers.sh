#!/usr/bin/env bash
# Install (when missing) and run the real brokers the integration tests talk to, side by
# side and on 127.0.0.1 only:
#   ActiveMQ Classic (Debian)  OpenWire 61616, STOMP 61613, AMQP 5674          (no login)
#   RabbitMQ (Debian)          AMQP 0-9-1/1.0 5672, STOMP 61614, HTTP 15672  guest/guest
#                              (Erlang distribution 25672, epmd 4369)
#   ActiveMQ Artemis (Maven)   every protocol on 61617, TLS 61618, console 8162  admin/admin
#
#   scripts/brokers.sh start|stop|status|restart|kill|reset [activemq|rabbitmq|artemis|all]
#
#   start    install what is missing and launch; a running broker is left alone. Classic
#            and RabbitMQ start on an EMPTY store (a test broker must not depend on what
#            earlier runs left), Artemis on its journal (as it always has)
#   stop     graceful stop (SIGTERM / rabbitmqctl stop); the store stays on disk
#   restart  graceful stop, then launch on the SAME store: persistent messages survive
#   kill     kill -9 of the broker process (a crash); the store stays on disk, and
#            `restart` brings the broker back on it
#   reset    stop, wipe the store, start: the explicit way to throw the data away
#   status   one line per broker
#
# Everything the script makes (configuration, data, logs, downloads, brokers.env) lives in
# $JMSLIKE_BROKERS_DIR (default <repo>/.brokers), so a clone's brokers and their data are
# thrown away with `rm -rf .brokers`. The machine is expected to be Debian 12 without
# systemd, run as root (apt-get, and the brokers run as their own users).
#
# A second, independent set of brokers (the broker restart tests, which must not restart
# the shared ones): give it a state dir of its own and JMSLIKE_BROKERS_PORT_OFFSET=N.
# Every port above moves by N (and the RabbitMQ node becomes rabbit_N@localhost with its
# own epmd port, CLI distribution ports and an env file in its state dir instead of
# /etc/rabbitmq/rabbitmq-env.conf); the state dir's brokers.env names the moved URLs.
#   JMSLIKE_BROKERS_DIR=/tmp/b1000 JMSLIKE_BROKERS_PORT_OFFSET=1000 scripts/brokers.sh start artemis
#
# JMSLIKE_BROKERS_DURABLE_REDELIVERY=1 makes Classic (persistJMSRedelivered) and Artemis
# (persist-delivery-count-before-delivery) write a delivery to the store before sending
# it, so that a message delivered before a crash or restart comes back flagged
# redelivered; without it they forget the delivery and the copy after the restart looks
# new (docs/reliability.md). RabbitMQ flags every recovered message by itself. It costs a
# store write per delivery, so only the restart tests' set turns it on. Applied at launch.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
# The brokers run as their own users, so every directory above their state must be open
# to others. A clone under a closed directory (mktemp -d makes one, mode 700) keeps its
# state in /var/tmp instead, behind the usual .brokers link, so nothing else changes.
open_to_others() { # dir
  local d=$1
  while [ "$d" != / ]; do
    [ -n "$(find "$d" -maxdepth 0 -perm -o+x 2>/dev/null)" ] || return 1
    d=$(dirname "$d")
  done
}
if [ -z "${JMSLIKE_BROKERS_DIR:-}" ] && [ ! -e "$REPO/.brokers" ] && ! open_to_others "$REPO"; then
  outside=/var/tmp/jmslike-brokers-$(printf '%s' "$REPO" | cksum | cut -d' ' -f1)
  mkdir -p "$outside" && chmod 755 "$outside" && ln -s "$outside" "$REPO/.brokers"
  printf 'brokers.sh: %s is closed to the brokers'"'"' users; their state is in %s\n' \
    "$REPO" "$outside" >&2
fi
# Absolute: it ends up in rabbitmq-env.conf and in the JVMs' -D options.
STATE=$(realpath -m "${JMSLIKE_BROKERS_DIR:-$REPO/.brokers}")
INSTALL_LOG=$STATE/install.log
START_TIMEOUT=${JMSLIKE_BROKERS_TIMEOUT:-120}
OFFSET=${JMSLIKE_BROKERS_PORT_OFFSET:-0}
# 61618 + N must stay a port; ports are computed, never parsed back, so a bad N stops here.
[[ "$OFFSET" =~ ^[0-9]+$ ]] && [ "$OFFSET" -le 3900 ] ||
  { printf 'brokers.sh: JMSLIKE_BROKERS_PORT_OFFSET=%s is not a number from 0 to 3900\n' "$OFFSET" >&2; exit 1; }
# The standard port <n> moved by the offset.
port() { echo $(($1 + OFFSET)); }
case ${JMSLIKE_BROKERS_DURABLE_REDELIVERY:-} in
  1 | true | yes) DURABLE_REDELIVERY=1 ;;
  *) DURABLE_REDELIVERY= ;;
esac
# What a launch does with the store: keep (`restart`), wipe (`reset`), or empty each
# broker's default (`start`: Classic and RabbitMQ wipe, Artemis keeps).
STORE_MODE=
ALL_BROKERS=(activemq rabbitmq artemis)

say() { printf '%s\n' "$*"; }
die() { printf 'brokers.sh: %s\n' "$*" >&2; exit 1; }

# One line on the terminal per step; the step's own chatter goes to install.log, which is
# what to read when a step fails.
step() {
  local what=$1; shift
  local t0=$SECONDS
  printf '  %s ... ' "$what"
  printf '\n==== %s: %s\n' "$(date -Is)" "$what" >>"$INSTALL_LOG"
  if "$@" >>"$INSTALL_LOG" 2>&1; then
    say "ok ($((SECONDS - t0)) s)"
  else
    say "FAILED"
    die "$what failed; see $INSTALL_LOG"
  fi
}

# pid of the process listening on <port> if its command line matches <pattern>, else
# nothing. The listener, not a pid file, is the truth: it also finds a broker started from
# another state dir or by hand, and never names an unrelated process that took the port.
listener_pid() { # port pattern
  local pid
  pid=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2 || true)
  [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" && echo "$pid"
  return 0
}

port_holder() { # port: "pid=N (command)" of whatever listens there
  local pid
  pid=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2 || true)
  echo "pid=${pid:-?} ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80))"
}

port_open() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

# A listening socket is not yet a broker that answers: ActiveMQ and RabbitMQ open their
# ports before they accept logins. A STOMP CONNECT/CONNECTED exchange proves it works.
# host:/ because RabbitMQ reads the host header as its virtual host; the others ignore it.
stomp_ping() { # port [login passcode]
  python3 - "$@" <<'PY'
import socket, sys
port = int(sys.argv[1])
hdrs = "accept-version:1.2\nhost:/\n"
if len(sys.argv) > 3:
    hdrs += f"login:{sys.argv[2]}\npasscode:{sys.argv[3]}\n"
try:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"CONNECT\n{hdrs}\n\0".encode())
        data = b""
        while b"\0" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        ok = data.lstrip(b"\r\n").startswith(b"CONNECTED")
        if ok:
            s.sendall(b"DISCONNECT\n\n\0")
except OSError:
    ok = False
sys.exit(0 if ok else 1)
PY
}

# Polls <command> until it succeeds; gives up early when the process in <pidfile> is gone
# (a broker that died on its configuration does not come back by waiting).
wait_until() { # what logfile pidfile command...
  local what=$1 logfile=$2 pidfile=$3; shift 3
  local deadline=$((SECONDS + START_TIMEOUT)) pid
  until "$@" >/dev/null 2>&1; do
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      die "$what exited while starting; see $logfile"
    fi
    if [ $SECONDS -ge $deadline ]; then
      die "$what did not answer within ${START_TIMEOUT} s; see $logfile"
    fi
    sleep 1
  done
}

wait_ports_closed() { # what timeout port...
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout)) p
  for p in "$@"; do
    while port_open "$p"; do
      [ $SECONDS -lt $deadline ] || return 1
      sleep 1
    done
  done
}

# Graceful stop by SIGTERM: both Java brokers stop through their shutdown hooks (journal
# closed, clients told). SIGKILL only when that hangs, so a test run is never left blocked.
term_and_wait() { # what pid port...
  local what=$1 pid=$2; shift 2
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_ports_closed "$what" 60 "$@"; then
    say "  $what did not stop within 60 s: killing pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    wait_ports_closed "$what" 10 "$@" || die "$what still holds its ports"
  fi
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
}

# Debian's postinst would start an instance listening on every interface with Debian's
# configuration: policy-rc.d exiting 101 tells invoke-rc.d not to start anything.
apt_install() { # package...
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  [ -e /usr/sbin/policy-rc.d ] && cp -p /usr/sbin/policy-rc.d "$STATE/policy-rc.d.saved"
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'restore_policy_rc_d' EXIT
  # Once per run: the package lists of a long-kept machine may be stale, but are not
  # going to change between two brokers.
  [ -n "${APT_UPDATED:-}" ] || step "apt-get update" apt-get update -q
  APT_UPDATED=1
  step "apt-get install ${missing[*]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  restore_policy_rc_d
  trap - EXIT
}

restore_policy_rc_d() {
  if [ -e "$STATE/policy-rc.d.saved" ]; then
    mv -f "$STATE/policy-rc.d.saved" /usr/sbin/policy-rc.d
  else
    rm -f /usr/sbin/policy-rc.d
  fi
}

# The brokers run as their own users and keep their data under $STATE: every directory on
# the way must be searchable by them (a clone under /root would not be).
give_dir() { # user dir
  mkdir -p "$2"
  chown -R "$1:$1" "$2"
  runuser -u "$1" -- test -w "$2" ||
    die "user $1 cannot write $2 (is a parent directory closed to others?); set JMSLIKE_BROKERS_DIR"
}

write_env_file() {
  cat >"$STATE/brokers.env" <<EOF
# Written by scripts/brokers.sh: where the test brokers listen (127.0.0.1 only), port offset $OFFSET.
# Shell: set -a; . $STATE/brokers.env; set +a
# Logins: ActiveMQ none, RabbitMQ guest/guest, Artemis admin/admin (also over OpenWire).
JMSLIKE_TEST_ACTIVEMQ_STOMP_URL=stomp://127.0.0.1:$(port 61613)
JMSLIKE_TEST_ACTIVEMQ_OPENWIRE_URL=tcp://127.0.0.1:$(port 61616)
JMSLIKE_TEST_ACTIVEMQ_AMQP_URL=amqp://127.0.0.1:$(port 5674)
JMSLIKE_TEST_RABBITMQ_STOMP_URL=stomp://guest:guest@127.0.0.1:$(port 61614)
JMSLIKE_TEST_RABBITMQ_AMQP_URL=amqp://guest:guest@127.0.0.1:$(port 5672)
JMSLIKE_TEST_RABBITMQ_MANAGEMENT_URL=http://guest:guest@127.0.0.1:$(port 15672)
JMSLIKE_TEST_ARTEMIS_STOMP_URL=stomp://admin:admin@127.0.0.1:$(port 61617)
JMSLIKE_TEST_ARTEMIS_AMQP_URL=amqp://admin:admin@127.0.0.1:$(port 61617)
JMSLIKE_TEST_ARTEMIS_MANAGEMENT_URL=http://127.0.0.1:$(port 8162)/console/jolokia
JMSLIKE_TEST_ARTEMIS_OPENWIRE_URL=tcp://127.0.0.1:$(port 61617)
JMSLIKE_TEST_ARTEMIS_AMQPS_URL=amqps://admin:admin@localhost:$(port 61618)
JMSLIKE_TEST_ARTEMIS_STOMPS_URL=stomp+ssl://admin:admin@127.0.0.1:$(port 61618)
EOF
  # The test CA that signed Artemis' TLS certificate (scripts/brokers/artemis.sh).
  echo "JMSLIKE_TEST_TLS_CA_FILE=$TLS_DIR/ca.pem" >>"$STATE/brokers.env"
}

# shellcheck source=scripts/brokers/activemq.sh
. "$HERE/brokers/activemq.sh"
# shellcheck source=scripts/brokers/rabbitmq.sh
. "$HERE/brokers/rabbitmq.sh"
# shellcheck source=scripts/brokers/artemis.sh
. "$HERE/brokers/artemis.sh"

do_start() {
  local b=$1 t0=$SECONDS pid
  pid=$("${b}_pid")
  if [ -n "$pid" ]; then
    # Up, or still booting (another start, or one that timed out): wait for it, not twice.
    wait_until "$b" "$("${b}_log")" "$("${b}_pidfile")" "${b}_answers"
    say "$b: already running (pid $pid)"
    return 0
  fi
  local p
  for p in $("${b}_ports"); do
    ! port_open "$p" || die "$b: port $p is taken by $(port_holder "$p")"
  done
  say "$b: starting"
  "${b}_install"
  "${b}_configure"
  "${b}_launch" 9>&- # the lock is ours, not the broker's: it must not outlive this script
  wait_until "$b" "$("${b}_log")" "$("${b}_pidfile")" "${b}_answers"
  say "$b: up in $((SECONDS - t0)) s (pid $("${b}_pid"))"
}

do_stop() {
  local b=$1 pid
  pid=$("${b}_pid")
  if [ -z "$pid" ]; then
    say "$b: not running"
    return 0
  fi
  local t0=$SECONDS
  "${b}_halt" "$pid"
  say "$b: stopped in $((SECONDS - t0)) s"
}

# A crash, not a stop: no shutdown hook, no journal closed, clients not told. The store
# stays; `restart` brings the broker back on it.
do_kill() {
  local b=$1 pid
  pid=$("${b}_pid")
  if [ -z "$pid" ]; then
    "${b}_killed"  # killed by the caller already (a test): its pid file may linger
    say "$b: not running"
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  # Gone, or a zombie nobody has reaped yet (its sockets are closed either way).
  local deadline=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    [ $SECONDS -lt $deadline ] || die "$b: pid $pid survived kill -9"
    sleep 0.1
  done
  "${b}_killed"
  say "$b: killed (pid $pid)"
}

do_status() {
  local b=$1 pid state
  pid=$("${b}_pid")
  local main_port
  main_port=$("${b}_ports" | awk '{print $NF}')
  if [ -z "$pid" ] && port_open "$main_port"; then
    state="PORT $main_port TAKEN"
  elif [ -z "$pid" ]; then
    state="stopped"
  elif "${b}_answers"; then
    state="running   pid $pid"
  else
    state="NOT ANSWERING pid $pid"
  fi
  printf '%-9s %-22s %s\n' "$b" "$state" "$("${b}_describe")"
}

main() {
  local cmd=${1:-} which=${2:-all} brokers b
  case "$cmd" in
    start | stop | restart | kill | reset | status) ;;
    *) die "usage: $0 start|stop|status|restart|kill|reset [activemq|rabbitmq|artemis|all]" ;;
  esac
  # Root for apt-get, for running the brokers as their own users, and for ss to name the
  # processes behind the ports.
  [ "$(id -u)" = 0 ] || die "run as root"
  case "$which" in
    all) brokers=("${ALL_BROKERS[@]}") ;;
    activemq | rabbitmq | artemis) brokers=("$which") ;;
    *) die "unknown broker '$which' (activemq|rabbitmq|artemis|all)" ;;
  esac
  mkdir -p "$STATE"
  chmod 755 "$STATE"
  # Two test runs starting the brokers at once: the second waits, then finds them running.
  if [ "$cmd" != status ]; then
    exec 9>"$STATE/.lock"
    flock 9
  fi
  case "$cmd" in
    start)
      write_env_file
      for b in "${brokers[@]}"; do do_start "$b"; done
      say "test settings: $STATE/brokers.env"
      ;;
    stop) for b in "${brokers[@]}"; do do_stop "$b"; done ;;
    restart)
      STORE_MODE=keep
      for b in "${brokers[@]}"; do do_stop "$b"; done
      write_env_file
      for b in "${brokers[@]}"; do do_start "$b"; done
      ;;
    reset)
      STORE_MODE=wipe
      for b in "${brokers[@]}"; do do_stop "$b"; done
      write_env_file
      for b in "${brokers[@]}"; do do_start "$b"; done
      ;;
    kill) for b in "${brokers[@]}"; do do_kill "$b"; done ;;
    status) for b in "${brokers[@]}"; do do_status "$b"; done ;;
  esac
}

main "$@"
