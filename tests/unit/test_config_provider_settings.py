"""Provider settings in every spelling and from every source, and ``JMSLIKE_`` variables
that are not settings (issue #19).

A provider declares its settings in camelCase (``reconnectAttempts``, Java's way) or
snake_case (``native_groups``); a user may write either form, or the environment's
upper-snake form, wherever settings come from, and the provider finds the value under
the name it declared. These tests build factories for ``stomp://`` and ``amqp://`` URLs
without connecting: settings are resolved and checked when the factory is created.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

import jmslike.config
from jmslike import ConfigurationError, ConnectionFactory, JMSException
from jmslike.config import env_var, resolve, setting_name

STOMP = "stomp://127.0.0.1:61613"
AMQP = "amqp://127.0.0.1:5672"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No JMSLIKE_ variable and no ./jmslike.toml but what a test sets, and every ignored
    variable not yet logged, so that each test sees its own log records."""
    for name in list(os.environ):
        if name.startswith("JMSLIKE_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(jmslike.config, "_logged_env", set())


# ------------------------------------------------------------ one mapping of the names
@pytest.mark.parametrize(
    ("written", "declared"),
    [
        ("reconnectAttempts", "reconnectAttempts"),
        ("reconnect_attempts", "reconnectAttempts"),
        ("RECONNECT_ATTEMPTS", "reconnectAttempts"),
        ("ReconnectAttempts", "reconnectAttempts"),
        ("client_window", "clientWindow"),
        ("management_url", "managementUrl"),
        ("ssl_ca_file", "sslCaFile"),
        ("nativeGroups", "native_groups"),
        ("clientID", "client_id"),
        ("MAX_REDELIVERIES", "max_redeliveries"),
    ],
)
def test_every_spelling_maps_to_the_declared_name(written: str, declared: str) -> None:
    names = frozenset(
        {"reconnectAttempts", "clientWindow", "managementUrl", "sslCaFile", "native_groups"}
    )
    assert setting_name(written, names) == declared


def test_unknown_names_map_to_nothing() -> None:
    assert setting_name("colour", frozenset({"clientWindow"})) is None
    assert setting_name("extra", frozenset()) is None, "FactorySettings.extra is no setting"


def test_env_var_of_a_setting() -> None:
    assert env_var("reconnectAttempts") == "JMSLIKE_RECONNECT_ATTEMPTS"
    assert env_var("amqp.idleTimeout") == "JMSLIKE_AMQP_IDLE_TIMEOUT"
    assert env_var("native_groups") == "JMSLIKE_NATIVE_GROUPS"


# ------------------------------------------------- defects 1 and 3: every source, both forms
@pytest.mark.parametrize(
    ("url", "variable", "declared"),
    [
        (STOMP, "JMSLIKE_RECONNECT_ATTEMPTS", "reconnectAttempts"),
        (STOMP, "JMSLIKE_CLIENT_WINDOW", "clientWindow"),
        (STOMP, "JMSLIKE_MANAGEMENT_URL", "managementUrl"),
        (STOMP, "JMSLIKE_MAX_RECONNECT_DELAY", "maxReconnectDelay"),
        (AMQP, "JMSLIKE_IDLE_TIMEOUT", "idleTimeout"),
        (AMQP, "JMSLIKE_MANAGEMENT_URL", "managementUrl"),
    ],
)
def test_env_sets_camel_case_provider_settings(
    monkeypatch: pytest.MonkeyPatch, url: str, variable: str, declared: str
) -> None:
    value = "http://127.0.0.1:8161/console/jolokia" if "URL" in variable else "3"
    monkeypatch.setenv(variable, value)
    factory = ConnectionFactory(url)
    assert factory.settings.extra == {declared: value}


def test_every_listed_variable_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable named for a setting is the one that sets it (JMSLIKE_RECONNECTATTEMPTS
    used to be listed, then refused)."""
    assert env_var("reconnectAttempts") == "JMSLIKE_RECONNECT_ATTEMPTS"
    monkeypatch.setenv(env_var("reconnectAttempts"), "3")
    result = resolve(STOMP, provider_names=frozenset({"reconnectAttempts"}))
    assert result.settings.extra == {"reconnectAttempts": "3"}
    assert result.sources["reconnectAttempts"] == "env JMSLIKE_RECONNECT_ATTEMPTS"


@pytest.mark.parametrize("key", ["reconnect_attempts", "reconnectAttempts", "ReconnectAttempts"])
def test_keyword_and_query_take_either_form(key: str) -> None:
    assert ConnectionFactory(STOMP, **{key: 3}).settings.extra == {"reconnectAttempts": "3"}
    from_query = ConnectionFactory(f"{STOMP}?{key}=3")
    assert from_query.settings.extra == {"reconnectAttempts": "3"}


def test_snake_case_in_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stomp_file = tmp_path / "stomp.toml"
    stomp_file.write_text(
        "[defaults]\nclient_window = 8\n"
        f'[factories.app]\nurl = "{STOMP}"\nreconnect_attempts = 2\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("JMSLIKE_CONFIG", str(stomp_file))
    stomp = ConnectionFactory.from_config("app")
    assert stomp.settings.extra == {"clientWindow": "8", "reconnectAttempts": "2"}
    assert ConnectionFactory(STOMP).settings.extra == {"clientWindow": "8"}
    amqp_file = tmp_path / "amqp.toml"
    amqp_file.write_text(
        f'[factories.rabbit]\nurl = "{AMQP}"\nidle_timeout = 5000\n', encoding="utf-8"
    )
    amqp = ConnectionFactory.from_config("rabbit", str(amqp_file))
    assert amqp.settings.extra == {"idleTimeout": "5000"}


def test_higher_source_wins_across_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two spellings of one setting are one setting: precedence applies between them."""
    monkeypatch.setenv("JMSLIKE_RECONNECT_ATTEMPTS", "1")
    factory = ConnectionFactory(f"{STOMP}?reconnect_attempts=2", reconnectAttempts=3)
    assert factory.settings.extra == {"reconnectAttempts": "3"}
    assert ConnectionFactory(f"{STOMP}?reconnectAttempts=2").settings.extra == {
        "reconnectAttempts": "2"
    }


def test_values_from_the_env_are_checked_by_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JMSLIKE_RECONNECT_ATTEMPTS", "lots")
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(STOMP)
    assert "reconnectAttempts='lots'" in str(info.value)


@pytest.mark.parametrize("url", [STOMP, AMQP, "embedded://"])
def test_unknown_key_names_it_and_the_allowed_ones(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(url, reconnect_attempt=3)
    message = str(info.value)
    assert isinstance(info.value, JMSException)
    assert "unknown setting 'reconnect_attempt'" in message
    assert "allowed: " in message and "prefetch" in message


def test_query_password_never_shown_in_an_unknown_key_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory("stomp://app:s3cret@127.0.0.1:61613?colour=red&ssl_password=hunter2")
    assert "s3cret" not in str(info.value) and "hunter2" not in str(info.value)


# ------------------------------------------------ defect 2: JMSLIKE_ variables that are no setting
@pytest.mark.parametrize(
    "variable",
    ["JMSLIKE_LOG_LEVEL", "JMSLIKE_TEST_WHATEVER", "JMSLIKE_CONFIG_DIR", "JMSLIKE_COLOUR"],
)
@pytest.mark.parametrize("url", [STOMP, AMQP, "embedded://"])
def test_other_jmslike_variables_do_not_stop_factories(
    monkeypatch: pytest.MonkeyPatch, url: str, variable: str
) -> None:
    monkeypatch.setenv(variable, "debug")
    assert ConnectionFactory(url).settings.extra == {}


def test_another_providers_setting_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """One environment serves every factory of a process: a STOMP setting must not stop
    an embedded factory, nor the embedded provider's one a STOMP factory."""
    monkeypatch.setenv("JMSLIKE_RECONNECT_ATTEMPTS", "3")
    monkeypatch.setenv("JMSLIKE_NATIVE_GROUPS", "false")
    assert ConnectionFactory("embedded://").settings.extra == {"native_groups": "false"}
    assert ConnectionFactory(STOMP).settings.extra == {"reconnectAttempts": "3"}


def test_a_likely_typo_is_warned_about_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("JMSLIKE_ENABLE_ORDERING", "s3cret-looking-value")
    with caplog.at_level(logging.DEBUG, logger="jmslike.config"):
        assert ConnectionFactory("embedded://").settings.enable_ordering_group is False
        ConnectionFactory("embedded://")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, "once per process, not once per factory"
    message = warnings[0].getMessage()
    assert "JMSLIKE_ENABLE_ORDERING" in message and "ignored" in message
    assert "JMSLIKE_ENABLE_ORDERING_GROUP" in message, "names the setting it resembles"
    assert "s3cret" not in caplog.text, "values are never logged"


def test_an_unrelated_variable_is_only_a_debug_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("JMSLIKE_LOG_LEVEL", "debug")
    monkeypatch.setenv("JMSLIKE_TEST_BROKER", "stomp://x:1")
    with caplog.at_level(logging.DEBUG, logger="jmslike.config"):
        ConnectionFactory(STOMP)
    ignored = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert [r.levelno for r in caplog.records if "ignored" in r.getMessage()] == [logging.DEBUG]
    assert "JMSLIKE_LOG_LEVEL" in ignored[0]
    assert "JMSLIKE_TEST_BROKER" not in caplog.text, "test suites' variables are not ours"


# ------------------------------------------------------------ defect 4: STOMP's heart-beat
@pytest.mark.parametrize(
    ("value", "expected"),
    [("1000,1000", (1000, 1000)), ("1000, 0", (1000, 0)), ("2500", (2500, 2500)), ("0", (0, 0))],
)
def test_stomp_heartbeat_takes_one_or_two_values(value: str, expected: tuple[int, int]) -> None:
    from jmslike_stomp.options import _options

    factory = ConnectionFactory(f"{STOMP}?heartbeat={value}")
    assert _options(factory.url, factory.settings).heartbeats == expected
    assert ConnectionFactory(STOMP, heartbeat=value).settings.extra == {"heartbeat": value}


@pytest.mark.parametrize("value", ["1000,1000,1000", "fast", "-1", "1000,", ",1000", "1.5"])
def test_bad_stomp_heartbeat_names_the_value(value: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(STOMP, heartbeat=value)
    assert f"heartbeat={value!r}" in str(info.value)


@pytest.mark.parametrize(("name", "frame"), [("ackBatch", "ACK"), ("sendBatch", "SEND")])
@pytest.mark.parametrize("value", ["many", "-1", "1.5", ""])
def test_bad_stomp_batch_names_the_value(name: str, frame: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(STOMP, **{name: value})
    assert f"{name}={value!r}" in str(info.value)
    assert f"every {frame} on its own" in str(info.value)
    ConnectionFactory(f"{STOMP}?{name}=0")  # 0 turns batching off: accepted


@pytest.mark.parametrize("url", [STOMP, AMQP])
@pytest.mark.parametrize("value", ["yes", "broker", ""])
def test_bad_exclusive_queues_names_the_value_and_both_choices(url: str, value: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConnectionFactory(url, exclusiveQueues=value)
    assert f"exclusiveQueues={value!r}" in str(info.value)
    assert "'declare'" in str(info.value) and "'configured'" in str(info.value)
    ConnectionFactory(f"{url}?exclusiveQueues=configured")  # accepted, either spelling
    ConnectionFactory(url, exclusive_queues="declare")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(True, True), ("yes", True), ("ON", True), (" 1 ", True), (False, False), ("off", False)],
)
def test_one_flag_parser_for_every_true_false_setting(raw: object, expected: bool) -> None:
    """config.parse_flag is the parser of every true/false setting (core, TLS, embedded):
    sslVerifyHost=off and nativeGroups=off were refused by parsers of their own before."""
    from jmslike.config import parse_flag

    assert parse_flag("sslVerifyHost", raw) is expected
    native = ConnectionFactory(f"embedded://flags-{expected}?nativeGroups={raw}")
    with native.create_connection() as connection:
        assert connection.capabilities.native_groups is expected


def test_a_flag_that_is_neither_names_setting_and_value() -> None:
    from jmslike.config import parse_flag

    with pytest.raises(ConfigurationError, match=r"sslVerifyHost='maybe'"):
        parse_flag("sslVerifyHost", "maybe")
