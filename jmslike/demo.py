"""The bookstore demo behind ``jmslike demo``: why ordering groups exist, in numbers.

A bookstore puts every customer action on one queue that several consumers share.
Placing an order is slow (stock, payment), cancelling is quick, so while one consumer
works on a customer's "place", another can take the same customer's "cancel", find
nothing to cancel and finish first; the order then goes through although it was
cancelled. Plain JMS allows this. One ordering group per customer (ORD-5) hands out a
customer's next message only once the previous one is finished (ORD-9), while other
customers are still served in parallel (ORD-17). :func:`run_bookstore` plays the same
script both ways so the difference can be counted.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass

from jmslike.connection import ConnectionFactory
from jmslike.container import MessageListenerContainer
from jmslike.message import Message

__all__ = ["BookstoreResult", "format_table", "fresh_embedded_url", "run_bookstore", "verdict"]

log = logging.getLogger("jmslike.cli")

QUEUE = "queue://orders"
WORK_SECONDS = {"place": (0.004, 0.012), "update": (0.001, 0.004), "cancel": (0.0, 0.002)}
"""Simulated processing time per action; "place" is the slow one, which is what lets a
later "cancel" of the same customer overtake it when nothing keeps them in order."""


@dataclass(frozen=True)
class BookstoreResult:
    """What one run of the bookstore showed."""

    ordered: bool
    customers: int
    consumers: int
    messages: int
    processed: int
    overtakes: int
    """Cancels that found no placed order: they overtook the order they cancel."""
    left_open: int
    """Orders still open at the end although every customer cancelled theirs."""
    out_of_order: int
    """Messages processed after a later message of the same customer (any action)."""
    seconds: float

    @property
    def label(self) -> str:
        return "one group per customer" if self.ordered else "no ordering groups"

    @property
    def complete(self) -> bool:
        return self.processed == self.messages


def fresh_embedded_url() -> str:
    """A broker of its own for each run, so two runs never see each other's messages."""
    return f"embedded://demo-{uuid.uuid4().hex[:12]}"


def _script(customers: int, rng: random.Random) -> list[tuple[int, int, str, float]]:
    """Each customer places, maybe updates, then cancels: (customer, step, action, work).

    Customers arrive one after another but browse at their own pace, so one customer's
    cancel may come after the next few customers' orders: the queue interleaves them as
    a real shop's would, and whether a cancel overtakes depends on the timing.
    """
    timed: list[tuple[float, int, int, str, float]] = []
    for customer in range(customers):
        at = float(customer)
        actions = ["place", "update", "cancel"] if rng.random() < 0.5 else ["place", "cancel"]
        for step, action in enumerate(actions):
            low, high = WORK_SECONDS[action]
            timed.append((at, customer, step, action, rng.uniform(low, high)))
            at += rng.uniform(0.1, 2.5)
    timed.sort()
    return [entry[1:] for entry in timed]


class _OrderBook:
    """The consumers' shared view of every customer's order; one lock, as a database row
    lock would be, so the only races left are the ones message order decides."""

    def __init__(self, run_id: str, total: int) -> None:
        self.run_id = run_id
        self.total = total
        self.state: dict[int, str] = {}
        self.last_step: dict[int, int] = {}
        self.overtakes = 0
        self.out_of_order = 0
        self.processed = 0
        self.done = threading.Event()
        self._lock = threading.Lock()

    def on_message(self, message: Message) -> None:
        """The consumers' handler: do the (simulated) work, then update the book."""
        if message.get_string_property("demo_run") != self.run_id:
            log.warning("ignoring message %s from another demo run", message.jms_message_id)
            return
        customer = message.get_int_property("customer")
        step = message.get_int_property("step")
        action = message.get_string_property("action")
        work = message.get_double_property("work")
        if customer is None or step is None or action is None or work is None:
            log.warning("ignoring malformed demo message %s", message.jms_message_id)
            return
        time.sleep(work)
        with self._lock:
            if step < self.last_step.get(customer, -1):
                self.out_of_order += 1
            self.last_step[customer] = max(step, self.last_step.get(customer, -1))
            current = self.state.get(customer)
            if action == "place":
                # A cancel that came first left the marker "cancelled-early": the order
                # now goes through, and nobody will cancel it again.
                self.state[customer] = "open"
            elif action == "cancel":
                if current == "open":
                    self.state[customer] = "cancelled"
                else:
                    self.overtakes += 1
                    self.state[customer] = "cancelled-early"
            self.processed += 1
            if self.processed >= self.total:
                self.done.set()

    def left_open(self) -> int:
        with self._lock:
            return sum(1 for state in self.state.values() if state == "open")


def run_bookstore(
    url: str | None = None,
    customers: int = 20,
    consumers: int = 4,
    ordered: bool = True,
    seed: int | None = None,
    *,
    timeout: float = 60.0,
) -> BookstoreResult:
    """Play the bookstore once and count cancels that overtook their order.

    ``url=None`` uses a fresh embedded broker. All messages are sent before the
    consumers start, so each run starts from the same queue and only the ordering
    setting differs. Ordering is one group per customer, like a web session id in a
    real shop.
    """
    rng = random.Random(seed)
    plan = _script(customers, rng)
    run_id = uuid.uuid4().hex
    factory = ConnectionFactory(url or fresh_embedded_url())
    book = _OrderBook(run_id, len(plan))
    container = MessageListenerContainer(
        factory, QUEUE, book.on_message, concurrency=consumers, start=False
    )
    try:
        with factory.create_connection() as connection:
            session = connection.create_session()
            # One producer per customer, as one web session per shopper would have.
            producers = [session.create_producer(QUEUE) for _ in range(customers)]
            for customer, producer in enumerate(producers):
                if ordered:
                    producer.enable_ordering_group(f"customer-{customer}")
            for customer, step, action, work in plan:
                message = session.create_text_message(f"{action} order of customer {customer}")
                message.set_properties(
                    {
                        "demo_run": run_id,
                        "customer": customer,
                        "step": step,
                        "action": action,
                        "work": work,
                    }
                )
                producers[customer].send(message)
        started = time.monotonic()
        container.start()
        if not book.done.wait(timeout):
            log.error("bookstore run timed out: %d of %d processed", book.processed, len(plan))
        seconds = time.monotonic() - started
    finally:
        container.stop()
    return BookstoreResult(
        ordered=ordered,
        customers=customers,
        consumers=consumers,
        messages=len(plan),
        processed=book.processed,
        overtakes=book.overtakes,
        left_open=book.left_open(),
        out_of_order=book.out_of_order,
        seconds=seconds,
    )


def format_table(results: list[BookstoreResult]) -> str:
    """The per-run table ``jmslike demo`` prints."""
    header = (
        "run",
        "messages",
        "consumers",
        "cancels that overtook",
        "orders left open by mistake",
        "seconds",
    )
    rows = [header] + [
        (
            r.label,
            str(r.messages),
            str(r.consumers),
            f"{r.overtakes} of {r.customers}",
            str(r.left_open),
            f"{r.seconds:.3f}",
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def verdict(unordered: BookstoreResult, ordered: BookstoreResult) -> str:
    """One line that says what the table means."""
    return (
        f"without ordering groups {unordered.overtakes} of {unordered.customers} cancels "
        f"overtook their order; with one group per customer: {ordered.overtakes} of "
        f"{ordered.customers}"
    )
