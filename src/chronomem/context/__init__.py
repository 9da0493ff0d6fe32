"""Prompt-ready context blocks (DESIGN §4)."""
