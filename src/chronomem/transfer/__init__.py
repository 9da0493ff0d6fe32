"""Everything that moves data in and out of a store (DESIGN §6): the JSONL archive
(``export`` / ``import_``), migration between stores, and importers of other systems' saved
memories (the Generative Agents format)."""
