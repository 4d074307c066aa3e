# shellcheck shell=bash
# RabbitMQ from Debian's `rabbitmq-server` package. Sourced by scripts/brokers.sh.
RMQ_DIR=$STATE/rabbitmq
RMQ_PIDFILE=$RMQ_DIR/rabbitmq.pid
RMQ_AMQP_PORT=$(port 5672)
RMQ_STOMP_PORT=$(port 61614)
RMQ_HTTP_PORT=$(port 15672)
RMQ_DIST_PORT=$(port 25672)
# epmd is started by the first Erlang node (server or CLI) and listens on every interface
# unless told otherwise; every rabbit command below must carry this.
export ERL_EPMD_ADDRESS=127.0.0.1
if [ "$OFFSET" = 0 ]; then
  RMQ_NODE=rabbit@localhost
  # The standard set's env file lives where a plain `rabbitmqctl` finds it.
  RMQ_ENV_FILE=/etc/rabbitmq/rabbitmq-env.conf
else
  # A second set must not touch the first one's node, epmd or /etc file: a node name,
  # an epmd and an env file of its own (the CLI reads it through RABBITMQ_CONF_ENV_FILE,
  # which Debian's wrapper passes on through su).
  RMQ_NODE=rabbit_$OFFSET@localhost
  RMQ_ENV_FILE=$RMQ_DIR/rabbitmq-env.conf
  export RABBITMQ_CONF_ENV_FILE=$RMQ_ENV_FILE
  export ERL_EPMD_PORT=$((4369 + OFFSET))
fi

# Every CLI call names the node: with an offset, a forgotten -n would stop (or change)
# the shared broker.
rmqctl() { rabbitmqctl -n "$RMQ_NODE" "$@"; }

rabbitmq_pid() { listener_pid "$RMQ_STOMP_PORT" beam; }
rabbitmq_ports() { echo "$RMQ_AMQP_PORT" "$RMQ_HTTP_PORT" "$RMQ_DIST_PORT" "$RMQ_STOMP_PORT"; } # main (STOMP) port last
rabbitmq_pidfile() { echo "$RMQ_PIDFILE"; }
rabbitmq_answers() { stomp_ping "$RMQ_STOMP_PORT" guest guest && port_open "$RMQ_AMQP_PORT"; }
rabbitmq_log() { echo "$RMQ_DIR/log/$RMQ_NODE.log (and $RMQ_DIR/startup.log)"; }
rabbitmq_describe() {
  echo "amqp 127.0.0.1:$RMQ_AMQP_PORT stomp 127.0.0.1:$RMQ_STOMP_PORT http 127.0.0.1:$RMQ_HTTP_PORT node $RMQ_NODE login: guest/guest  log: $RMQ_DIR/log/$RMQ_NODE.log"
}

rabbitmq_install() {
  apt_install rabbitmq-server
}

# rabbitmq-env.conf points everything into $RMQ_DIR; for the standard set it can only
# live in /etc (the CLI tools read it from there too, so a plain `rabbitmqctl` finds the
# node).
rabbitmq_configure() {
  mkdir -p "$RMQ_DIR/mnesia" "$RMQ_DIR/log"
  local epmd_port="" ctl_ports=""
  if [ "$OFFSET" != 0 ]; then
    epmd_port="export ERL_EPMD_PORT=$ERL_EPMD_PORT"
    ctl_ports="CTL_DIST_PORT_MIN=$((35672 + OFFSET))"
  fi
  cat >"$RMQ_ENV_FILE" <<EOF
# Written by jmslike's scripts/brokers.sh: loopback only, state in $RMQ_DIR
NODENAME=$RMQ_NODE
PID_FILE=$RMQ_PIDFILE
CONFIG_FILE=$RMQ_DIR/rabbitmq.conf
ENABLED_PLUGINS_FILE=$RMQ_DIR/enabled_plugins
MNESIA_BASE=$RMQ_DIR/mnesia
LOG_BASE=$RMQ_DIR/log
DIST_PORT=$RMQ_DIST_PORT
$ctl_ports
SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export ERL_EPMD_ADDRESS=127.0.0.1
$epmd_port
EOF
  cat >"$RMQ_DIR/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$RMQ_AMQP_PORT
stomp.listeners.tcp.1 = 127.0.0.1:$RMQ_STOMP_PORT
# The management API declares what STOMP and AMQP 1.0 cannot (single-active-consumer
# queues, consistent-hash exchanges); it binds at boot, so it is configured here.
management.tcp.ip = 127.0.0.1
management.tcp.port = $RMQ_HTTP_PORT
EOF
  echo '[rabbitmq_stomp,rabbitmq_amqp1_0,rabbitmq_consistent_hash_exchange,rabbitmq_management].' \
    >"$RMQ_DIR/enabled_plugins"
  give_dir rabbitmq "$RMQ_DIR"
}

rabbitmq_launch() {
  rm -f "$RMQ_PIDFILE"
  # A test broker starts from an empty database (guest/guest is created on first boot):
  # recovering thousands of queues earlier runs left behind once hung the boot here.
  # `restart` keeps it: durable queues and their persistent messages are what it is for.
  if [ "$STORE_MODE" != keep ]; then
    rm -rf "${RMQ_DIR:?}/mnesia"
    mkdir -p "$RMQ_DIR/mnesia"
    chown rabbitmq:rabbitmq "$RMQ_DIR/mnesia"
  fi
  # The Debian wrapper switches to user rabbitmq itself; -detached returns at once.
  (cd / && setsid -w rabbitmq-server -detached) </dev/null >"$RMQ_DIR/startup.log" 2>&1 ||
    die "rabbitmq-server -detached failed; see $RMQ_DIR/startup.log"
  # `wait` returns when the node has booted (plugins included), or fails early when the
  # node process dies; the STOMP check after it is the caller's.
  # rabbitmqctl's own --timeout does not bound every phase of the wait, hence timeout(1).
  timeout "$START_TIMEOUT" rabbitmqctl -n "$RMQ_NODE" wait --timeout "$START_TIMEOUT" "$RMQ_PIDFILE" \
    >>"$RMQ_DIR/startup.log" 2>&1 ||
    die "rabbitmq did not boot; see $(rabbitmq_log)"
  # A second login for tests that open connections with explicit credentials.
  if ! rmqctl authenticate_user user secret >/dev/null 2>&1; then
    rmqctl add_user user secret >>"$RMQ_DIR/startup.log" 2>&1 &&
      rmqctl set_permissions -p / user '.*' '.*' '.*' >>"$RMQ_DIR/startup.log" 2>&1 ||
      die "rabbitmq: cannot add the test user; see $RMQ_DIR/startup.log"
  fi
  # A vhost of its own for the AMQP 1.0 contract tests: RabbitMQ 3.10's AMQP 1.0 plugin
  # declares /queue/x non-durable and ends the session when the STOMP tests made x
  # durable before (the shared DLQ), so the two protocols' tests keep their queues apart.
  if ! rmqctl list_vhosts 2>/dev/null | grep -qx jmslike-amqp; then
    { rmqctl add_vhost jmslike-amqp &&
      rmqctl set_permissions -p jmslike-amqp guest '.*' '.*' '.*' &&
      rmqctl set_permissions -p jmslike-amqp user '.*' '.*' '.*'; } \
      >>"$RMQ_DIR/startup.log" 2>&1 || die "rabbitmq: cannot add vhost jmslike-amqp"
  fi
}

rabbitmq_halt() {
  rmqctl stop "$RMQ_PIDFILE" >>"$RMQ_DIR/startup.log" 2>&1 ||
    rmqctl stop >>"$RMQ_DIR/startup.log" 2>&1 ||
    kill -TERM "$1" 2>/dev/null || true
  wait_ports_closed rabbitmq 60 "$RMQ_STOMP_PORT" "$RMQ_AMQP_PORT" "$RMQ_HTTP_PORT" ||
    die "rabbitmq still holds its ports"
  # epmd outlives the node; it refuses to quit while another Erlang node is registered.
  # (With an offset ERL_EPMD_PORT names this set's own epmd.)
  epmd -kill >/dev/null 2>&1 || true
}

# After kill -9 the node is gone but its epmd entry and pid file may linger; the next
# `restart` launches a node of the same name, which epmd accepts once the old connection
# has closed (at once: the process is dead). The Erlang port helpers (erl_child_setup,
# inet_gethost) die with their parent.
rabbitmq_killed() {
  rm -f "$RMQ_PIDFILE"
}
