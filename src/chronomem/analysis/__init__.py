"""Text analysis by script and language (DESIGN §9): what the full-text index holds for a text,
which script and language a text is in, and whether an embedding model reads it."""
