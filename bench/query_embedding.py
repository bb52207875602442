"""The two graphs a prompt can be embedded with, side by side: MiniLM's float graph (what stored
texts are embedded with) and its integer copy (``memd.embedding.onnx_graph.quantize_matmuls``, what
prompts go through).

    .venv/bin/python bench/query_embedding.py [--prompts 400] [--record]

Prompts: LoCoMo's questions (read in place from ../shared/bench/locomo, categories 1-4) and
coding-session prompts from the zh<->en sets' English sides. For each prompt, both graphs run one
after the other, alternating which goes first, with one and with two onnxruntime threads: the
median milliseconds per prompt and their ratio (both run in the same process, so machine load
hits them alike), and the cosine between the two vectors of the same prompt.

Retrieval agreement on LoCoMo: for every question, the 10 nearest turns of its conversation by
the float vector and by the integer one (the turns embedded once, by the float graph, as memd
stores them): the share of the float top 10 the integer top 10 keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import append_section
from locomo import DATA

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def prompts(limit: int, data: Path) -> tuple[list[str], dict[str, tuple[list[str], list[str]]]]:
    """Up to ``limit`` prompts, and per LoCoMo conversation (its turns, its questions)."""
    convs: dict[str, tuple[list[str], list[str]]] = {}
    for sample in json.loads(data.read_text()):
        conv = sample["conversation"]
        turns = [
            f"{t['speaker']}: {t['text']}"
            for key in sorted(k for k in conv if k.startswith("session_") and k[8:].isdigit())
            for t in conv[key]
        ]
        asked = [str(q["question"]) for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
        convs[sample["sample_id"]] = (turns, asked)
    labelled = Path(__file__).resolve().parent.parent / "tests" / "labelled"
    coding = []
    for name in ("crosslingual_zh_en.jsonl", "crosslingual_heldout.jsonl"):
        for line in (labelled / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                coding.append(str(json.loads(line)["en"]))
    mixed = [q for _, asked in convs.values() for q in asked[:20]] + coding
    return mixed[:limit], convs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=400)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args(argv)
    import numpy as np

    from memd.embedding.embed import Embedder
    from memd.settings import load_settings

    texts, convs = prompts(args.prompts, args.data)
    rows = []
    cosines: list[float] = []
    for threads in (1, 2):
        home = tempfile.mkdtemp(prefix="memd-qe-")
        os.environ["MEMD_EMBEDDING_THREADS"] = str(threads)
        backend = Embedder(load_settings(home=home)).load()._backend
        if backend.query_session is backend.session:
            raise SystemExit("the integer graph did not load: nothing to compare")
        graphs = {"float": backend.session, "integer": backend.query_session}
        for text in texts[:20]:  # warm both
            for session in graphs.values():
                backend._embed(session, [text])
        took: dict[str, list[float]] = {"float": [], "integer": []}
        for n, text in enumerate(texts):
            order = ["float", "integer"] if n % 2 else ["integer", "float"]
            got = {}
            for name in order:
                start = time.perf_counter()
                got[name] = np.asarray(backend._embed(graphs[name], [text])[0])
                took[name].append((time.perf_counter() - start) * 1000)
            if threads == 1:
                cosines.append(float(got["float"] @ got["integer"]))
        f, i = statistics.median(took["float"]), statistics.median(took["integer"])
        rows.append(f"| {threads} | {f:.2f} | {i:.2f} | {i / f:.2f} |")
    # retrieval agreement on LoCoMo, turns embedded by the float graph (as stored)
    backend = Embedder(load_settings(home=tempfile.mkdtemp(prefix="memd-qe-"))).load()._backend
    kept: list[float] = []
    for turns, asked in list(convs.values())[:4]:
        stored = np.asarray(backend.passages(turns))
        for question in asked[:50]:
            exact = np.asarray(backend._embed(backend.session, [question])[0])
            quick = np.asarray(backend._embed(backend.query_session, [question])[0])
            top_f = set(np.argsort(-(stored @ exact))[:10].tolist())
            top_i = set(np.argsort(-(stored @ quick))[:10].tolist())
            kept.append(len(top_f & top_i) / 10)
    cos = sorted(cosines)
    body = "\n".join(
        [
            f"{len(texts)} prompts (LoCoMo questions, read in place, and the English sides of the "
            "zh<->en dev and held-out sets), one at a time, the graphs alternating; median ms per "
            "prompt.",
            "",
            "| onnxruntime threads | float graph ms | integer graph ms | integer / float |",
            "|---|---|---|---|",
            *rows,
            "",
            f"- cosine between the two vectors of the same prompt: min {cos[0]:.4f}, "
            f"p5 {cos[len(cos) // 20]:.4f}, median {statistics.median(cos):.4f}",
            f"- LoCoMo (4 conversations, {len(kept)} questions): the integer vector's 10 nearest "
            f"turns keep {statistics.mean(kept):.3f} of the float vector's 10 nearest "
            f"(min {min(kept):.1f})",
            f"- load average at the end: {os.getloadavg()[0]:.2f}",
        ]
    )
    print(body)
    if args.record:
        append_section(
            "Prompt embedding: float graph and integer graph (bench/query_embedding.py)", body
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
