"""Field rules shared by the client, the forms and the sandbox.

Each ``check_*`` function returns the normalised value or raises
:class:`~lmreg_nb.errors.ValidationError` naming the field and what to fix.
:func:`url_warnings` lists what the platform may not like about a
registryUrl without refusing it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from .errors import ValidationError
from .i18n import N_, _
from .terminal import is_ignorable

__all__ = [
    "CHAT_PATH_SUFFIX",
    "MAX_API_KEY",
    "MAX_EXAMPLE_BYTES",
    "MAX_MODEL_NAME",
    "MAX_URL",
    "UrlWarning",
    "chat_path_fix",
    "check_api_key",
    "check_email",
    "check_mobile",
    "check_model_id",
    "check_model_name",
    "check_registry_url",
    "check_reserved",
    "half_width",
    "is_chat_path",
    "is_header_value",
    "is_ignorable",
    "is_visible",
    "looks_numeric",
    "model_body",
    "numeric_host_reason",
    "unreachable_ip",
    "unreachable_reason",
    "url_warnings",
]

MAX_MODEL_NAME = 64
MAX_URL = 2048
MAX_API_KEY = 512
MAX_EXAMPLE_BYTES = 64 * 1024
CHAT_PATH_SUFFIX = "v1/chat/completions"


def _require_str(field: str, value: object) -> str:
    if value is None:
        raise ValidationError(field, _("is required"))
    if not isinstance(value, str):
        raise ValidationError(
            field, _("must be a string, got {kind}").format(kind=_type_name(value))
        )
    return value


def _require_text(field: str, value: object) -> str:
    """A string that is valid Unicode (a lone surrogate cannot be stored or sent as UTF-8)."""
    text = _require_str(field, value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(field, _("must be valid UTF-8 text")) from None
    return text


def _type_name(value: object) -> str:
    return "nothing" if value is None else type(value).__name__


def _has_control(text: str) -> bool:
    # Cs: a lone surrogate (from a JSON "\\ud800") is not a character at all.
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in text)


#: Characters that show nothing although Unicode does not call them spaces or
#: format characters (Hangul fillers, the blank Braille pattern, ...).
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u2028\u2029\u200b\u3000")


def is_visible(ch: str) -> bool:
    """Whether the character shows something (not a space, control, mark or blank glyph)."""
    if ch in _BLANK_GLYPHS or ch.isspace():
        return False
    return unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zs", "Mn", "Me")


def is_header_value(text: str) -> bool:
    """Whether ``text`` can be sent as ``Authorization: Bearer <text>``: visible ASCII only.

    RFC 6750's b64token: no space, no control character (a CR LF would end the
    header and start another), no other script (not encodable at all).
    """
    return bool(text) and all("!" <= ch <= "~" for ch in text)


def half_width(ch: str) -> str | None:
    """The ASCII character a Chinese input method's full-width ``ch`` stands for (``：``
    -> ``:``, ``８`` -> ``8``, ``。`` -> ``.``, the ideographic space -> `` ``), or None."""
    if "\uff01" <= ch <= "\uff5e":
        return chr(ord(ch) - 0xFEE0)
    return {"\u3002": ".", "\u3000": " "}.get(ch)


def check_model_name(value: object) -> str:
    """modelName: trimmed, NFC-normalised, 1 to 64 characters, no control characters,
    at least one visible character.

    NFC first, so "café" typed with a combining accent is the same name as the
    precomposed one (the uniqueness check compares this normalised form).
    """
    text = unicodedata.normalize("NFC", _require_str("modelName", value)).strip()
    if not text:
        raise ValidationError("modelName", _("must not be empty"))
    if len(text) > MAX_MODEL_NAME:
        raise ValidationError(
            "modelName",
            _("is {n} characters; use at most {max}").format(n=len(text), max=MAX_MODEL_NAME),
        )
    hidden = next((ch for ch in text if is_ignorable(ch)), None)
    if hidden is not None:
        # Inside the name too: a joiner or variation selector makes an invisible twin.
        raise ValidationError(
            "modelName",
            _(
                "contains an invisible character ({code}: a zero-width, joiner or "
                "variation-selector mark); retype the name without it"
            ).format(code=f"U+{ord(hidden):04X}"),
        )
    if _has_control(text):
        raise ValidationError("modelName", _("must not contain control characters"))
    if not any(is_visible(ch) for ch in text):
        raise ValidationError(
            "modelName", _("has no visible character; use letters, digits or punctuation")
        )
    if not (is_visible(text[0]) and is_visible(_last_base(text))):
        # An invisible first or last character makes a look-alike of another name.
        raise ValidationError("modelName", _("must start and end with a visible character"))
    return text


def _last_base(text: str) -> str:
    """The last character that is not a combining mark: a name may end in a mark on a
    visible letter (NFC splits U+0A59 into a Gurmukhi letter and its nukta), which a
    reader sees as that letter. Marks that show as nothing were refused before this."""
    base = text.rstrip("".join({ch for ch in text if unicodedata.category(ch) in ("Mn", "Me")}))
    return base[-1] if base else text[-1]


def check_registry_url(value: object) -> str:
    """registryUrl: an absolute http(s) URL with a valid host, no user:password, <= 2048 chars."""
    text = _require_str("registryUrl", value).strip()
    if not text:
        raise ValidationError("registryUrl", _("must not be empty"))
    if len(text) > MAX_URL:
        raise ValidationError(
            "registryUrl",
            _("is {n} characters; use at most {max}").format(n=len(text), max=MAX_URL),
        )
    if _has_control(text) or any(ch.isspace() for ch in text):
        raise ValidationError("registryUrl", _("must not contain spaces or control characters"))
    wide = next((ch for ch in text if half_width(ch) is not None), None)
    if wide is not None:
        # A Chinese input method's marks and digits: one that looks like the URL's own.
        narrow = half_width(wide)
        raise ValidationError(
            "registryUrl",
            _(
                "holds the full-width “{wide}”: type it as the half-width “{narrow}” (the "
                "input method in English)"
            ).format(wide=wide, narrow=narrow),
        )
    try:
        parts = urlsplit(text)
        host = parts.hostname
        port = parts.port
    except ValueError:
        raise ValidationError("registryUrl", _("is not a valid URL")) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValidationError(
            "registryUrl",
            _(
                "must start with https:// (or http://), "
                "e.g. https://llm.school.edu/v1/chat/completions"
            ),
        )
    if not host:
        raise ValidationError("registryUrl", _("must name a host, e.g. https://llm.school.edu/..."))
    if parts.username is not None or parts.password is not None:
        raise ValidationError(
            "registryUrl", _("must not contain user:password; the platform sends apiKey instead")
        )
    if port == 0:
        raise ValidationError("registryUrl", _("port 0 is not a port; use the model's port"))
    _check_host(host)
    _check_parsable(text)
    return text


def _check_parsable(url: str) -> None:
    """Refuse what httpx cannot send to (e.g. a host in fullwidth letters, which IDNA's
    UTS46 mapping accepts): one line here, not an InvalidURL traceback in a check."""
    import httpx  # the client's own parser is the judge of what it can send

    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValidationError(
            "registryUrl",
            _("is not a URL an HTTP client can use ({why}); write the host in ASCII").format(
                why=" ".join(str(exc).split())[:120]
            ),
        ) from None


def _check_host(host: str) -> None:
    """An IP address, or a host name valid per IDNA 2008 / RFC 1123 (letters, digits,
    hyphens; labels of 1 to 63 characters; at most 253 in all)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return
    except ValueError:
        pass
    if looks_numeric(host):
        raise ValidationError("registryUrl", numeric_host_reason(host))
    import idna  # httpx's dependency; only needed for names

    try:
        ascii_host = idna.encode(host, uts46=True, std3_rules=True)
    except (idna.IDNAError, UnicodeError, ValueError):
        ascii_host = b""
    if not ascii_host or len(ascii_host.rstrip(b".")) > 253:
        raise ValidationError(
            "registryUrl",
            _(
                "host {host} is not a valid host name (letters, digits and hyphens, labels "
                "of 1 to 63 characters separated by dots)"
            ).format(host=host[:80]),
        )


_HEX = frozenset("0123456789abcdefABCDEF")


def looks_numeric(host: str) -> bool:
    """Whether URL parsers read ``host`` as an IPv4 address although it is no dotted quad.

    The WHATWG URL rule: a host whose last label is a number (decimal, or 0x hex)
    is an IPv4 address, in any of the old forms (octal 0177.0.0.1, hex, fewer
    parts: 127.1 is 127.0.0.1). httpx refuses some of them, resolvers read others
    as loopback; only the usual form (four numbers 0 to 255, no leading zero) is
    unambiguous, and ``ipaddress`` accepts exactly that one.
    """
    written = host[:-1] if host.endswith(".") else host
    # Fullwidth digits count: a resolver or the platform may fold them to ASCII.
    last = unicodedata.normalize("NFKC", written).rsplit(".", 1)[-1]
    numeric = last.isascii() and (
        last.isdigit() or (last[:2].lower() == "0x" and all(c in _HEX for c in last[2:]))
    )
    if not numeric:
        return False
    try:
        return str(ipaddress.IPv4Address(written)) != written
    except ValueError:
        return True


def numeric_host_reason(host: str) -> str:
    """What to fix about a host that :func:`looks_numeric` (one sentence)."""
    return _(
        "host {host} looks like an IPv4 address but is not written as one: use four "
        "numbers from 0 to 255 separated by dots, without leading zeros "
        "(e.g. 203.0.113.10), or a host name"
    ).format(host=host[:80])


def check_api_key(value: object) -> str:
    """apiKey: 1 to 512 visible ASCII characters (what an HTTP header can carry)."""
    text = _require_str("apiKey", value)
    if not text:
        raise ValidationError("apiKey", _("must not be empty"))
    if len(text) > MAX_API_KEY:
        raise ValidationError(
            "apiKey", _("is {n} characters; use at most {max}").format(n=len(text), max=MAX_API_KEY)
        )
    if not is_header_value(text):
        # The platform sends it as "Authorization: Bearer <apiKey>".
        raise ValidationError(
            "apiKey",
            _("must be visible ASCII characters only (letters, digits, punctuation), no spaces"),
        )
    return text


def check_model_id(value: object) -> str:
    """modelId: a non-empty string (the id the service assigned)."""
    text = _require_str("modelId", value).strip()
    if not text or len(text) > 128:
        raise ValidationError(
            "modelId", _("must be the modelId the platform lists for the model (lmreg-nb models)")
        )
    return text


def check_reserved(data: Mapping[str, Any]) -> dict[str, Any]:
    """reqParams (list of strings), reqExample and resExample (strings <= 64 KiB)."""
    out: dict[str, Any] = {}
    params = data.get("reqParams")
    if params is not None:
        if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
            raise ValidationError("reqParams", _("must be a list of strings"))
        for p in params:
            _require_text("reqParams", p)
        if sum(len(p.encode("utf-8")) for p in params) > MAX_EXAMPLE_BYTES:
            raise ValidationError("reqParams", _("is over 64 KiB"))
        out["reqParams"] = list(params)
    for field in ("reqExample", "resExample"):
        value = data.get(field)
        if value is None:
            continue
        text = _require_text(field, value)
        if len(text.encode("utf-8")) > MAX_EXAMPLE_BYTES:
            raise ValidationError(field, _("is over 64 KiB; shorten it"))
        out[field] = text
    return out


def model_body(data: Mapping[str, Any], *, modify: bool = False) -> dict[str, Any]:
    """Validate a register (or, with ``modify``, a modify) body in the wire's field names.

    Returns the normalised body. modelId is kept only for modify; createTime and
    updateTime are dropped (the service sets them).
    """
    if not isinstance(data, Mapping):
        raise ValidationError("body", _("must be a JSON object"))
    body: dict[str, Any] = {
        "modelName": check_model_name(data.get("modelName")),
        "registryUrl": check_registry_url(data.get("registryUrl")),
        "apiKey": check_api_key(data.get("apiKey")),
    }
    if modify:
        body["modelId"] = check_model_id(data.get("modelId"))
    body.update(check_reserved(data))
    return body


class UrlWarning(NamedTuple):
    """Something the platform may not like about a registryUrl.

    ``code`` is a stable identifier ("plain-http", "chat-path", "unreachable-host")
    that programs test; ``message`` is the sentence for people (translated).
    """

    code: str
    message: str

    def __str__(self) -> str:
        return self.message


def url_warnings(url: str) -> list[UrlWarning]:
    """What the platform may not like about a registryUrl; empty when all is well.

    Never raises: a URL too broken to inspect gets no warnings (check_registry_url
    refuses it).
    """
    try:
        parts = urlsplit(url)
        hostname = parts.hostname or ""
    except (ValueError, TypeError, AttributeError):
        return []
    warnings: list[UrlWarning] = []
    if parts.scheme.lower() == "http":
        message = _(
            "registryUrl uses plain http; the platform expects https so apiKey is not sent in clear"
        )
        warnings.append(UrlWarning("plain-http", message))
    if not is_chat_path(parts.path):
        message = _("registryUrl path should end in {suffix} (spec 4.5)").format(
            suffix=CHAT_PATH_SUFFIX
        )
        warnings.append(UrlWarning("chat-path", message))
    reason = _unreachable_reason(hostname) if hostname else ""
    if reason:
        message = _(_UNREACHABLE[reason]).format(host=hostname)
        warnings.append(UrlWarning("unreachable-host", message))
    return warnings


def is_chat_path(path: str) -> bool:
    """Whether a registryUrl's ``path`` is a chat path of spec 4.5: it ends in
    ``/v1/chat/completions``, with no slash after it and none doubled (the platform calls
    the address as it is; llama.cpp answers 404 to either)."""
    return path.endswith("/" + CHAT_PATH_SUFFIX) and "//" not in path


def chat_path_fix(url: str) -> str:
    """``url`` with the chat path of spec 4.5 (``…/v1`` -> ``…/v1/chat/completions``): the
    school's own address as it should be registered (the most common mistake stops at /v1)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if is_chat_path(parts.path):
        return url
    path = re.sub("/{2,}", "/", parts.path).rstrip("/")
    if path.endswith("/" + CHAT_PATH_SUFFIX):
        return urlunsplit(parts._replace(path=path))
    head, v1, _rest = path.rpartition("/v1/")
    if path.endswith("/v1"):
        path += "/chat/completions"
    elif v1:
        # The server's other endpoint (/v1/models from vLLM's docs, /v1/completions):
        # the chat path sits beside it, not under it.
        path = head + "/" + CHAT_PATH_SUFFIX
    elif path.endswith(_OLLAMA_NATIVE):
        # Ollama's own API (/api/chat): its OpenAI-compatible chat is /v1/chat/completions.
        path = path.rsplit("/api/", 1)[0] + "/" + CHAT_PATH_SUFFIX
    elif path.endswith("/chat/completions"):
        path = path.removesuffix("/chat/completions") + "/" + CHAT_PATH_SUFFIX
    else:
        path += "/" + CHAT_PATH_SUFFIX
    return urlunsplit(parts._replace(path=path))


#: Ollama's native chat paths, which people copy from its docs instead of the /v1 one.
_OLLAMA_NATIVE = ("/api/chat", "/api/generate")


def unreachable_reason(host: str) -> str:
    """Why the platform cannot reach ``host``: ``loopback``, ``unspecified``, ``link-local``,
    ``private``, ``single-label``, ``local-name``; "" when it can."""
    return _unreachable_reason(host) if host else ""


_UNREACHABLE = {
    "loopback": N_("registryUrl host {host} is loopback; the platform cannot reach it"),
    "unspecified": N_(
        "registryUrl host {host} is unspecified (0.0.0.0); the platform cannot reach it"
    ),
    "link-local": N_("registryUrl host {host} is link-local; the platform cannot reach it"),
    "private": N_("registryUrl host {host} is a private address; the platform cannot reach it"),
    "single-label": N_(
        "registryUrl host {host} is a single-label name (only resolvable inside your network); "
        "the platform cannot reach it"
    ),
    "local-name": N_(
        "registryUrl host {host} is a local-network name; the platform cannot reach it"
    ),
}


def _unreachable_reason(host: str) -> str:
    """Why the platform cannot reach ``host`` (a key of _UNREACHABLE), or ""."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return "loopback"
    ip = _ip(host)
    if ip is None:
        if "." not in host:
            return "single-label"
        if host.endswith((".local", ".internal", ".lan", ".home.arpa")):
            return "local-name"
        return ""
    return _address_reason(ip)


def unreachable_ip(text: str) -> bool:
    """Whether ``text`` is an IP address (a zone index, ``%eth0``, aside) the platform
    cannot reach, by :func:`unreachable_reason`'s rule; False for a name (resolve it
    first): the rule for what a name resolves to."""
    ip = _ip(text.split("%", 1)[0].strip("[]").lower())
    return ip is not None and bool(_address_reason(ip))


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` spells (in any form a resolver reads), or None for a name."""
    try:
        return _numeric_ipv4(host) or ipaddress.ip_address(host)
    except ValueError:
        return None


def _address_reason(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Why the platform cannot reach the address ``ip`` (a key of _UNREACHABLE), or ""."""
    if isinstance(ip, ipaddress.IPv6Address):
        ip = _embedded_ipv4(ip) or ip
    if ip.is_loopback:
        return "loopback"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link-local"
    if ip.is_private or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT):
        return "private"
    return ""


_CGNAT = ipaddress.ip_network("100.64.0.0/10")
#: Shorthand and hex spellings of an IPv4 address a resolver accepts (127.1, 0x7f.1,
#: 2130706433: each is 127.0.0.1 to inet_aton and getaddrinfo).
_NUMERIC_IPV4 = re.compile(r"(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a numeric host spells, in any form a resolver reads; None if none."""
    if not _NUMERIC_IPV4.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and leads to (mapped ::ffff:a.b.c.d, which
    Python 3.11 does not see through; 6to4; NAT64; the old IPv4-compatible ::a.b.c.d)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


_MOBILE = re.compile(r"^(?:\+?86)?1[3-9]\d{9}$")
#: A top-level domain label: two letters or more, or an IDNA one (xn--...).
_TOP_LABEL = re.compile(r"^(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$")


def check_mobile(value: object, field: str = "contact_mobile") -> str:
    """A mainland China mobile number, with or without +86; returns its 11 digits.

    An int is accepted too: `papermill -p contact_mobile 13812345678` passes one.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    text = re.sub(r"[\s-]", "", _require_str(field, value))
    if not _MOBILE.match(text):
        raise ValidationError(
            field,
            _("must be a mainland China mobile number, e.g. 13812345678 or +86 138 1234 5678"),
        )
    return text[-11:]


def check_email(value: object, field: str = "contact_email") -> str:
    """An e-mail address as it will be mailed: its normalised ASCII form (name@domain.tld).

    Parsed by email-validator (syntax only, no DNS), the same parser the watch's mail
    sender uses, so what passes here is the address mailed: no IP literal or
    localhost, no dot at either end of a part, a top-level label of two letters or
    more; reserved test domains (``.example``, ``.test``) pass for rehearsals. An
    international domain is mailed in its ASCII (punycode) form; a local part must be
    ASCII (the mail servers schools use do not all speak SMTPUTF8).
    """
    from email_validator import EmailNotValidError, validate_email

    text = _require_str(field, value).strip()
    try:
        found = validate_email(
            text, check_deliverability=False, allow_smtputf8=False, test_environment=True
        )
    except EmailNotValidError:
        found = None
    address = found.ascii_email if found is not None else None
    top = address.rsplit(".", 1)[-1] if address else ""
    # email-validator lets a one-letter or numeric top-level label through (x@b.c).
    if address is None or len(address) > 254 or not _TOP_LABEL.match(top):
        raise ValidationError(field, _("must be an e-mail address like name@school.edu.cn"))
    return address
