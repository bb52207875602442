"""The default embedding backend: all-MiniLM-L6-v2 (int8, English only, Chinese read through
its English gloss), its :data:`MINILM` spec and :class:`MinilmBackend`, which runs the packaged
model on onnxruntime and tokenizers directly (its files: :mod:`memd.embedding.minilm_files`).

Prompts run through the integer (and fused) query graph, loaded at start; stored texts through
the float graph, loaded on the first stored text and dropped again by :meth:`release_passages`
when the daemon has been quiet after work.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memd.embedding.backend import Capabilities
from memd.embedding.minilm_files import QUERY_MODEL, assemble_minilm
from memd.embedding.spec import MAX_TOKENS, ModelProfile, ModelSpec
from memd.errors import StoreError

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

MINILM_MODEL = "memd/all-MiniLM-L6-v2-int8"

MINILM = ModelSpec(
    name=MINILM_MODEL,
    # English prompts against English memories and distractors (`bench/crosslingual.py` on
    # tests/labelled/crosslingual_zh_en.jsonl + _distractors.jsonl: unrelated p95, related median).
    calibration=(0.21, 0.69),
    # A text holding Chinese is read as its English gloss. zh->en and en->zh pooled on the dev
    # set gave (0.22, 0.60) (`bench/crosslingual.py --models minilm`, 2026-12-01); the unrelated
    # end was then raised to 0.26 through the daemon on the five tuning sets (`--daemon minilm`):
    # mean R@5 0.919/0.910 -> 0.902/0.882 (zh->en / en->zh), unrelated prompts that found a
    # memory in the other language 18 %/25 % -> 10 %/15 %.
    cross_calibration=(0.26, 0.60),
    # No cross-lingual lexical scale: its cross-lingual decision rests on the bridge's words
    # alone, and at 0.6 one unrelated prompt in eight found a memory in the other language (1 in
    # 100 at 1.0).
    cross_lexical=1.0,
    glossed=True,
    # bench/dedupe.py --calibrate, on half A only: cosine medians of unrelated and duplicate
    # pairs, then the grid point with the best recall at precision >= 0.97.
    profile_key="all-minilm-l6-v2",
    profile=ModelProfile(baseline=0.06, paraphrase=0.94, weight=0.3, threshold=0.55, cjk=False),
)


class MinilmBackend:
    """The packaged MiniLM through onnxruntime and tokenizers directly.

    It computes what fastembed computes for this model (the same tokenizer settings, graph
    optimisation, mean pooling in float64 and normalisation; ``tests/test_onnx_graph.py`` checks the
    vectors are equal bit for bit), without importing fastembed, whose image models, model
    downloads and their HTTP stack (~370 modules) the daemon never uses: ~19 MiB less RSS.
    """

    capabilities = Capabilities(asymmetric=True, separate_passages=True)

    def __init__(self, settings: Settings, batch_size: int) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.np = np
        self.batch_size = batch_size
        path = assemble_minilm(settings.home)
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        truncation = tokenizer.truncation or {}
        tokenizer.enable_truncation(
            max_length=MAX_TOKENS, direction=truncation.get("direction", "right")
        )
        padding = tokenizer.padding or {}
        pad_token = padding.get("pad_token") or "[PAD]"
        pad_id = padding.get("pad_id", tokenizer.token_to_id(pad_token))
        if pad_id is None:
            raise StoreError(f"the tokenizer in {path} has no {pad_token} token")
        tokenizer.enable_padding(
            direction=padding.get("direction", "right"),
            pad_id=pad_id,
            pad_type_id=padding.get("pad_type_id", 0),
            pad_token=pad_token,
            pad_to_multiple_of=padding.get("pad_to_multiple_of"),
            length=None,
        )
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = settings.embedding_threads
        options.inter_op_num_threads = 1
        # Worker threads that spin between operators (onnxruntime's default) doubled a query's
        # CPU with two threads and, on a busy 2-core machine, made it slower than one.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # onnxruntime's CPU arena keeps the peak of every batch shape for good: with 256-token
        # texts it grew the daemon past 1.3 GB. Without it RSS stays bounded.
        options.enable_cpu_mem_arena = False
        self._ort = ort
        self._options = options
        self._float_model = path / "model.onnx"
        self._session: Any = None
        self._session_lock = threading.Lock()
        self.passage_loads = 0
        """How many times the float graph was loaded (again after :meth:`release_passages`)."""
        # Prompts go through the graph whose matrix products run in 8-bit integers: ~2x faster
        # for a short prompt, at a cosine of ~0.99 to the float vector. Stored texts keep the
        # float graph, so what is stored is what fastembed computes. The float graph loads on
        # the first stored text, not at start: a daemon that only answers hooks never holds it.
        self.query_session: Any = None
        if (path / QUERY_MODEL).is_file():
            try:
                self.query_session = ort.InferenceSession(
                    str(path / QUERY_MODEL),
                    sess_options=options,
                    providers=["CPUExecutionProvider"],
                )
            except Exception as exc:  # an onnxruntime without the operator: the float graph
                log.info("prompts use the full-precision graph: %s", exc)
        if self.query_session is None:
            self.query_session = self.session  # shared, so never released
        self.inputs = {i.name for i in self.query_session.get_inputs()}

    @property
    def session(self) -> Any:
        """The float graph, for stored texts: loaded on first use (~0.15 s)."""
        session = self._session
        if session is None:
            with self._session_lock:
                if self._session is None:
                    self._session = self._ort.InferenceSession(
                        str(self._float_model),
                        sess_options=self._options,
                        providers=["CPUExecutionProvider"],
                    )
                    self.passage_loads += 1
                session = self._session
        return session

    @property
    def holds_passages(self) -> bool:
        return self._session is not None and self._session is not self.query_session

    def release_passages(self) -> bool:
        """Drop the float graph (~53 MiB of weights once the heap is trimmed) unless prompts
        use it too; the next stored text loads it again. Whether it was dropped."""
        with self._session_lock:
            if not self.holds_passages:
                return False
            self._session = None
        return True

    def passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(self.session, texts)

    def queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(self.query_session, texts)

    def _embed(self, session: Any, texts: Sequence[str]) -> list[list[float]]:
        np = self.np
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            # One text (a prompt): ``encode`` keeps the interpreter lock for its ~0.1 ms, where
            # ``encode_batch`` lets it go and then waits to get it back from a busy thread.
            encoded = (
                [self.tokenizer.encode(chunk[0])]
                if len(chunk) == 1
                else self.tokenizer.encode_batch(chunk)
            )
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids}
            if "attention_mask" in self.inputs:
                feed["attention_mask"] = mask
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            tokens = session.run(None, feed)[0]
            # mean over the real tokens, summed in float64, then unit length (as fastembed)
            summed = np.sum(tokens, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
            pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
            norms = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
            out.extend(v.tolist() for v in (pooled / norms).astype(tokens.dtype, copy=False))
        return out
