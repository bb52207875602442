"""Recall: the vector cache, the lexical and zh<->en signals, the one retrieval path, and what a hook injects."""
