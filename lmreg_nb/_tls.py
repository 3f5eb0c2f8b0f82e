"""One TLS context for every HTTP client the toolkit makes."""

from __future__ import annotations

import functools
import ssl

__all__ = ["tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verification (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), built once.

    Building one loads the CA bundle (~20 ms), and a notebook run makes several
    clients (token, register, checks, chat); an SSLContext is safe to share.
    """
    import httpx

    return httpx.create_ssl_context()
