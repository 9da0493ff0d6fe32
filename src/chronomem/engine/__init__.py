"""The engine: :class:`Memory`, the one facade every adapter (CLI, HTTP, MCP) calls."""

from chronomem.engine.base import DEFAULT_IMPORTANCE
from chronomem.engine.memory import Memory

__all__ = ["DEFAULT_IMPORTANCE", "Memory"]
