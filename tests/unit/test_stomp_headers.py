"""jmslike_stomp's faster header parser gives what stomp.py's own gives."""

from __future__ import annotations

import pytest

pytest.importorskip("stomp")

from stomp import utils

from jmslike_stomp import transport

FRAMES = [
    ["MESSAGE", "destination:/queue/x", "message-id:ID:a:1:1", "ack:ID:a:1:1"],
    ["MESSAGE", "k\\cey:v\\na\\\\l\\rue", "k\\cey:second", "plain:x:y:z"],
    ["MESSAGE", "nocolon", ":nokey", "empty:", "a:1", "a:2", "b:\\q"],
    ["", "", "RECEIPT", "receipt-id:r1"],
]


@pytest.mark.parametrize("lines", FRAMES)
def test_same_headers_as_stomp_py(lines: list[str]) -> None:
    for offset in range(len(lines)):
        assert transport._parse_headers(lines, offset) == transport._STOMP_PARSE_HEADERS(
            lines, offset
        )


def test_stomp_py_parses_frames_with_it() -> None:
    assert utils.parse_headers is transport._parse_headers
    frame = utils.parse_frame(b"MESSAGE\ndestination:/queue/x\nk\\cey:v\\nal\n\nbody")
    assert frame.headers == {"destination": "/queue/x", "k:ey": "v\nal"}
    assert frame.body == b"body"
