# shellcheck shell=bash
# RabbitMQ from Debian's `rabbitmq-server` package. Sourced by scripts/brokers.sh.
RMQ_DIR=$STATE/rabbitmq
RMQ_PIDFILE=$RMQ_DIR/rabbitmq.pid
# epmd is started by the first Erlang node (server or CLI) and listens on every interface
# unless told otherwise; every rabbit command below must carry this.
export ERL_EPMD_ADDRESS=127.0.0.1

rabbitmq_pid() { listener_pid 61614 beam; }
rabbitmq_ports() { echo 5672 15672 25672 61614; } # main (STOMP) port last
rabbitmq_pidfile() { echo "$RMQ_PIDFILE"; }
rabbitmq_answers() { stomp_ping 61614 guest guest && port_open 5672; }
rabbitmq_log() { echo "$RMQ_DIR/log/rabbit@localhost.log (and $RMQ_DIR/startup.log)"; }
rabbitmq_describe() {
  echo "amqp 127.0.0.1:5672 stomp 127.0.0.1:61614 http 127.0.0.1:15672 login: guest/guest  log: $RMQ_DIR/log/rabbit@localhost.log"
}

rabbitmq_install() {
  apt_install rabbitmq-server
}

# rabbitmq-env.conf can only live in /etc (the CLI tools read it from there too, so a plain
# `rabbitmqctl` finds the node); it points everything else into $RMQ_DIR.
rabbitmq_configure() {
  mkdir -p "$RMQ_DIR/mnesia" "$RMQ_DIR/log"
  cat >/etc/rabbitmq/rabbitmq-env.conf <<EOF
# Written by jmslike's scripts/brokers.sh: loopback only, state in $RMQ_DIR
NODENAME=rabbit@localhost
PID_FILE=$RMQ_PIDFILE
CONFIG_FILE=$RMQ_DIR/rabbitmq.conf
ENABLED_PLUGINS_FILE=$RMQ_DIR/enabled_plugins
MNESIA_BASE=$RMQ_DIR/mnesia
LOG_BASE=$RMQ_DIR/log
SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
export ERL_EPMD_ADDRESS=127.0.0.1
EOF
  cat >"$RMQ_DIR/rabbitmq.conf" <<'EOF'
listeners.tcp.default = 127.0.0.1:5672
stomp.listeners.tcp.1 = 127.0.0.1:61614
# The management API declares what STOMP and AMQP 1.0 cannot (single-active-consumer
# queues, consistent-hash exchanges); it binds at boot, so it is configured here.
management.tcp.ip = 127.0.0.1
management.tcp.port = 15672
EOF
  echo '[rabbitmq_stomp,rabbitmq_amqp1_0,rabbitmq_consistent_hash_exchange,rabbitmq_management].' \
    >"$RMQ_DIR/enabled_plugins"
  give_dir rabbitmq "$RMQ_DIR"
}

rabbitmq_launch() {
  rm -f "$RMQ_PIDFILE"
  # A test broker starts from an empty database (guest/guest is created on first boot):
  # recovering thousands of queues earlier runs left behind once hung the boot here.
  rm -rf "${RMQ_DIR:?}/mnesia"
  mkdir -p "$RMQ_DIR/mnesia"
  chown rabbitmq:rabbitmq "$RMQ_DIR/mnesia"
  # The Debian wrapper switches to user rabbitmq itself; -detached returns at once.
  (cd / && setsid -w rabbitmq-server -detached) </dev/null >"$RMQ_DIR/startup.log" 2>&1 ||
    die "rabbitmq-server -detached failed; see $RMQ_DIR/startup.log"
  # `wait` returns when the node has booted (plugins included), or fails early when the
  # node process dies; the STOMP check after it is the caller's.
  # rabbitmqctl's own --timeout does not bound every phase of the wait, hence timeout(1).
  timeout "$START_TIMEOUT" rabbitmqctl wait --timeout "$START_TIMEOUT" "$RMQ_PIDFILE" \
    >>"$RMQ_DIR/startup.log" 2>&1 ||
    die "rabbitmq did not boot; see $(rabbitmq_log)"
  # A second login for tests that open connections with explicit credentials.
  if ! rabbitmqctl authenticate_user user secret >/dev/null 2>&1; then
    rabbitmqctl add_user user secret >>"$RMQ_DIR/startup.log" 2>&1 &&
      rabbitmqctl set_permissions -p / user '.*' '.*' '.*' >>"$RMQ_DIR/startup.log" 2>&1 ||
      die "rabbitmq: cannot add the test user; see $RMQ_DIR/startup.log"
  fi
  # A vhost of its own for the AMQP 1.0 contract tests: RabbitMQ 3.10's AMQP 1.0 plugin
  # declares /queue/x non-durable and ends the session when the STOMP tests made x
  # durable before (the shared DLQ), so the two protocols' tests keep their queues apart.
  if ! rabbitmqctl list_vhosts 2>/dev/null | grep -qx jmslike-amqp; then
    { rabbitmqctl add_vhost jmslike-amqp &&
      rabbitmqctl set_permissions -p jmslike-amqp guest '.*' '.*' '.*' &&
      rabbitmqctl set_permissions -p jmslike-amqp user '.*' '.*' '.*'; } \
      >>"$RMQ_DIR/startup.log" 2>&1 || die "rabbitmq: cannot add vhost jmslike-amqp"
  fi
}

rabbitmq_halt() {
  rabbitmqctl stop "$RMQ_PIDFILE" >>"$RMQ_DIR/startup.log" 2>&1 ||
    rabbitmqctl stop >>"$RMQ_DIR/startup.log" 2>&1 ||
    kill -TERM "$1" 2>/dev/null || true
  wait_ports_closed rabbitmq 60 61614 5672 15672 || die "rabbitmq still holds its ports"
  # epmd outlives the node; it refuses to quit while another Erlang node is registered.
  epmd -kill >/dev/null 2>&1 || true
}
