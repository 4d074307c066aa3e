"""TCP settings both network providers need on their sockets.

**Quick acknowledgements.** ActiveMQ Classic leaves Nagle's algorithm on at its end by
default (its transport connector's ``tcpNoDelay``): a small frame it writes while an
earlier one is unacknowledged (a RECEIPT, a MESSAGE after the previous one) waits for
the client's TCP acknowledgement, and Linux delays that by up to 40 ms when the client
has nothing to send. A consumer that waits for each answer paid that wait per message:
CLIENT_ACKNOWLEDGE over STOMP made 50 msg/s on Classic. ``TCP_QUICKACK`` has the kernel
acknowledge at once; Linux clears it again as it sees fit, so it is set after every
read. Where the platform has no such option, this does nothing.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

__all__ = ["quick_ack"]

_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def quick_ack(sock: Any) -> None:
    """Have the kernel acknowledge what ``sock`` receives at once (see the module)."""
    if _QUICKACK is not None:
        # Not TCP (a test's socket), or already closed: nothing to acknowledge.
        with contextlib.suppress(OSError, AttributeError):
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
