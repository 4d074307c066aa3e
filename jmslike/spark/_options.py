"""Spark options -> jmslike settings, checked on the driver before any task runs.

Spark hands a data source its options as strings, with keys in any case. The data
source's own options are read here; every other key is a ConnectionFactory setting
(snake_case, as in docs/configuration.md), so that anything a factory can be told in
code can be told through ``.option()``. A bad value raises a ``ConfigurationError``
naming the option, never the value of ``password``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jmslike.config import setting_name
from jmslike.configfile import closest_name
from jmslike.connection import ConnectionFactory
from jmslike.destination import Destination, parse_destination
from jmslike.errors import ConfigurationError
from jmslike.message import DeliveryMode
from jmslike.partitions.layout import MAX_PARTITIONS, PartitionSpec

__all__ = ["SparkOptions", "parse_options"]

_OWN_NAMES = (
    "url",
    "destination",
    "user",
    "password",
    "groupColumn",
    "orderColumn",
    "bodyColumn",
    "batchSize",
    "deliveryMode",
    "duplicateIds",
    "readMode",
    "receiveTimeout",
    "maxMessagesPerBatch",
    "maxBytesPerBatch",
    "stateDir",
    "drainAckEvery",
    "acknowledge",
    "maxBatchesAhead",
    "numPartitions",
)
"""The data source's own options, as docs/spark.md spells them."""
_OWN = {name.lower() for name in _OWN_NAMES}
_SPARK_KEYS = {"path", "checkpointlocation", "queryname"}
"""Keys Spark itself may pass along with the user's options: not factory settings."""


@dataclass(frozen=True)
class SparkOptions:
    """Everything one read or write needs; picklable, so it travels to the executors."""

    url: str = field(repr=False)
    destination: Destination
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    group_column: str | None = None
    order_column: str | None = None
    body_column: str = "body"
    batch_size: int = 1000
    delivery_mode: int = DeliveryMode.PERSISTENT
    duplicate_ids: str = "auto"
    read_mode: str = "browse"
    receive_timeout: float = 1.0
    max_messages_per_batch: int = 20_000
    max_bytes_per_batch: int = 64 * 1024 * 1024
    """Streaming read, ``acknowledge=stored``: a batch's bodies, in bytes (characters for
    text), at most; the batch that reaches it ends there (a row count alone would let a
    batch of large messages outgrow the driver's memory)."""
    max_batches_ahead: int = 3
    """Streaming read, ``acknowledge=stored``: full batches the reader may hold spooled
    and acknowledged before Spark asks for them (their rows are on disk in ``state_dir``:
    a reader that receives faster than Spark reads stops there)."""
    num_partitions: int | None = None
    """Streaming read: the input partitions a micro-batch is split into by group; None
    means the destination's partition count where it is partitioned, else one."""
    drain_ack_every: int = 100
    acknowledge: str = "stored"
    """Streaming read: "stored" acknowledges a batch's messages once they are on disk in
    ``state_dir`` (every ``drain_ack_every``), "commit" only when Spark commits the batch."""
    state_dir: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict, repr=False)

    def factory(self) -> ConnectionFactory:
        """A fresh factory: each executor process builds its own from the same options."""
        settings: dict[str, Any] = dict(self.settings)
        return ConnectionFactory(self.url, user=self.user, password=self.password, **settings)

    def partitioned(self) -> PartitionSpec | None:
        """The destination's partitions where the factory's settings (the options, the
        URL or jmslike.toml) declare it partitioned."""
        return self.factory().settings.partitions_for(self.destination)

    def input_partitions(self) -> int:
        """``numPartitions``, or else the partition count of a partitioned destination,
        or else 1."""
        if self.num_partitions is not None:
            return self.num_partitions
        spec = self.partitioned()
        return 1 if spec is None else spec.count


def _int(
    options: Mapping[str, str], key: str, name: str, default: int, most: int | None = None
) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1 or (most is not None and value > most):
        need = "an integer >= 1" if most is None else f"an integer from 1 to {most}"
        raise ConfigurationError(f"option {name}={raw!r}: need {need}")
    return value


def _seconds(options: Mapping[str, str], key: str, name: str, default: float) -> float:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < 3600:
        raise ConfigurationError(f"option {name}={raw!r}: need seconds from 0 to 3600")
    return value


def _choice(options: Mapping[str, str], key: str, name: str, choices: tuple[str, ...]) -> str:
    raw = options.get(key, choices[0])
    value = raw.strip().lower()
    if value not in choices:
        raise ConfigurationError(f"option {name}={raw!r}: use one of {', '.join(choices)}")
    return value


def _check_misspelt_own(settings: Mapping[str, str]) -> None:
    """An option that is no factory setting but close to one of the data source's own
    (``groupColum``) is that one misspelt: say so, instead of the factory's error, which
    lists its settings and not the data source's options."""
    for key in settings:
        if setting_name(key) is not None:
            continue
        guess = closest_name(key, list(_OWN_NAMES))
        if guess is not None:
            raise ConfigurationError(
                f"unknown option {key!r} (did you mean {guess!r}?); the data source's "
                f"options are {', '.join(_OWN_NAMES)}, and any ConnectionFactory setting"
            )


def parse_options(raw: Mapping[str, str]) -> SparkOptions:
    """Check every option; raises ``ConfigurationError`` naming the first bad one."""
    options = {str(k).lower(): str(v) for k, v in raw.items()}
    url = options.get("url")
    if not url:
        raise ConfigurationError(
            'option url is missing: .option("url", "stomp://host:61613") (any jmslike URL)'
        )
    where = options.get("destination")
    if not where:
        raise ConfigurationError('option destination is missing: e.g. "queue://orders"')
    destination = parse_destination(where)
    mode = _choice(options, "deliverymode", "deliveryMode", ("persistent", "non_persistent"))
    settings = {k: v for k, v in options.items() if k not in _OWN and k not in _SPARK_KEYS}
    _check_misspelt_own(settings)
    acknowledge = _choice(options, "acknowledge", "acknowledge", ("stored", "commit"))
    parsed = SparkOptions(
        url=url,
        destination=destination,
        user=options.get("user"),
        password=options.get("password"),
        group_column=options.get("groupcolumn") or None,
        order_column=options.get("ordercolumn") or None,
        body_column=options.get("bodycolumn", "body"),
        batch_size=_int(options, "batchsize", "batchSize", 1000),
        delivery_mode=(
            DeliveryMode.PERSISTENT if mode == "persistent" else DeliveryMode.NON_PERSISTENT
        ),
        duplicate_ids=_choice(options, "duplicateids", "duplicateIds", ("auto", "true", "false")),
        read_mode=_choice(options, "readmode", "readMode", ("browse", "drain")),
        receive_timeout=_seconds(options, "receivetimeout", "receiveTimeout", 1.0),
        max_messages_per_batch=_int(
            options,
            "maxmessagesperbatch",
            "maxMessagesPerBatch",
            # Held unacknowledged until Spark commits, a batch must stay small on Classic,
            # which pages in 200 messages at a time; stored on disk first, it need not,
            # and Spark's fixed cost per micro-batch (about a second here) is then paid
            # for more rows.
            20_000 if acknowledge == "stored" else 100,
        ),
        max_bytes_per_batch=_int(options, "maxbytesperbatch", "maxBytesPerBatch", 64 * 1024 * 1024),
        max_batches_ahead=_int(options, "maxbatchesahead", "maxBatchesAhead", 3),
        num_partitions=(
            None
            if options.get("numpartitions") is None
            else _int(options, "numpartitions", "numPartitions", 1, MAX_PARTITIONS)
        ),
        drain_ack_every=_int(options, "drainackevery", "drainAckEvery", 100),
        state_dir=options.get("statedir") or None,
        acknowledge=acknowledge,
        settings=settings,
    )
    if parsed.order_column is not None and parsed.group_column is None:
        raise ConfigurationError(
            f"option orderColumn={parsed.order_column!r} needs groupColumn: order is kept "
            "per group (ORD-8)"
        )
    parsed.factory()  # a bad URL or factory setting fails here, on the driver
    return parsed
