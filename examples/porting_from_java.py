"""A Java JMS program ported line by line with jmslike.compat (the camelCase layer).

Each Java line is the comment above its Python port: a JBoss Messaging producer that
sends an ordering group, and a CLIENT_ACKNOWLEDGE consumer that recovers once and then
acknowledges. Durations stay in Java's milliseconds. Runs on the embedded broker.
"""

from jmslike.compat import ConnectionFactory, DeliveryMode, Session

# ConnectionFactory cf = (ConnectionFactory) ctx.lookup("ConnectionFactory");
cf = ConnectionFactory("embedded://porting-from-java")
# Connection connection = cf.createConnection();
connection = cf.createConnection()
# try {
try:
    # Session session = connection.createSession(false, Session.CLIENT_ACKNOWLEDGE);
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    # Queue queue = session.createQueue("orders");
    queue = session.createQueue("orders")
    # JBossMessageProducer producer = (JBossMessageProducer) session.createProducer(queue);
    producer = session.createProducer(queue)
    # producer.enableOrderingGroup("joe");
    producer.enableOrderingGroup("joe")
    # for (String step : new String[] {"place", "update", "cancel"}) {
    for step in ("place", "update", "cancel"):
        # TextMessage msg = session.createTextMessage(step);
        msg = session.createTextMessage(step)
        # msg.setStringProperty("customer", "joe");
        msg.setStringProperty("customer", "joe")
        # producer.send(msg, DeliveryMode.PERSISTENT, 4, 60000);  // live one minute
        producer.send(msg, DeliveryMode.PERSISTENT, 4, 60000)
    # }
    # producer.disableOrderingGroup();
    producer.disableOrderingGroup()

    # MessageConsumer consumer = session.createConsumer(queue);
    consumer = session.createConsumer(queue)
    # connection.start();
    connection.start()
    # TextMessage first = (TextMessage) consumer.receive(5000);  // 5 seconds
    first = consumer.receive(5000)
    # System.out.println("first: " + first.getText());
    print(f"first: {first.getText()}, not acknowledged")
    # session.recover();  // not acknowledged: deliver it again
    session.recover()
    # for (int i = 0; i < 3; i++) {
    for _ in range(3):
        # TextMessage got = (TextMessage) consumer.receive(5000);
        got = consumer.receive(5000)
        # String group = got.getStringProperty("JMSXGroupID");
        group = got.getStringProperty("JMSXGroupID")
        # int seq = got.getIntProperty("JMSXGroupSeq");
        seq = got.getIntProperty("JMSXGroupSeq")
        # boolean again = got.getJMSRedelivered();
        again = got.getJMSRedelivered()
        # System.out.println(got.getText() + " " + group + "/" + seq + " redelivered=" + again);
        print(f"{got.getText()} {group}/{seq} redelivered={again}")
        # got.acknowledge();  // CLIENT_ACKNOWLEDGE: everything received so far
        got.acknowledge()
    # }
    # System.out.println("left: " + consumer.receive(100));  // null
    print(f"left: {consumer.receive(100)}")
# } finally {
finally:
    # connection.close();
    connection.close()
# }
