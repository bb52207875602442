"""What memd knows about one embedding model, as data: :class:`ModelSpec` (its cosine scales
within and across languages, whether it reads Chinese or its gloss, and how its cosines decide a
duplicate or a conflict) and the limits every backend shares.

Each backend module declares the specs of its models (:data:`memd.embedding.minilm.MINILM`,
:data:`memd.embedding.e5.E5`); :mod:`memd.embedding.models` looks them up by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_DIM = 384
MAX_TOKENS = 256
MAX_BATCH = 16
MAX_CHARS = 2000
"""Texts are cut to this many characters before tokenizing (256 tokens is ~1,000 chars)."""

Calibration = tuple[float, float]
"""(unrelated p95, related median) of prompt-vs-memory cosines: :func:`semantic_scale`'s 0 and 1."""

DEFAULT_CALIBRATION: Calibration = (0.5, 0.85)
"""For models nobody measured: only high cosines count (conservative: injects less)."""


@dataclass(frozen=True)
class ModelProfile:
    """How to read one model's cosines when deciding duplicates and conflicts
    (:mod:`memd.store.profiles`, :mod:`memd.store.similar`).

    ``baseline`` is the typical cosine of two unrelated sentences and ``paraphrase`` that of two
    paraphrases; :meth:`scale` maps the first to 0 and the second to 1. ``weight`` is the share of
    the vector in the duplicate score (the rest is word overlap), ``threshold`` the score a
    duplicate needs.
    """

    baseline: float
    paraphrase: float
    weight: float = 0.5
    threshold: float = 0.6
    cjk: bool = True
    """False for English-only models: CJK text becomes unknown tokens and every pair of Chinese
    sentences looks alike, so such pairs are decided on the words alone."""

    def scale(self, cosine: float) -> float:
        span = max(self.paraphrase - self.baseline, 1e-6)
        return min(1.0, max(0.0, (cosine - self.baseline) / span))


@dataclass(frozen=True)
class ModelSpec:
    """One model: its name in settings and everything measured about its cosines."""

    name: str
    """The ``embedding_model`` setting that selects it."""
    calibration: Calibration
    """A prompt against memories in its own language (``bench/crosslingual.py``)."""
    cross_calibration: Calibration | None = None
    """A prompt against memories in the other language (None: :attr:`calibration` for both)."""
    cross_lexical: float = 1.0
    """The lexical coverage that counts as full across languages (1.0: the coverage as is)."""
    glossed: bool = False
    """English-only, but a text holding Chinese is embedded as its English gloss
    (:mod:`memd.text.gloss`), so its cosines mean something across zh and en."""
    profile_key: str = ""
    """The key of :attr:`profile` in :data:`memd.store.profiles.PROFILES` (its stored model id
    without runtime, weights hash or quantisation: :func:`memd.store.profiles.model_key`)."""
    profile: ModelProfile | None = None
    """Its duplicate and conflict profile (None: not calibrated)."""


def semantic_scale(cosine: float, calibration: Calibration) -> float:
    """Map a cosine to [0, 1]: the unrelated p95 → 0, the related median → 1, linear between."""
    unrelated, related = calibration
    if related <= unrelated:
        raise ValueError(f"calibration {calibration!r}: related must exceed unrelated")
    return min(1.0, max(0.0, (cosine - unrelated) / (related - unrelated)))


ENGLISH_ONLY = re.compile(r"MiniLM-L\d+|(?:^|/)(?:bge|gte|e5)-\w+-en\b", re.I)
"""Model names of English-only models (MiniLM; bge/gte/e5 "-en" variants)."""


def reads_chinese(model_name: str) -> bool:
    """Whether the model's cosines mean anything for Chinese text (by its name)."""
    return ENGLISH_ONLY.search(model_name) is None or "multilingual" in model_name.lower()
