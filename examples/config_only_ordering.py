"""A shop that never heard of ordering groups gets them from configuration alone (ORD-6).

Each customer's web session has a JMS session and a producer of its own. It sends
"place order" and then "cancel order". Four competing consumers share the queue;
placing is slow, cancelling is quick. Nothing in this file asks for ordering, so with
plain JMS a cancel can be processed before the order it cancels, as in the WebLogic
bookstore story.

Run it as it is, then with ordering switched on from outside, the JBoss/WebLogic way::

    python examples/config_only_ordering.py
    JMSLIKE_CONFIG=examples/ordering.toml python examples/config_only_ordering.py
    JMSLIKE_ENABLE_ORDERING_GROUP=true python examples/config_only_ordering.py

``enable_ordering_group = true`` binds every producer to its session's generated group
(ORD-2), so each customer's messages form one group and are processed in order, while
different customers are still served in parallel (ORD-17). The first line of the output
says which mode the run was in, judged from the messages the consumers got.
"""

import sys
import threading
import time

import jmslike

CUSTOMERS = 24
CONSUMERS = 4
QUEUE = "queue://shop-orders"
WORK_SECONDS = {"place": 0.02, "cancel": 0.0}

lock = threading.Lock()
orders: dict[str, str] = {}
overtakes = 0
grouped = 0
processed = 0
done = threading.Event()


def on_message(message: jmslike.Message) -> None:
    """Place or cancel one customer's order; a cancel that finds no order overtook it."""
    global overtakes, grouped, processed
    customer = message.get_string_property("customer") or "?"
    action = message.get_string_property("action") or "?"
    time.sleep(WORK_SECONDS.get(action, 0.0))
    with lock:
        if message.ordering_group is not None:  # only read, to report the mode
            grouped += 1
        if action == "place":
            orders.setdefault(customer, "open")
        elif orders.get(customer) == "open":
            orders[customer] = "cancelled"
        else:
            overtakes += 1
            orders[customer] = "cancelled before it was placed"
        processed += 1
        if processed == 2 * CUSTOMERS:
            done.set()


factory = jmslike.ConnectionFactory("embedded://")
with factory.create_connection() as connection:
    for number in range(CUSTOMERS):
        web_session = connection.create_session()
        producer = web_session.create_producer(QUEUE)
        for action in ("place", "cancel"):
            message = web_session.create_text_message(f"{action} order of customer {number}")
            message.set_string_property("customer", f"customer-{number}")
            message.set_string_property("action", action)
            producer.send(message)
    for _ in range(CONSUMERS):
        connection.create_session().create_consumer(QUEUE).message_listener = on_message
    connection.start()
    finished = done.wait(30.0)

total = 2 * CUSTOMERS
if grouped == total:
    print(f"mode: ordered by configuration ({grouped} of {total} messages in ordering groups)")
else:
    print(f"mode: plain JMS ({grouped} of {total} messages in ordering groups)")
print(f"consumers: {CONSUMERS}, customers: {CUSTOMERS}")
print(f"cancels that overtook their order: {overtakes} of {CUSTOMERS}")
if not finished:
    sys.exit(f"only {processed} of {total} messages were processed in time")
if grouped == total and overtakes:
    sys.exit("ordering groups were on, yet a cancel overtook its order: this is a bug")
