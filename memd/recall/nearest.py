"""The insert path's nearest memories, from the daemon's vector cache.

``upsert`` compares each new memory with the few nearest in its project (duplicates to merge,
statements it replaces). In the daemon every project a hook has seen is in the vector cache
(:class:`memd.recall.vectors.VectorCache`: all its active memories, int8 codes), so those
neighbours are one product away, where LanceDB's vector search loaded its index at the first
write (+120-150 MiB at 100k memories) and searched approximately. The caller ranks the ids
returned again on the exact cosines of their stored vectors (:func:`memd.store.upsert.nearest`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memd.recall.vectors import VectorCache


def nearest_ids(
    cache: VectorCache, vector: Sequence[float], project: str, kinds: Collection[str], limit: int
) -> list[str] | None:
    """The ids of the ``limit`` active memories of ``kinds`` nearest ``vector`` in ``project``,
    best first; None when the cache does not hold the project (too big)."""
    import numpy as np

    got = cache.rows(project)
    if got is None:
        return None
    rows, (codes, scales) = got
    if rows.num_rows == 0 or limit <= 0:
        return []
    wanted = np.flatnonzero(
        np.isin(rows.column("kind").to_numpy(zero_copy_only=False), list(kinds))
    )
    sims = (
        np.einsum("ij,j->i", codes[wanted], np.asarray(vector, dtype=np.float32)) * scales[wanted]
    )
    top = np.argpartition(-sims, limit)[:limit] if len(wanted) > limit else np.arange(len(wanted))
    top = top[np.argsort(-sims[top], kind="stable")]
    return [str(i) for i in rows.column("id").take(wanted[top]).to_pylist()]
