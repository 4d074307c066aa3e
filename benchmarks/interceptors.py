"""What interceptors cost: the embedded broker with none, a no-op one, and OpenTelemetry.

20,000 x 1 KiB text messages sent, then received (AUTO_ACKNOWLEDGE) through the public
API, three configurations run back to back and alternated, median of --runs runs each:

* none: no interceptor, so the connection has no chain at all;
* noop: one interceptor whose send and deliver just proceed (the cost of the chain);
* otel: ``jmslike_otel.instrument()`` with the OpenTelemetry SDK, a BatchSpanProcessor
  into an in-memory exporter, an in-memory metric reader, and ``--sample`` of traces
  recorded (ParentBased(TraceIdRatioBased)).

    python benchmarks/interceptors.py [--runs 3] [--sample 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable, Sequence

from jmslike import ConnectionFactory
from jmslike.middleware import DeliveryContext, Interceptor, SendContext

N = 20_000


def throughput(interceptors: Sequence[Interceptor] = ()) -> float:
    factory = ConnectionFactory(
        f"embedded://bench-{uuid.uuid4().hex}", interceptors=list(interceptors)
    )
    with factory.create_connection() as connection:
        session = connection.create_session()
        producer = session.create_producer("queue://q")
        consumer = session.create_consumer("queue://q")
        started = time.perf_counter()
        for _ in range(N):
            producer.send(session.create_text_message("x" * 1024))
        connection.start()
        for _ in range(N):
            consumer.receive(1.0)
        return N / (time.perf_counter() - started)


class Noop(Interceptor):
    def send(self, context: SendContext, proceed: Callable[[], None]) -> None:
        proceed()

    def deliver(self, context: DeliveryContext, proceed: Callable[[], None]) -> None:
        proceed()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sample", type=float, default=1.0)
    args = parser.parse_args()

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    import jmslike_otel

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(args.sample)))
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    results: dict[str, list[float]] = {"none": [], "noop": [], "otel": []}
    for _ in range(args.runs):
        results["none"].append(throughput())
        results["noop"].append(throughput([Noop()]))
        jmslike_otel.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        try:
            results["otel"].append(throughput())
        finally:
            jmslike_otel.uninstrument()
            exporter.clear()
    base = statistics.median(results["none"])
    for name, runs in results.items():
        median = statistics.median(runs)
        print(f"{name:5s} {median:9,.0f} msg/s  ratio {median / base:.2f}")
    tracer_provider.shutdown()


if __name__ == "__main__":
    main()
