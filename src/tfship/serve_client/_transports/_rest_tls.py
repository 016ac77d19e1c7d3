"""The ``ssl.SSLContext`` of a REST transport from its ``tls=`` (``True`` or a ``TlsConfig``)."""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

from tfship.serve_client._options import Tls, TlsConfig

__all__ = ["ssl_context"]


def ssl_context(tls: Tls) -> ssl.SSLContext:
    """System roots for ``True``; a ``TlsConfig``'s CA and client certificate (paths or PEM)."""
    if tls is True:
        return ssl.create_default_context()
    if not isinstance(tls, TlsConfig):
        raise TypeError(f"tls must be True or a TlsConfig for REST, got {tls!r}")
    ca = tls.ca_cert
    if isinstance(ca, bytes):
        context = ssl.create_default_context(cadata=ca.decode("ascii"))
    else:
        context = ssl.create_default_context(cafile=None if ca is None else str(ca))
    if tls.client_cert is not None and tls.client_key is not None:
        _load_client_cert(context, tls.client_cert, tls.client_key)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: bytes | str | Path, key: bytes | str | Path) -> None:
    """Load a client certificate given as paths or PEM bytes (ssl reads only files)."""
    if not isinstance(cert, bytes) and not isinstance(key, bytes):
        context.load_cert_chain(str(cert), str(key))
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, value in (("cert.pem", cert), ("key.pem", key)):
            path = Path(tmp) / name
            path.write_bytes(value if isinstance(value, bytes) else Path(value).read_bytes())
            paths.append(str(path))
        context.load_cert_chain(paths[0], paths[1])
