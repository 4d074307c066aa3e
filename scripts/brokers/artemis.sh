# shellcheck shell=bash
# ActiveMQ Artemis from Maven Central, one instance under $STATE. Sourced by brokers.sh.
#
# Candidates, first that resolves wins. 2.42.0, the first version targeted, is not on Central;
# from 2.50-ish on the distribution moved to groupId org.apache.artemis, and the old
# groupId's newest versions are only relocation poms. Override with JMSLIKE_ARTEMIS_GAV
# ("group:version", space separated).
ARTEMIS_GAV=${JMSLIKE_ARTEMIS_GAV:-org.apache.artemis:2.56.0 org.apache.activemq:2.40.0}
ARTEMIS_INSTANCE=$STATE/artemis-instance
ARTEMIS_LOG=$ARTEMIS_INSTANCE/log/artemis.log
TLS_DIR=$STATE/tls

ARTEMIS_PORT=$(port 61617)
ARTEMIS_TLS_PORT=$(port 61618)
ARTEMIS_HTTP_PORT=$(port 8162)

artemis_pid() { listener_pid "$ARTEMIS_PORT" artemis; }
artemis_ports() { echo "$ARTEMIS_HTTP_PORT" "$ARTEMIS_TLS_PORT" "$ARTEMIS_PORT"; } # main port last; TLS is amqps://
artemis_pidfile() { echo "$ARTEMIS_INSTANCE/data/artemis.pid"; }
artemis_answers() { stomp_ping "$ARTEMIS_PORT" admin admin; }
artemis_log() { echo "$ARTEMIS_LOG"; }
artemis_describe() {
  echo "core/amqp/stomp/openwire/mqtt 127.0.0.1:$ARTEMIS_PORT TLS 127.0.0.1:$ARTEMIS_TLS_PORT console 127.0.0.1:$ARTEMIS_HTTP_PORT login: admin/admin  log: $ARTEMIS_LOG"
}

# The unpacked distribution that the instance was (or will be) created from.
artemis_home() {
  local d
  for d in "$STATE"/artemis/apache-artemis-*/; do
    [ -x "$d/bin/artemis" ] && { echo "${d%/}"; return 0; }
  done
  return 1
}

artemis_download() {
  local gav group version
  mkdir -p "$STATE/downloads" "$STATE/artemis"
  for gav in $ARTEMIS_GAV; do
    group=${gav%%:*} version=${gav#*:}
    echo "trying $group:apache-artemis:$version"
    if mvn -q -B dependency:copy -Dartifact="$group:apache-artemis:$version:tar.gz:bin" \
      -DoutputDirectory="$STATE/downloads"; then
      tar -xzf "$STATE/downloads/apache-artemis-$version-bin.tar.gz" -C "$STATE/artemis" || return 1
      return 0
    fi
  done
  return 1
}

artemis_install() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  artemis_home >/dev/null || step "download Artemis from Maven Central" artemis_download
  [ -f "$TLS_DIR/server.p12" ] || step "make a test CA and a certificate for 127.0.0.1" tls_files
  [ -f "$ARTEMIS_INSTANCE/etc/broker.xml" ] ||
    step "create Artemis instance $ARTEMIS_INSTANCE" artemis_create "$(artemis_home)"
}

# --nio: no libaio here. --no-autotune: the journal test takes seconds and tunes for a
# disk that CI may not have. The per-protocol acceptors are left out; one acceptor for every
# protocol is set below.
artemis_create() {
  "$1/bin/artemis" create "$ARTEMIS_INSTANCE" --user admin --password admin --require-login \
    --host 127.0.0.1 --http-host 127.0.0.1 --http-port "$ARTEMIS_HTTP_PORT" --default-port "$ARTEMIS_PORT" \
    --no-amqp-acceptor --no-stomp-acceptor --no-mqtt-acceptor --no-hornetq-acceptor \
    --no-autotune --nio --java-memory 1G --silent &&
    artemis_settings
}

# Replace the whole <acceptors> block, whatever the version generated, so that exactly the
# listeners below exist: 61616 belongs to ActiveMQ Classic, and any forgotten acceptor
# (5672, 61613, 1883, 5445 clash with the other brokers) would stop the instance from
# starting. Run at every start, so that an instance made by an older script gets them too.
artemis_acceptors() {
  python3 - "$ARTEMIS_INSTANCE/etc/broker.xml" "$TLS_DIR/server.p12" "$ARTEMIS_PORT" "$ARTEMIS_TLS_PORT" <<'PY'
import re, sys
path, keystore, port, tls_port = sys.argv[1:5]
xml = open(path, encoding="utf-8").read()
# amqpIdleTimeout 6 s (default 60 s): a frozen AMQP client is dropped, and its groups
# move, within the tests' 10 s freeze (test_partitions_processes.py).
options = (
    'useEpoll=true;tcpSendBufferSize=1048576;tcpReceiveBufferSize=1048576;'
    'amqpMinLargeMessageSize=102400;amqpCredits=1000;amqpLowCredits=300;'
    'amqpDuplicateDetection=true;amqpIdleTimeout=6000;supportAdvisory=false;'
    'suppressInternalManagementObjects=false'
)
acceptor = (
    '<acceptors>\n'
    f'         <acceptor name="artemis">tcp://127.0.0.1:{port}?'
    f'protocols=CORE,AMQP,STOMP,OPENWIRE,MQTT;{options}</acceptor>\n'
    f'         <acceptor name="artemis-tls">tcp://127.0.0.1:{tls_port}?'
    f'protocols=AMQP,STOMP;sslEnabled=true;keyStorePath={keystore};'
    f'keyStorePassword=jmslike-test;keyStoreType=PKCS12;{options}</acceptor>\n'
    '      </acceptors>'
)
new, n = re.subn(r"<acceptors>.*?</acceptors>", acceptor, xml, count=1, flags=re.S)
if n != 1:
    sys.exit(f"no <acceptors> block in {path}")
open(path, "w", encoding="utf-8").write(new)
PY
}

artemis_settings() {
  artemis_acceptors || return 1
  # Browsing over the management API (jmslike's browsers on Artemis) returns whole bodies.
  artemis_xml_once '<management-message-attribute-size-limit>-1<' '(<address-setting match="#">)' \
    '\1\n            <management-message-attribute-size-limit>-1</management-message-attribute-size-limit>' &&
    artemis_test_user
}

# Queues under configured-exclusive.* are exclusive by the broker's own configuration, as
# an administrator makes them where the management API is not open to applications: the
# tests of the setting exclusiveQueues=configured (ORD-18 across processes without it).
# Run at every start, so that an instance made by an older script gets it too.
artemis_exclusive_addresses() {
  artemis_xml_once 'match="configured-exclusive.#"' '(\n\s*)(<address-setting match="#">)' \
    '\1<address-setting match="configured-exclusive.#">\1   <default-exclusive-queue>true</default-exclusive-queue>\1</address-setting>\1\2'
}

# Edit broker.xml once: unless GUARD is in it already, replace the first match of PATTERN
# (a Python regular expression) by REPLACEMENT (\1... its groups); fail if none matches.
artemis_xml_once() {
  python3 - "$ARTEMIS_INSTANCE/etc/broker.xml" "$1" "$2" "$3" <<'PY'
import re, sys
path, guard, pattern, replacement = sys.argv[1:]
xml = open(path, encoding="utf-8").read()
if guard not in xml:
    xml, n = re.subn(pattern, replacement, xml, count=1)
    if n != 1:
        sys.exit(f"no {pattern!r} in {path}")
    open(path, "w", encoding="utf-8").write(xml)
PY
}

# A second login for tests that open connections with explicit credentials.
artemis_test_user() {
  local etc=$ARTEMIS_INSTANCE/etc
  grep -q '^user *=' "$etc/artemis-users.properties" ||
    printf '\nuser = secret\n' >>"$etc/artemis-users.properties"
  sed -i -E '/^amq *=/{/[=,] *user *(,|$)/!s/$/,user/}' "$etc/artemis-roles.properties"
}

artemis_configure() {
  local n
  artemis_acceptors || die "artemis: cannot write the acceptors of $ARTEMIS_INSTANCE/etc/broker.xml"
  n=$(grep -c '<acceptor ' "$ARTEMIS_INSTANCE/etc/broker.xml" || true)
  [ "$n" = 2 ] || die "artemis: $ARTEMIS_INSTANCE/etc/broker.xml has $n acceptors, expected 2"
  # The console's port was fixed when the instance was made; follow the offset anyway.
  sed -i -E "s#uri=\"http://127\.0\.0\.1:[0-9]+\"#uri=\"http://127.0.0.1:$ARTEMIS_HTTP_PORT\"#" \
    "$ARTEMIS_INSTANCE/etc/bootstrap.xml"
  artemis_durable_redelivery || die "artemis: cannot set persist-delivery-count-before-delivery"
  artemis_disk_limit || die "artemis: cannot set max-disk-usage in $ARTEMIS_INSTANCE/etc/broker.xml"
  artemis_exclusive_addresses || die "artemis: cannot add the exclusive address setting to $ARTEMIS_INSTANCE/etc/broker.xml"
  # `reset` throws the journal away (bindings: the queues; journal: their messages).
  [ "$STORE_MODE" != wipe ] || rm -rf "$ARTEMIS_INSTANCE/data/"{bindings,journal,large-messages,paging}
}

# The created broker.xml blocks every producer once the disk holding the instance is 90%
# full, counting other programs' files too: a shared CI disk reached 90.4% with 25 GB
# free and Artemis refused each SEND with AMQ229119. The test broker's journal needs far
# less than that, so it blocks only on a full disk.
artemis_disk_limit() {
  local xml=$ARTEMIS_INSTANCE/etc/broker.xml
  grep -q '<max-disk-usage>' "$xml" || return 1
  sed -i -E 's#<max-disk-usage>[^<]*</max-disk-usage>#<max-disk-usage>100</max-disk-usage>#' "$xml"
}

# <persist-delivery-count-before-delivery> follows JMSLIKE_BROKERS_DURABLE_REDELIVERY
# (brokers.sh), on every start: the element is dropped, then added when asked for.
artemis_durable_redelivery() {
  python3 - "$ARTEMIS_INSTANCE/etc/broker.xml" "$DURABLE_REDELIVERY" <<'PY'
import re, sys
path, wanted = sys.argv[1], sys.argv[2]
xml = open(path, encoding="utf-8").read()
tag = "persist-delivery-count-before-delivery"
xml = re.sub(rf"\s*<{tag}>[^<]*</{tag}>", "", xml)
if wanted:
    xml, n = re.subn(
        r"(<persistence-enabled>[^<]*</persistence-enabled>)", rf"\1\n      <{tag}>true</{tag}>", xml, count=1
    )
    if n != 1:
        sys.exit(f"no <persistence-enabled> in {path}")
open(path, "w", encoding="utf-8").write(xml)
PY
}

# A test CA and a server certificate for 127.0.0.1 and localhost, made once with openssl:
# the CA for the clients (sslCaFile), the key and certificate as a PKCS12 keystore for
# Artemis' TLS acceptor. Test credentials only: the key never leaves $TLS_DIR.
tls_files() {
  command -v openssl >/dev/null || apt_install openssl
  mkdir -p "$TLS_DIR" && (
    cd "$TLS_DIR" &&
      openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=jmslike test CA" \
        -keyout ca.key -out ca.pem 2>/dev/null &&
      openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
        -keyout server.key -out server.csr 2>/dev/null &&
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext &&
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
        -extfile server.ext -out server.pem 2>/dev/null &&
      openssl pkcs12 -export -in server.pem -inkey server.key -out server.p12 \
        -passout pass:jmslike-test &&
      chmod 644 ca.pem server.p12
  )
}

artemis_launch() {
  # artemis-service nohups `artemis run` (which execs the JVM) and records its pid in
  # data/artemis.pid; setsid keeps it out of the caller's process group.
  setsid -w "$ARTEMIS_INSTANCE/bin/artemis-service" start </dev/null \
    >>"$ARTEMIS_INSTANCE/log/service.log" 2>&1 ||
    die "artemis-service start failed; see $ARTEMIS_LOG"
}

# artemis-service stop is a SIGTERM (the shutdown hook stops the broker cleanly) with a 5 s
# wait; a large journal can take longer, so wait on the port as well.
artemis_halt() {
  if [ "$(cat "$ARTEMIS_INSTANCE/data/artemis.pid" 2>/dev/null)" = "$1" ]; then
    "$ARTEMIS_INSTANCE/bin/artemis-service" stop >>"$ARTEMIS_INSTANCE/log/service.log" 2>&1 || true
  fi
  term_and_wait artemis "$1" "$ARTEMIS_PORT" "$ARTEMIS_TLS_PORT" "$ARTEMIS_HTTP_PORT"
}

# After kill -9: artemis-service would believe a stale pid file (a reused pid looks alive).
artemis_killed() {
  rm -f "$ARTEMIS_INSTANCE/data/artemis.pid"
}
