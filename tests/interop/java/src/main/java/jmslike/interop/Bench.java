package jmslike.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import javax.jms.Connection;
import javax.jms.ConnectionFactory;
import javax.jms.DeliveryMode;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.TextMessage;

/**
 * The Java JMS client's side of {@code jmslike bench} (benchmarks/src/jmslike_bench/):
 * workloads timed the way the Python runners time them, each printed as one JSON line
 * ({@code {"msgs_per_s": ..., "p50_ms": ..., "p99_ms": ...}}). It is the reference for what
 * the broker itself can take from a mature client, so it uses plain JMS 1.1 with each
 * client's defaults except the prefetch, which the caller sets in the URL.
 *
 * <p>{@code serve} keeps one JVM for every workload of a bench: it reads one workload per
 * line on stdin (the same words as the one-shot modes, without --protocol, --url and the
 * login) and answers each with its JSON line, or {@code {"error": "..."}}; end of input
 * ends it. The bench's untimed warm-up runs go through the same JVM, so the timed runs
 * measure JIT-compiled code, not the interpreter and the class loader.
 *
 * <pre>
 * java -cp interop.jar jmslike.interop.Bench send|receive|sendrecv|groups|latency
 *      --protocol amqp|core|openwire --url URL [--user U --password P] --queue Q
 *      --count N [--size 1024] [--persistent true] [--groups G --consumers C] [--rate R] [--idle-ms 20000]
 * java -cp interop.jar jmslike.interop.Bench serve --protocol P --url URL [--user U --password P]
 *      (then on stdin: MODE --queue Q --count N ...)
 * </pre>
 */
public final class Bench {
    /** How long a run waits for a message before it fails, unless the line says {@code --idle-ms}. */
    private static final String IDLE_MS = "20000";

    private Bench() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) {
            throw new IllegalArgumentException("usage: send|receive|sendrecv|groups|latency --protocol ...");
        }
        Map<String, String> args = options(argv);
        ConnectionFactory factory = Interop.factory(args.get("protocol"), args.get("url"));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        if (argv[0].equals("serve")) {
            serve(factory, args, out);
        } else {
            out.println(run(factory, args, argv[0]));
        }
        // The clients leave non-daemon threads behind (Qpid's, Artemis' pools): end here.
        System.exit(0);
    }

    /** {@code --name value} pairs after the mode. */
    private static Map<String, String> options(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        return args;
    }

    /** One workload per stdin line, one JSON line each, in this JVM, until end of input. */
    private static void serve(ConnectionFactory factory, Map<String, String> common, PrintStream out)
            throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) {
                continue;
            }
            Map<String, String> args = new HashMap<>(common);
            args.putAll(options(words));
            String result;
            try {
                result = run(factory, args, words[0]);
            } catch (Exception e) {
                String text = String.valueOf(e).replace("\\", "\\\\").replace("\"", "\\\"")
                        .replaceAll("[\\r\\n\\t]", " ");
                result = "{\"error\": \"" + text + "\"}";
            }
            out.println(result);
        }
    }

    private static String run(ConnectionFactory factory, Map<String, String> args, String mode)
            throws Exception {
        int count = Integer.parseInt(args.get("count"));
        int size = Integer.parseInt(args.getOrDefault("size", "1024"));
        boolean persistent = Boolean.parseBoolean(args.getOrDefault("persistent", "false"));
        String body = "x".repeat(size);
        Bench.Job job = new Bench.Job(factory, args, count, body, persistent);
        return switch (mode) {
            case "send" -> job.send();
            case "receive" -> job.receive();
            case "sendrecv" -> job.sendReceive();
            case "groups" -> job.groups(Integer.parseInt(args.getOrDefault("groups", "0")),
                    Integer.parseInt(args.getOrDefault("consumers", "4")));
            case "latency" -> job.latency(Double.parseDouble(args.getOrDefault("rate", "500")));
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        };
    }

    private record Job(ConnectionFactory factory, Map<String, String> args, int count, String body,
                       boolean persistent) {

        long idleMs() {
            return Long.parseLong(args.getOrDefault("idle-ms", IDLE_MS));
        }

        Connection connect() throws JMSException {
            return args.containsKey("user")
                    ? factory.createConnection(args.get("user"), args.get("password"))
                    : factory.createConnection();
        }

        /** Sends {@code count} messages; timed until the connection is closed. */
        String send() throws JMSException {
            Connection connection = connect();
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer producer = producer(session);
            long started = System.nanoTime();
            for (int i = 0; i < count; i++) {
                producer.send(session.createTextMessage(body));
            }
            connection.close();
            return rate(count, started);
        }

        /** Receives {@code count} messages, AUTO_ACKNOWLEDGE; timed until the consumer closed. */
        String receive() throws JMSException {
            try (Connection connection = connect()) {
                Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
                long started = System.nanoTime();
                MessageConsumer consumer = session.createConsumer(queue(session));
                connection.start();
                take(consumer, count);
                consumer.close();
                return rate(count, started);
            }
        }

        /** A producer thread and a consumer at once, each its own connection. */
        String sendReceive() throws Exception {
            try (Connection in = connect()) {
                Session session = in.createSession(false, Session.AUTO_ACKNOWLEDGE);
                MessageConsumer consumer = session.createConsumer(queue(session));
                in.start();
                AtomicReference<Exception> failed = new AtomicReference<>();
                long started = System.nanoTime();
                Thread sender = new Thread(() -> {
                    try {
                        send();
                    } catch (Exception e) {
                        failed.set(e);
                    }
                });
                sender.start();
                take(consumer, count);
                sender.join();
                if (failed.get() != null) {
                    throw failed.get();
                }
                consumer.close();
                return rate(count, started);
            }
        }

        /** Fills the queue (untimed), round-robin over {@code groups} JMSXGroupIDs (0: none),
         * then {@code consumers} competing listeners, each its own session, take it all. */
        String groups(int groups, int consumers) throws Exception {
            try (Connection connection = connect()) {
                Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
                MessageProducer producer = producer(session);
                for (int i = 0; i < count; i++) {
                    TextMessage message = session.createTextMessage(body);
                    if (groups > 0) {
                        message.setStringProperty("JMSXGroupID", "group-" + (i % groups));
                    }
                    producer.send(message);
                }
                session.close();
                CountDownLatch done = new CountDownLatch(count);
                long started = System.nanoTime();
                for (int c = 0; c < consumers; c++) {
                    Session own = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
                    own.createConsumer(queue(own)).setMessageListener(m -> done.countDown());
                }
                connection.start();
                if (!done.await(idleMs() * 10, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("received " + (count - done.getCount()) + " of " + count);
                }
                return rate(count, started);
            }
        }

        /** Sends at {@code rate} msg/s with the send time in a property; a listener on another
         * connection records each message's latency. */
        String latency(double rate) throws Exception {
            long[] latencies = new long[count];
            AtomicInteger seen = new AtomicInteger();
            CountDownLatch done = new CountDownLatch(count);
            try (Connection in = connect(); Connection outgoing = connect()) {
                Session session = in.createSession(false, Session.AUTO_ACKNOWLEDGE);
                session.createConsumer(queue(session)).setMessageListener(m -> {
                    try {
                        long sent = m.getLongProperty("sentNanos");
                        latencies[seen.getAndIncrement()] = System.nanoTime() - sent;
                    } catch (JMSException e) {
                        throw new IllegalStateException(e);
                    }
                    done.countDown();
                });
                in.start();
                Session sending = outgoing.createSession(false, Session.AUTO_ACKNOWLEDGE);
                MessageProducer producer = producer(sending);
                long started = System.nanoTime();
                long interval = (long) (1e9 / rate);
                for (int i = 0; i < count; i++) {
                    long due = started + i * interval;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    TextMessage message = sending.createTextMessage(body);
                    message.setLongProperty("sentNanos", System.nanoTime());
                    producer.send(message);
                }
                if (!done.await(idleMs(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("received " + seen.get() + " of " + count);
                }
                long elapsed = System.nanoTime() - started;
                long[] sorted = Arrays.copyOf(latencies, count);
                Arrays.sort(sorted);
                return String.format(java.util.Locale.ROOT,
                        "{\"msgs_per_s\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f}",
                        count / (elapsed / 1e9), percentile(sorted, 0.50), percentile(sorted, 0.99));
            }
        }

        Queue queue(Session session) throws JMSException {
            return session.createQueue(args.get("queue"));
        }

        MessageProducer producer(Session session) throws JMSException {
            MessageProducer producer = session.createProducer(queue(session));
            producer.setDeliveryMode(persistent ? DeliveryMode.PERSISTENT : DeliveryMode.NON_PERSISTENT);
            return producer;
        }

        void take(MessageConsumer consumer, int count) throws JMSException {
            for (int i = 0; i < count; i++) {
                Message message = consumer.receive(idleMs());
                if (message == null) {
                    throw new IllegalStateException("received " + i + " of " + count);
                }
            }
        }

        static String rate(int count, long started) {
            double seconds = (System.nanoTime() - started) / 1e9;
            return String.format(java.util.Locale.ROOT, "{\"msgs_per_s\": %.1f}", count / seconds);
        }

        /** Nearest-rank percentile of sorted nanoseconds, in milliseconds. */
        static double percentile(long[] sorted, double q) {
            int index = Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1);
            return sorted[Math.max(index, 0)] / 1e6;
        }
    }
}
