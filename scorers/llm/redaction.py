"""Secrets kept out of every message, log line, record and ``repr`` of the engine: credentials in URLs
(``http://user:password@host``, ``redis://:password@host``, ``?api-key=...``) and the API key.

>>> mask_urls("POST http://user:pw@llm.internal/v1/chat?api-version=2024-06-01&api-key=abc123 failed")
'POST http://user:***@llm.internal/v1/chat?api-version=2024-06-01&api-key=*** failed'
>>> redact("Bearer sk-live-0123 at https://tok3n@host/v1", "sk-live-0123")
'Bearer [API key] at https://***@host/v1'
"""

from __future__ import annotations

import re

__all__ = ["mask_urls", "redact"]

#: The user information of a URL: what lies between ``scheme://`` and the authority's last ``@`` (a password may
#: hold an ``@`` of its own).
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/?#@\s:'\"<>]*)"
    r"(?P<password>:[^/?#\s'\"<>]*)?@"
)
#: A query parameter whose name says it holds a secret (``key``, ``api-key``, ``access_token``, ``sig``, ...).
_SECRET_PARAMETER = re.compile(
    r"(?P<name>[?&;][^=&#\s'\"<>]*(?:key|token|secret|passw(?:or)?d|pwd|sig|auth|credential)"
    r"[^=&#\s'\"<>]*=)[^&#\s'\"<>]*",
    re.IGNORECASE,
)


def mask_urls(text: str) -> str:
    """``text`` with ``***`` for the password (or the lone user, often a token) of every URL in it, and for the
    value of every query parameter named like a secret. Anything else is kept, so the endpoint stays readable."""

    def userinfo(match: re.Match[str]) -> str:
        if match["password"] is None:
            return f"{match['scheme']}***@"
        return f"{match['scheme']}{match['user']}:***@"

    return _SECRET_PARAMETER.sub(r"\g<name>***", _USERINFO.sub(userinfo, text))


def redact(text: str, api_key: str | None, *secrets: str | None) -> str:
    """``text`` with URLs masked (:func:`mask_urls`), the API key replaced by ``[API key]`` and the protocol's other
    ``secrets`` (an AWS secret access key, a session token) by ``[secret]``.

    >>> redact("signed with aws/s3cret", None, "aws/s3cret")
    'signed with [secret]'
    """
    masked = mask_urls(text)
    for secret, shown in ((api_key, "[API key]"), *((secret, "[secret]") for secret in secrets)):
        if secret and len(secret) >= 4:
            masked = masked.replace(secret, shown)
    return masked
