"""Reflection (DESIGN §5): the prompts and the validation of the model's answers."""
