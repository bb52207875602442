"""Recall: the vector cache, the lexical signals, the one retrieval path, and what a hook injects."""
