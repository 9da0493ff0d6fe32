"""Importers for other systems' saved memories (DESIGN §6)."""
