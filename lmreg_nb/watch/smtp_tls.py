"""One TLS context for every mail Apprise sends, instead of a new one per mail.

Apprise's SMTP sender calls ``ssl.create_default_context()`` for each mail (for
mailto:// too, which never uses it); loading the system's CA certificates takes
~57 ms of CPU each time, under the GIL. In a mass outage that was the whole
cost: 500 contacts' mails took 42 s to leave, one after another in effect
(raw smtplib to the same server: 0.3 s). :func:`share_tls_contexts` gives the
sender a context whose ``wrap_socket`` uses one context built once per setting
(``check_hostname``, ``verify_mode``: the ``verify=no`` of a mailtos:// URL;
and SSL_CERT_FILE / SSL_CERT_DIR), so certificates are read once per process.
Nothing else of Apprise changes.
"""

from __future__ import annotations

import os
import ssl
import threading
from types import ModuleType
from typing import Any

__all__ = ["SharedContext", "share_tls_contexts"]

_built: dict[tuple[bool, int, str, str], ssl.SSLContext] = {}
_lock = threading.Lock()


class SharedContext:
    """Looks like the context Apprise configures; wraps sockets with a shared real one."""

    def __init__(self) -> None:
        self.check_hostname = True
        self.verify_mode = ssl.CERT_REQUIRED

    def _real(self) -> ssl.SSLContext:
        # SSL_CERT_FILE / SSL_CERT_DIR decide what create_default_context trusts.
        where = (os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", ""))
        key = (bool(self.check_hostname), int(self.verify_mode), *where)
        with _lock:
            context = _built.get(key)
            if context is None:
                context = ssl.create_default_context()
                context.check_hostname = key[0]
                context.verify_mode = ssl.VerifyMode(key[1])
                _built[key] = context
        return context

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        """What smtplib calls (SMTP_SSL and starttls)."""
        return self._real().wrap_socket(*args, **kwargs)


class _SslModule(ModuleType):
    """The ssl module as Apprise's SMTP sender sees it: a shared default context."""

    def __init__(self) -> None:
        super().__init__("ssl")

    def __getattr__(self, name: str) -> Any:
        return getattr(ssl, name)

    @staticmethod
    def create_default_context(*args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return ssl.create_default_context(*args, **kwargs)
        return SharedContext()


def share_tls_contexts() -> bool:
    """Install the shared context in Apprise's SMTP sender; False when it is not there."""
    try:
        from apprise.plugins.email import smtp
    except ImportError:
        return False
    if not isinstance(getattr(smtp, "ssl", None), ModuleType):
        return False
    if not isinstance(smtp.ssl, _SslModule):
        smtp.ssl = _SslModule()
    return True
