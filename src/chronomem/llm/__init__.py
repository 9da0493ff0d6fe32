"""LLM clients: the :class:`LLMClient` protocol, an OpenAI-compatible HTTP client, and a
scripted client for tests."""

from chronomem.llm.base import LLMClient, Message, parse_json
from chronomem.llm.openai_compatible import OpenAICompatibleLLM
from chronomem.llm.scripted import ScriptedLLM

__all__ = ["LLMClient", "Message", "OpenAICompatibleLLM", "ScriptedLLM", "parse_json"]
