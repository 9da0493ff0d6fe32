"""Reflection (DESIGN §5): importance scoring, prompts, and validation of the model's answers."""
