package jmslike.interop;

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
 * The Java JMS client's side of {@code jmslike bench} (benchmarks/src/jmslike_bench/): one workload per
 * process, timed the way the Python runners time it, printed as one JSON line
 * ({@code {"msgs_per_s": ..., "p50_ms": ..., "p99_ms": ...}}). It is the reference for what
 * the broker itself can take from a mature client, so it uses plain JMS 1.1 with each
 * client's defaults except the prefetch, which the caller sets in the URL.
 *
 * <pre>
 * java -cp interop.jar jmslike.interop.Bench send|receive|sendrecv|groups|latency
 *      --protocol amqp|core|openwire --url URL [--user U --password P] --queue Q
 *      --count N [--size 1024] [--persistent true] [--groups G --consumers C] [--rate R]
 * </pre>
 */
public final class Bench {
    private static final long IDLE_MS = 20_000;

    private Bench() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) {
            throw new IllegalArgumentException("usage: send|receive|sendrecv|groups|latency --protocol ...");
        }
        Map<String, String> args = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        ConnectionFactory factory = Interop.factory(args.get("protocol"), args.get("url"));
        int count = Integer.parseInt(args.get("count"));
        int size = Integer.parseInt(args.getOrDefault("size", "1024"));
        boolean persistent = Boolean.parseBoolean(args.getOrDefault("persistent", "false"));
        String body = "x".repeat(size);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Bench.Job job = new Bench.Job(factory, args, count, body, persistent);
        String result = switch (argv[0]) {
            case "send" -> job.send();
            case "receive" -> job.receive();
            case "sendrecv" -> job.sendReceive();
            case "groups" -> job.groups(Integer.parseInt(args.getOrDefault("groups", "0")),
                    Integer.parseInt(args.getOrDefault("consumers", "4")));
            case "latency" -> job.latency(Double.parseDouble(args.getOrDefault("rate", "500")));
            default -> throw new IllegalArgumentException("unknown mode " + argv[0]);
        };
        out.println(result);
        // The clients leave non-daemon threads behind (Qpid's, Artemis' pools): end here.
        System.exit(0);
    }

    private record Job(ConnectionFactory factory, Map<String, String> args, int count, String body,
                       boolean persistent) {

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
                if (!done.await(IDLE_MS * 10, TimeUnit.MILLISECONDS)) {
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
                if (!done.await(IDLE_MS, TimeUnit.MILLISECONDS)) {
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

        static void take(MessageConsumer consumer, int count) throws JMSException {
            for (int i = 0; i < count; i++) {
                Message message = consumer.receive(IDLE_MS);
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
