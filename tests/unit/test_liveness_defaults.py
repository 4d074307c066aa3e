"""A frozen or silent peer is noticed with no setting changed (issue 18: "heart-beats on
by default where the protocol has them, so a frozen peer is noticed").

The fault tests shorten these to keep CI fast, so the defaults themselves are pinned
here: STOMP asks for heart-beats both ways every 10 s (a frozen consumer process is
dropped by the broker after a few missed ones, and its groups move), and an AMQP 1.0
connection ends after 60 s without a frame from the broker (Qpid JMS's
``amqp.idleTimeout``). Turning either off takes an explicit 0.
"""

from __future__ import annotations

from jmslike import ConnectionFactory
from jmslike.config import FactorySettings, parse_url
from jmslike_amqp.connection import idle_timeout_of
from jmslike_stomp.options import _options


def _settings(url: str) -> FactorySettings:
    return ConnectionFactory(url).settings


def test_stomp_heart_beats_are_on_by_default() -> None:
    url = "stomp://127.0.0.1:61613"
    assert _options(parse_url(url), _settings(url)).heartbeats == (10_000, 10_000)


def test_stomp_heart_beats_can_be_turned_off_only_explicitly() -> None:
    url = "stomp://127.0.0.1:61613?heartbeat=0"
    assert _options(parse_url(url), _settings(url)).heartbeats == (0, 0)


def test_amqp_idle_timeout_is_on_by_default() -> None:
    assert idle_timeout_of(_settings("amqp://127.0.0.1:5672")) == 60.0
    assert idle_timeout_of(_settings("amqp://127.0.0.1:5672?idleTimeout=0")) == 0.0
