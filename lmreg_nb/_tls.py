"""One TLS context and one proxy rule for every HTTP client the toolkit makes."""

from __future__ import annotations

import functools
import os
import ssl
from urllib.parse import urlsplit

__all__ = ["through_env_proxy", "tls_context"]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verification (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), built once.

    Building one loads the CA bundle (~20 ms), and a notebook run makes several
    clients (token, register, checks, chat); an SSLContext is safe to share.
    """
    import httpx

    return httpx.create_ssl_context()


#: Variables that make httpx (and so :func:`tls_context`) trust other CAs than certifi's.
CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")


def ca_variable() -> str | None:
    """The variable that makes this machine trust CAs of its own (None: certifi's only)."""
    return next((name for name in CA_VARIABLES if os.environ.get(name)), None)


@functools.cache
def public_tls_context() -> ssl.SSLContext:
    """Verification against certifi's public CAs alone, as the platform verifies."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def through_env_proxy(url: str) -> bool:
    """Whether a request to the platform at ``url`` may go through the proxy the
    environment names (``http_proxy``, ``https_proxy``, ``all_proxy``; ``no_proxy`` too).

    A campus PC often has one set for the internet, and a platform on the internet may be
    reachable only through it. This machine and the local network are not (loopback,
    private and link-local addresses, ``localhost``, one-label and local names: the
    sandbox, a test platform): a proxy cannot reach them, and must not see the token
    exchange's appSecret. The school's model is always called directly (httpx clients
    with ``trust_env=False``), as the platform will call it: never through the proxy of
    the machine that tests it.
    """
    from .validate import unreachable_reason

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return bool(host) and not unreachable_reason(host)
