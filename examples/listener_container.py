"""A listener container: several groups at once, each group strictly in order (ORD-17)."""

import threading
import time

import jmslike

factory = jmslike.ConnectionFactory("embedded://listener-container")
seen: dict[str, list[int]] = {}
threads: set[str] = set()
lock = threading.Lock()
done = threading.Event()
GROUPS, PER_GROUP = 6, 5


def on_message(message: jmslike.Message) -> None:
    time.sleep(0.002)  # pretend to work, so groups really overlap
    group, seq = message.ordering_group, message.group_sequence
    assert group is not None and seq is not None
    with lock:
        seen.setdefault(group, []).append(seq)
        threads.add(threading.current_thread().name)
        if sum(len(v) for v in seen.values()) == GROUPS * PER_GROUP:
            done.set()


with jmslike.MessageListenerContainer(factory, "queue://work", on_message, concurrency=3):
    with factory.create_connection() as connection:
        session = connection.create_session()
        for g in range(GROUPS):
            producer = session.create_producer("queue://work")
            producer.enable_ordering_group(f"account-{g}")
            for i in range(PER_GROUP):
                producer.send(session.create_text_message(f"step {i}"))
    assert done.wait(10.0), "container did not process every message"

for group, seqs in sorted(seen.items()):
    print(f"{group}: {seqs}")
    assert seqs == list(range(1, PER_GROUP + 1)), (group, seqs)
print(f"ok: {GROUPS} groups in order, processed on {len(threads)} threads")
