"""The :class:`Embedder`: texts in, unit vectors out, with the configured model's backend
(:mod:`memd.embedding.models`), a text holding Chinese glossed first for a glossed model
(:mod:`memd.text.gloss`, imported on the first Chinese text: it loads the zh<->en bridge).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memd.embedding import models
from memd.embedding.backend import EmbeddingBackend
from memd.embedding.spec import DEFAULT_DIM, MAX_BATCH, MAX_CHARS, Calibration
from memd.embedding.spec import reads_chinese as name_reads_chinese
from memd.text.chinese import CJK_CLASS as CJK_CLASS
from memd.text.chinese import has_chinese
from memd.text.chinese import is_chinese as is_chinese

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

GLOSS_SUFFIX = "+zh-gloss2"
"""Ends the model id of a glossed model; the number is the gloss's version. A store written
with another version, or before glossing (no suffix), has only its Chinese texts re-embedded
(:func:`memd.store.rebuild.migrate_model`). 1: the first gloss; 2: the zh<->en
glossary gained ~420 everyday words (2026-12-01)."""
_GLOSS_TAIL = re.compile(r"\+zh-gloss\d+$")


def unglossed(model_id: str) -> str:
    """The id without its gloss version: the same for every version of a glossed model and for
    its store from before glossing (the id itself for other models)."""
    return _GLOSS_TAIL.sub("", model_id)


class Embedder:
    """Turns texts into unit vectors. ``load()`` is explicit; building one is free.

    ``embed`` is for stored texts (passages), ``embed_query`` for what is searched with.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model_name = settings.embedding_model
        self.batch_size = min(MAX_BATCH, settings.embedding_batch_size)
        self._backend: EmbeddingBackend | None = None
        self._lock = threading.Lock()
        self.dim = DEFAULT_DIM
        self.spec = models.spec_for(self.model_name)
        self.model_id = models.model_id_for(self.model_name) + (
            GLOSS_SUFFIX if self.glosses else ""
        )
        """The id stored with the table: a new id means the stored vectors must be re-embedded."""

    @property
    def calibration(self) -> Calibration:
        """(unrelated p95, related median) cosines of this model, for
        :func:`memd.embedding.spec.semantic_scale`."""
        return self.spec.calibration

    @property
    def cross_lexical(self) -> float:
        """The lexical coverage that counts as full across languages (its spec's)."""
        return self.spec.cross_lexical

    @property
    def cross_calibration(self) -> Calibration | None:
        """The same for a prompt and a memory in different languages (None: one scale)."""
        return self.spec.cross_calibration

    @property
    def reads_chinese(self) -> bool:
        """False for an English-only model that does not gloss (recall then ignores its cosines
        for Chinese)."""
        return self.glosses or name_reads_chinese(self.model_name)

    @property
    def glosses(self) -> bool:
        """Whether texts holding Chinese are embedded as their English gloss."""
        return self.model_name in models.GLOSSED_MODELS

    def _prepare(self, texts: Sequence[str]) -> list[str]:
        """Texts as the model reads them: glossed when the model glosses, then clipped."""
        if self.glosses and any(has_chinese(t or "") for t in texts):
            from memd.text.gloss import gloss  # the bridge, loaded on the first Chinese text

            texts = [gloss(t) if t else t for t in texts]  # without Chinese: as it is
        return self._clip(texts)

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def load(self) -> Embedder:
        if self._backend is not None:
            return self
        with self._lock:
            if self._backend is None:
                backend = self._load()
                # (A prompt: MiniLM's float graph for stored texts then loads only when needed.)
                self.dim = len(backend.queries(["probe"])[0])
                self._backend = backend
        return self

    def _load(self) -> EmbeddingBackend:
        return models.load_backend(self.settings, self.model_name, self.batch_size, is_chinese)

    def _loaded(self) -> EmbeddingBackend:
        backend = self.load()._backend
        assert backend is not None  # load() set it
        return backend

    def unload(self) -> None:
        """Drop the model (MiniLM's onnxruntime holds ~64 MiB once loaded, mostly its layers'
        weights folded into float32, and ~50 MiB more while loading); the next embed loads it
        again."""
        with self._lock:
            self._backend = None
        import gc

        gc.collect()

    def release_passages(self) -> bool:
        """Drop the graph that embeds stored texts when the model keeps one apart from the
        prompts' (MiniLM's float graph); the next stored text loads it again (~0.15 s). The
        daemon calls this after extraction and jobs, once quiet. Whether anything was dropped."""
        backend = self._backend
        if backend is None or not backend.capabilities.separate_passages:
            return False
        if not backend.release_passages():
            return False
        import gc

        gc.collect()
        return True

    @property
    def passage_loads(self) -> int:
        """How many times the stored texts' separate graph was loaded (0: none, or shared)."""
        return 0 if self._backend is None else self._backend.passage_loads

    @staticmethod
    def _clip(texts: Sequence[str]) -> list[str]:
        return [(t or " ")[:MAX_CHARS] for t in texts]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of stored texts (passages), batched by at most 16, each cut to 256
        tokens. A batch is padded to its longest text, so texts are batched by length (short
        facts together, long excerpts together): 1.6x faster on real sessions' memories, the
        same vectors (the padding is masked out)."""
        backend = self._loaded()
        clipped = self._prepare(texts)
        order = sorted(range(len(clipped)), key=lambda i: len(clipped[i]))
        ranked = [clipped[i] for i in order]
        vectors: list[list[float]] = []
        for start in range(0, len(ranked), self.batch_size):
            vectors.extend(backend.passages(ranked[start : start + self.batch_size]))
        out: list[list[float]] = [[] for _ in clipped]
        for i, vector in zip(order, vectors, strict=True):
            out[i] = vector
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of search queries (prompts)."""
        backend = self._loaded()
        clipped = self._prepare(texts)
        out: list[list[float]] = []
        for start in range(0, len(clipped), self.batch_size):
            out.extend(backend.queries(clipped[start : start + self.batch_size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]

    def embed_one(self, text: str) -> list[float]:
        """Kept for callers written before queries and passages differed: a query."""
        return self.embed_query(text)
