"""Closing a consumer while the broker is still delivering to it, on every provider
(ORD-10: what a closing consumer holds goes back, in order, and nothing is lost).

The window is narrow in real use: a consumer's last acknowledgement frees the broker's
window just before the close, and the next message arrives while the close runs. Here
the provider consumer is granted one more message just before it closes, and its close
waits for what that brings, so the race happens every time.
"""

from __future__ import annotations

import time

from jmslike import Session
from jmslike.testing.helpers import send_texts


def test_a_delivery_arriving_while_a_consumer_closes_is_not_lost(
    make_connection, unique, drain, monkeypatch
) -> None:
    """ORD-10: a message delivered into a closing consumer's buffer after the close took
    the buffer goes back to the queue behind what the consumer held. (Before: it was
    dropped; on the embedded broker it stayed in flight to the closed consumer, and the
    queue's next consumer never got it.)"""
    queue = f"queue://{unique('q')}"
    connection = make_connection()
    session = connection.create_session(False, Session.CLIENT_ACKNOWLEDGE)
    send_texts(session, queue, ["a", "b", "c"])
    consumer = session.create_consumer(queue)
    connection.start()
    held = consumer.receive(5.0)
    assert held is not None and held.text == "a"
    provider = consumer._provider
    close = provider.close

    def close_late(delivered, undelivered):  # type: ignore[no-untyped-def]
        provider.flow(1)
        time.sleep(0.3)
        close(delivered, undelivered)

    monkeypatch.setattr(provider, "close", close_late)
    consumer.close()
    other = make_connection()
    other.start()
    texts = [m.text for m in drain(other.create_session().create_consumer(queue))]
    assert texts == ["a", "b", "c"]
