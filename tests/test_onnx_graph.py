"""The packaged MiniLM with its word-embedding table kept int8 (memd.embedding.onnx_graph): the same
vectors bit for bit, less memory, and the packaged file whenever the rewrite does not apply."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memd.embedding import minilm_files
from memd.embedding.embed import Embedder
from memd.embedding.minilm_files import assemble_minilm, default_model_files
from memd.embedding.models import MINILM_MODEL
from memd.embedding.onnx_graph import GraphRewriteError, gather_before_dequantize, is_rewritten
from memd.settings import load_settings

TEXTS = [
    "a",
    "Which web framework does the backend use?",
    "We decided to deploy the API with docker compose on the staging host, not Kubernetes.",
    "naïve café résumé — unicode, emoji 🚀 and CJK 中文 text",
    "fix: the migration dropped the index on project; rebuilt it " * 40,  # past 256 tokens
] + [f"memory number {i} about the cache rebuild and retries" for i in range(20)]


def model_file(home: Path) -> Path:
    return next((home / "models").glob("all-MiniLM-L6-v2-int8-*")) / "model.onnx"


def test_lean_model_gives_the_packaged_models_vectors_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lean = Embedder(load_settings(home=str(tmp_path / "lean"))).load()
    path = model_file(tmp_path / "lean")
    assert not path.is_symlink() and is_rewritten(path)
    monkeypatch.setattr(minilm_files, "write_lean_model", lambda model, dest: False)
    packaged = Embedder(load_settings(home=str(tmp_path / "packaged"))).load()
    assert model_file(tmp_path / "packaged").resolve() == default_model_files()[0].resolve()
    assert lean.model_id == packaged.model_id  # stored vectors stay valid: nothing to re-embed
    for texts in ([t] for t in TEXTS[:5]):  # one at a time, as a hook's query
        assert np.array_equal(lean.embed_queries(texts), packaged.embed_queries(texts))
    assert np.array_equal(lean.embed(TEXTS), packaged.embed(TEXTS))  # batches of 16, padded


def test_a_copy_of_the_packaged_model_is_rewritten_and_a_rewritten_one_kept(
    tmp_path: Path,
) -> None:
    model, _, _ = default_model_files()
    first = assemble_minilm(tmp_path) / "model.onnx"
    stamp = first.stat().st_mtime_ns
    assert (assemble_minilm(tmp_path) / "model.onnx").stat().st_mtime_ns == stamp  # kept
    first.unlink()
    shutil.copyfile(model, first)  # e.g. a home copied with its links followed
    assert not is_rewritten(first)
    assert is_rewritten(assemble_minilm(tmp_path) / "model.onnx")
    first.write_bytes(b"")  # a truncated file is not taken for a rewritten one
    assert is_rewritten(assemble_minilm(tmp_path) / "model.onnx")


def test_other_graphs_are_refused_and_loaded_as_packaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, tokenizer, sha = default_model_files()
    lean = gather_before_dequantize(model.read_bytes())
    with pytest.raises(GraphRewriteError, match="expected one Cast"):
        gather_before_dequantize(lean)  # nothing left to rewrite
    with pytest.raises(GraphRewriteError):
        gather_before_dequantize(b"\x3a\xff")  # a graph field longer than the file
    with pytest.raises(GraphRewriteError, match="no graph"):
        gather_before_dequantize(b"")
    # A package whose graph has another shape: its file is linked and loaded as it is.
    other = tmp_path / "other.onnx"
    other.write_bytes(lean)
    monkeypatch.setattr(minilm_files, "default_model_files", lambda: (other, tokenizer, sha))
    path = Path(assemble_minilm(tmp_path / "home")) / "model.onnx"
    assert path.is_symlink() and path.resolve() == other.resolve()
    vectors = Embedder(load_settings(home=str(tmp_path / "home"))).embed_queries(TEXTS[1:2])
    assert abs(float(np.linalg.norm(vectors[0])) - 1) < 1e-5


MEASURE = """
import ctypes, json, sys
from memd.embedding.embed import Embedder
from memd.settings import load_settings
import memd.embedding.minilm_files as minilm_files
def anon():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("Anonymous:"):
            return int(line.split()[1]) / 1024
if sys.argv[1] == "packaged":
    minilm_files.write_lean_model = lambda model, dest: False
import fastembed  # imports are not the model's
before = anon()
e = Embedder(load_settings(home=sys.argv[2])).load()
e.embed_query("warm up the session once")
ctypes.CDLL("libc.so.6").malloc_trim(0)
print(json.dumps(anon() - before))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, trims glibc")
def test_lean_model_takes_less_memory(tmp_path: Path) -> None:
    used = {}
    for kind in ("packaged", "lean"):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, kind, str(tmp_path / kind)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        used[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    # float32 table 44.7 MiB, int8 table 11.2 MiB: about 33 MiB less
    assert used["packaged"] - used["lean"] > 25, used


def test_direct_minilm_backend_gives_fastembeds_vectors_bit_for_bit(tmp_path: Path) -> None:
    """The daemon loads MiniLM without fastembed; the vectors are the ones fastembed made."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    settings = load_settings(home=str(tmp_path))
    ours = Embedder(settings).load()
    assert "fastembed" not in type(ours._backend).__module__
    model_dir = Path(assemble_minilm(settings.home))
    if MINILM_MODEL not in {m["model"] for m in TextEmbedding.list_supported_models()}:
        TextEmbedding.add_custom_model(
            model=MINILM_MODEL,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
            dim=384,
            model_file="model.onnx",
        )
    reference = TextEmbedding(
        MINILM_MODEL,
        specific_model_path=str(model_dir),
        threads=settings.embedding_threads,
        enable_cpu_mem_arena=False,
    )
    for texts in [TEXTS[:1], TEXTS[1:2], TEXTS[4:5], TEXTS[:16], TEXTS[16:]]:
        theirs = [v.tolist() for v in reference.embed(texts, batch_size=16)]
        # The backend (the Embedder hands it a text holding Chinese as its English gloss).
        assert ours._backend.passages(texts) == theirs
        if TEXTS[3] not in texts:  # the one text with Chinese in it
            assert ours.embed(texts) == theirs


def test_prompts_use_the_integer_graph_close_to_the_float_one(tmp_path: Path) -> None:
    """Prompts are embedded by the graph whose matrix products run in 8-bit integers; stored
    texts by the float graph. The two vectors of one text stay close, and rank alike."""
    from memd.embedding.onnx_graph import is_quantized, quantize_matmuls

    embedder = Embedder(load_settings(home=str(tmp_path))).load()
    query_model = model_file(tmp_path).with_name(minilm_files.QUERY_MODEL)
    assert is_quantized(query_model) and not is_quantized(model_file(tmp_path))
    assert embedder._backend.query_session is not embedder._backend.session
    with pytest.raises(GraphRewriteError, match="no MatMul"):
        quantize_matmuls(query_model.read_bytes())  # nothing left to quantize
    floats = np.array(embedder.embed(TEXTS))
    ints = np.array([embedder.embed_query(t) for t in TEXTS])
    assert not np.array_equal(floats, ints)  # really another graph
    same = (floats * ints).sum(axis=1)
    assert same.min() > 0.97, same
    # each prompt still finds its own text first among the others
    assert ((ints @ floats.T).argmax(axis=1) == np.arange(len(TEXTS))).mean() > 0.9
    stamp = query_model.stat().st_mtime_ns
    assemble_minilm(tmp_path)
    assert query_model.stat().st_mtime_ns == stamp  # written once, then kept


def test_without_the_integer_graph_prompts_use_the_float_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minilm_files, "write_query_model", lambda model, dest: False)
    embedder = Embedder(load_settings(home=str(tmp_path))).load()
    assert not model_file(tmp_path).with_name(minilm_files.QUERY_MODEL).exists()
    assert embedder._backend.query_session is embedder._backend.session
    assert np.array_equal(embedder.embed(TEXTS[1:2]), embedder.embed_queries(TEXTS[1:2]))
    assert not embedder.release_passages()  # the prompts' graph too: kept
    assert embedder._backend.query_session is embedder._backend.session


def test_the_float_graph_loads_for_stored_texts_only_and_can_be_released(
    tmp_path: Path,
) -> None:
    """A daemon that only answers prompts never holds the stored texts' float graph; after
    it is released, the next stored text loads it again and gets the same vector."""
    embedder = Embedder(load_settings(home=str(tmp_path))).load()
    backend = embedder._backend
    assert not backend.holds_passages and embedder.passage_loads == 0
    embedder.embed_queries(TEXTS[:3])
    assert not backend.holds_passages and embedder.passage_loads == 0
    first = embedder.embed(TEXTS[:2])
    assert backend.holds_passages and embedder.passage_loads == 1
    assert embedder.release_passages()
    assert not backend.holds_passages
    assert not embedder.release_passages()  # nothing left to drop
    assert embedder.embed_queries(TEXTS[:1])  # prompts go on meanwhile
    assert embedder.embed(TEXTS[:2]) == first
    assert backend.holds_passages and embedder.passage_loads == 2


def test_the_query_graph_is_fused_and_embeds_as_the_unfused_one(tmp_path: Path) -> None:
    """The prompt graph is the integer graph with its bias adds, GELUs, NaN guards and key
    transposes fused (memd.embedding.onnx_fuse), then each attention block as one QAttention
    (memd.embedding.onnx_attention): 240 operators fewer, vectors as close to the float
    graph's as the unfused integer graph's, and written again over a query graph an older memd
    left unfused or fused without the attention blocks."""
    import onnxruntime as ort

    from memd.embedding.onnx_attention import fuse_attention
    from memd.embedding.onnx_fuse import fuse_operators, parse
    from memd.embedding.onnx_graph import quantize_matmuls, with_graph
    from memd.embedding.onnx_query import fuse_query_graph, is_fused

    embedder = Embedder(load_settings(home=str(tmp_path))).load()
    query_model = model_file(tmp_path).with_name(minilm_files.QUERY_MODEL)
    assert is_fused(query_model) and not is_fused(model_file(tmp_path))
    unfused = quantize_matmuls(model_file(tmp_path).read_bytes())
    fused, counts = fuse_query_graph(unfused)
    assert counts == {"bias": 36, "gelu": 6, "nan_guard": 6, "key_transpose": 6, "attention": 6}
    assert fused == query_model.read_bytes()
    with pytest.raises(GraphRewriteError, match="nothing to fuse"):
        fuse_query_graph(fused)

    def ops(graph: bytes) -> list[str]:
        g = parse(graph)
        return [n.op for n in g.nodes if n.at not in g.gone]

    before, after = ops(unfused), ops(fused)
    assert len(before) - len(after) == 240
    assert "Erf" in before and "Erf" not in after and "IsNaN" not in after
    assert after.count("Gelu") == 6 and after.count("QAttention") == 6
    assert "Transpose" not in after and "Softmax" not in after and "Where" not in after
    assert before.count("DynamicQuantizeMatMul") - after.count("DynamicQuantizeMatMul") == 18
    assert before.count("MatMul") == 12 and "MatMul" not in after  # scores and context
    graph = parse(fused)  # no constant left behind (onnxruntime warns about each at load)
    read = {name for n in graph.nodes for name in n.inputs}
    assert all(name in read for _, name in graph.initializers)

    # The graph as the four rewrites alone left it (what memd wrote before the attention)
    g = parse(unfused)
    fuse_operators(g)
    g.drop_unread_constants()
    without_attention = with_graph(memoryview(unfused), b"".join(g.parts))

    backend = embedder._backend
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1

    def session(graph: bytes) -> object:
        return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    plain, older = session(unfused), session(without_attention)
    for texts in [TEXTS[1:2], TEXTS[3:4], TEXTS[:16]]:  # one prompt, and a padded batch
        ours = np.array(backend._embed(backend.query_session, texts))
        theirs = np.array(backend._embed(plain, texts))
        assert (ours * theirs).sum(axis=1).min() > 0.99
    # A padded batch gives each prompt about the vector it gets alone, as the older graph did
    # (padding is masked out of the attention; the batch shares one quantization scale).

    def agreement(graph: object) -> np.ndarray:
        batch = np.array(backend._embed(graph, TEXTS[:16]))
        alone = np.array([backend._embed(graph, [t])[0] for t in TEXTS[:16]])
        return (batch * alone).sum(axis=1)

    ours_agree, old_agree = agreement(backend.query_session), agreement(older)
    assert ours_agree.min() > 0.97 and ours_agree.mean() >= old_agree.mean() - 0.002, (
        ours_agree,
        old_agree,
    )
    # As close to the float graph (what stored texts are embedded with) as before, per text
    prompts = [*TEXTS, *(f"how do we {w} the service again?" for w in ("deploy", "test", "cache"))]
    floats = np.array(backend.passages(prompts))  # the raw texts, as the graphs above get them
    mine = np.array([backend._embed(backend.query_session, [t])[0] for t in prompts])
    old = np.array([backend._embed(older, [t])[0] for t in prompts])
    mine_cos, old_cos = (mine * floats).sum(axis=1), (old * floats).sum(axis=1)
    assert mine_cos.mean() >= old_cos.mean() - 0.002 and mine_cos.min() > 0.97, (mine_cos, old_cos)
    floats = np.array(backend.passages(TEXTS))
    ints = np.array(backend.queries(TEXTS))
    assert ((ints @ floats.T).argmax(axis=1) == np.arange(len(TEXTS))).mean() > 0.9

    for older_file in (unfused, without_attention):  # as older memds wrote it
        query_model.write_bytes(older_file)
        assert not is_fused(query_model)
        assemble_minilm(tmp_path)
        assert is_fused(query_model) and query_model.read_bytes() == fused
    assert fuse_attention(parse(fused), {}) == []  # nothing left to fuse


def test_attention_blocks_of_another_shape_are_left_alone(tmp_path: Path) -> None:
    """A block whose query and key scales do not give the heads' size, or a graph without the
    attention_mask input, keeps its operators (QAttention would compute something else)."""
    from memd.embedding.onnx_attention import fuse_attention, initializers_by_name
    from memd.embedding.onnx_fuse import fuse_operators, parse
    from memd.embedding.onnx_graph import graph_of, quantize_matmuls

    Embedder(load_settings(home=str(tmp_path))).load()
    unfused = quantize_matmuls(model_file(tmp_path).read_bytes())
    weights = initializers_by_name(graph_of(memoryview(unfused)))

    def prepared() -> object:
        g = parse(unfused)
        fuse_operators(g)
        return g

    g = prepared()
    assert len(fuse_attention(g, weights)) == 18  # as shipped: six blocks, three tensors each
    g = prepared()
    scales = [name for name, v in g.scalars.items() if abs(v - 32**-0.25) < 1e-6]
    assert scales  # the 1/sqrt(sqrt(32)) that queries and keys are multiplied by
    g.scalars.update({name: 2 * g.scalars[name] for name in scales})  # head size 2, not 32
    assert fuse_attention(g, weights) == []
    g = prepared()
    g.outputs.discard("attention_mask")
    assert fuse_attention(g, weights) == []
