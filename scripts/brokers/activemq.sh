# shellcheck shell=bash
# ActiveMQ Classic from Debian's `activemq` package, run with our own configuration.
# Sourced by scripts/brokers.sh (uses STATE, step, apt_install, give_dir, ...).
AMQ_DIR=$STATE/activemq
AMQ_CONF=$AMQ_DIR/conf
AMQ_DATA=$AMQ_DIR/data
AMQ_HOME=/usr/share/activemq
# Debian's build strips Classic's AMQP transport: the same release's jar and the proton-j it
# was built with come from Maven Central and join the broker's classpath.
AMQ_AMQP_JARS="org.apache.activemq:activemq-amqp:5.17.2 org.apache.qpid:proton-j:0.33.10"
AMQ_LIB=$AMQ_DIR/lib-amqp

AMQ_OPENWIRE_PORT=$(port 61616)
AMQ_STOMP_PORT=$(port 61613)
AMQ_AMQP_PORT=$(port 5674)

activemq_pid() { listener_pid "$AMQ_STOMP_PORT" activemq.jar; }
activemq_ports() { echo "$AMQ_OPENWIRE_PORT" "$AMQ_AMQP_PORT" "$AMQ_STOMP_PORT"; } # main (STOMP) port last
activemq_pidfile() { echo "$AMQ_DIR/activemq.pid"; }
activemq_answers() { stomp_ping "$AMQ_STOMP_PORT"; }
activemq_log() { echo "$AMQ_DATA/activemq.log (and $AMQ_DIR/console.log)"; }
activemq_describe() {
  echo "openwire 127.0.0.1:$AMQ_OPENWIRE_PORT stomp 127.0.0.1:$AMQ_STOMP_PORT amqp 127.0.0.1:$AMQ_AMQP_PORT login: none  log: $AMQ_DATA/activemq.log"
}

activemq_amqp_download() {
  local gav
  mkdir -p "$AMQ_LIB"
  for gav in $AMQ_AMQP_JARS; do
    mvn -q -B dependency:copy -Dartifact="$gav" -DoutputDirectory="$AMQ_LIB" || return 1
  done
}

# The AMQP jars, separated by ':' for -Dactivemq.classpath.
activemq_amqp_classpath() {
  local gav name version out=""
  for gav in $AMQ_AMQP_JARS; do
    name=${gav#*:} version=${name#*:} name=${name%%:*}
    out="$out:$AMQ_LIB/$name-$version.jar"
  done
  echo "${out#:}"
}

activemq_install() {
  apt_install activemq
  command -v mvn >/dev/null || apt_install maven
  local jar missing=""
  for jar in $(activemq_amqp_classpath | tr ':' ' '); do
    [ -f "$jar" ] || missing=1
  done
  [ -z "$missing" ] || step "download Classic's AMQP transport from Maven Central" activemq_amqp_download
}

# Debian's instance is not used: its activemq.xml has no STOMP and its log4j2.properties is
# ignored by this build (log4j 1.2). Rewritten on every start so the file stays the one here.
activemq_configure() {
  mkdir -p "$AMQ_CONF" "$AMQ_DATA" "$AMQ_DIR/tmp"
  # OpenWire, STOMP, and AMQP from the jars activemq_install fetched (Debian's build lacks
  # amqp/mqtt/http, and one unknown scheme makes the whole broker fail to start). No JMX,
  # no web console: nothing else listens.
  # ${activemq.data} below is Spring's placeholder (the JVM's -D), not the shell's.
  local redelivered=false
  [ -z "$DURABLE_REDELIVERY" ] || redelivered=true
  sed -e "s/@OPENWIRE@/$AMQ_OPENWIRE_PORT/; s/@STOMP@/$AMQ_STOMP_PORT/; s/@AMQP@/$AMQ_AMQP_PORT/" \
    -e "s/@REDELIVERED@/$redelivered/" \
    >"$AMQ_CONF/activemq.xml" <<'EOF'
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
       http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer"/>

  <!-- schedulerSupport: delivery delay over STOMP (AMQ_SCHEDULED_DELAY). Message groups
       need nothing: they are on by default for every queue. -->
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="jmslike"
          useJmx="false" schedulerSupport="true" persistent="true"
          dataDirectory="${activemq.data}" tmpDataDirectory="${activemq.data}/tmp">
    <destinationPolicy>
      <policyMap>
        <policyEntries>
          <!-- One DLQ, ActiveMQ.DLQ, also for non-persistent messages: STOMP sends are
               non-persistent unless asked, and tests must see what a NACK dead-letters. -->
          <!-- vmQueueCursor: one pending list, so persistent and non-persistent messages
               keep their send order (the default store cursor keeps them apart and
               reorders a group that mixes both). Not prioritizedMessages: with it the
               broker lets a later message of a group overtake an earlier one of lower
               priority, against ORD-12; jmslike declares priority=False instead. -->
          <!-- persistJMSRedelivered: JMSLIKE_BROKERS_DURABLE_REDELIVERY (brokers.sh). -->
          <policyEntry queue=">" persistJMSRedelivered="@REDELIVERED@">
            <pendingQueuePolicy>
              <vmQueueCursor/>
            </pendingQueuePolicy>
            <deadLetterStrategy>
              <sharedDeadLetterStrategy processNonPersistent="true" processExpired="true"/>
            </deadLetterStrategy>
          </policyEntry>
          <policyEntry topic=">">
            <deadLetterStrategy>
              <sharedDeadLetterStrategy processNonPersistent="true" processExpired="true"/>
            </deadLetterStrategy>
          </policyEntry>
        </policyEntries>
      </policyMap>
    </destinationPolicy>

    <persistenceAdapter>
      <kahaDB directory="${activemq.data}/kahadb"/>
    </persistenceAdapter>

    <!-- Explicit limits: the defaults (100 GB store) exceed a CI disk and only log warnings.
         vmQueueCursor keeps every queued message in memory: 3 GB (of a 4 GB heap) holds the
         Spark benchmark's 1,000,000 messages in one queue (256 MB stopped producers at
         about 212,000). -->
    <systemUsage>
      <systemUsage>
        <memoryUsage><memoryUsage limit="3 gb"/></memoryUsage>
        <storeUsage><storeUsage limit="8 gb"/></storeUsage>
        <tempUsage><tempUsage limit="4 gb"/></tempUsage>
      </systemUsage>
    </systemUsage>

    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:@OPENWIRE@?maximumConnections=1000&amp;wireFormat.maxFrameSize=104857600"/>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:@STOMP@?maximumConnections=1000&amp;wireFormat.maxFrameSize=104857600"/>
      <!-- transformer=jms: an AMQP message becomes a JMS message of its type for OpenWire
           consumers (the default, native, hands them a BytesMessage of raw AMQP bytes).
           idleTimeout 6 s (default 30 s): a frozen AMQP client is dropped, and its groups
           move, within the tests' 10 s freeze (test_partitions_processes.py). -->
      <transportConnector name="amqp" uri="amqp://127.0.0.1:@AMQP@?maximumConnections=1000&amp;wireFormat.maxFrameSize=104857600&amp;transport.transformer=jms&amp;transport.wireFormat.idleTimeout=6000"/>
    </transportConnectors>
  </broker>
</beans>
EOF
  cat >"$AMQ_CONF/log4j.properties" <<'EOF'
# log4j 1.2: Debian's ActiveMQ reads this (from -Dactivemq.classpath), not log4j2.properties.
log4j.rootLogger=INFO, logfile
log4j.logger.org.springframework=WARN
log4j.logger.org.apache.xbean=WARN
log4j.logger.org.apache.activemq.spring=WARN
log4j.appender.logfile=org.apache.log4j.RollingFileAppender
log4j.appender.logfile.file=${activemq.data}/activemq.log
log4j.appender.logfile.maxFileSize=10MB
log4j.appender.logfile.maxBackupIndex=3
log4j.appender.logfile.append=true
log4j.appender.logfile.layout=org.apache.log4j.PatternLayout
log4j.appender.logfile.layout.ConversionPattern=%d | %-5p | %m | %c | %t%n
EOF
  give_dir activemq "$AMQ_DIR"
}

activemq_launch() {
  # setsid: the broker outlives this script and the caller's terminal; setpriv execs (no
  # runuser parent left behind) and so does sh, so the pid written is the JVM's. The
  # --add-opens are the ones Debian's own /usr/bin/activemq passes on Java 17.
  rm -f "$AMQ_DIR/activemq.pid"
  # A test broker starts from an empty store: a destination a test left behind must not
  # decide whether the next start succeeds (KahaDB refuses to load some it once accepted).
  # `restart` keeps it: that is what a durability test restarts for.
  [ "$STORE_MODE" = keep ] || rm -rf "$AMQ_DATA/kahadb" "$AMQ_DATA/scheduler"
  # shellcheck disable=SC2016 # $$, $0 and $@ are the inner sh's
  setsid -f setpriv --reuid=activemq --regid=activemq --init-groups \
    env HOME=/var/lib/activemq \
    sh -c 'echo $$ >"$0"; exec "$@"' "$AMQ_DIR/activemq.pid" \
    java -Xms256M -Xmx4G \
    --add-reads=java.xml=java.logging \
    --add-opens java.base/java.security=ALL-UNNAMED \
    --add-opens java.base/java.net=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED \
    --add-opens java.base/java.util=ALL-UNNAMED \
    --add-opens java.base/java.util.concurrent=ALL-UNNAMED \
    --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED \
    --add-opens java.naming/javax.naming.spi=ALL-UNNAMED \
    --add-opens java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED \
    -Djava.io.tmpdir="$AMQ_DIR/tmp" \
    -Dactivemq.home="$AMQ_HOME" -Dactivemq.base="$AMQ_DIR" \
    -Dactivemq.conf="$AMQ_CONF" -Dactivemq.data="$AMQ_DATA" \
    -Dactivemq.classpath="$AMQ_CONF:$(activemq_amqp_classpath)" \
    -jar "$AMQ_HOME/bin/activemq.jar" start "xbean:file:$AMQ_CONF/activemq.xml" \
    </dev/null >"$AMQ_DIR/console.log" 2>&1
}

# `activemq.jar stop` needs JMX, which this configuration leaves off (one port less); the
# broker's shutdown hook does the same clean stop on SIGTERM.
activemq_halt() {
  term_and_wait activemq "$1" "$AMQ_STOMP_PORT" "$AMQ_OPENWIRE_PORT" "$AMQ_AMQP_PORT"
}

# After kill -9: the JVM is gone; KahaDB's lock is a file lock, released with it.
activemq_killed() {
  rm -f "$AMQ_DIR/activemq.pid"
}
