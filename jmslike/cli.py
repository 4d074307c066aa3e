"""The ``jmslike`` command: poke at a broker from a shell, and see ordering groups work.

``jmslike demo`` is the fastest way to see why ordering groups matter (the bookstore in
:mod:`jmslike.demo`); ``send``, ``receive`` and ``browse`` are the small tools one wants
while wiring an application to a broker; ``declare`` makes queues ready at deploy time
(:mod:`jmslike.declare`); ``providers`` says which URL schemes this
installation can serve; ``config`` shows a factory's effective settings and where each
came from, since ordering switched on by a file or a variable is invisible in the code.

Exit statuses follow the shell's conventions, so scripts can tell the cases apart: 2 for
a command line argparse refuses, 1 for a command that ran and failed (any error becomes
one line on stderr, because a traceback tells a shell user less than the message does;
``-v`` adds it), and 141, the status of a process killed by SIGPIPE, when the reader of
stdout went away (``jmslike receive ... | head -1``). ``receive`` acknowledges a message
only once it is written, so what it could not print stays on the queue.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import importlib
import json
import logging
import os
import random
import sys
import traceback
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

from jmslike import __version__
from jmslike.config import (
    DEFAULT_URL,
    URL_ENV_VAR,
    FactorySettings,
    Resolution,
    default_url,
    parse_url,
    redact_url,
    resolve,
    shown_value,
)
from jmslike.configfile import load_factory_config
from jmslike.connection import Connection, ConnectionFactory
from jmslike.demo import format_table, run_bookstore, verdict
from jmslike.destination import parse_destination
from jmslike.errors import InvalidArgumentError, JMSException
from jmslike.message import (
    GROUP_ID,
    GROUP_SEQ,
    BytesMessage,
    DeliveryMode,
    MapMessage,
    Message,
    PropertyValue,
    TextMessage,
)
from jmslike.session import Session
from jmslike.spi.registry import get_registry

__all__ = ["main"]

BENCH_MODULE = "jmslike_bench.command"
"""Where ``jmslike bench`` lives: benchmarks/src/jmslike_bench in the repository."""
BENCH_EXTRA = "jmslike[bench]"
"""The extra that installs what the bench needs."""

log = logging.getLogger("jmslike.cli")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_PIPE = 128 + 13
"""What a shell reports for a process SIGPIPE killed: the reader of stdout left early."""

_OWN_LOGGERS = ("jmslike", "jmslike_otel")
"""Logger trees whose messages ``-v`` is for; every other library's (stomp.py, Proton)
show one level less: errors, then warnings with -v, info with -vv, debug with -vvv."""

_URL_HELP = f"broker URL (default: ${URL_ENV_VAR}, else {DEFAULT_URL}, as ConnectionFactory())"

_PROPERTY_TYPES: dict[str, str] = {
    "str": "string",
    "string": "string",
    "int": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "bool": "boolean",
    "boolean": "boolean",
}


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: need an integer >= 1")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: need seconds >= 0")
    return value


def _property(spec: str) -> tuple[str, str, PropertyValue]:
    """``--property``'s type: a malformed one is a usage error, found before connecting."""
    try:
        return _parse_property(spec)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_VERBOSE_HELP = "log more on stderr: -v info, -vv debug, -vvv debug from stomp.py and Proton too"


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jmslike",
        description="JMS-style messaging from the shell, with ordering groups.",
        epilog="exit status: 0 done, 1 failed, 2 usage error, 141 stdout closed early",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help=_VERBOSE_HELP)
    parser.add_argument("--version", action="version", version=f"jmslike {__version__}")
    # A subcommand's parser writes its defaults over the main one's values, so -v after the
    # command has a name of its own and main() adds the two counts.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", dest="verbose_after", action="count", default=0, help=_VERBOSE_HELP
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        command = sub.add_parser(name, parents=[common], **kwargs)
        command.set_defaults(command_parser=command)  # for usage errors found after parsing
        return command

    demo = add("demo", help="the bookstore case, without and with ordering groups")
    demo.add_argument("--customers", type=_positive_int, default=20)
    demo.add_argument("--consumers", type=_positive_int, default=4)
    demo.add_argument(
        "--url", default=None, help="broker URL (default: a fresh embedded broker per run)"
    )
    demo.add_argument("--seed", type=int, default=None, help="seed the simulated work times")

    send = add("send", help="send text messages (stdin lines when no TEXT)")
    send.add_argument("url", metavar="URL", nargs="?", help=_URL_HELP)
    send.add_argument("destination", metavar="DESTINATION", help="queue://NAME or topic://NAME")
    send.add_argument("texts", metavar="TEXT", nargs="*")
    send.add_argument("--group", help="ordering group for every message sent (ORD-5)")
    send.add_argument(
        "--property",
        dest="properties",
        type=_property,
        action="append",
        default=[],
        metavar="K=V",
        help="a property; K:TYPE=V picks int, long, float, "
        "double, bool or str (default str); repeatable",
    )
    mode = send.add_mutually_exclusive_group()
    mode.add_argument(
        "--persistent", dest="delivery_mode", action="store_const", const=DeliveryMode.PERSISTENT
    )
    mode.add_argument(
        "--non-persistent",
        dest="delivery_mode",
        action="store_const",
        const=DeliveryMode.NON_PERSISTENT,
    )
    send.add_argument("--priority", type=int, default=None, help="0-9 (default 4)")
    send.add_argument("--ttl", type=_seconds, default=None, help="time to live in seconds")
    send.add_argument("--count", type=_positive_int, default=1, help="send each text N times")

    receive = add(
        "receive",
        help="receive and print messages",
        description="Receive and print messages; each is acknowledged once it is written, "
        "so one that could not be (stdout closed) stays on the destination.",
    )
    receive.add_argument("url", metavar="URL", nargs="?", help=_URL_HELP)
    receive.add_argument("destination", metavar="DESTINATION")
    receive.add_argument(
        "--count",
        type=_positive_int,
        default=None,
        help="stop after N messages (default: until the timeout)",
    )
    receive.add_argument(
        "--timeout",
        type=_seconds,
        default=5.0,
        help="stop when no message came for this many seconds (default 5)",
    )
    receive.add_argument("--selector", default=None, help="JMS message selector")
    receive.add_argument("--json", action="store_true", help="one JSON object per line")

    browse = add("browse", help="list a queue's waiting messages in delivery order")
    browse.add_argument("url", metavar="URL", nargs="?", help=_URL_HELP)
    browse.add_argument("queue", metavar="QUEUE", help="queue://NAME, or just NAME")
    browse.add_argument("--selector", default=None)
    browse.add_argument("--json", action="store_true")

    declare = add(
        "declare",
        help="make queues ready at the broker now, as their first use would (a deploy step)",
        description="Make each queue ready at the broker as its first use would: its "
        "partitions, or itself, held to one consumer across processes where the settings "
        "(URL, config file) say so, else a durable queue. Run it when the application is "
        "deployed, so that no queue is made in the first moments of production traffic. "
        "Safe to repeat: an existing queue is kept.",
    )
    declare.add_argument("url", metavar="URL", nargs="?", help=_URL_HELP)
    declare.add_argument(
        "queues", metavar="QUEUE", nargs="+", help="queue://NAME, or just NAME; repeatable"
    )
    declare.add_argument(
        "--factory",
        metavar="NAME",
        default=None,
        help="a [factories.NAME] table of the config file, as from_config(NAME) reads it",
    )
    declare.add_argument("--json", action="store_true", help="one JSON object per queue")

    add("providers", help="list URL schemes and the embedded broker's capabilities")

    config = add(
        "config",
        help="a factory's effective settings and where each came from (secrets hidden)",
    )
    config.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help="a [factories.NAME] table of the config file, as from_config(NAME) reads it",
    )
    config.add_argument(
        "--url",
        default=None,
        help=f"the URL a program gives ConnectionFactory(URL) (default: ${URL_ENV_VAR} "
        "or embedded://)",
    )
    config.add_argument(
        "--file",
        default=None,
        metavar="PATH",
        help="the config file (default: $JMSLIKE_CONFIG, else ./jmslike.toml if present)",
    )
    config.add_argument("--json", action="store_true", help="one JSON object")

    # The bench lives outside the runtime package (benchmarks/src/jmslike_bench, the "bench"
    # extra): its options are parsed by its own parser, loaded only when it runs, so that
    # every other command works, and starts, without it.
    add(
        "bench",
        add_help=False,
        help="jmslike beside the raw libraries and the Java JMS client (docs/performance.md)",
        description="Run the same workloads with jmslike, the raw library it wraps and the "
        "Java JMS client on every reachable broker; print a table, write JSON and plots.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code instead of exiting, for tests."""
    parser = _build_parser()
    try:
        args, rest = parser.parse_known_args(argv)
        if rest and args.command != "bench":
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.bench_argv = rest
        _check_operands(args)
    except SystemExit as exc:  # --help, --version, or a usage error argparse printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    args.verbose += args.verbose_after
    _configure_logging(args.verbose)
    commands = {
        "demo": _demo,
        "send": _send,
        "receive": _receive,
        "browse": _browse,
        "declare": _declare,
        "providers": _providers,
        "config": _config,
        "bench": _bench,
    }
    try:
        return commands[args.command](args)
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a shell user gets one line, -v adds the traceback
        if args.verbose:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, JMSException) else f"{type(exc).__name__}: {exc}"
        for url in (getattr(args, "url", None), default_url()):
            if url:
                message = message.replace(url, redact_url(url))
        print(f"jmslike: error: {message}", file=sys.stderr)
        return EXIT_FAILED


def _check_operands(args: argparse.Namespace) -> None:
    """The usage rules argparse cannot express; exits 2 like argparse's own."""
    if args.command == "send" and args.url is not None and _is_destination(args.url):
        # No URL given: argparse filled URL from DESTINATION and DESTINATION from a TEXT.
        args.texts.insert(0, args.destination)
        args.url, args.destination = None, args.url
    if args.command == "declare":
        if args.url is not None and (_is_destination(args.url) or "://" not in args.url):
            # No URL given: argparse filled URL from the first QUEUE.
            args.queues.insert(0, args.url)
            args.url = None
        if args.factory is not None and args.url is not None:
            args.command_parser.error(
                "give a factory NAME (--factory, its url is in the file) or a URL, not both"
            )
    if args.command == "config" and args.name is not None and args.url is not None:
        args.command_parser.error(
            "give a factory NAME (its url is in the file) or --url URL, not both"
        )


def _is_destination(operand: str) -> bool:
    return operand.partition("://")[0] in ("queue", "topic")


class _Verbosity(logging.Filter):
    """Lets jmslike's records through from one level and every other library's from
    another: without -v, stomp.py's "could not connect" would only repeat the error line."""

    def __init__(self, verbose: int) -> None:
        super().__init__()
        self.own = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
        self.others = (logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 3)]

    def filter(self, record: logging.LogRecord) -> bool:
        own = record.name.partition(".")[0] in _OWN_LOGGERS
        return record.levelno >= (self.own if own else self.others)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to sys.stderr as it is when a record comes, like logging's last resort:
    a program that called main() with stderr redirected (a test capturing it, then closing
    the capture) leaves the handler on the root logger, and a thread logging later wrote to
    the closed file ("ValueError: I/O operation on closed file")."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass  # StreamHandler.__init__ sets it: sys.stderr is looked up at each record


def _configure_logging(verbose: int) -> None:
    """One stderr handler on the root logger, levels in its filter: logger levels set by
    the program that called main() (a test's caplog) stay as they were."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.name == log.name]:
        root.removeHandler(old)  # main() ran before in this process
    handler = _StderrHandler()
    handler.name = log.name
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    verbosity = _Verbosity(verbose)
    handler.addFilter(verbosity)
    root.addHandler(handler)
    root.setLevel(verbosity.own)


def _discard_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it once more at exit, and a
    second broken pipe there would print an "Exception ignored" message after all."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file: nothing flushes it
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


# --------------------------------------------------------------------------- bench
def _bench(args: argparse.Namespace) -> int:
    """Load the bench by name, parse its own options, run it: the runtime package never
    imports it, and a missing bench is a one-line hint, not a traceback."""
    try:
        bench = importlib.import_module(BENCH_MODULE)
    except ImportError as exc:
        return _bench_missing(exc)
    parser = argparse.ArgumentParser(
        prog="jmslike bench", description=args.command_parser.description
    )
    bench.add_arguments(parser)
    try:
        options = parser.parse_args(args.bench_argv)
    except SystemExit as exc:  # --help, or a usage error the bench's parser printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        result: int = bench.run(options)
    except ImportError as exc:  # its progress bar or plots, without the extra
        return _bench_missing(exc)
    return result


def _bench_missing(exc: ImportError) -> int:
    missing = exc.name or BENCH_MODULE
    print(
        f"jmslike: error: jmslike bench needs {missing}, which is not installed: "
        f"pip install '{BENCH_EXTRA}'",
        file=sys.stderr,
    )
    return EXIT_FAILED


# ---------------------------------------------------------------------------- demo
def _demo(args: argparse.Namespace) -> int:
    """Run the bookstore unordered then ordered; an overtake in the ordered run is a bug."""
    # Both runs play the same script, so only the ordering setting differs between them.
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    print(f"bookstore: {args.customers} customers, {args.consumers} consumers, seed {seed}")
    results = [
        run_bookstore(args.url, args.customers, args.consumers, ordered, seed)
        for ordered in (False, True)
    ]
    print(format_table(results))
    print(verdict(*results))
    ordered = results[1]
    if not all(r.complete for r in results):
        print("jmslike: a run did not process all its messages in time", file=sys.stderr)
        return EXIT_FAILED
    if ordered.overtakes or ordered.out_of_order:
        print(
            "jmslike: ordering groups failed to keep a customer's messages in order "
            "(this is a bug, please report it)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


# --------------------------------------------------------------------------- send
def _parse_property(spec: str) -> tuple[str, str, PropertyValue]:
    """``K=V`` or ``K:TYPE=V`` -> (name, JMS type, value); typed so selectors can compare."""
    key, sep, raw = spec.partition("=")
    name, _, type_name = key.partition(":")
    jms_type = _PROPERTY_TYPES.get(type_name or "str")
    if not sep or not name or jms_type is None:
        raise InvalidArgumentError(
            f"{spec!r}: write NAME=VALUE or NAME:TYPE=VALUE "
            f"(TYPE one of {', '.join(sorted(_PROPERTY_TYPES))})"
        )
    try:
        if jms_type in ("int", "long"):
            return name, jms_type, int(raw)
        if jms_type in ("float", "double"):
            return name, jms_type, float(raw)
    except ValueError:
        raise InvalidArgumentError(f"{spec!r}: {raw!r} is not a valid {type_name} value") from None
    if jms_type == "boolean":
        if raw.lower() not in ("true", "false"):
            raise InvalidArgumentError(f"{spec!r}: a bool is true or false")
        return name, jms_type, raw.lower() == "true"
    return name, jms_type, raw


def _texts(args: argparse.Namespace) -> Iterator[str]:
    texts: Iterable[str] = args.texts or (line.rstrip("\r\n") for line in sys.stdin)
    for text in texts:
        for _ in range(args.count):
            yield text


def _send(args: argparse.Namespace) -> int:
    properties: list[tuple[str, str, PropertyValue]] = args.properties
    destination = parse_destination(args.destination)
    with _connect(args.url) as connection:
        session = connection.create_session()
        producer = session.create_producer(destination)
        if args.group is not None:
            producer.enable_ordering_group(args.group)
        if args.ttl is not None:
            producer.time_to_live = args.ttl
        for text in _texts(args):
            message = session.create_text_message(text)
            for name, jms_type, value in properties:
                getattr(message, f"set_{jms_type}_property")(name, value)
            producer.send(message, delivery_mode=args.delivery_mode, priority=args.priority)
            print(message.jms_message_id, flush=True)
        _warn_if_in_memory(connection, "send")
    return EXIT_OK


# ------------------------------------------------------------------ receive, browse
def _receive(args: argparse.Namespace) -> int:
    destination = parse_destination(args.destination)
    received = 0
    with _connect(args.url) as connection:
        # Acknowledged one by one once printed: if stdout breaks, the message being
        # printed goes back to the broker with the connection's close (ORD-10).
        session = connection.create_session(acknowledge_mode=Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(destination, args.selector)
        connection.start()
        while args.count is None or received < args.count:
            message = consumer.receive(args.timeout)
            if message is None:
                break
            _print_message(message, args.json)
            message.acknowledge()
            received += 1
        consumer.close()
        if not received:
            _warn_if_in_memory(connection, "receive")
    log.info("received %d message(s) from %s", received, destination)
    return EXIT_OK


def _browse(args: argparse.Namespace) -> int:
    # Only queues can be browsed, so a bare name is unambiguous here.
    queue = args.queue if "://" in args.queue else f"queue://{args.queue}"
    with _connect(args.url) as connection:
        session = connection.create_session()
        with session.create_browser(queue, args.selector) as browser:
            browsed = 0
            for message in browser:
                _print_message(message, args.json)
                browsed += 1
        if not browsed:
            _warn_if_in_memory(connection, "browse")
    return EXIT_OK


def _declare(args: argparse.Namespace) -> int:
    """One line (or JSON object) per queue; the first refusal ends the command with its
    error, after the lines of the queues declared before it."""
    queues = [q if "://" in q else f"queue://{q}" for q in args.queues]
    if args.factory is not None:
        factory = ConnectionFactory.from_config(args.factory)
        log.info("connecting to %s", factory.url)  # str() hides the secrets
        connection = factory.create_connection()
    else:
        connection = _connect(args.url)
    with connection:
        for queue in queues:
            done = connection.declare_queue(queue)
            if args.json:
                print(json.dumps(dataclasses.asdict(done)), flush=True)
            else:
                print(done, flush=True)
    return EXIT_OK


_IN_MEMORY = {
    "send": "what this command sent is gone now that it exits",
    "receive": "it started empty, so nothing another command sent was there",
    "browse": "it started empty, so nothing another command sent was there",
}
"""What an embedded broker without a file means for each command: every jmslike process
has its own (``jmslike send queue://x hi`` then ``jmslike receive queue://x`` printed
nothing, and said nothing)."""


def _connect(url: str | None) -> Connection:
    """``None`` leaves the URL to ConnectionFactory, so $JMSLIKE_URL means what it means
    to a program."""
    log.info("connecting to %s", redact_url(default_url() if url is None else url))
    factory = ConnectionFactory() if url is None else ConnectionFactory(url)
    return factory.create_connection()


def _warn_if_in_memory(connection: Connection, command: str) -> None:
    """After a send, or a receive or browse that found nothing, on an embedded broker in
    this process's memory: say why it may not be what the user meant (``_IN_MEMORY``)."""
    url = connection.url
    if url.scheme == "embedded" and not connection.capabilities.persistent:
        log.warning(
            "%s is an embedded broker in this process's memory: %s. Give a broker URL "
            "(or set $JMSLIKE_URL), or a file every command shares: "
            "embedded:///path/to/broker.db",
            url,
            _IN_MEMORY[command],
        )


def _body(message: Message) -> Any:
    """The body as something JSON can carry: bytes become base64 text."""
    if isinstance(message, TextMessage):
        return message.text
    if isinstance(message, BytesMessage):
        return base64.b64encode(message.body).decode("ascii")
    if isinstance(message, MapMessage):
        return {
            k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
            for k, v in message.body.items()
        }
    return None


def _message_record(message: Message) -> dict[str, Any]:
    properties = {k: v for k, v in message.properties.items() if k not in (GROUP_ID, GROUP_SEQ)}
    return {
        "id": message.jms_message_id,
        "group": message.ordering_group,
        "seq": message.group_sequence,
        "redelivered": bool(message.jms_redelivered),
        "properties": properties,
        "body": _body(message),
    }


def _print_message(message: Message, as_json: bool) -> None:
    record = _message_record(message)
    if as_json:
        print(json.dumps(record, sort_keys=True), flush=True)
        return
    props = " ".join(f"{k}={v!r}" for k, v in sorted(record["properties"].items()))
    print(
        f"{record['id']} group={record['group']} seq={record['seq']} "
        f"redelivered={record['redelivered']} [{props}] {record['body']!r}",
        flush=True,
    )


# ------------------------------------------------------------------------ providers
def _providers(args: argparse.Namespace) -> int:
    """List schemes; the embedded broker's capabilities need no server, so show them."""
    for scheme, source in get_registry().describe().items():
        print(f"{scheme}://  {source}")
    with ConnectionFactory("embedded://jmslike-cli-providers").create_connection() as connection:
        print("embedded:// capabilities:")
        for name, value in connection.capabilities.as_dict().items():
            print(f"  {name}: {value}")
    return EXIT_OK


# --------------------------------------------------------------------------- config
_HIDDEN = "***"


def _config(args: argparse.Namespace) -> int:
    """Resolve settings exactly as ``ConnectionFactory`` does, without connecting."""
    user: str | None
    password: str | None
    if args.name is not None:
        url, user, password, _settings, _where = load_factory_config(args.name, args.file)
        url_source = "file"
    else:
        user = password = None
        if args.url is not None:
            url, url_source = args.url, "url"
        elif os.environ.get(URL_ENV_VAR):
            url, url_source = os.environ[URL_ENV_VAR], f"env {URL_ENV_VAR}"
        else:
            url, url_source = DEFAULT_URL, "default"
    parsed = parse_url(url)
    scheme = parsed.members[0].scheme if parsed.members else parsed.scheme
    provider = get_registry().provider_for(scheme)
    provider.check_url(parsed)
    resolution = resolve(
        parsed,
        provider_names=provider.setting_names,
        factory=args.name,
        config_path=args.file,
    )
    provider.check_settings(resolution.settings)
    if args.name is not None and resolution.config is not None:
        table = ("factories", args.name)
        written = "url" in resolution.config.factory(args.name)
        url_source = f"file {resolution.config.where(table, 'url')}" if written else "default"
    report = _config_report(resolution, parsed.redacted, url_source, args.name)
    report["user"] = user if user is not None else parsed.user
    report["password"] = _HIDDEN if (password or parsed.password) else None
    report["provider"] = provider.name
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        _print_config(report)
    return EXIT_OK


def _config_report(
    resolution: Resolution, url: str, url_source: str, name: str | None
) -> dict[str, Any]:
    """What ``jmslike config`` shows, as JSON-ready data; every secret already hidden."""
    settings = resolution.settings
    values: dict[str, Any] = {}
    for key, source in resolution.sources.items():
        if key in FactorySettings.names():
            value: Any = getattr(settings, key)
        else:
            value = settings.extra.get(key)
        if value is not None:
            value = shown_value(key, value)
        values[key] = {"value": value, "source": source}
    destinations: dict[str, dict[str, Any]] = {}
    for entry in filter(None, (e.strip() for e in settings.strictly_ordered.split(","))):
        destinations.setdefault(entry, {})["strictly_ordered"] = True
    for entry in filter(None, (e.strip() for e in settings.unit_of_order_destinations.split(","))):
        destination, _sep, unit = entry.partition("=")
        destinations.setdefault(destination.strip(), {})["unit_of_order"] = unit.strip()
    for spec in settings.partition_specs():
        declared = destinations.setdefault(spec.destination.key, {})
        declared["partitions"] = spec.count
        declared["consumer_group"] = spec.consumer_group
    return {
        "factory": name,
        "config_file": str(resolution.config.path) if resolution.config else None,
        "url": redact_url(url),
        "url_source": url_source,
        "settings": values,
        "destinations": destinations,
    }


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if value != "" else '""'


def _print_config(report: dict[str, Any]) -> None:
    if report["factory"] is not None:
        print(f"factory:  {report['factory']}")
    print(f"file:     {report['config_file'] or '(none)'}")
    print(f"url:      {report['url']}  ({report['url_source']})")
    print(f"provider: {report['provider']}")
    if report["user"] is not None or report["password"] is not None:
        print(f"user:     {_show(report['user'])}  password: {_show(report['password'])}")
    rows = [("setting", "value", "source")] + [
        (key, _show(item["value"]), item["source"]) for key, item in report["settings"].items()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    for key, value, source in rows:
        print(f"  {key.ljust(widths[0])}  {value.ljust(widths[1])}  {source}".rstrip())
    for destination, declared in report["destinations"].items():
        parts = [f"{k}={_show(v)}" for k, v in sorted(declared.items())]
        print(f"destination {destination}: {', '.join(parts)}")


if __name__ == "__main__":
    sys.exit(main())
