"""Who is calling (DESIGN §7): a key bound to a space and a scope, or the local user of a server
without keys. A key of another space sees nothing of this one: its requests get 404, as if the
space were empty of what they name, so existence does not leak.

A server bound to a non-loopback address always requires keys (it refuses to start without any).
On loopback it is open — every caller is the local user with the admin scope — for as long as the
store holds no active key; the first key created closes it.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from dataclasses import dataclass

from chronomem.model.keys import ApiKey, Scope
from chronomem.server.keys import verify_key
from chronomem.stores.base import MemoryStore

__all__ = ["Caller", "Denied", "Gate", "is_loopback"]

_RECHECK_S = 1.0  # how long "the store has no active key" is trusted before asking again


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller: the key (``None`` for the local user of an open server), the
    space it is bound to (``None``: every space), its scope, and the actor the audit log names."""

    key: ApiKey | None
    scope: Scope
    actor: str

    def sees(self, space: str) -> bool:
        return self.key is None or self.key.space is None or self.key.space == space


class Denied(Exception):
    """A request the gate refuses: ``status`` 401 (no or bad key), 403 (scope) or 404."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail


class Gate:
    """Turns a request's ``Authorization: Bearer <key>`` into a :class:`Caller`, or refuses."""

    def __init__(self, store: MemoryStore, *, loopback: bool) -> None:
        self._store = store
        self._loopback = loopback
        self._lock = threading.Lock()
        self._open_until = 0.0

    def _is_open(self) -> bool:
        if not self._loopback:
            return False
        with self._lock:
            if time.monotonic() < self._open_until:
                return True
            if any(k.is_active for k in self._store.api_keys()):
                return False
            self._open_until = time.monotonic() + _RECHECK_S
            return True

    def caller(self, token: str | None, space: str | None, needed: Scope) -> Caller:
        """The caller a bearer ``token`` (``None``: none sent) authenticates, allowed to do
        ``needed`` on ``space`` (``None``: no particular space)."""
        if not token:
            if self._is_open():
                return Caller(key=None, scope=Scope.ADMIN, actor="local")
            raise Denied(401, "Unauthorized", "an API key is required: Authorization: Bearer …")
        key = verify_key(self._store, token)
        if key is None:
            raise Denied(401, "Unauthorized", "the API key is unknown, malformed or revoked")
        caller = Caller(key=key, scope=key.scope, actor=f"key:{key.id}")
        if space is not None and not caller.sees(space):
            raise Denied(404, "NotFound", f"no space {space!r}")
        if not caller.scope.allows(needed):
            raise Denied(
                403,
                "Forbidden",
                f"this key's scope is {key.scope.value}; this needs {needed.value}",
            )
        return caller
