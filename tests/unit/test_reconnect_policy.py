"""The reconnect policy both network providers share (jmslike/spi/reconnect.py): jmslike's
setting names and Qpid JMS's ``failover.`` names, the back-off they make, and the errors
a bad value gets."""

from __future__ import annotations

import pytest

import jmslike
from jmslike.config import parse_url
from jmslike.spi.reconnect import Reconnect, reconnect_policy

FAILOVER = parse_url("failover:(amqp://a:5672,amqp://b:5672)")
PLAIN = parse_url("amqp://a:5672")


def test_defaults_reconnect_for_ever_on_failover_urls_and_never_on_plain_ones() -> None:
    assert reconnect_policy(FAILOVER, {}).attempts == -1
    assert reconnect_policy(PLAIN, {}).attempts == 0


def test_back_off_doubles_from_the_delay_up_to_the_maximum() -> None:
    policy = reconnect_policy(FAILOVER, {"reconnectDelay": "0.1", "maxReconnectDelay": "0.5"})
    assert [policy.delay_before(n) for n in range(1, 6)] == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])


def test_qpid_jms_names_mean_the_same() -> None:
    """A URL copied from a Java application: Qpid JMS counts its delays in ms."""
    policy = reconnect_policy(
        FAILOVER,
        {
            "failover.maxReconnectAttempts": "3",
            "failover.initialReconnectDelay": "0",
            "failover.reconnectDelay": "10",
            "failover.maxReconnectDelay": "1000",
            "failover.reconnectBackOffMultiplier": "3",
        },
    )
    assert policy == Reconnect(
        attempts=3, delay=0.01, max_delay=1.0, multiplier=3.0, initial_delay=0.0
    )
    assert [policy.delay_before(n) for n in (1, 2, 3)] == pytest.approx([0.0, 0.03, 0.09])
    assert not policy.gives_up_after(2) and policy.gives_up_after(3)


def test_jmslike_name_wins_over_the_qpid_one() -> None:
    policy = reconnect_policy(FAILOVER, {"reconnectDelay": "0.2", "failover.reconnectDelay": "9"})
    assert policy.delay == 0.2


def test_a_qpid_delay_below_a_millisecond_is_refused_in_milliseconds() -> None:
    refused = r"failover\.reconnectDelay='0\.5'.*>= 1 \(milliseconds\)"
    with pytest.raises(jmslike.ConfigurationError, match=refused):
        reconnect_policy(FAILOVER, {"failover.reconnectDelay": "0.5"})


def test_back_off_off_keeps_the_delay_flat() -> None:
    policy = reconnect_policy(FAILOVER, {"useReconnectBackOff": "false", "reconnectDelay": "0.3"})
    assert [policy.delay_before(n) for n in (1, 2, 5)] == pytest.approx([0.3, 0.3, 0.3])


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("reconnectAttempts", "-2"),
        ("failover.maxReconnectAttempts", "two"),
        ("reconnectDelay", "0"),
        ("reconnectBackOffMultiplier", "0.5"),
        ("failover.useReconnectBackOff", "maybe"),
    ],
)
def test_a_bad_value_is_refused_naming_it(name: str, value: str) -> None:
    with pytest.raises(jmslike.ConfigurationError, match=name.replace(".", r"\.")) as info:
        reconnect_policy(FAILOVER, {name: value})
    assert repr(value) in str(info.value)


@pytest.mark.parametrize("scheme", ["stomp", "amqp"])
def test_both_providers_take_the_settings_from_a_failover_url(scheme: str) -> None:
    """Taken (no broker needed: the factory checks settings when it is made); a bad one
    is refused there."""
    url = f"failover:({scheme}://a:1,{scheme}://b:2)?failover.maxReconnectAttempts=2"
    assert jmslike.ConnectionFactory(url).settings.extra["failover.maxReconnectAttempts"] == "2"
    with pytest.raises(jmslike.ConfigurationError, match="reconnectDelay"):
        jmslike.ConnectionFactory(url + "&reconnectDelay=soon")
