"""Broker URLs and factory settings: parsing, precedence, errors that name the bad value."""

from __future__ import annotations

import inspect
import logging
import os
from pathlib import Path
from typing import Any

import pytest

import jmslike.config
import jmslike.connection
from jmslike import ConfigurationError, ConnectionFactory, InvalidOrderingGroupError, JMSException
from jmslike.config import (
    UNIT_OF_ORDER_SESSION,
    UNSET_URL,
    FactorySettings,
    default_url,
    effective_url,
    parse_url,
    redact_url,
    reserve_env_var,
    resolve,
    resolve_settings,
)
from jmslike.configfile import _key_lines
from jmslike.destination import Queue


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No JMSLIKE_ variable and no ./jmslike.toml but what a test sets: a developer's
    own environment must not change what these tests see."""
    for name in list(os.environ):
        if name.startswith("JMSLIKE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_url_parts() -> None:
    url = parse_url("stomp://alice:s3cret@127.0.0.1:61613/vhost?prefetch=5")
    assert (url.scheme, url.host, url.port, url.path) == ("stomp", "127.0.0.1", 61613, "/vhost")
    assert url.user == "alice" and url.password == "s3cret"
    assert url.query == {"prefetch": "5"}
    assert "s3cret" not in str(url) and "s3cret" not in repr(url)


def test_embedded_forms() -> None:
    assert parse_url("embedded://").host == ""
    assert parse_url("embedded://orders").host == "orders"
    assert parse_url("embedded:///var/lib/app/broker.db").path == "/var/lib/app/broker.db"


def test_failover_members() -> None:
    url = parse_url("failover:(stomp://a:61613,stomp://b:61614)?randomize=false")
    assert url.scheme == "failover"
    assert [m.address for m in url.members] == ["a:61613", "b:61614"]
    assert url.query == {"randomize": "false"}


@pytest.mark.parametrize(
    "bad", ["", "nonsense", "stomp://host:notaport", "failover:()", 42, None, "1x://host"]
)
def test_malformed_urls_are_named(bad: object) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_url(bad)
    assert isinstance(info.value, JMSException)


def test_redaction() -> None:
    assert redact_url("amqp://u:pw@h:5672") == "amqp://u:***@h:5672"


def test_query_camel_and_snake_case_and_precedence() -> None:
    factory = ConnectionFactory(
        "embedded://cfg?enableOrderingGroup=true&default_ordering_group_name=x&prefetch=3",
        prefetch=7,
    )
    assert factory.settings.enable_ordering_group is True
    assert factory.settings.default_ordering_group_name == "x"
    assert factory.settings.prefetch == 7, "keyword arguments override the URL query"


@pytest.mark.parametrize(
    ("url", "kwargs", "needle"),
    [
        ("embedded://?enableOrderingGrup=true", {}, "enableOrderingGrup"),
        ("embedded://?prefetch=lots", {}, "prefetch"),
        ("embedded://", {"max_redeliveries": "six"}, "max_redeliveries"),
        ("embedded://", {"enable_ordering_group": "maybe"}, "enable_ordering_group"),
        ("embedded://", {"prefetch": 0}, "prefetch"),
        ("embedded://", {"redelivery_backoff": 0.5}, "redelivery_backoff"),
    ],
)
def test_bad_settings_name_the_key(url: str, kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(url, **kwargs)
    assert needle in str(info.value)


def test_unknown_setting_lists_the_allowed_ones() -> None:
    with pytest.raises(ConfigurationError) as info:
        FactorySettings().merged({"colour": "red"}, "test")
    assert "enable_ordering_group" in str(info.value)


@pytest.mark.parametrize(
    ("given", "guess"),
    [
        ("prefetsh", "prefetch"),  # a typo
        ("maxPrefetsh", "max_prefetch"),  # camelCase, as a URL writes it
        ("enable_ordering_grup", "enable_ordering_group"),
        ("colour", None),  # nothing like it: no guess
    ],
)
def test_unknown_setting_names_the_one_it_most_likely_misspells(given: str, guess: str | None):
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(f"embedded://?{given}=1")
    text = str(info.value)
    assert f"unknown setting {given!r} in the query of URL" in text
    if guess is None:
        assert "did you mean" not in text
    else:
        assert f"(did you mean {guess!r}?); allowed: " in text


def test_unknown_scheme_lists_known_ones() -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory("carrier-pigeon://coop")
    assert "embedded://" in str(info.value)
    assert "carrier-pigeon" in str(info.value)


def test_from_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "jmslike.toml"
    config.write_text(
        '[factories.orders]\nurl = "embedded://cfgfile"\nenable_ordering_group = true\n'
        'default_ordering_group_name = "orders"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("JMSLIKE_CONFIG", str(config))
    factory = ConnectionFactory.from_config("orders")
    assert factory.settings.enable_ordering_group
    assert factory.settings.default_ordering_group_name == "orders"
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory.from_config("missing")
    assert "missing" in str(info.value) and "orders" in str(info.value)


# ------------------------------------------------------- where settings come from (ORD-6)
# resolve() is called with an explicit ``environ`` and file, so these tests neither see
# nor change the process's environment; the wiring into ConnectionFactory is tested
# further down, and end to end in test_config_only_ordering.py.

NAMES = frozenset({"native_groups", "store_sync"})


def write(tmp_path: Path, text: str, name: str = "jmslike.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def resolve_in(tmp_path: Path, text: str | None, url: str = "embedded://", **options: Any) -> Any:
    """resolve() against a file holding ``text`` (None: no file) and an empty environment
    unless ``environ`` is given."""
    options.setdefault("environ", {})
    if text is not None:
        options.setdefault("config_path", write(tmp_path, text))
    options.setdefault("provider_names", NAMES)
    return resolve(url, options.pop("kwargs", None), **options)


def test_precedence_kwargs_url_env_factory_defaults(tmp_path: Path) -> None:
    text = (
        "[defaults]\nprefetch = 1\nmax_redeliveries = 1\nredelivery_delay = 1.0\n"
        "request_timeout = 1.0\nclient_id = 'defaults'\n"
        "[factories.app]\nurl = 'embedded://?clientId=file-url'\nprefetch = 2\n"
        "max_redeliveries = 2\nredelivery_delay = 2.0\n"
    )
    env = {"JMSLIKE_PREFETCH": "3", "JMSLIKE_MAX_REDELIVERIES": "3"}
    # A plain factory: the file's [factories.*] tables do not apply, [defaults] does.
    plain = resolve_in(
        tmp_path, text, "embedded://?prefetch=4", environ=env, kwargs={"prefetch": 5}
    )
    assert plain.settings.prefetch == 5 and plain.sources["prefetch"] == "kwargs"
    assert plain.settings.max_redeliveries == 3
    assert plain.sources["max_redeliveries"] == "env JMSLIKE_MAX_REDELIVERIES"
    assert plain.settings.redelivery_delay == 1.0
    assert plain.sources["redelivery_delay"].endswith("jmslike.toml:4 [defaults]")
    assert plain.settings.max_redelivery_delay == 60.0
    assert plain.sources["max_redelivery_delay"] == "default"

    without_kwargs = resolve_in(tmp_path, text, "embedded://?prefetch=4", environ=env)
    assert without_kwargs.settings.prefetch == 4 and without_kwargs.sources["prefetch"] == "url"

    # from_config("app"): the table's keys win over [defaults] and over the query of the
    # table's own url (both are the file); the environment wins over the file.
    named = resolve_in(tmp_path, text, "embedded://?clientId=file-url", factory="app", environ=env)
    assert named.settings.prefetch == 3
    assert named.settings.redelivery_delay == 2.0
    assert named.sources["redelivery_delay"].endswith(":11 [factories.app]")
    assert named.settings.client_id == "file-url"
    assert named.sources["client_id"].endswith(":8 [factories.app] (url)")
    assert named.settings.request_timeout == 1.0


def test_no_file_no_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = resolve("embedded://", environ={})
    assert result.config is None
    assert result.settings == FactorySettings()
    assert set(result.sources.values()) == {"default"}


def test_dot_jmslike_toml_in_working_dir_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "[defaults]\nenable_ordering_group = true\n")
    monkeypatch.chdir(tmp_path)
    assert resolve_settings("embedded://", environ={}).enable_ordering_group is True
    # $JMSLIKE_CONFIG wins over ./jmslike.toml
    other = write(tmp_path, "[defaults]\nprefetch = 3\n", "other.toml")
    settings = resolve_settings("embedded://", environ={"JMSLIKE_CONFIG": str(other)})
    assert settings.prefetch == 3 and not settings.enable_ordering_group


def test_env_variables(tmp_path: Path) -> None:
    env = {
        "JMSLIKE_ENABLE_ORDERING_GROUP": "true",
        "JMSLIKE_DEFAULT_ORDERING_GROUP_NAME": "orders",
        "JMSLIKE_NATIVE_GROUPS": "false",  # a provider's own setting
        "JMSLIKE_CLIENT_ID": "",  # empty counts as unset
        "JMSLIKE_URL": "embedded://elsewhere",  # not a setting: the default URL
        "JMSLIKE_DISABLE_PLUGINS": "1",
        "JMSLIKE_TEST_BROKER_URL": "stomp://x:1",  # left to test suites
        "PATH": "/bin",
    }
    result = resolve_in(tmp_path, None, environ=env)
    assert result.settings.enable_ordering_group is True
    assert result.settings.default_ordering_group_name == "orders"
    assert result.settings.extra == {"native_groups": "false"}
    assert result.settings.client_id is None
    assert result.sources["native_groups"] == "env JMSLIKE_NATIVE_GROUPS"


def test_unknown_env_variable_is_ignored_with_a_warning_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("jmslike.config._logged_env", set())
    with caplog.at_level(logging.WARNING, logger="jmslike.config"):
        result = resolve_in(tmp_path, None, environ={"JMSLIKE_ENABLE_ORDERING": "true"})
    assert result.settings == FactorySettings()
    assert "JMSLIKE_ENABLE_ORDERING is not a jmslike setting and is ignored" in caplog.text
    assert "did you mean JMSLIKE_ENABLE_ORDERING_GROUP?" in caplog.text


def test_plugins_variables_are_not_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("jmslike.config._logged_env", set())
    assert resolve_in(tmp_path, None, environ={"JMSLIKE_OTEL": "1"}).settings == FactorySettings()
    # A plugin's own variable that resembles a setting is warned about until reserved.
    with caplog.at_level(logging.DEBUG, logger="jmslike.config"):
        resolve_in(tmp_path, None, environ={"JMSLIKE_PREFETCHING": "1"})
    assert "JMSLIKE_PREFETCHING is not a jmslike setting" in caplog.text
    caplog.clear()
    monkeypatch.setattr("jmslike.config._logged_env", set())
    monkeypatch.setattr("jmslike.config._reserved_env", {*jmslike.config._reserved_env})
    reserve_env_var("JMSLIKE_PREFETCHING")
    with caplog.at_level(logging.DEBUG, logger="jmslike.config"):
        resolve_in(tmp_path, None, environ={"JMSLIKE_PREFETCHING": "1"})
    assert "JMSLIKE_PREFETCHING" not in caplog.text
    with pytest.raises(ValueError):
        reserve_env_var("OTHER_FLAG")


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_in(tmp_path, None, environ={"JMSLIKE_PREFETCH": "lots"})
    assert "environment variable JMSLIKE_PREFETCH" in str(info.value)
    with pytest.raises(JMSException) as group:
        resolve_in(tmp_path, None, environ={"JMSLIKE_DEFAULT_ORDERING_GROUP_NAME": "x" * 300})
    assert "JMSLIKE_DEFAULT_ORDERING_GROUP_NAME" in str(group.value)


def test_default_url() -> None:
    assert default_url({}) == "embedded://"
    assert default_url({"JMSLIKE_URL": "embedded://from-env"}) == "embedded://from-env"
    assert effective_url("embedded://given") == "embedded://given"
    assert UNSET_URL == "embedded://"  # usable as a URL, told apart by identity
    assert "JMSLIKE_URL" in repr(UNSET_URL)


def test_effective_url_reads_jmslike_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JMSLIKE_URL", "embedded://env-url")
    assert effective_url(UNSET_URL) == "embedded://env-url"
    assert effective_url("embedded://") == "embedded://"  # a URL given is never replaced
    monkeypatch.delenv("JMSLIKE_URL")
    assert effective_url(UNSET_URL) == "embedded://"


# ------------------------------------------------------------------ destination tables
def test_destination_tables(tmp_path: Path) -> None:
    text = (
        '[destinations."queue://orders"]\nunit_of_order = "session"\nstrictly_ordered = true\n'
        '[destinations."queue://ledger"]\nunit_of_order = "ledger"\nstrictly_ordered = false\n'
        '[destinations."topic://prices"]\nstrictly_ordered = true\n'
    )
    settings = resolve_in(tmp_path, text).settings
    assert settings.unit_of_order_for("queue://orders") == UNIT_OF_ORDER_SESSION
    assert settings.unit_of_order_for(Queue("ledger")) == "ledger"
    assert settings.unit_of_order_for("queue://other") is None
    assert settings.unit_of_order_for("topic://orders") is None  # ORD-3: per destination
    assert settings.is_strictly_ordered("queue://orders")
    assert settings.is_strictly_ordered("topic://prices")
    assert not settings.is_strictly_ordered("queue://ledger")


def test_destination_lists_add_up_across_sources(tmp_path: Path) -> None:
    """A program's own list never drops a destination the administrator declared."""
    text = (
        '[defaults]\nunit_of_order_destinations = "queue://a=from-defaults,queue://b=b"\n'
        '[destinations."queue://orders"]\nstrictly_ordered = true\n'
        '[destinations."queue://a"]\nunit_of_order = "session"\n'
    )
    result = resolve_in(
        tmp_path,
        text,
        "embedded://?strictlyOrdered=queue://ledger",
        kwargs={"strictly_ordered": "queue://orders, queue://audit"},
        environ={"JMSLIKE_UNIT_OF_ORDER_DESTINATIONS": "queue://b=from-env"},
    )
    settings = result.settings
    for name in ("orders", "ledger", "audit"):
        assert settings.is_strictly_ordered(f"queue://{name}")
    assert settings.strictly_ordered.count("queue://orders") == 1
    assert settings.unit_of_order_for("queue://a") == "session"  # the table beats [defaults]
    assert settings.unit_of_order_for("queue://b") == "from-env"  # env beats the file
    assert result.sources["strictly_ordered"].split(" + ")[1:] == ["url", "kwargs"]


def test_unit_of_order_setting_is_parsed_once_and_checked() -> None:
    settings = FactorySettings().merged(
        {"unitOfOrderDestinations": " queue://a = session , topic://t=fixed ,"}, "test"
    )
    assert settings.unit_of_order_for("queue://a") == "session"
    assert settings.unit_of_order_for("topic://t") == "fixed"
    assert settings.unit_of_order_for(Queue("t")) is None
    for bad in ("queue://a", "orders=session", "queue://a=", "=session"):
        with pytest.raises(ConfigurationError) as info:
            FactorySettings().merged({"unit_of_order_destinations": bad}, "test")
        assert "unit_of_order_destinations entry" in str(info.value)
    with pytest.raises(InvalidOrderingGroupError) as group:
        FactorySettings().merged({"unit_of_order_destinations": f"queue://a={'x' * 256}"}, "t")
    assert "unit of order of queue://a" in str(group.value)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # does not parse: the file, the line and the column
        ("[defaults]\nprefetch = = 2\n", ["does not parse at line 2, column"]),
        # an unknown setting: the file, line, table, key, and the allowed keys
        (
            "[defaults]\nprefetch = 1\nenable_ordering_grup = true\n",
            [
                "unknown setting 'enable_ordering_grup'",
                "jmslike.toml:3 [defaults]",
                "allowed: client_id",
                "native_groups",
            ],
        ),
        (
            "[factories.app]\nurl = 'embedded://'\ncolour = 'red'\n",
            ["unknown setting 'colour'", ":3 [factories.app]", "enable_ordering_group"],
        ),
        # a likely misspelling is named
        (
            "[defaults]\nprefetsh = 1\n",
            ["unknown setting 'prefetsh'", ":2 [defaults] (did you mean 'prefetch'?)"],
        ),
        (
            '[destinations."queue://orders"]\npartition = 16\n',
            ["unknown key 'partition'", "(did you mean 'partitions'?); allowed: unit_of_order"],
        ),
        # a wrong type: the file, key and expected type
        (
            "[defaults]\n\nprefetch = 'many'\n",
            ["setting prefetch='many'", "jmslike.toml:3 [defaults]", "expected an integer (int)"],
        ),
        (
            "[defaults]\nenable_ordering_group = 'perhaps'\n",
            ["enable_ordering_group", ":2 [defaults]", "expected true or false (bool)"],
        ),
        # a typo in a table name must not leave ordering off
        (
            "[default]\nenable_ordering_group = true\n",
            ["unknown table [default]", ":1 (did you mean [defaults]?):", "[factories]"],
        ),
        (
            "enable_ordering_group = true\n",
            ["unknown key 'enable_ordering_group' at the top of", "a [defaults] table"],
        ),
        # destination tables
        (
            '[destinations."queue://orders"]\nunit_of_order = "session"\nordered = true\n',
            [
                "unknown key 'ordered'",
                ':3 [destinations."queue://orders"]',
                "allowed: unit_of_order",
                "strictly_ordered",
            ],
        ),
        (
            '[destinations."queue://orders"]\nstrictly_ordered = "yes"\n',
            ["strictly_ordered = 'yes' must be true or false (bool)", ":2 [destinations"],
        ),
        (
            '[destinations."queue://orders"]\nunit_of_order = true\n',
            ["unit_of_order = True must be a non-empty string", ":2 [destinations"],
        ),
        (
            '[destinations."queue://orders"]\nunit_of_order = "a,b"\n',
            ["cannot contain ','"],
        ),
        ("[destinations.orders]\nstrictly_ordered = true\n", ['[destinations."queue://orders"]']),
        ("[factories.app]\nurl = 5\n", [":2 [factories.app]", "url must be a string"]),
    ],
)
def test_bad_files_name_the_file_and_the_key(tmp_path: Path, text: str, needles: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_in(tmp_path, text, factory="app" if "[factories.app]" in text else None)
    message = str(info.value)
    assert str(tmp_path / "jmslike.toml") in message
    for needle in needles:
        assert needle in message, message


def test_missing_factory_lists_the_defined_ones(tmp_path: Path) -> None:
    text = "[factories.orders]\n[factories.billing]\n"
    with pytest.raises(ConfigurationError) as info:
        resolve_in(tmp_path, text, factory="order")
    assert "no factory 'order'" in str(info.value)
    assert "defined: billing, orders" in str(info.value)


def test_file_named_by_variable_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigurationError) as info:
        resolve("embedded://", environ={"JMSLIKE_CONFIG": str(missing)})
    assert str(missing) in str(info.value) and "$JMSLIKE_CONFIG" in str(info.value)


def test_changed_file_is_read_again(tmp_path: Path) -> None:
    path = write(tmp_path, "[defaults]\nprefetch = 2\n")
    assert resolve_settings("embedded://", config_path=path, environ={}).prefetch == 2
    path.write_text("[defaults]\nprefetch = 30\n", encoding="utf-8")
    assert resolve_settings("embedded://", config_path=path, environ={}).prefetch == 30


def test_key_lines_follow_quoted_and_dotted_tables(tmp_path: Path) -> None:
    text = (
        "# comment\n[defaults]\nprefetch = 1\n\n"
        '[ destinations . "queue://a.b" ]  # the queue\n\'unit_of_order\' = "x"\n'
        'note = """\n[defaults]\nprefetch = 3\n"""\n'
    )
    lines = _key_lines(text)
    assert lines[("defaults", "prefetch")] == 3
    assert lines[("destinations", "queue://a.b")] == 5
    assert lines[("destinations", "queue://a.b", "unit_of_order")] == 6


# ----------------------------------------------------------------------------- secrets
def test_no_secret_in_repr_or_errors(tmp_path: Path) -> None:
    url = parse_url("stomp://u:s3cret@h:1?apiToken=t0ken&prefetch=2")
    assert "s3cret" not in repr(url) + str(url) and "t0ken" not in repr(url) + str(url)
    assert "'prefetch': '2'" in repr(url)
    settings = FactorySettings(extra={"ssl_key_password": "hunter2", "store_sync": "full"})
    assert "hunter2" not in repr(settings) and "'full'" in repr(settings)
    with pytest.raises(ConfigurationError) as info:
        FactorySettings().merged({"client_id": 42}, "test")
    assert "42" in str(info.value)  # not a secret: shown to help
    # A wrong-typed url/user/password in the file is named without its value.
    text = "[factories.app]\nurl = 'embedded://'\npassword = 12345678\n"
    with pytest.raises(ConfigurationError) as typed:
        resolve_in(tmp_path, text, factory="app")
    assert "password must be a string" in str(typed.value)
    assert "12345678" not in str(typed.value)


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("stomp://u:s3cret@h:1", "s3cret"),
        ("stomp://u:p@ss@h:1", "p@ss"),
        ("stomp://u:a/b@h:1", "a/b"),
        ("failover:(stomp://u:one1@a:1,stomp://v:two2@b:2)", "two2"),
        ("failover:(stomp://u:one1@a:1,stomp://v:two2@b:2)", "one1"),
        ("stomp://h:1?password=s3cret&x=1", "s3cret"),
        ("stomp://h:1?apiToken=s3cret", "s3cret"),
    ],
)
def test_redact_url_hides_every_password(url: str, secret: str) -> None:
    assert secret not in redact_url(url)
    assert "***" in redact_url(url)


def test_bad_url_query_in_error_is_redacted(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_in(tmp_path, None, "embedded://u:s3cret@name?prefetch=lots")
    assert "s3cret" not in str(info.value) and "prefetch" in str(info.value)
    with pytest.raises(ConfigurationError) as env_url:
        resolve_in(tmp_path, None, "stomp://u:s3cret@host:bad")
    assert "s3cret" not in str(env_url.value)


# ---------------------------------------------------- wiring into ConnectionFactory
needs_factory_wiring = pytest.mark.skipif(
    "resolve_settings" not in inspect.getsource(jmslike.connection),
    reason="jmslike/connection.py does not call jmslike.config.resolve_settings yet",
)


@needs_factory_wiring
def test_factory_takes_defaults_env_and_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path, "[defaults]\nenable_ordering_group = true\nprefetch = 2\n", "c.toml")
    monkeypatch.setenv("JMSLIKE_CONFIG", str(config))
    monkeypatch.setenv("JMSLIKE_PREFETCH", "3")
    factory = ConnectionFactory("embedded://cfg-wiring?maxRedeliveries=1", prefetch=4)
    assert factory.settings.enable_ordering_group is True
    assert factory.settings.prefetch == 4
    assert factory.settings.max_redeliveries == 1
    assert ConnectionFactory("embedded://cfg-wiring").settings.prefetch == 3
    monkeypatch.setenv("JMSLIKE_URL", "embedded://from-env-url")
    assert ConnectionFactory().url.host == "from-env-url"
    monkeypatch.setenv("JMSLIKE_COLOUR", "red")  # no setting: ignored, not an error
    assert ConnectionFactory("embedded://cfg-wiring").settings.prefetch == 3


@needs_factory_wiring
def test_from_config_gets_defaults_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "[defaults]\nenable_ordering_group = true\n"
        "[factories.app]\nurl = 'embedded://cfg-from?prefetch=5'\nclient_id = 'x'\n"
    )
    path = write(tmp_path, text, "named.toml")
    factory = ConnectionFactory.from_config("app", str(path))
    assert factory.settings.enable_ordering_group is True
    assert factory.settings.prefetch == 5
    monkeypatch.setenv("JMSLIKE_PREFETCH", "7")
    assert ConnectionFactory.from_config("app", str(path)).settings.prefetch == 7
