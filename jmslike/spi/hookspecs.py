"""Every pluggy hook jmslike calls, in one place.

Plugins implement these with ``@jmslike.spi.hookimpl`` and are found through the
``jmslike`` entry-point group (or registered in code with ``registry.plugin_manager``).
The built-in embedded provider registers itself through ``jmslike_register_providers``,
the same hook a third-party provider uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.spi.registry import ProviderRegistry

PROJECT = "jmslike"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

__all__ = ["PROJECT", "hookimpl", "hookspec", "jmslike_middleware", "jmslike_register_providers"]


@hookspec
def jmslike_register_providers(registry: ProviderRegistry) -> None:
    """Register providers for URL schemes: ``registry.register("stomp", "pkg.mod:Cls")``.

    Runs once, when the registry is first used, on whichever thread first creates a
    ConnectionFactory. Register lazily (a ``"module:attr"`` string) so that importing a
    plugin costs nothing until its scheme is used.
    """


@hookspec
def jmslike_middleware(connection: Connection) -> Any:
    """Return interceptors (a ``jmslike.middleware.Interceptor``, a list of them, or None)
    for a new connection.

    A collecting hook: every plugin's answer is gathered once, while the connection is
    created (on the thread that calls ``create_connection``), and folded into one chain
    per direction, so nothing is looked up per message. The interceptors then run on the
    thread of each operation (see jmslike.middleware).
    """
