"""Broker URLs and factory settings: parsing, precedence, errors that name the bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from jmslike import ConfigurationError, ConnectionFactory, JMSException
from jmslike.config import FactorySettings, parse_url, redact_url


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
