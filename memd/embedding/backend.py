"""The interface every embedding backend implements: :class:`EmbeddingBackend`, with the
:class:`Capabilities` it declares (the :class:`memd.embedding.embed.Embedder` reads those
instead of probing the backend's attributes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Vectors = list[list[float]]


@dataclass(frozen=True)
class Capabilities:
    """What a backend does beyond turning texts into unit vectors."""

    asymmetric: bool = False
    """Queries and passages are embedded differently (e5's prefixes, MiniLM's integer query
    graph): a prompt must go through :meth:`EmbeddingBackend.queries`."""
    separate_passages: bool = False
    """Stored texts run through a model apart from the prompts', which
    :meth:`EmbeddingBackend.release_passages` can drop while the daemon is quiet."""


class EmbeddingBackend(Protocol):
    """One engine running one model. Texts arrive glossed and clipped, at most one batch."""

    @property
    def capabilities(self) -> Capabilities: ...

    def passages(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of stored texts."""
        ...

    def queries(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of what is searched with (prompts)."""
        ...

    def release_passages(self) -> bool:
        """Drop the passages' separate model (see :attr:`Capabilities.separate_passages`);
        whether anything was dropped. False for a backend without one."""
        ...

    @property
    def passage_loads(self) -> int:
        """How many times the passages' separate model was loaded (0: none, or shared)."""
        ...
