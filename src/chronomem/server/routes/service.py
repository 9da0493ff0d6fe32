"""What every route needs: the router that answers in one trip through the worker threads, the
space handles, the key gate, and the parsing of instants given as query parameters."""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.datastructures import DefaultPlaceholder
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import TypeAdapter

from chronomem.checks import parse_instant
from chronomem.engine import Memory
from chronomem.errors import InvalidInputError
from chronomem.model.keys import Scope
from chronomem.server.auth import Caller, Gate
from chronomem.server.spaces import Spaces

__all__ = ["Credentials", "Routes", "Service", "instant", "json_object", "token"]

_bearer = HTTPBearer(auto_error=False, description="an API key: cmk_<id>_<secret>")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


@dataclass(frozen=True, slots=True)
class Service:
    spaces: Spaces
    gate: Gate

    def allow(
        self, auth: HTTPAuthorizationCredentials | None, space: str | None, needed: Scope
    ) -> Caller:
        """The caller, allowed to do ``needed`` on ``space`` (``None``: the service itself) —
        or the gate's refusal."""
        return self.gate.caller(token(auth), space, needed)

    def memory(self, space: str) -> Memory:
        return self.spaces.memory(space)

    def reader(self, space: str) -> AbstractContextManager[Memory]:
        """A handle of the space for a read verb (``Spaces.reader``)."""
        return self.spaces.reader(space)


def token(auth: HTTPAuthorizationCredentials | None) -> str | None:
    """The bearer key a request sent, if any."""
    return None if auth is None else auth.credentials


def instant(text: str | None, name: str = "as_of") -> datetime | None:
    """An instant given as a query parameter (ISO 8601 with an offset)."""
    return None if text is None else parse_instant(text, name)


def json_object(text: str | None, name: str) -> dict[str, Any] | None:
    """A JSON object given as a query parameter (a filter)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{name} is not JSON ({exc.msg})", field=name) from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{name} must be a JSON object", field=name)
    return value


class Routes(APIRouter):
    """A router whose handlers return the engine's values and whose answers are written as JSON by
    the worker thread that ran the verb, in the same trip (by the event loop for the few
    ``async`` handlers).

    FastAPI would run a plain handler in a worker thread, then validate its value against the
    return type in a second worker thread, then write it on the event loop: two thread hops and a
    validation of what the engine built from its own types. Here the return type is still the
    route's response model (the OpenAPI schema is unchanged) and the value is written by
    pydantic's serialiser for that type straight away. On a loaded machine each hop costs
    milliseconds (``bench/serve.py``)."""

    def add_api_route(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        returns: Any = typing.get_type_hints(endpoint, include_extras=True).get("return")
        plain = returns is None or returns is type(None)
        if plain or (isinstance(returns, type) and issubclass(returns, Response)):
            super().add_api_route(path, endpoint, **kwargs)
            return
        if isinstance(kwargs.get("response_model"), DefaultPlaceholder):
            kwargs["response_model"] = returns
        status = kwargs.get("status_code") or 200
        super().add_api_route(path, _written(endpoint, TypeAdapter(returns), status), **kwargs)


def _written(
    endpoint: Callable[..., Any], adapter: TypeAdapter[Any], status: int
) -> Callable[..., Any]:
    """``endpoint`` answering with its value as JSON, with the route's ``status``. Its
    signature (``__wrapped__``) is what FastAPI reads for the parameters."""
    if inspect.iscoroutinefunction(endpoint):

        @functools.wraps(endpoint)
        async def answer_later(*args: Any, **kwargs: Any) -> Response:
            return _json(adapter, await endpoint(*args, **kwargs), status)

        return answer_later

    @functools.wraps(endpoint)
    def answer(*args: Any, **kwargs: Any) -> Response:
        return _json(adapter, endpoint(*args, **kwargs), status)

    return answer


def _json(adapter: TypeAdapter[Any], value: Any, status: int) -> Response:
    return Response(
        adapter.dump_json(value, by_alias=True), status_code=status, media_type="application/json"
    )
