"""One runner per kind of client; each does every workload it can the way its client is
meant to be used, and says which it cannot (:meth:`Runner.supports`)."""

from __future__ import annotations

from jmslike_bench.runners.base import Measurement, Runner

__all__ = ["Measurement", "Runner"]
