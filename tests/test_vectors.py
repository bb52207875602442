"""The vector cache's full-text half (BM25 over the cached texts), against the table and a
plain-Python reference: a real LanceDB in a temporary directory and the real model."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest
from daemon_process import daemon_env

from memd.daemon.app import App
from memd.models import USER_SCOPE
from memd.recall.hits import Relevance
from memd.recall.retrieve import recall, where_clause
from memd.settings import load_settings
from memd.store.filters import match

PROJECT = "/work/shop"
TEXTS = [
    "Deploy the billing service with the GitHub Actions release workflow only.",
    "Never deploy with make deploy; production deploys go through the release workflow.",
    "The billing database is PostgreSQL 16.",
    "Run pytest -x before every commit; the CI job runs the same command.",
    "接口报错时统一用 ElMessage 弹窗提示用户",
    "Caching: Redis is the job broker, not a cache.",
    "The frontend uses pnpm and Vite; deploy previews go to Netlify.",
]
USER_TEXTS = ["I prefer short commit messages in English."]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    root = tmp_path_factory.mktemp("vectors")
    env = daemon_env(root, str(root / "no.sock"))
    memd = App(load_settings(home=env["MEMD_HOME"], socket=env["MEMD_SOCKET"])).open(writer=True)
    for text in TEXTS:
        memd.add(text, project=PROJECT)
    for text in USER_TEXTS:
        memd.add(text, project=USER_SCOPE, kind="preference")
    try:
        yield memd
    finally:
        memd.close()


def reference_bm25(texts: dict[str, str], terms: list[str]) -> dict[str, float]:
    """BM25 (k1 1.2, b 0.75, Lucene's idf) with case-blind substring counts and character
    lengths, written out plainly."""
    n = len(texts)
    mean = sum(len(t) for t in texts.values()) / n
    df = {term: sum(1 for t in texts.values() if term in t.lower()) for term in terms}
    out: dict[str, float] = {}
    for mid, text in texts.items():
        score = 0.0
        for term in terms:
            tf = text.lower().count(term)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                norm = 1.2 * (1 - 0.75 + 0.75 * len(text) / mean)
                score += idf * tf * 2.2 / (tf + norm)
        if score:
            out[mid] = score
    return out


def test_cached_text_search_scores_bm25_over_the_scope(app: App) -> None:
    cache, _ = app.recall_cache()
    scope = [PROJECT, USER_SCOPE]
    terms = ["deploy", "release", "commit", "弹窗"]
    found = cache.text_search(scope, terms, 5)
    assert found is not None
    memories = app.store.query(where_clause(scope, None, ("active",)))
    texts = {m.id: m.text for m in memories}
    expected = reference_bm25(texts, terms)
    assert found.total == len(TEXTS) + len(USER_TEXTS)
    assert found.counts == {"deploy": 3, "release": 2, "commit": 2, "弹窗": 1}
    best = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    assert [mid for mid, _ in found.hits] == [mid for mid, _ in best]
    for (_, got), (_, want) in zip(found.hits, best, strict=True):
        assert got == pytest.approx(want, rel=1e-4)
    # The table's own count of the same terms (the path without a cache) agrees.
    assert app.store.document_frequencies(where_clause(scope, None, ("active",)), terms) == (
        found.total,
        found.counts,
    )


def test_cached_text_search_follows_an_edit_and_a_forget(app: App) -> None:
    cache, _ = app.recall_cache()
    scope = [PROJECT, USER_SCOPE]
    before = cache.text_search(scope, ["zebra"], 5)
    assert before is not None and before.hits == [] and before.counts == {"zebra": 0}
    target = next(m for m in app.store.query(None) if m.text.startswith("The billing database"))
    app.edit(target.id, text="The billing database is PostgreSQL 16, hosted next to the zebra.")
    after = cache.text_search(scope, ["zebra"], 5)
    assert after is not None and [mid for mid, _ in after.hits] == [target.id]
    app.forget(target.id)
    gone = cache.text_search(scope, ["zebra"], 5)
    assert gone is not None and gone.hits == [] and gone.total == before.total - 1


def test_recall_finds_a_memory_by_its_words_alone_through_the_cache(app: App) -> None:
    cache, batcher = app.recall_cache()
    found = recall(
        app.store,
        "How do I ship to production? make deploy?",
        [PROJECT],
        vectors=cache,
        embed_later=batcher.submit,
    )
    by_text = {r.text: r for r in found}
    never = by_text[TEXTS[1]]
    assert never.relevant
    assert isinstance(never.breakdown, Relevance)
    assert never.breakdown.bm25 > 0  # a full-text candidate, scored by the cache


def test_chinese_terms_are_not_scanned_for_in_a_project_without_chinese(app: App) -> None:
    """The bridge adds Chinese translations to an English prompt's terms; where no cached text
    holds a Chinese character they cannot match and are not scanned for. Where one does, a
    Chinese term is still found."""
    cache, _ = app.recall_cache()
    # the user-wide scope holds English only; the project holds one Chinese memory
    english = cache.text_search([USER_SCOPE], ["commit", "提交", "弹窗"], 5)
    assert english is not None and english.counts == {"commit": 1, "提交": 0, "弹窗": 0}
    known = cache._terms[USER_SCOPE][1]
    assert "commit" in known and "提交" not in known and "弹窗" not in known
    mixed = cache.text_search([PROJECT, USER_SCOPE], ["弹窗"], 5)
    assert mixed is not None and mixed.counts == {"弹窗": 1} and len(mixed.hits) == 1
    assert "弹窗" in cache._terms[PROJECT][1]


def test_cached_memories_are_made_once_per_entry_and_follow_an_edit(app: App) -> None:
    cache, _ = app.recall_cache()
    ids = [m.id for m in app.store.query(match(project=PROJECT)) if "Redis" in m.text]
    first = cache.memories_of([PROJECT], ids)
    again = cache.memories_of([PROJECT], ids)
    assert first and first[ids[0]] is again[ids[0]]  # the same object: made once
    vector = app.store.embedder.embed_query("Redis job broker")
    nearest = cache.search(vector, [PROJECT], 3)
    assert nearest is not None and any(m is first[ids[0]] for m, _ in nearest)
    app.edit(ids[0], text="Caching: Redis is the job broker and the session store.")
    edited = cache.memories_of([PROJECT], ids)
    assert edited[ids[0]].text.endswith("the session store.")
    assert edited[ids[0]] is not first[ids[0]]


def test_same_query_within_the_window_shares_one_embedding(app: App) -> None:
    """The daemon starts a prompt's embedding when its request is read; the recall that asks
    for the same text joins it instead of embedding it again. A failed embedding is not
    shared: the next request for that text runs the model again."""
    from memd.recall.queries import QueryBatcher

    calls: list[list[str]] = []
    fail = {"now": False}

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        if fail["now"]:
            raise RuntimeError("model failed")
        return app.store.embedder.embed_queries(texts)

    batcher = QueryBatcher(embed)
    try:
        first = batcher.submit("how do we deploy billing?")
        again = batcher.submit("how do we deploy billing?")
        assert again is first
        assert first.result(timeout=30) == again.result(timeout=30)
        assert batcher.submit("how do we deploy billing?").result(timeout=30) == first.result()
        assert sum(t.count("how do we deploy billing?") for t in calls) == 1
        assert batcher.submit("another prompt").result(timeout=30) != first.result()

        fail["now"] = True
        broken = batcher.submit("a prompt the model fails on")
        with pytest.raises(RuntimeError):
            broken.result(timeout=30)
        fail["now"] = False
        retried = batcher.submit("a prompt the model fails on")
        assert retried is not broken
        assert len(retried.result(timeout=30)) == len(first.result())
    finally:
        batcher.close()


def test_rows_read_value_by_value_equal_a_take() -> None:
    """A few rows are read value by value (``Table.take`` costs the same for 3 rows as for
    300); they must come out as ``take(...).to_pylist()`` gives them, nulls and nested
    sources included, and many rows still go through ``take``."""
    import pyarrow as pa

    from memd.recall.vectors import FEW_ROWS, row_dicts

    n = FEW_ROWS * 3
    source = pa.struct([("session_id", pa.string()), ("uuid", pa.string())])
    rows = pa.table(
        {
            "id": [f"m{i:03d}" for i in range(n)],
            "text": [None if i % 7 == 0 else f"text {i} 接口" for i in range(n)],
            "importance": pa.array([i / 10 for i in range(n)], type=pa.float32()),
            "pinned": [i % 2 == 0 for i in range(n)],
            "hits": pa.array([i for i in range(n)], type=pa.int32()),
            "sources": pa.array(
                [[{"session_id": f"s{i}", "uuid": f"u{i}"}] if i % 3 else [] for i in range(n)],
                type=pa.list_(source),
            ),
        }
    )
    for picked in ([5], [0, 7, 14, 3], list(range(n - 1, -1, -3)), list(range(FEW_ROWS + 1))):
        assert row_dicts(rows, picked) == rows.take(picked).to_pylist()


def test_the_daemon_reads_a_built_projects_texts_ahead_of_its_hooks(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from memd.recall import disputed
    from memd.store import similar

    root = tmp_path_factory.mktemp("readahead")
    env = daemon_env(root, str(root / "no.sock"))
    settings = load_settings(home=env["MEMD_HOME"], socket=env["MEMD_SOCKET"])
    texts = [f"{text} (read ahead {n})" for n, text in enumerate(TEXTS)]  # unseen before
    memd = App(settings, resident=True).open(writer=True)  # the daemon's
    try:
        for text in texts:
            memd.add(text, project=PROJECT)
        cache, _ = memd.recall_cache()
        assert cache.on_build is not None
        deadline = time.monotonic() + 30
        while memd.reader.read < len(texts) and time.monotonic() < deadline:
            time.sleep(0.05)  # what the adds built (for their neighbours) is read
        builds, read = cache.builds, memd.reader.read
        with memd.reader.hook():  # a hook is answered: the reading waits for it
            built = cache.rows(PROJECT)
            time.sleep(0.5)
            assert memd.reader.read - read <= 1  # one text at most, begun before it looked
        assert built is not None and cache.builds == builds + 1
        stored = built[0].column("text").to_pylist()  # as memd stored them
        assert len(stored) == len(texts)
        while memd.reader.read < read + len(stored) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert memd.reader.read >= read + len(stored)  # (an earlier build may be in flight)
        values, features = disputed._values.cache_info(), similar.features.cache_info()
        for text in stored:  # what a hook's disputes and conflicts read: found, not read again
            disputed._values(text, False)
            similar.features(text)
        assert disputed._values.cache_info().hits - values.hits == len(stored)
        assert disputed._values.cache_info().misses == values.misses
        assert similar.features.cache_info().hits - features.hits == len(stored)
    finally:
        memd.close()
    one_shot = App(settings).open(writer=False)  # a CLI command reads nothing ahead
    try:
        assert one_shot.recall_cache()[0].on_build is None
    finally:
        one_shot.close()


def test_texts_are_read_ahead_only_while_the_caches_can_hold_them(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the text caches' size, reading ahead would only push one project's texts out for
    another's: a build then hands nothing to the reader."""
    from memd.recall import vectors

    built: list[str] = []
    entry = vectors.VectorCache(app.store).rows(PROJECT)
    assert entry is not None
    held = entry[0].num_rows  # (the tests above edit and forget some)
    monkeypatch.setattr(vectors, "TEXT_CACHE", held - 1)
    small = vectors.VectorCache(app.store, on_build=lambda project, rows: built.append(project))
    assert small.rows(PROJECT) is not None and small.builds == 1
    assert built == []
    monkeypatch.setattr(vectors, "TEXT_CACHE", held)
    fits = vectors.VectorCache(app.store, on_build=lambda project, rows: built.append(project))
    assert fits.rows(PROJECT) is not None
    assert built == [PROJECT]
