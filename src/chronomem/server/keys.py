"""API keys (DESIGN §7): created, listed and revoked in the store, verified in constant time.

A key reads ``cmk_<id>_<secret>``: the id is public (it names the key in listings and in the
audit log, as ``key:<id>``); the secret is 32 random bytes, shown once at creation. The store
keeps only the secret's SHA-256 digest — enough for a high-entropy random secret, which needs no
slow password hash — and comparisons use :func:`hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime

from chronomem.checks import optional_text
from chronomem.clock import to_micros
from chronomem.errors import InvalidInputError, NotFoundError
from chronomem.model.keys import ApiKey, Scope
from chronomem.stores.base import MemoryStore

__all__ = ["create_key", "revoke_key", "verify_key"]

_TOKEN = re.compile(r"^cmk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_NOBODY = hashlib.sha256(b"no such key").digest()


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("ascii")).digest()


def create_key(
    store: MemoryStore, *, space: str | None, scope: Scope | str, label: str | None, now: datetime
) -> tuple[ApiKey, str]:
    """A new key bound to ``space`` (``None``: every space, admin keys only) and its token, which
    is shown this once."""
    chosen = Scope(scope) if isinstance(scope, Scope) else _scope(scope)
    if space is None and chosen is not Scope.ADMIN:
        raise InvalidInputError("only admin keys may span every space; name a space", field="space")
    space = optional_text(space, "space")
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    key = ApiKey(
        id=key_id,
        space=space,
        scope=chosen,
        label=optional_text(label, "label"),
        created_at=now,
        digest=_digest(secret),
    )
    store.insert_key(key)
    return key, f"cmk_{key_id}_{secret}"


def _scope(value: str) -> Scope:
    try:
        return Scope(value)
    except ValueError:
        raise InvalidInputError(
            f"scope must be one of read, write, admin; got {value!r}", field="scope"
        ) from None


def verify_key(store: MemoryStore, token: str) -> ApiKey | None:
    """The active key ``token`` names, or ``None`` (malformed, unknown, revoked or wrong secret).
    Unknown ids are compared against a dummy digest, so timing does not tell them apart."""
    match = _TOKEN.match(token)
    if match is None:
        return None
    key_id, secret = match.groups()
    key = store.get_key(key_id)
    expected = _NOBODY if key is None else key.digest
    if not hmac.compare_digest(_digest(secret), expected) or key is None or not key.is_active:
        return None
    return key


def revoke_key(store: MemoryStore, key_id: str, *, now: datetime) -> ApiKey:
    """Revoke a key (it stops working on the next request of every server process)."""
    key = store.get_key(key_id)
    if key is None:
        raise NotFoundError(f"no API key {key_id!r}")
    store.revoke_key(key_id, to_micros(now))
    revoked = store.get_key(key_id)
    assert revoked is not None
    return revoked
