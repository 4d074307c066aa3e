"""Request/reply over a temporary queue, matched by JMSCorrelationID."""

import threading

import jmslike

factory = jmslike.ConnectionFactory("embedded://request-reply")


def serve(connection: jmslike.Connection, ready: threading.Event) -> None:
    """A tiny price service: answer each request on the queue it names in reply-to."""
    session = connection.create_session()
    consumer = session.create_consumer("queue://prices")
    replier = session.create_producer(None)  # anonymous: the destination varies per reply
    connection.start()
    ready.set()
    while (request := consumer.receive()) is not None:  # None once the connection closes
        assert isinstance(request, jmslike.TextMessage) and request.jms_reply_to is not None
        reply = session.create_text_message(f"{request.text}: 12.50 EUR")
        reply.jms_correlation_id = request.jms_message_id
        replier.send(reply, destination=request.jms_reply_to)


with factory.create_connection() as server_conn, factory.create_connection() as client_conn:
    ready = threading.Event()
    server = threading.Thread(target=serve, args=(server_conn, ready), daemon=True)
    server.start()
    ready.wait(5.0)

    session = client_conn.create_session()
    replies = session.create_temporary_queue()
    requester = session.create_producer("queue://prices")
    answers = session.create_consumer(replies)
    client_conn.start()
    for title in ("Dune", "Emma"):
        request = session.create_text_message(title)
        request.jms_reply_to = replies
        requester.send(request)
        reply = answers.receive(timeout=5.0)
        assert isinstance(reply, jmslike.TextMessage), "no reply"
        assert reply.jms_correlation_id == request.jms_message_id
        print(f"asked {title!r}, got {reply.text!r}")
server.join(5.0)  # closing the server's connection ended its receive loop
assert not server.is_alive()
print("ok: every reply matched its request")
