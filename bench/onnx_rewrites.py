"""What each ONNX rewrite of the packaged MiniLM buys: a prompt's embedding time and the RSS of
the loaded graph, graph by graph, in one process.

    .venv/bin/python bench/onnx_rewrites.py [--prompts 300] [--threads 2]

Query graphs, each a rewrite more than the one before: ``float`` (the packaged model, what
onnxruntime makes of it with ``ORT_ENABLE_ALL``), ``int8`` (``quantize_matmuls``), ``fused``
(+ ``onnx_fuse.fuse_operators``: bias, GELU, NaN guards, key transposes), ``attention``
(+ ``onnx_attention``: each attention block as one ``QAttention``, today's query graph). Every
prompt runs through every graph, the order rotating, so the machine's noise hits all alike: the
median milliseconds per prompt, the ratio to the graph before it, and the cosine of each graph's
vector to the float one. RSS: each graph loaded alone in a fresh process (growth of RSS over the
interpreter with onnxruntime imported, after one embedding), and the float passage graph with
and without ``gather_before_dequantize`` (the int8 word table).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memd.embedding.minilm_files import default_model_files

LABELLED = Path(__file__).resolve().parent.parent / "tests" / "labelled"


def variants(work: Path) -> dict[str, Path]:
    from memd.embedding.onnx_attention import fuse_attention, initializers_by_name
    from memd.embedding.onnx_fuse import fuse_operators, parse
    from memd.embedding.onnx_graph import (
        GRAPH_INITIALIZER,
        bytes_field,
        gather_before_dequantize,
        graph_of,
        quantize_matmuls,
        with_graph,
    )

    model, _tok, _sha = default_model_files()
    raw = model.read_bytes()
    out = {"float": model}
    lean = work / "lean.onnx"
    lean.write_bytes(gather_before_dequantize(raw))
    out["float-lean"] = lean
    int8 = quantize_matmuls(raw)
    (work / "int8.onnx").write_bytes(int8)
    out["int8"] = work / "int8.onnx"
    g = parse(memoryview(int8))
    fuse_operators(g)
    g.drop_unread_constants()
    fused = with_graph(memoryview(int8), b"".join(g.parts))
    (work / "fused.onnx").write_bytes(fused)
    out["fused"] = work / "fused.onnx"
    g = parse(memoryview(int8))
    fuse_operators(g)
    added = fuse_attention(g, initializers_by_name(graph_of(memoryview(int8))))
    g.drop_unread_constants()
    g.parts += [bytes_field(GRAPH_INITIALIZER, t) for t in added]
    (work / "attention.onnx").write_bytes(with_graph(memoryview(int8), b"".join(g.parts)))
    out["attention"] = work / "attention.onnx"
    return out


def session(path: Path, threads: int):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.enable_cpu_mem_arena = False
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def tokenizer():  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(default_model_files()[1]))
    tok.enable_truncation(max_length=256)
    return tok


def embed(sess, tok, text: str):  # type: ignore[no-untyped-def]
    import numpy as np

    enc = tok.encode(text)
    ids = np.array([enc.ids], dtype=np.int64)
    mask = np.array([enc.attention_mask], dtype=np.int64)
    out = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids})[0]
    pooled = (out * mask[:, :, None]).sum(1) / mask.sum()
    return pooled[0] / np.linalg.norm(pooled[0])


def prompts(limit: int) -> list[str]:
    texts = []
    for name in (
        "crosslingual_zh_en.jsonl",
        "crosslingual_heldout.jsonl",
        "crosslingual_dev.jsonl",
    ):
        path = LABELLED / name
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    texts.append(str(json.loads(line)["en"]))
    return texts[:limit]


def rss_child(path: str, threads: int) -> None:
    import onnxruntime  # noqa: F401

    def rss() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    tok = tokenizer()
    before = rss()
    sess = session(Path(path), threads)
    embed(sess, tok, "warm the graph up with one prompt")
    print(json.dumps({"rss": rss() - before}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child, args.threads)
        return 0
    import numpy as np

    work = Path(tempfile.mkdtemp(prefix="memd-onnx-"))
    paths = variants(work)
    rss = {}
    for name, path in paths.items():
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, __file__, "--rss-child", str(path)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ},
                ).stdout
            )["rss"]
            for _ in range(3)
        ]
        rss[name] = statistics.median(runs)
    tok = tokenizer()
    names = ["float", "int8", "fused", "attention"]
    sessions = {n: session(paths[n], args.threads) for n in names}
    texts = prompts(args.prompts)
    took: dict[str, list[float]] = {n: [] for n in names}
    cos: dict[str, list[float]] = {n: [] for n in names}
    for i, text in enumerate([*texts[:20], *texts]):
        order = names[i % 4 :] + names[: i % 4]
        vecs = {}
        for n in order:
            started = time.perf_counter()
            vecs[n] = embed(sessions[n], tok, text)
            if i >= 20:
                took[n].append((time.perf_counter() - started) * 1000)
        for n in names:
            cos[n].append(float(np.dot(vecs[n], vecs["float"])))
    print(f"{len(texts)} prompts, {args.threads} threads, load {os.getloadavg()[0]:.2f}")
    print(
        "| graph | p50 ms | p95 ms | ratio to the graph before | mean cosine to float | RSS MiB |"
    )
    print("|---|---|---|---|---|---|")
    prev = None
    for n in names:
        p50 = statistics.median(took[n])
        p95 = sorted(took[n])[int(0.95 * len(took[n]))]
        ratio = f"{p50 / statistics.median(took[prev]):.2f}" if prev else "-"
        print(
            f"| {n} | {p50:.2f} | {p95:.2f} | {ratio} | {statistics.mean(cos[n]):.4f} | {rss[n]:.0f} |"
        )
        prev = n
    print(f"| float-lean (passages) | - | - | - | - | {rss['float-lean']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
