"""Reads (DESIGN §2): the in-memory arrays, one read stage by stage, the read options and the
causal inputs of a crisis read."""
