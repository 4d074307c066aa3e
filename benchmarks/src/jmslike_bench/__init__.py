"""``jmslike bench``: jmslike beside the raw library it wraps and the Java JMS client.

One invocation runs the same workloads (:mod:`.workloads`) against every reachable broker
and protocol (:mod:`.targets`), with each kind of client (:mod:`.runners`): jmslike, the
raw library (stomp.py or python-qpid-proton, used the way its documentation recommends
for throughput) and the broker's Java JMS client as the reference for what the broker can
take. Each figure is the median of several runs (:mod:`.stats`); the results go to a
terminal table and JSON (:mod:`.report`) and PNG plots (:mod:`.plots`). The bench is a
tool, not a test: a broker that is not there is reported as skipped, never as a failure.
"""

from __future__ import annotations

__all__: list[str] = []
