"""Hypothesis strategies for AMQP 1.0 values as Proton's Python API types them, shared by
the AMQP codec fuzz tests and the encoding tests."""

from __future__ import annotations

import uuid
from typing import Any

import proton
from hypothesis import strategies as st


def amqp_values(text_size: int, container_size: int, leaves: int) -> st.SearchStrategy[Any]:
    """Every AMQP type jmslike reads or writes, nested in lists and maps: texts and
    binaries up to ``text_size`` (past 255 they take the 32-bit encodings), lists and
    maps up to ``container_size`` entries. Symbols may be non-ASCII (Proton refuses
    those: a test that encodes with Proton must discard them); a UUID has no rule of its
    own in jmslike's encoder, so it goes through Proton's."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(0, 2**64 - 1).map(proton.ulong),
        st.integers(0, 2**32 - 1).map(proton.uint),
        st.integers(0, 2**16 - 1).map(proton.ushort),
        st.integers(0, 255).map(proton.ubyte),
        st.integers(-128, 127).map(proton.byte),
        st.integers(-(2**15), 2**15 - 1).map(proton.short),
        st.integers(-(2**31), 2**31 - 1).map(proton.int32),
        st.floats(),
        st.floats().map(proton.float32),  # wider than 32 bits too: rounded, or infinite
        st.integers(-(2**62), 2**62).map(proton.timestamp),
        st.text(max_size=text_size),
        st.text(max_size=text_size).map(proton.symbol),
        st.binary(max_size=text_size),
        st.binary(max_size=3).map(bytearray),
        st.just(uuid.UUID(int=7)),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=container_size),
            st.dictionaries(st.text(max_size=5), inner, max_size=container_size),
        ),
        max_leaves=leaves,
    )
