"""The ``jmslike`` command, the bookstore demo and the examples, end to end.

Commands run in-process through ``main([...])`` so that ``send`` and a later ``receive``
meet on the same embedded broker (each process has its own); one run of each entry
point as a real subprocess checks that the console script wiring works too.
"""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from jmslike.cli import main
from jmslike.demo import run_bookstore

pytestmark = pytest.mark.embedded

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# Examples that need more than the embedded broker, with the markers of what they need, so
# that ``-m "not spark"`` (or a run without brokers) leaves them out instead of failing.
NEEDS = {"spark_orders_pipeline.py": (pytest.mark.spark, pytest.mark.activemq, pytest.mark.stomp)}


@pytest.fixture
def url() -> str:
    """A broker of this test's own, so tests never see each other's messages."""
    return f"embedded://cli-test-{uuid.uuid4().hex[:10]}"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------------------- demo
def test_demo_prints_table_and_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "demo", "--customers", "10", "--consumers", "3", "--seed", "5")
    assert code == 0
    assert "cancels that overtook" in out
    assert "no ordering groups" in out
    assert "one group per customer" in out
    assert "with one group per customer: 0 of 10" in out.splitlines()[-1]


def test_bookstore_ordered_run_keeps_every_customer_in_order() -> None:
    result = run_bookstore(None, 15, 4, True, 3)
    assert result.complete
    assert result.overtakes == 0
    assert result.left_open == 0
    assert result.out_of_order == 0
    assert result.customers == 15 and result.consumers == 4
    assert 30 <= result.messages <= 45


def test_bookstore_unordered_run_processes_everything() -> None:
    # Whether cancels overtake depends on thread timing, so only the counts are checked.
    result = run_bookstore(None, 10, 4, False, 3)
    assert result.complete
    assert result.overtakes == result.left_open
    assert 0 <= result.overtakes <= 10


def test_bookstore_same_seed_same_script() -> None:
    first = run_bookstore(None, 8, 2, True, 11)
    second = run_bookstore(None, 8, 2, True, 11)
    assert first.messages == second.messages


def test_demo_as_subprocess() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "jmslike.cli", "demo", "--customers", "10"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "of 10" in proc.stdout


def test_python_dash_m_jmslike_lists_providers() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "jmslike", "providers"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "embedded://" in proc.stdout


# ------------------------------------------------------------- send, browse, receive
def test_send_browse_receive_round_trip(capsys: pytest.CaptureFixture[str], url: str) -> None:
    code, out, _ = run(
        capsys,
        "send",
        url,
        "queue://orders",
        "place",
        "update",
        "cancel",
        "--group",
        "joe",
        "--property",
        "n:int=3",
        "--property",
        "shop=xyz",
    )
    assert code == 0
    ids = out.split()
    assert len(ids) == 3 and len(set(ids)) == 3

    code, out, _ = run(capsys, "browse", url, "orders", "--json")
    assert code == 0
    browsed = json_lines(out)
    assert [m["body"] for m in browsed] == ["place", "update", "cancel"]
    assert [m["id"] for m in browsed] == ids

    code, out, _ = run(capsys, "receive", url, "queue://orders", "--count", "3", "--json")
    assert code == 0
    got = json_lines(out)
    assert [m["body"] for m in got] == ["place", "update", "cancel"]
    assert [m["seq"] for m in got] == [1, 2, 3]
    assert {m["group"] for m in got} == {"joe"}
    assert all(m["redelivered"] is False for m in got)
    props = got[0]["properties"]
    assert isinstance(props, dict)
    assert props["n"] == 3 and props["shop"] == "xyz"

    # Everything was consumed: the queue is empty now.
    code, out, _ = run(capsys, "receive", url, "queue://orders", "--timeout", "0.1")
    assert (code, out) == (0, "")
    code, out, _ = run(capsys, "browse", url, "queue://orders")
    assert (code, out) == (0, "")


def test_receive_text_format_and_selector(capsys: pytest.CaptureFixture[str], url: str) -> None:
    run(capsys, "send", url, "queue://q", "eu-1", "--property", "region=EU")
    run(capsys, "send", url, "queue://q", "us-1", "--property", "region=US")
    run(capsys, "send", url, "queue://q", "eu-2", "--property", "region=EU")
    code, out, _ = run(capsys, "browse", url, "queue://q", "--selector", "region = 'US'")
    assert code == 0 and "'us-1'" in out and "eu-" not in out
    code, out, _ = run(
        capsys, "receive", url, "queue://q", "--selector", "region = 'EU'", "--timeout", "0.2"
    )
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("'eu-1'") and lines[1].endswith("'eu-2'")
    assert "group=None" in lines[0] and "region='EU'" in lines[0]


def test_send_reads_stdin_and_repeats_with_count(
    capsys: pytest.CaptureFixture[str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("first\nsecond\n"))
    code, out, _ = run(
        capsys,
        "send",
        url,
        "queue://in",
        "--count",
        "2",
        "--non-persistent",
        "--priority",
        "7",
        "--ttl",
        "60",
    )
    assert code == 0 and len(out.split()) == 4
    code, out, _ = run(capsys, "browse", url, "queue://in", "--json")
    assert [m["body"] for m in json_lines(out)] == ["first", "first", "second", "second"]


def test_providers_lists_embedded_capabilities(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "providers")
    assert code == 0
    assert "embedded://" in out
    assert "ordering_mode:" in out and "native_groups:" in out


# ------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "argv",
    [
        ["send", "{url}", "orders", "x"],  # destination without queue:// or topic://
        ["send", "{url}", "queue://q", "x", "--priority", "11"],
        ["send", "{url}", "queue://q", "x", "--group", ""],
        ["receive", "{url}", "queue://q", "--selector", "region = = 'EU'", "--timeout", "0"],
        ["browse", "{url}", "topic://t"],
    ],
)
def test_jms_errors_are_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], url: str, argv: list[str]
) -> None:
    code, out, err = run(capsys, *(a.format(url=url) for a in argv))
    assert code == 1
    assert out == ""
    assert err.startswith("jmslike: error: ")
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("n:int=many", "'many' is not a valid int value"), ("novalue", "write NAME=VALUE")],
)
def test_malformed_property_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], url: str, spec: str, needle: str
) -> None:
    code, out, err = run(capsys, "send", url, "queue://q", "x", "--property", spec)
    assert (code, out) == (2, "")
    assert err.startswith("usage: jmslike send ")
    assert f"jmslike send: error: argument --property: '{spec}': " in err and needle in err


def test_error_never_shows_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "send", "nosuch://joe:s3cret@host:1", "queue://q", "x")
    assert code == 1
    assert err.startswith("jmslike: error: ")
    assert "s3cret" not in err


def test_usage_errors_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--customers", "0"]) == 2
    assert main(["frobnicate"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0
    capsys.readouterr()


# ----------------------------------------------------------------------- examples
@pytest.mark.parametrize(
    "script",
    [pytest.param(p, marks=NEEDS.get(p.name, ()), id=p.name) for p in EXAMPLES],
)
def test_example_runs(script: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip()


def test_there_are_examples() -> None:
    assert {p.name for p in EXAMPLES} >= {
        "quickstart.py",
        "bookstore.py",
        "listener_container.py",
        "request_reply.py",
    }


# -------------------------------------------------------------------------- config
@pytest.fixture
def config_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No JMSLIKE_ variable and no ./jmslike.toml but what the test sets."""
    for name in list(os.environ):
        if name.startswith("JMSLIKE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


SECRET_FILE = """\
[defaults]
enable_ordering_group = true
prefetch = 2

[factories.app]
url = "embedded://app:url-s3cret@cfg-cli?maxRedeliveries=4"
user = "app"
password = "file-s3cret"
client_id = "shop"

[destinations."queue://orders"]
unit_of_order = "session"
strictly_ordered = true
"""


def test_config_shows_each_value_and_its_source(
    capsys: pytest.CaptureFixture[str], config_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "jmslike.toml"
    path.write_text(SECRET_FILE, encoding="utf-8")
    config_env.setenv("JMSLIKE_PREFETCH", "3")
    code, out, err = run(capsys, "config", "app", "--json")
    assert (code, err) == (0, ""), err
    report = json.loads(out)
    settings = report["settings"]
    assert settings["enable_ordering_group"] == {
        "value": True,
        "source": f"file {path}:2 [defaults]",
    }
    assert settings["prefetch"] == {"value": 3, "source": "env JMSLIKE_PREFETCH"}
    assert settings["client_id"] == {"value": "shop", "source": f"file {path}:9 [factories.app]"}
    assert settings["max_redeliveries"]["source"] == f"file {path}:6 [factories.app] (url)"
    assert settings["redelivery_delay"] == {"value": 0.0, "source": "default"}
    assert settings["unit_of_order_destinations"]["value"] == "queue://orders=session"
    assert report["destinations"] == {
        "queue://orders": {"strictly_ordered": True, "unit_of_order": "session"}
    }
    assert report["url_source"] == f"file {path}:6 [factories.app]"
    assert report["user"] == "app" and report["password"] == "***"
    assert report["config_file"] == str(path)

    code, out, _ = run(capsys, "config", "app")
    assert code == 0
    assert "enable_ordering_group" in out and f"file {path}:2 [defaults]" in out
    assert "destination queue://orders: strictly_ordered=true, unit_of_order=session" in out


def test_config_never_shows_a_password(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    config_env: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "jmslike.toml").write_text(SECRET_FILE, encoding="utf-8")
    runs = [
        ("config", "app"),
        ("config", "app", "--json"),
        ("config", "--url", "embedded://joe:url-s3cret@cfg-cli?prefetch=5"),
        ("config", "--url", "embedded://joe:url-s3cret@cfg-cli?prefetch=5", "--json"),
        ("config", "--url", "embedded://joe:url-s3cret@cfg-cli?prefetch=lots"),
        ("config", "--url", "nosuch://joe:url-s3cret@host:1"),
    ]
    caplog.set_level(logging.DEBUG, logger="jmslike")
    for argv in runs:
        _code, out, err = run(capsys, *argv)
        for secret in ("url-s3cret", "file-s3cret"):
            assert secret not in out and secret not in err, (argv, out, err)
    assert "settings for embedded://joe:***@cfg-cli?prefetch=5" in caplog.text
    assert "s3cret" not in caplog.text
    config_env.setenv("JMSLIKE_URL", "embedded://joe:url-s3cret@cfg-cli")
    code, out, err = run(capsys, "config")
    assert code == 0 and "url-s3cret" not in out + err
    assert "embedded://joe:***@cfg-cli  (env JMSLIKE_URL)" in out


def test_config_without_file_shows_defaults(
    capsys: pytest.CaptureFixture[str], config_env: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, "config", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["config_file"] is None and report["factory"] is None
    assert (report["url"], report["url_source"]) == ("embedded://", "default")
    assert {item["source"] for item in report["settings"].values()} == {"default"}
    code, out, _ = run(capsys, "config", "--url", "embedded://x?enableOrderingGroup=true")
    assert code == 0
    line = next(line for line in out.splitlines() if "enable_ordering_group" in line)
    assert line.split() == ["enable_ordering_group", "true", "url"]


@pytest.mark.parametrize(
    ("argv", "file_text", "needles"),
    [
        (["config", "nosuch"], SECRET_FILE, ["no factory 'nosuch'", "defined: app"]),
        (["config"], "[defaults]\nprefetch = \n", ["does not parse at line 2, column"]),
        (["config"], "[defaults]\nprefetsh = 1\n", ["unknown setting 'prefetsh'", ":2 [defaults]"]),
    ],
)
def test_config_errors_exit_1(
    capsys: pytest.CaptureFixture[str],
    config_env: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    file_text: str,
    needles: list[str],
) -> None:
    (tmp_path / "jmslike.toml").write_text(file_text, encoding="utf-8")
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.startswith("jmslike: error: ")
    for needle in needles:
        assert needle in err, err


def test_config_warns_about_a_misspelt_variable(
    capsys: pytest.CaptureFixture[str],
    config_env: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A JMSLIKE_ variable that is no setting is ignored, as by every factory; one that
    looks like a misspelt setting is named in a warning."""
    config_env.setattr("jmslike.config._logged_env", set())
    config_env.setenv("JMSLIKE_ENABLE_ORDERING", "on")
    with caplog.at_level(logging.WARNING, logger="jmslike.config"):
        code, out, _err = run(capsys, "config")
    assert code == 0
    assert "enable_ordering_group        false  default" in out
    assert "JMSLIKE_ENABLE_ORDERING is not a jmslike setting and is ignored" in caplog.text
    assert "did you mean JMSLIKE_ENABLE_ORDERING_GROUP?" in caplog.text


def test_config_name_and_url_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], config_env: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, "config", "app", "--url", "embedded://")
    assert (code, out) == (2, "")
    assert err.startswith("usage: jmslike config ")
    assert "jmslike config: error: give a factory NAME" in err and "not both" in err


def test_config_as_subprocess(tmp_path: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text(SECRET_FILE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JMSLIKE_")}
    env["JMSLIKE_CONFIG"] = str(path)
    proc = subprocess.run(
        [sys.executable, "-m", "jmslike", "config", "app"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "s3cret" not in proc.stdout + proc.stderr
    assert f"file {path}:2 [defaults]" in proc.stdout


# --------------------------------------------------------- the CLI as an OS process
# Pipes, exit statuses, logging and the environment only show in a process of its own.


def cli_env(**extra: str) -> dict[str, str]:
    """This environment without any JMSLIKE_ variable but ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JMSLIKE_")}
    env.update(extra)
    return env


def cli(
    *argv: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jmslike", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=cli_env() if env is None else env,
    )


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    """A file-store broker: each CLI process opens the file in turn and sees the queue."""
    return f"embedded://{tmp_path / 'broker.db'}"


def browse_bodies(url: str, queue: str) -> list[dict[str, object]]:
    proc = cli("browse", url, queue, "--json")
    assert proc.returncode == 0, proc.stderr
    return json_lines(proc.stdout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_receive_into_head_keeps_what_it_could_not_print(store_url: str) -> None:
    # Lines longer than a pipe's buffer: the second cannot be written once head is gone.
    lines = [f"{n}{'x' * 300_000}" for n in range(4)]
    sent = cli("send", store_url, "queue://q", stdin="\n".join(lines) + "\n")
    assert sent.returncode == 0, sent.stderr
    receive = subprocess.Popen(
        [sys.executable, "-m", "jmslike", "receive", store_url, "queue://q", "--timeout", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert receive.stdout is not None and receive.stderr is not None
    head = subprocess.run(
        ["head", "-1"], stdin=receive.stdout, capture_output=True, timeout=60, check=False
    )
    receive.stdout.close()
    err = receive.stderr.read().decode()
    receive.stderr.close()
    assert receive.wait(timeout=60) == 141, err
    assert err == ""
    assert head.stdout.decode().rstrip("\n").endswith(f"'{lines[0]}'")
    left = browse_bodies(store_url, "queue://q")
    assert [m["body"] for m in left] == lines[1:]
    assert left[0]["redelivered"] is True


@pytest.mark.parametrize("command", ["receive", "browse"])
def test_writing_into_a_closed_pipe_exits_141_quietly(store_url: str, command: str) -> None:
    sent = cli("send", store_url, "queue://q", "a", "b", "c")
    assert sent.returncode == 0, sent.stderr
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "jmslike", command, store_url, "queue://q"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
            env=cli_env(),
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")
    assert [m["body"] for m in browse_bodies(store_url, "queue://q")] == ["a", "b", "c"]


def test_version() -> None:
    import jmslike

    proc = cli("--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0,
        f"jmslike {jmslike.__version__}\n",
        "",
    )


def test_verbose_after_the_command(store_url: str) -> None:
    proc = cli("send", "-v", store_url, "queue://q", "x")
    assert proc.returncode == 0, proc.stderr
    assert "INFO jmslike.cli: connecting to embedded://" in proc.stderr
    quiet = cli("send", store_url, "queue://q", "x")
    assert (quiet.returncode, quiet.stderr) == (0, "")


@pytest.mark.parametrize("verbosity", [["-v", "send", "-v"], ["send", "-vv"]])
def test_verbose_counts_before_and_after_the_command(store_url: str, verbosity: list[str]) -> None:
    proc = cli(*verbosity, store_url, "queue://q", "x")
    assert proc.returncode == 0, proc.stderr
    assert " DEBUG " in proc.stderr


def test_send_receive_browse_default_to_jmslike_url(store_url: str) -> None:
    env = cli_env(JMSLIKE_URL=store_url)
    sent = cli("send", "queue://q", "one", "two", env=env)
    assert sent.returncode == 0, sent.stderr
    assert len(sent.stdout.split()) == 2
    browsed = cli("browse", "queue://q", "--json", env=env)
    assert browsed.returncode == 0, browsed.stderr
    assert [m["body"] for m in json_lines(browsed.stdout)] == ["one", "two"]
    received = cli("receive", "queue://q", "--json", "--timeout", "0.5", env=env)
    assert received.returncode == 0, received.stderr
    assert [m["body"] for m in json_lines(received.stdout)] == ["one", "two"]
    # A URL on the command line still wins over the variable.
    other = cli("send", "embedded://elsewhere", "queue://q", "x", env=env)
    assert other.returncode == 0, other.stderr
    assert browse_bodies(store_url, "queue://q") == []


def test_an_in_memory_embedded_broker_is_named_as_such(store_url: str) -> None:
    """Each CLI process has its own embedded broker: ``send`` then ``receive`` on the
    default URL printed nothing and said nothing. Now the send, and a receive or browse
    that found nothing, warn on stderr and name a shared file; with a file, or when a
    receive got messages, nothing is said."""
    sent = cli("send", "queue://q", "hello")
    assert sent.returncode == 0, sent.stderr
    assert "embedded:// is an embedded broker in this process's memory" in sent.stderr
    assert "gone now that it exits" in sent.stderr and "embedded:///" in sent.stderr
    for argv in (["receive", "queue://q", "--timeout", "0.2"], ["browse", "queue://q"]):
        found = cli(*argv)
        assert (found.returncode, found.stdout) == (0, ""), found.stderr
        assert "nothing another command sent was there" in found.stderr
    sent = cli("send", store_url, "queue://q", "kept")
    assert sent.returncode == 0 and "memory" not in sent.stderr, sent.stderr
    for argv in (["browse", store_url, "queue://q"], ["receive", store_url, "queue://q"]):
        proc = cli(*argv, "--timeout", "0.2") if argv[0] == "receive" else cli(*argv)
        assert proc.returncode == 0 and "'kept'" in proc.stdout, proc.stderr
        assert "memory" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", ["send", "receive", "browse"])
def test_help_names_jmslike_url(command: str) -> None:
    proc = cli(command, "--help")
    assert proc.returncode == 0
    assert "$JMSLIKE_URL" in proc.stdout


@pytest.mark.parametrize("scheme", ["stomp", "amqp"])
def test_unreachable_broker_exits_1_with_one_line(scheme: str) -> None:
    url = f"{scheme}://127.0.0.1:{free_port()}"
    for argv in (["send", url, "queue://q", "x"], ["receive", url, "queue://q"]):
        proc = cli(*argv)
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("jmslike: error: ") and "127.0.0.1" in lines[0]


def test_verbose_shows_the_traceback_and_library_warnings() -> None:
    url = f"stomp://127.0.0.1:{free_port()}"
    proc = cli("send", "-v", url, "queue://q", "x")
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr
    assert "could not connect to host" in proc.stderr  # stomp.py's own warning
    assert proc.stderr.splitlines()[-1].startswith("jmslike: error: ")


def test_bad_destination_exits_1_and_usage_errors_exit_2(store_url: str) -> None:
    bad = cli("send", store_url, "orders", "x")
    assert bad.returncode == 1
    assert bad.stderr.startswith("jmslike: error: invalid destination 'orders'")
    assert len(bad.stderr.splitlines()) == 1
    for argv in (["send"], ["send", store_url, "queue://q", "--priority", "high"], ["nope"]):
        usage = cli(*argv)
        assert usage.returncode == 2, argv
        assert "usage: jmslike" in usage.stderr


def test_logging_follows_stderr_after_main_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() leaves its handler on the root logger; a record logged after the stderr it
    ran with was closed goes to the stderr of now, not to the closed file (CI once printed
    "ValueError: I/O operation on closed file" from a thread logging late)."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    assert main(["providers"]) == 0
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("jmslike.test").warning("logged late")
    assert "WARNING jmslike.test: logged late" in second.getvalue()
    assert "Logging error" not in second.getvalue()


# --------------------------------------------------------------------------- declare
DECLARE_FILE = """\
[factories.app]
url = "embedded://cli-declare?nativeGroups=false"

[destinations."queue://orders"]
partitions = 3
"""


def test_declare_reads_partitions_from_the_config_file(
    capsys: pytest.CaptureFixture[str], config_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The deploy step reads the settings a program would (here a named factory and a
    destination table): one line a queue, or one JSON object with ``--json``."""
    (tmp_path / "jmslike.toml").write_text(DECLARE_FILE, encoding="utf-8")
    code, out, err = run(capsys, "declare", "--factory", "app", "orders", "queue://audit", "--json")
    assert (code, err) == (0, ""), err
    orders, audit = json_lines(out)
    assert orders["queue"] == "queue://orders" and orders["kind"] == "partitioned"
    assert orders["broker_queues"] == ["orders.p0", "orders.p1", "orders.p2"]
    assert audit["kind"] == "plain" and audit["broker_queues"] == ["audit"]
    # The file's destination tables serve every factory, one from a URL too.
    code, out, _ = run(capsys, "declare", "embedded://cli-declare-2", "orders")
    assert code == 0
    assert out == (
        "queue://orders (partitioned: orders.p0, orders.p1, orders.p2): made by the broker "
        "at its first use and kept: nothing to declare\n"
    )


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["declare", "topic://prices"], 1, "cannot declare topic://prices"),
        (["declare", "--factory", "app", "embedded://x", "orders"], 2, "not both"),
        (["declare"], 2, "QUEUE"),
    ],
)
def test_declare_refuses_bad_input(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, says: str
) -> None:
    got, out, err = run(capsys, *argv)
    assert (got, out) == (code, "")
    assert says in err
