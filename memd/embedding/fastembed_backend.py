"""Any other fastembed model name (it downloads once): :class:`FastembedBackend`. Such a model
has no spec of memd's: :func:`memd.embedding.models.spec_for` gives it the conservative default
calibration."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memd.embedding.backend import Capabilities
from memd.errors import StoreError

if TYPE_CHECKING:
    from memd.settings import Settings


class FastembedBackend:
    """A fastembed ``TextEmbedding``: queries and passages alike."""

    capabilities = Capabilities()
    passage_loads = 0

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

    def queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self.passages(texts)

    def release_passages(self) -> bool:
        return False
