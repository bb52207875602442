"""The query graph's rewrites, in their order: the operators fused (:mod:`onnx_fuse`), then each
attention block as one operator (:mod:`onnx_attention`); and whether a file holds their result."""

from __future__ import annotations

from pathlib import Path

from memd.embedding.onnx_attention import ATTENTION_SUFFIX, fuse_attention, initializers_by_name
from memd.embedding.onnx_fuse import FUSED_SUFFIX, fuse_operators, parse
from memd.embedding.onnx_graph import (
    GRAPH_INITIALIZER,
    Buffer,
    GraphRewriteError,
    bytes_field,
    graph_of,
    holds,
    with_graph,
)


def fuse_query_graph(model: Buffer) -> tuple[bytes, dict[str, int]]:
    """``model`` with the four rewrites above, then each attention block as one operator
    (:mod:`memd.embedding.onnx_attention`), and how many of each were made. Raises
    GraphRewriteError when none applies."""
    g = parse(memoryview(model))
    counts = fuse_operators(g)
    added = fuse_attention(g, initializers_by_name(graph_of(memoryview(model))))
    counts["attention"] = len(added) // 3
    if not any(counts.values()):
        raise GraphRewriteError("nothing to fuse in the query graph")
    g.drop_unread_constants()
    g.parts += [bytes_field(GRAPH_INITIALIZER, tensor) for tensor in added]
    return with_graph(memoryview(model), b"".join(g.parts)), counts


def is_fused(path: Path) -> bool:
    """True when ``path`` holds a graph :func:`fuse_query_graph` wrote, attention blocks
    included (a graph an older memd fused without them is written again)."""
    return holds(path, FUSED_SUFFIX) and holds(path, ATTENTION_SUFFIX)
