"""Memories from conversations, proposed by an LLM and taken through the lifecycle (issue 29)."""
