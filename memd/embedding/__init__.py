"""Embeddings: the packaged models (MiniLM by default, multilingual-e5 opt-in), their query graph and calibration data; used by the store (passages) and by recall (prompts)."""
