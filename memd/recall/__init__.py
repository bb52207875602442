"""Recall: embeddings, the vector cache, retrieval and what a hook injects."""
