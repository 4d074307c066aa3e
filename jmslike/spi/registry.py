"""URL scheme -> provider, filled through the ``jmslike_register_providers`` hook.

Like SQLAlchemy's dialect registry: a provider is named by ``"module:attribute"`` and
imported only when its scheme is first used, so a missing optional dependency (stomp.py,
Proton) only matters to the URLs that need it. Setting ``JMSLIKE_DISABLE_PLUGINS=1``
skips entry points from other distributions (the built-in providers stay).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import pluggy

from jmslike.config import ConfigurationError
from jmslike.spi import hookspecs
from jmslike.spi.provider import Provider

__all__ = ["ProviderRegistry", "get_registry"]

log = logging.getLogger("jmslike.spi")

BUILTIN_PLUGINS = ("jmslike.embedded.plugin",)
"""Loaded even with plugins disabled; they register through the same hook as others."""

ProviderSource = str | type[Provider] | Callable[[], Provider]


class ProviderRegistry:
    """Schemes and the providers that serve them."""

    def __init__(self) -> None:
        self.plugin_manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.plugin_manager.add_hookspecs(hookspecs)
        self._sources: dict[str, ProviderSource] = {}
        self._loaded: dict[str, Provider] = {}
        self._lock = threading.RLock()
        self._ready = False

    def register(self, scheme: str, provider: ProviderSource, *, replace: bool = False) -> None:
        """Serve ``scheme`` with ``provider``: a Provider class, a factory, or "module:attr"."""
        scheme = scheme.lower()
        with self._lock:
            if scheme in self._sources and not replace:
                log.debug("scheme %s already registered; keeping the first", scheme)
                return
            self._sources[scheme] = provider
            self._loaded.pop(scheme, None)

    def unregister(self, scheme: str) -> None:
        with self._lock:
            self._sources.pop(scheme.lower(), None)
            self._loaded.pop(scheme.lower(), None)

    def load_plugins(self) -> None:
        """Register built-ins and entry points, then let every plugin register providers."""
        with self._lock:
            if self._ready:
                return
            for name in BUILTIN_PLUGINS:
                module = importlib.import_module(name)
                if not self.plugin_manager.is_registered(module):
                    self.plugin_manager.register(module, name=name)
            if os.environ.get("JMSLIKE_DISABLE_PLUGINS", "").lower() not in ("1", "true", "yes"):
                self._load_entry_points()
            self.plugin_manager.check_pending()
            self.plugin_manager.hook.jmslike_register_providers(registry=self)
            self._ready = True

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        for ep in entry_points(group=hookspecs.PROJECT):
            if ep.value in BUILTIN_PLUGINS or self.plugin_manager.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception:
                log.exception("jmslike plugin %s (%s) failed to load; skipped", ep.name, ep.value)
                continue
            if not self.plugin_manager.is_registered(plugin):
                self.plugin_manager.register(plugin, name=ep.name)

    def add_plugin(self, plugin: Any, name: str | None = None) -> None:
        """Register a plugin object in code (tests, applications) and run its hooks."""
        with self._lock:
            self.load_plugins()
            self.plugin_manager.register(plugin, name=name)
            caller = self.plugin_manager.subset_hook_caller(
                "jmslike_register_providers",
                remove_plugins=[p for p in self.plugin_manager.get_plugins() if p is not plugin],
            )
            caller(registry=self)

    def schemes(self) -> list[str]:
        self.load_plugins()
        return sorted(self._sources)

    def describe(self) -> dict[str, str]:
        """Scheme -> where its provider comes from, for ``jmslike providers``."""
        self.load_plugins()
        out = {}
        for scheme, source in sorted(self._sources.items()):
            out[scheme] = (
                source if isinstance(source, str) else getattr(source, "__qualname__", repr(source))
            )
        return out

    def provider_for(self, scheme: str) -> Provider:
        """The provider serving ``scheme``; an unknown one is named with the known ones."""
        self.load_plugins()
        scheme = scheme.lower()
        with self._lock:
            provider = self._loaded.get(scheme)
            if provider is not None:
                return provider
            source = self._sources.get(scheme)
            if source is None:
                known = ", ".join(f"{s}://" for s in sorted(self._sources))
                raise ConfigurationError(
                    f"unknown URL scheme {scheme!r}: known schemes are {known} "
                    "(a provider plugin may be missing: pip install 'jmslike[all]')"
                )
            provider = self._instantiate(scheme, source)
            self._loaded[scheme] = provider
            return provider

    @staticmethod
    def _instantiate(scheme: str, source: ProviderSource) -> Provider:
        if isinstance(source, str):
            module_name, _, attr = source.partition(":")
            try:
                obj: Any = getattr(importlib.import_module(module_name), attr)
            except ImportError as exc:
                raise ConfigurationError(
                    f"provider for {scheme}:// could not be imported ({exc}); install the "
                    f"extra it needs, e.g. pip install 'jmslike[{scheme.partition('+')[0]}]'"
                ) from exc
        else:
            obj = source
        provider = obj()
        if not isinstance(provider, Provider):
            raise ConfigurationError(f"provider for {scheme}:// is not a jmslike Provider: {obj!r}")
        return provider


_registry: ProviderRegistry | None = None
_registry_lock = threading.Lock()


def get_registry() -> ProviderRegistry:
    """The process-wide registry (created on first use)."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = ProviderRegistry()
        return _registry
