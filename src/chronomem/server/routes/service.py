"""What every route needs: the space handles, the key gate, and the parsing of instants given as
query parameters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from chronomem.checks import parse_instant
from chronomem.engine import Memory
from chronomem.model.keys import Scope
from chronomem.server.auth import Caller, Gate
from chronomem.server.spaces import Spaces

__all__ = ["Credentials", "Service", "instant"]

_bearer = HTTPBearer(auto_error=False, description="an API key: cmk_<id>_<secret>")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


@dataclass(frozen=True, slots=True)
class Service:
    spaces: Spaces
    gate: Gate

    def allow(self, auth: HTTPAuthorizationCredentials | None, space: str, needed: Scope) -> Caller:
        """The caller, allowed to do ``needed`` on ``space`` — or the gate's refusal."""
        return self.gate.caller(None if auth is None else auth.credentials, space, needed)

    def memory(self, space: str) -> Memory:
        return self.spaces.memory(space)


def instant(text: str | None, name: str = "as_of") -> datetime | None:
    """An instant given as a query parameter (ISO 8601 with an offset)."""
    return None if text is None else parse_instant(text, name)
