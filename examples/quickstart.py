"""Quickstart: send three messages of one ordering group and receive them in order.

Runs on the in-process embedded broker, so it needs no server.
"""

import jmslike

factory = jmslike.ConnectionFactory("embedded://quickstart")

with factory.create_connection() as connection:
    session = connection.create_session()
    queue = session.create_queue("orders")

    producer = session.create_producer(queue)
    producer.enable_ordering_group("joe")  # Joe's messages stay in order (ORD-5)
    for text in ("place order", "update order", "cancel order"):
        message = session.create_text_message(text)
        message.set_string_property("customer", "joe")
        producer.send(message)
        print(f"sent     {message.jms_message_id}: {text}")

    consumer = session.create_consumer(queue)
    connection.start()
    received = []
    for _ in range(3):
        got = consumer.receive(timeout=5.0)  # None would mean nothing came in 5 s
        assert isinstance(got, jmslike.TextMessage)
        print(f"received {got.text!r} group={got.ordering_group} seq={got.group_sequence}")
        received.append(got.text)

assert received == ["place order", "update order", "cancel order"], received
print("ok: all three arrived in the order they were sent")
