"""Lifecycle rules (DESIGN §2 step 5, §3): pure functions that decide; the engine applies."""
