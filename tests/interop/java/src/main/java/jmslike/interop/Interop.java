package jmslike.interop;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32;
import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.ConnectionFactory;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.TextMessage;
import javax.jms.Topic;

/**
 * The Java JMS peer of jmslike's interop tests (tests/interop/test_java_*.py).
 *
 * <p>Plain JMS 2.0 (javax.jms) code, as a Java application on the same broker would write
 * it, over one of three clients: Qpid JMS (AMQP 1.0), Artemis' core client (Artemis' own
 * protocol) or ActiveMQ Classic's OpenWire client. Every message it sends or receives is
 * printed as one JSON line on stdout, in one format for all three, so that the Python test
 * compares what one side sent with what the other side read, field by field.
 *
 * <pre>
 * java -jar interop.jar produce   --protocol amqp|core|openwire --url URL [--user U --password P]
 *                                 --queue Q|--topic T --run R [--groups 3] [--per-group 6]
 *                                 [--partitions N [--queue-prefix /amq/queue/]]
 * java -jar interop.jar consume   ... --queue Q --count N [--timeout 20]
 * java -jar interop.jar bookstore ... --queue Q [--seed S]      (until stdin closes)
 * java -jar interop.jar subscribe ... --topic T --subscription S [--client-id C]
 *                                 [--shared true] [--count N] [--unsubscribe true]
 * java -jar interop.jar reply     ... --queue Q --count N [--timeout 20]
 * </pre>
 */
public final class Interop {
    private static final String[] KINDS = {"text", "bytes", "map"};

    private Interop() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) {
            throw new IllegalArgumentException("usage: produce|consume|bookstore --protocol ... --url ...");
        }
        Map<String, String> args = parse(argv);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        ConnectionFactory factory = factory(args.get("protocol"), args.get("url"));
        try (Connection connection = args.containsKey("user")
                ? factory.createConnection(args.get("user"), args.get("password"))
                : factory.createConnection()) {
            if (args.containsKey("client-id")) {
                connection.setClientID(args.get("client-id"));
            }
            switch (argv[0]) {
                case "produce" -> produce(connection, args, out);
                case "consume" -> consume(connection, args, out);
                case "bookstore" -> bookstore(connection, args, out);
                case "subscribe" -> subscribe(connection, args, out);
                case "reply" -> reply(connection, args, out);
                default -> throw new IllegalArgumentException("unknown mode " + argv[0]);
            }
        }
        // The clients leave non-daemon threads behind (Qpid's, Artemis' pools): end here.
        System.exit(0);
    }

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --option, got " + argv[i]);
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        return args;
    }

    /** The JMS ConnectionFactory of one client library. */
    static ConnectionFactory factory(String protocol, String url) {
        return switch (protocol) {
            case "amqp" -> new org.apache.qpid.jms.JmsConnectionFactory(url);
            case "core" -> new org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory(url);
            case "openwire" -> new org.apache.activemq.ActiveMQConnectionFactory(url);
            default -> throw new IllegalArgumentException("unknown protocol " + protocol);
        };
    }

    // ------------------------------------------------------------------ produce

    /**
     * Sends, interleaved, {@code per-group} messages to each of {@code groups} groups: Text,
     * Bytes and Map messages in turn, with typed properties, JMSXGroupID and JMSXGroupSeq set
     * as JMS 2.0 section 3.5.9 says (a plain JMS producer has no group API of its own), to a
     * queue or, with {@code --topic}, a topic.
     */
    static void produce(Connection connection, Map<String, String> args, PrintStream out)
            throws JMSException {
        int groups = Integer.parseInt(args.getOrDefault("groups", "3"));
        int perGroup = Integer.parseInt(args.getOrDefault("per-group", "6"));
        String run = args.get("run");
        String partitions = args.get("partitions");
        boolean priorities = args.containsKey("priorities"); // even index 8, odd 4
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Destination target = args.containsKey("topic")
                ? session.createTopic(args.get("topic"))
                : session.createQueue(args.get("queue"));
        MessageProducer producer = session.createProducer(partitions == null ? target : null);
        producer.setDeliveryMode(DeliveryMode.PERSISTENT);
        for (int index = 1; index <= perGroup; index++) {
            for (int g = 0; g < groups; g++) {
                Message message = build(session, run, g, index);
                if (priorities) {
                    producer.setPriority(index % 2 == 0 ? 8 : 4);
                }
                Map<String, Object> record;
                if (partitions == null) {
                    producer.send(message);
                    record = record(message);
                } else {
                    int partition = partitionOf(message.getStringProperty("JMSXGroupID"),
                            Integer.parseInt(partitions));
                    String name = args.getOrDefault("queue-prefix", "") + args.get("queue")
                            + ".p" + partition;
                    producer.send(session.createQueue(name), message);
                    record = record(message);
                    record.put("partition", partition);
                }
                record.put("event", "sent");
                out.println(Json.write(record));
            }
        }
    }

    /**
     * The partition of a group in a jmslike partitioned queue (docs/partitions.md): CRC-32 of
     * the group name's UTF-8 bytes, mod the partition count. A Java producer of a partitioned
     * queue sends a group's messages to queue {@code <name>.p<partition>}.
     */
    static int partitionOf(String group, int partitions) {
        CRC32 crc = new CRC32();
        crc.update(group.getBytes(StandardCharsets.UTF_8));
        return (int) (crc.getValue() % partitions);
    }

    static Message build(Session session, String run, int g, int index) throws JMSException {
        String kind = KINDS[(index - 1 + g) % KINDS.length];
        Message message;
        switch (kind) {
            case "text" -> message = session.createTextMessage(
                    "text #" + index + " of group " + g + " \u2014 caf\u00e9 \u2713");
            case "bytes" -> {
                BytesMessage bytes = session.createBytesMessage();
                writeTyped(bytes, g, index);
                message = bytes;
            }
            default -> {
                MapMessage map = session.createMapMessage();
                map.setString("name", "g" + g);
                map.setInt("seq", index);
                map.setLong("big", (1L << 40) + index);
                map.setDouble("price", index + 0.5);
                map.setBoolean("flag", index % 2 == 0);
                map.setBytes("raw", new byte[] {0, 1, (byte) 0xfe});
                message = map;
            }
        }
        message.setStringProperty("run", run);
        message.setIntProperty("index", index);
        message.setStringProperty("label", "g" + g + "-" + index + " \u00fcn\u00ef");
        message.setLongProperty("big", (1L << 40) + index);
        message.setDoubleProperty("price", index + 0.5);
        message.setBooleanProperty("flag", index % 2 == 0);
        message.setShortProperty("small", (short) (100 + index));
        message.setByteProperty("tiny", (byte) index);
        message.setFloatProperty("ratio", index * 0.25f);
        message.setJMSType("interop");
        message.setJMSCorrelationID("corr-" + g + "-" + index);
        message.setStringProperty("JMSXGroupID", run + "-group-" + g);
        message.setIntProperty("JMSXGroupSeq", index);
        return message;
    }

    /** A Bytes message's typed values (javapeer.build writes the same with jmslike). */
    static void writeTyped(BytesMessage bytes, int g, int index) throws JMSException {
        bytes.writeInt(index);
        bytes.writeUTF("g" + g + " caf\u00e9 \u2713 \u0000 \uD83D\uDE00");
        bytes.writeLong((1L << 40) + index);
        bytes.writeDouble(index + 0.5);
        bytes.writeBoolean(index % 2 == 0);
        bytes.writeShort((short) -(100 + index));
        bytes.writeChar('\u00e9');
        bytes.writeFloat(index * 0.25f);
        bytes.writeByte((byte) -index);
        bytes.writeBytes(new byte[] {0, 1, 2, (byte) 0xff, (byte) g, (byte) index, 0});
    }

    /** The values writeTyped wrote, read back in order; ["unreadable", why] otherwise. */
    static List<Object> readTyped(BytesMessage bytes) {
        List<Object> values = new ArrayList<>();
        try {
            bytes.reset();
            values.add(bytes.readInt());
            values.add(bytes.readUTF());
            values.add(bytes.readLong());
            values.add(bytes.readDouble());
            values.add(bytes.readBoolean());
            values.add(bytes.readShort());
            values.add(String.valueOf(bytes.readChar()));
            values.add((double) bytes.readFloat());
            values.add(bytes.readByte());
            byte[] rest = new byte[7];
            int count = bytes.readBytes(rest);
            values.add(Base64.getEncoder().encodeToString(Arrays.copyOf(rest, Math.max(count, 0))));
        } catch (Exception e) {
            return List.of("unreadable", String.valueOf(e));
        }
        return values;
    }

    // ------------------------------------------------------------------ consume

    /** Receives {@code count} messages (AUTO_ACKNOWLEDGE) and prints each as it came. */
    static void consume(Connection connection, Map<String, String> args, PrintStream out)
            throws JMSException {
        int count = Integer.parseInt(args.get("count"));
        long timeout = (long) (Double.parseDouble(args.getOrDefault("timeout", "20")) * 1000);
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = session.createConsumer(session.createQueue(args.get("queue")));
        connection.start();
        for (int i = 0; i < count; i++) {
            Message message = consumer.receive(timeout);
            if (message == null) {
                out.println(Json.write(Map.of("event", "timeout", "received", i)));
                return;
            }
            Map<String, Object> record = record(message);
            record.put("event", "received");
            out.println(Json.write(record));
        }
    }

    // -------------------------------------------------------------------- reply

    /**
     * A request/reply service as a Java application writes one: for each of {@code count}
     * requests from the queue, a TextMessage {@code "re: <text>"} to the request's
     * JMSReplyTo (a jmslike temporary queue), JMSCorrelationID set to the request's
     * JMSCorrelationID if it has one, else to its JMSMessageID (the two usual ways). Prints
     * the request with the reply-to it read ({@code reply_to}).
     */
    static void reply(Connection connection, Map<String, String> args, PrintStream out)
            throws JMSException {
        int count = Integer.parseInt(args.get("count"));
        long timeout = (long) (Double.parseDouble(args.getOrDefault("timeout", "20")) * 1000);
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = session.createConsumer(session.createQueue(args.get("queue")));
        MessageProducer producer = session.createProducer(null);
        connection.start();
        out.println(Json.write(Map.of("event", "ready")));
        for (int i = 0; i < count; i++) {
            Message request = consumer.receive(timeout);
            if (request == null) {
                out.println(Json.write(Map.of("event", "timeout", "received", i)));
                return;
            }
            Map<String, Object> record = record(request);
            record.put("event", "received");
            record.put("reply_to", String.valueOf(request.getJMSReplyTo()));
            out.println(Json.write(record));
            TextMessage reply = session.createTextMessage(
                    "re: " + ((TextMessage) request).getText());
            String correlation = request.getJMSCorrelationID();
            reply.setJMSCorrelationID(
                    correlation != null ? correlation : request.getJMSMessageID());
            producer.send(request.getJMSReplyTo(), reply);
        }
    }

    // ---------------------------------------------------------------- subscribe

    /**
     * Opens a durable subscription (shared with {@code --shared true}), receives {@code count}
     * messages from it and closes the consumer, which keeps the subscription; with
     * {@code --unsubscribe true} it is deleted afterwards. A jmslike subscriber of the same
     * client id and name must then see the same subscription.
     */
    static void subscribe(Connection connection, Map<String, String> args, PrintStream out)
            throws JMSException {
        int count = Integer.parseInt(args.getOrDefault("count", "0"));
        long timeout = (long) (Double.parseDouble(args.getOrDefault("timeout", "20")) * 1000);
        String name = args.get("subscription");
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Topic topic = session.createTopic(args.get("topic"));
        MessageConsumer consumer = Boolean.parseBoolean(args.getOrDefault("shared", "false"))
                ? session.createSharedDurableConsumer(topic, name)
                : session.createDurableSubscriber(topic, name);
        connection.start();
        out.println(Json.write(Map.of("event", "subscribed")));
        for (int i = 0; i < count; i++) {
            Message message = consumer.receive(timeout);
            if (message == null) {
                out.println(Json.write(Map.of("event", "timeout", "received", i)));
                break;
            }
            Map<String, Object> record = record(message);
            record.put("event", "received");
            out.println(Json.write(record));
        }
        consumer.close();
        if (Boolean.parseBoolean(args.getOrDefault("unsubscribe", "false"))) {
            session.unsubscribe(name);
            out.println(Json.write(Map.of("event", "unsubscribed")));
        }
    }

    // ---------------------------------------------------------------- bookstore

    /**
     * One competing consumer of the bookstore scenario (tests/integration/test_stomp_bookstore.py):
     * takes customers' order/update/cancel events one at a time, "applies" each with a short
     * random delay, acknowledges it (CLIENT_ACKNOWLEDGE), and prints a line with the times it
     * started and ended, on the clock Python's time.monotonic_ns() reads (CLOCK_MONOTONIC).
     */
    static void bookstore(Connection connection, Map<String, String> args, PrintStream out)
            throws Exception {
        Random random = new Random(Long.parseLong(args.getOrDefault("seed", "0")));
        Session session = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        MessageConsumer consumer = session.createConsumer(session.createQueue(args.get("queue")));
        connection.start();
        AtomicBoolean stop = new AtomicBoolean();
        Thread watcher = new Thread(() -> {
            try (InputStream in = System.in) {
                while (in.read() >= 0) {
                    // the parent closes our stdin when it has seen enough
                }
            } catch (IOException ignored) {
                // same as closed
            }
            stop.set(true);
        });
        watcher.setDaemon(true);
        watcher.start();
        long pid = ProcessHandle.current().pid();
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("event", "ready");
        ready.put("pid", pid);
        ready.put("nano", System.nanoTime());
        out.println(Json.write(ready));
        while (!stop.get()) {
            Message message = consumer.receive(100);
            if (message == null) {
                continue;
            }
            long start = System.nanoTime();
            String action = message.getStringProperty("action");
            double ms = switch (action == null ? "" : action) {
                case "order" -> 1.0 + 4.0 * random.nextDouble();
                case "update" -> 3.0 * random.nextDouble();
                default -> random.nextDouble();
            };
            Thread.sleep((long) ms, (int) ((ms % 1.0) * 1_000_000));
            long end = System.nanoTime();
            Object groupSeq = message.getObjectProperty("JMSXGroupSeq");
            if ((groupSeq == null || groupSeq.equals(0)) && message.propertyExists("jmslikeGroupSeq")) {
                // ActiveMQ Classic: jmslike sends the sequence in its own header, not as
                // JMSXGroupSeq, which re-pins a group there (docs/ordering.md, ORD-4).
                groupSeq = message.getIntProperty("jmslikeGroupSeq");
            }
            Map<String, Object> rec = new LinkedHashMap<>();
            rec.put("event", "processed");
            rec.put("pid", pid);
            rec.put("worker", "java-" + pid);
            rec.put("run", message.getStringProperty("run"));
            rec.put("customer", message.getIntProperty("customer"));
            rec.put("seq", message.getIntProperty("seq"));
            rec.put("action", action);
            rec.put("group", message.getStringProperty("JMSXGroupID"));
            rec.put("group_seq", groupSeq instanceof Number n ? n.intValue() : groupSeq);
            rec.put("redelivered", message.getJMSRedelivered());
            rec.put("delivery_count", deliveryCount(message));
            rec.put("start", start);
            rec.put("end", end);
            message.acknowledge();
            out.println(Json.write(rec));
        }
    }

    // ------------------------------------------------------------------- record

    /** One message as the tests compare it: type, body, typed properties, group, headers. */
    static Map<String, Object> record(Message message) throws JMSException {
        Map<String, Object> rec = new LinkedHashMap<>();
        if (message instanceof TextMessage text) {
            rec.put("type", "text");
            rec.put("body", text.getText());
        } else if (message instanceof BytesMessage bytes) {
            bytes.reset();
            byte[] data = new byte[(int) bytes.getBodyLength()];
            bytes.readBytes(data);
            rec.put("type", "bytes");
            rec.put("body", Base64.getEncoder().encodeToString(data));
            rec.put("typed", readTyped(bytes));
        } else if (message instanceof MapMessage map) {
            Map<String, Object> body = new TreeMap<>();
            for (String name : names(map.getMapNames())) {
                body.put(name, typed(map.getObject(name)));
            }
            rec.put("type", "map");
            rec.put("body", body);
        } else {
            rec.put("type", "message");
            rec.put("body", null);
        }
        Map<String, Object> properties = new TreeMap<>();
        List<String> vendor = new ArrayList<>();
        for (String name : names(message.getPropertyNames())) {
            if (name.startsWith("JMSX") || name.startsWith("JMS_") || name.startsWith("_AMQ")
                    || name.startsWith("__AMQ")) {
                vendor.add(name);
                continue;
            }
            properties.put(name, typed(message.getObjectProperty(name)));
        }
        Collections.sort(vendor);
        rec.put("properties", properties);
        rec.put("vendor_properties", vendor);
        rec.put("group", message.getStringProperty("JMSXGroupID"));
        Object seq = message.getObjectProperty("JMSXGroupSeq");
        rec.put("group_seq", seq instanceof Number n ? n.intValue() : seq);
        rec.put("jms_type", message.getJMSType());
        rec.put("correlation_id", message.getJMSCorrelationID());
        rec.put("delivery_mode", message.getJMSDeliveryMode());
        rec.put("priority", message.getJMSPriority());
        rec.put("redelivered", message.getJMSRedelivered());
        rec.put("message_id", message.getJMSMessageID());
        rec.put("delivery_count", deliveryCount(message));
        return rec;
    }

    private static Object deliveryCount(Message message) {
        try {
            Object count = message.getObjectProperty("JMSXDeliveryCount");
            return count instanceof Number n ? n.intValue() : count;
        } catch (JMSException e) {
            return null;
        }
    }

    private static List<String> names(Enumeration<?> names) {
        List<String> out = new ArrayList<>();
        while (names.hasMoreElements()) {
            out.add(String.valueOf(names.nextElement()));
        }
        Collections.sort(out);
        return out;
    }

    /** A property or map entry as [JMS type, JSON value]; bytes as base64. */
    static List<Object> typed(Object value) {
        String type;
        Object json = value;
        if (value == null) {
            type = "null";
        } else if (value instanceof String) {
            type = "string";
        } else if (value instanceof Integer) {
            type = "int";
        } else if (value instanceof Long) {
            type = "long";
        } else if (value instanceof Short) {
            type = "short";
        } else if (value instanceof Byte) {
            type = "byte";
        } else if (value instanceof Double) {
            type = "double";
        } else if (value instanceof Float f) {
            type = "float";
            json = (double) f;
        } else if (value instanceof Boolean) {
            type = "boolean";
        } else if (value instanceof Character c) {
            type = "char";
            json = String.valueOf(c);
        } else if (value instanceof byte[] b) {
            type = "bytes";
            json = Base64.getEncoder().encodeToString(b);
        } else {
            type = value.getClass().getName();
            json = String.valueOf(value);
        }
        List<Object> pair = new ArrayList<>(2);
        pair.add(type);
        pair.add(json);
        return pair;
    }

    /** Just enough JSON writing for the records above (no dependency for it). */
    static final class Json {
        private Json() {}

        static String write(Object value) {
            StringBuilder sb = new StringBuilder();
            append(sb, value);
            return sb.toString();
        }

        private static void append(StringBuilder sb, Object value) {
            if (value == null) {
                sb.append("null");
            } else if (value instanceof String s) {
                string(sb, s);
            } else if (value instanceof Boolean || value instanceof Integer || value instanceof Long
                    || value instanceof Short || value instanceof Byte) {
                sb.append(value);
            } else if (value instanceof Number n) {
                double d = n.doubleValue();
                sb.append(Double.isFinite(d) ? Double.toString(d) : "null");
            } else if (value instanceof Map<?, ?> map) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    string(sb, String.valueOf(e.getKey()));
                    sb.append(':');
                    append(sb, e.getValue());
                }
                sb.append('}');
            } else if (value instanceof List<?> list) {
                sb.append('[');
                for (int i = 0; i < list.size(); i++) {
                    if (i > 0) {
                        sb.append(',');
                    }
                    append(sb, list.get(i));
                }
                sb.append(']');
            } else {
                string(sb, String.valueOf(value));
            }
        }

        private static void string(StringBuilder sb, String s) {
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                    }
                }
            }
            sb.append('"');
        }
    }
}
