"""A provider that forgets to declare a capability fails closed.

Every ``Capabilities`` flag defaulted to "supported" before, so a third-party provider
that left one out promised the broker kept groups, delayed deliveries, held strictly
ordered consumers... and the API layer believed it. Now each defaults to "not there".
"""

from __future__ import annotations

import dataclasses

from jmslike.spi import Capabilities, OrderingMode


def test_a_capability_left_out_is_not_there() -> None:
    caps = Capabilities(provider="forgetful")
    flags = {
        f.name: getattr(caps, f.name) for f in dataclasses.fields(caps) if f.type in (bool, "bool")
    }
    assert flags and not any(flags.values()), flags
    assert caps.ordering_mode == OrderingMode.CLIENT_GATE  # the gate keeps groups in-process
    assert caps.group_scope == "none" and caps.exclusive_scope == "process"
    assert caps.groups_across_processes == "none"
