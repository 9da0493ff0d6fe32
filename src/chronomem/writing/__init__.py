"""The write path's pure parts (DESIGN §3): drafts (validated ``remember`` arguments), the
near-duplicate gate, and the importance scorers for records written without importance. The
engine's ``engine/write.py`` applies them in one store transaction."""
