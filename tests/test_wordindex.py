"""The vector cache's word index finds exactly what Arrow's case-blind substring count finds.

The hook's BM25 takes each term's postings from :class:`memd.recall.wordindex.WordIndex`
instead of counting the term in every cached text; the counts must be the same, term by term
and row by row, or the hook would rank differently from before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from memd.recall.wordindex import WordIndex
from memd.text import searchterms

LABELLED = Path(__file__).parent / "labelled"

EDGES = [
    "Ünïcode ÄBC über Straße İstanbul; the DB is PostgreSQL 16 (node.js v0.5.0, ci/cd).",
    "C++ and c# and $HOME * ? ^ \\ | [x] a+b — aaaa aa deploy deployed redeploying",
    "",
    "数据库 数据库备份数据 用 pnpm 管理依赖\u00a0nbsp\ttab\nnewline",
    "DEPLOY Deploy deploy-prod deploy_prod deploy.yml",
]


def corpus() -> list[str]:
    texts = list(EDGES)
    for name in ("crosslingual_zh_en.jsonl", "crosslingual_distractors.jsonl"):
        for line in (LABELLED / name).read_text().splitlines():
            row = json.loads(line)
            texts += [str(v) for k, v in row.items() if k in ("zh", "en", "text")]
    return texts


def arrow_postings(texts: pa.Array, term: str) -> tuple[np.ndarray, np.ndarray]:
    tf = pc.count_substring(texts, term, ignore_case=True).to_numpy(zero_copy_only=False)
    idx = np.flatnonzero(tf)
    return idx, tf[idx].astype(np.float32)


def test_every_term_has_the_postings_arrow_counts() -> None:
    texts = pa.array(corpus())
    index = WordIndex(texts)
    terms = {t for text in texts.to_pylist() for t in searchterms.terms(text)}
    terms |= {"über", "straße", "istanbul", "node.js", "v0.5.0", "ci/cd", "c++", "c#", "$home"}
    terms |= {"*", "?", "\\", "|", "[x]", "a+b", "aa", "a", "e", "deploy", "数据", "nbsp", "zzzq"}
    assert len(terms) > 500
    for term in sorted(terms):
        idx, tf = index.postings(term)
        want_idx, want_tf = arrow_postings(texts, term)
        assert idx.dtype == np.int32 and tf.dtype == np.float32, term
        assert np.array_equal(idx, want_idx), term
        assert np.array_equal(tf, want_tf), term


@pytest.mark.parametrize(
    ("term", "rows"),
    [
        ("deploy", {1, 4}),  # many words, several in one text: counts add up
        ("aa", {1}),  # non-overlapping within a word: "aaaa" holds it twice, "aa" once
        ("e", None),  # in most words: counted row by row instead
        ("数据", {3}),
    ],
)
def test_the_paths_of_a_lookup(term: str, rows: set[int] | None) -> None:
    texts = pa.array(EDGES)
    idx, tf = WordIndex(texts).postings(term)
    want_idx, want_tf = arrow_postings(texts, term)
    assert np.array_equal(idx, want_idx) and np.array_equal(tf, want_tf)
    if rows is not None:
        assert set(idx.tolist()) == rows


def test_text_search_over_the_index_scores_plain_bm25(tmp_path: Path) -> None:
    """The cache's BM25, its postings from the index, against BM25 written out plainly, for
    prompts in both languages over a real store of ~200 memories."""
    from daemon_process import daemon_env
    from test_vectors import reference_bm25

    from memd.daemon.app import App
    from memd.recall.retrieve import where_clause
    from memd.settings import load_settings

    env = daemon_env(tmp_path, str(tmp_path / "no.sock"))
    app = App(load_settings(home=env["MEMD_HOME"], socket=env["MEMD_SOCKET"])).open(writer=True)
    try:
        for text in corpus():
            if text.strip():
                app.add(text, project="/p")
        cache, _ = app.recall_cache()
        texts = {m.id: m.text for m in app.store.query(where_clause(["/p"], None, ("active",)))}
        prompts = ["How do we deploy to production?", "数据库备份怎么做", "pnpm 依赖 node.js c++"]
        for prompt in prompts:
            terms = list(dict.fromkeys(searchterms.terms(prompt)))
            found = cache.text_search(["/p"], terms, 8)
            assert found is not None and found.hits, prompt
            want = sorted(reference_bm25(texts, terms).items(), key=lambda kv: (-kv[1], kv[0]))
            best = dict(want)
            for (mid, got), (_, score) in zip(found.hits, want, strict=False):
                assert got == pytest.approx(score, rel=1e-4), prompt  # the n-th best score
                assert best.get(mid) == pytest.approx(got, rel=1e-4), prompt  # and its own
    finally:
        app.close()
