"""The causal graph: bounded traversal and the vectorised causal boost (DESIGN §4)."""
