"""The TLS settings every network provider reads the same way (``amqps://``,
``stomp+ssl://``): ``sslCaFile``, a PEM file of the certificate authorities to trust
(default: the system's), and ``sslVerifyHost`` (default true: the broker's certificate
must name the URL's host). Checked when the factory is made, so that a typo fails
before anything connects."""

from __future__ import annotations

import os
from dataclasses import dataclass

from jmslike.config import FactorySettings, parse_flag
from jmslike.errors import ConfigurationError

__all__ = ["TLS_SETTINGS", "TlsOptions", "tls_options"]

TLS_SETTINGS = frozenset({"sslCaFile", "sslVerifyHost"})
"""The keys, for a provider's ``setting_names``."""


@dataclass(frozen=True, slots=True)
class TlsOptions:
    ca_file: str | None = None
    verify_host: bool = True


def tls_options(settings: FactorySettings) -> TlsOptions:
    """The checked TLS settings of a factory."""
    extra = settings.extra
    raw_ca = extra.get("sslCaFile")
    ca_file = None if raw_ca is None else str(raw_ca)
    if ca_file is not None and (not os.path.isfile(ca_file) or not os.access(ca_file, os.R_OK)):
        raise ConfigurationError(f"sslCaFile={ca_file!r}: not a readable file")
    return TlsOptions(ca_file, parse_flag("sslVerifyHost", extra.get("sslVerifyHost", True)))
