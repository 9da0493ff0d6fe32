"""The engine: :class:`Memory`, the one facade every adapter (CLI, HTTP, MCP) calls."""

from chronomem.engine.memory import Memory

__all__ = ["Memory"]
