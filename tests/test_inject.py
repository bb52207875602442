"""Injection: relevant, budgeted, deduped per session, never stale or superseded.

Real store, real embedding model, real state database, in-process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hitdata import hit
from minilm_app import minilm_app

from memd.daemon.app import App
from memd.ingest.transcript import MEMD_CONTEXT_HEADER, strip_injected
from memd.models import USER_SCOPE, Memory, Source
from memd.names import STOPPED_TOPIC
from memd.recall.block import CLOSE_TAG, HEADER, OPEN_TAG, BlockSize, Item, render, spoken
from memd.recall.choose import choose
from memd.recall.hits import Hit
from memd.recall.inject import HARD_CAP, Injector
from memd.recall.injected import SessionMemory
from memd.recall.retrieve import normalize_query
from memd.recall.vectors import quantize
from memd.state import State
from memd.store.filters import match


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    # The injection thresholds here (relevance 0.35) were tuned on MiniLM cosines.
    with minilm_app(tmp_path_factory.mktemp("inject")) as application:
        application.store.embedder.load()
        yield application


@pytest.fixture
def state(tmp_path: Path) -> Iterator[State]:
    st = State(tmp_path / "state.db")
    yield st
    st.close()


def make_project(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    (path / ".git").mkdir(parents=True)
    return str(path)


def add(app: App, project: str, text: str, **kw: Any) -> str:
    return str(app.add(text, project=project, **kw)["memory"]["id"])


def add_many(app: App, project: str, texts: list[str], **kw: Any) -> None:
    """Many memories in one batched write (one merge_insert)."""
    app.store.write([Memory(text=t, project=project, **kw) for t in texts], {})


def ask(inj: Injector, project: str, prompt: str, session: str = "s", **kw: Any) -> Any:
    return inj.prompt_context({"cwd": project, "prompt": prompt, "session_id": session}, **kw)


def test_relevant_memory_is_injected_in_a_tagged_block(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "The billing service stores invoices in PostgreSQL 16.", kind="decision")
    inj = Injector(app, app.settings)
    result = ask(inj, p, "Which database holds the invoices?")
    assert result.text.startswith(OPEN_TAG + "\n" + HEADER)
    assert result.text.endswith(CLOSE_TAG)
    assert HEADER.startswith(MEMD_CONTEXT_HEADER)
    assert "Decisions:\n- The billing service stores invoices in PostgreSQL 16." in result.text
    assert result.chosen[0].why.startswith("total ")
    # The transcript parser strips the whole block: memd never re-learns its own injection.
    assert strip_injected(result.text + "\nreal question") == "real question"


def test_unrelated_prompt_injects_nothing(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "The billing service stores invoices in PostgreSQL 16.", kind="decision")
    add(app, p, "Deploys go through GitHub Actions to Fly.io.")
    inj = Injector(app, app.settings)
    for prompt in (
        "Write a haiku about autumn leaves.",
        "What's the weather like in Paris tomorrow?",
        "thanks!",
        "hello",
        "/clear",
    ):
        assert ask(inj, p, prompt, session=prompt).text == "", prompt


def test_other_projects_never_leak(app: App, tmp_path: Path) -> None:
    a, b = make_project(tmp_path, "a"), make_project(tmp_path, "b")
    add(app, b, "The billing service keeps invoices in MongoDB.", kind="decision")
    inj = Injector(app, app.settings)
    assert ask(inj, a, "Which database holds the invoices?").text == ""
    assert "MongoDB" in ask(inj, b, "Which database holds the invoices?").text


def test_user_wide_preferences_apply_everywhere(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(
        app,
        USER_SCOPE,
        "The user writes commit messages in the imperative mood.",
        kind="preference",
    )
    inj = Injector(app, app.settings)
    text = ask(inj, p, "Write the commit message for this change").text
    assert "imperative mood" in text and "[user-wide]" in text


def test_budget_is_respected_and_trims_the_least_relevant(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(
        app,
        p,
        "The payment retry worker uses exponential backoff capped at 10 minutes.",
        kind="decision",
        importance=0.9,
    )
    notes = [
        f"Payment retries note {n}: the worker logs each attempt with the invoice id, "
        f"the gateway response code and the retry count, number {n}."
        for n in range(25)
    ]
    add_many(app, p, notes, importance=0.3)
    inj = Injector(app, app.settings)
    full = ask(inj, p, "How does the payment retry worker back off?", session="b1", touch=False)
    assert 0 < len(full.text) <= app.settings.prompt_budget_chars
    assert "exponential backoff" in full.text  # the most relevant and important stays
    small = app.settings.model_copy(update={"prompt_budget_chars": 300})
    tight = Injector(app, small)
    text = ask(tight, p, "How does the payment retry worker back off?", session="b2").text
    assert 0 < len(text) <= 300
    assert "exponential backoff" in text
    assert text.count("\n- ") < full.text.count("\n- ")


def test_choose_never_exceeds_the_budget_or_the_hard_cap() -> None:
    results = [
        {
            "id": str(n),
            "text": f"word{n} " * (20 + n),
            "kind": "fact",
            "score": n / 100,
            "sources": [{"uuid": f"u{n}"}],
            "score_breakdown": {"total": n / 100, "importance": 0.5, "recency": 1.0},
        }
        for n in range(300)
    ]
    results = [hit(r) for r in results]
    for budget in (0, 50, 200, 1500, 2500, 10_000, 50_000):
        plan = choose(results, set(), min(budget, HARD_CAP), (), brief=False)
        assert len(render(plan.items, plan.footer)) <= min(budget, HARD_CAP)
    kept = choose(results, set(), 1500, (), brief=False).items
    assert kept[0].priority == max(r.score for r in results)
    assert render([]) == ""
    assert isinstance(kept[0], Item)


def test_superseded_and_archived_are_never_injected(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    old = add(
        app, p, "The cache layer uses Memcached for session storage.", kind="decision", pin=True
    )
    gone = add(app, p, "The cache layer keeps session storage in local files.", kind="decision")
    app.store.update_fields(
        {old: {"status": "superseded", "superseded_by": gone}, gone: {"status": "archived"}}
    )
    inj = Injector(app, app.settings)
    assert ask(inj, p, "Where is session storage kept by the cache layer?").text == ""
    brief = inj.session_context({"cwd": p, "session_id": "sb", "source": "startup"})
    assert "Memcached" not in brief.text and "local files" not in brief.text


def test_excerpts_need_more_relevance_than_typed_memories(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(
        app,
        p,
        "user: the login page is slow; assistant: profiling shows the bcrypt cost is 14",
        kind="excerpt",
    )
    add(app, p, "Login is slow because the bcrypt cost factor is set to 14.", kind="bugfix")
    inj = Injector(app, app.settings)
    result = ask(inj, p, "Why is the login page slow?")
    kinds = [c.hit.kind for c in result.chosen]
    assert "bugfix" in kinds
    if "excerpt" in kinds:  # only when very relevant, and after the typed memory
        assert kinds.index("bugfix") < kinds.index("excerpt")
    # An excerpt needs excerpt_margin more relevance than a typed memory: set the threshold
    # so that the excerpt's relevance is just under its own bar.
    found = {r.kind: r for r in inj.recall("Why is the login page slow?", p)}
    margin = found["excerpt"].threshold - found["bugfix"].threshold
    assert margin > 0
    bar = round(found["excerpt"].relevance - margin / 2, 4)
    strict = Injector(app, app.settings.model_copy(update={"relevance_threshold": bar}))
    strict_result = ask(strict, p, "Why is the login page slow?", session="strict")
    # Under its own bar the excerpt is not relevant: at most a near miss, after the typed one.
    assert strict_result.chosen[0].hit.kind == "bugfix"
    below = {r.kind: r for r in strict.recall("Why is the login page slow?", p)}
    assert not below["excerpt"].relevant and below["bugfix"].relevant


def test_same_session_dedupe_survives_a_restart(app: App, tmp_path: Path, state: State) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "Feature flags are stored in LaunchDarkly.", kind="decision")
    inj = Injector(app, app.settings, state)
    assert "LaunchDarkly" in ask(inj, p, "Where are feature flags stored?", session="d1").text
    assert ask(inj, p, "Where do the feature flags live?", session="d1").text == ""
    inj.flush()
    restarted = Injector(app, app.settings, state)
    assert ask(restarted, p, "Where are feature flags stored?", session="d1").text == ""
    assert "LaunchDarkly" in ask(restarted, p, "Where are feature flags stored?", session="d2").text


def test_preview_neither_dedupes_nor_touches(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    mid = add(app, p, "Static assets are served from CloudFront.", kind="fact")
    inj = Injector(app, app.settings)
    for _ in range(2):
        r = ask(
            inj, p, "Where are static assets served from?", session="pv", dedupe=False, touch=False
        )
        assert "CloudFront" in r.text
    assert inj.take_touches() == []
    assert app.store.get(mid).hits == 0


def test_injection_updates_hits_and_last_used_in_one_batch(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    mid = add(app, p, "The search index is rebuilt nightly by a Celery beat task.", kind="fact")
    inj = Injector(app, app.settings)
    ask(inj, p, "When is the search index rebuilt?", session="h1")
    ask(inj, p, "How often is the search index rebuilt?", session="h2")
    calls: list[list[str]] = []

    def touch(ids: list[str]) -> None:
        calls.append(ids)
        app.store.touch(ids)

    assert inj.flush(touch) == 1
    assert calls == [[mid]]  # one batched update, ids deduplicated
    memory = app.store.get(mid)
    assert memory.hits == 1 and memory.last_used_at
    assert inj.flush(touch) == 0 and len(calls) == 1


def test_session_start_brief(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "Never force-push to the main branch.", kind="preference", pin=True)
    add(app, p, "TODO: add rate limiting to the public API.", kind="todo")
    add(app, p, "We chose FastAPI over Flask for the public API.", kind="decision")
    add(
        app,
        p,
        "Earlier session: wrote the OpenAPI schema for the orders endpoints.",
        kind="summary",
    )
    add(app, p, "Some unimportant fact about font sizes.", kind="fact")
    inj = Injector(app, app.settings)
    brief = inj.session_context({"cwd": p, "session_id": "ss1", "source": "startup"})
    text = brief.text
    assert len(text) <= app.settings.session_start_budget_chars
    order = [text.index(t) for t in ("Pinned:", "Last session:", "Decisions:", "Open TODOs:")]
    assert order == sorted(order)
    for needle in ("force-push", "rate limiting", "FastAPI", "OpenAPI schema"):
        assert needle in text
    assert "font sizes" not in text  # plain facts come with prompts, not in the brief
    # compact or clear: the context is gone, so the brief comes again; resume: nothing new.
    again = {"cwd": p, "session_id": "ss1"}
    assert inj.session_context({**again, "source": "resume"}).text == ""
    assert "force-push" in inj.session_context({**again, "source": "compact"}).text


def test_a_prompt_shows_an_older_summary_under_sessions_not_last_session(
    app: App, tmp_path: Path
) -> None:
    """A prompt's block finds the summary of whichever session is relevant, often not the
    newest: it is shown, dated, under "Sessions"; "Last session" is the brief's."""
    p = make_project(tmp_path, "p")
    add(app, p, "Asked: write the OpenAPI schema for the orders endpoints.", kind="summary")
    text = ask(inj := Injector(app, app.settings), p, "Where is the OpenAPI schema?").text
    assert "Sessions:\n- Asked: write the OpenAPI schema" in text
    assert "Last session:" not in text
    brief = inj.session_context({"cwd": p, "session_id": "b1", "source": "startup"}).text
    assert "Last session:\n- Asked: write the OpenAPI schema" in brief


def test_the_brief_says_where_the_work_stopped_instead_of_what_was_asked(
    app: App, tmp_path: Path
) -> None:
    """Where a session's work stopped says more than its "Asked: …; Files: …" line: the brief
    shows the one and leaves the other of the same session out, for the room it takes."""
    p = make_project(tmp_path, "stopped")
    sources = [Source(session_id="s-9", uuid="u1", timestamp="2026-03-02T10:00:00Z")]
    summary = "Asked: keep unknown hook types; Files: cmd/agent/hooks.go, cmd/agent/hooks_test.go"
    stopped = (
        "Last worked on: deduplicating the hook code. Ended with: parseHookType can be shared."
    )
    app.store.write(
        [
            Memory(text=summary, kind="summary", project=p, sources=sources),
            Memory(text=stopped, kind="progress", project=p, topic=STOPPED_TOPIC, sources=sources),
        ],
        {},
    )
    text = Injector(app, app.settings).session_context({"cwd": p, "session_id": "w1"}).text
    assert "Last session:\n- Last worked on: deduplicating" in text and "Asked:" not in text
    other = [Source(session_id="s-8", uuid="u0", timestamp="2026-03-01T10:00:00Z")]
    app.store.write([Memory(text=stopped, kind="progress", project=p, topic=STOPPED_TOPIC,
                            sources=other, id="x")], {})  # fmt: skip
    app.store.delete([m.id for m in app.store.query(match(project=p, kind="progress"))
                      if m.id != "x"])  # fmt: skip
    text = Injector(app, app.settings).session_context({"cwd": p, "session_id": "w2"}).text
    assert "Asked: keep unknown hook types" in text  # another session's stop: both shown


def test_the_brief_says_how_the_checks_run(app: App, tmp_path: Path) -> None:
    """A session starts knowing how this project tests, lints and builds: the newest command
    of each check the transcripts show worked, never an older one of the same check."""
    p = make_project(tmp_path, "cmds")
    old = Memory(
        text="Tests run with `python -m unittest`",
        kind="fact",
        project=p,
        topic="commands",
        created_at="2026-01-01T00:00:00+00:00",
    )
    app.store.write([old], {})
    for text in ("Tests run with `uv run pytest -q`", "Linting runs with `uv run ruff check`"):
        app.store.write([Memory(text=text, kind="fact", project=p, topic="commands")], {})
    add(app, p, "The staging box has 16 GB of memory.", kind="fact")
    text = Injector(app, app.settings).session_context({"cwd": p, "session_id": "c1"}).text
    assert "uv run pytest -q" in text and "uv run ruff check" in text
    assert "unittest" not in text and "16 GB" not in text


def test_the_brief_carries_the_latest_bug_fixes(app: App, tmp_path: Path) -> None:
    """Read on real work: the next session should know why a bug was fixed the way it was
    ("`current_span_ctx()` returns a span context, not `{:ok, ctx}`"); the three latest fixes
    join the brief, after everything else it carries."""
    p = make_project(tmp_path, "fixes")
    add(app, p, "We chose Bandit over Cowboy for the HTTP server.", kind="decision")
    for n in range(4):
        fix = f"Fix {n}: `span_ctx_{n}` was read as `{{:ok, ctx}}`; it returns the context itself."
        app.store.write(
            [
                Memory(
                    text=fix,
                    kind="bugfix",
                    project=p,
                    created_at=f"2026-02-1{n}T10:00:00+00:00",
                )
            ],
            {},
        )
    text = Injector(app, app.settings).session_context({"cwd": p, "session_id": "f1"}).text
    assert "Fixes:" in text and text.index("Decisions:") < text.index("Fixes:")
    assert all(f"span_ctx_{n}" in text for n in (1, 2, 3)) and "span_ctx_0" not in text


def test_pinned_memories_survive_a_tiny_brief_budget(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "Pinned: the staging database is read-only on Fridays.", pin=True)
    decisions = [f"Decision {n}: use structured logging in service {n}." for n in range(12)]
    add_many(app, p, decisions, kind="decision")
    small = app.settings.model_copy(update={"session_start_budget_chars": 400})
    text = Injector(app, small).session_context({"cwd": p, "session_id": "t"}).text
    assert len(text) <= 400
    assert "read-only on Fridays" in text


def test_old_sessions_are_forgotten(state: State) -> None:
    sessions = SessionMemory(state)
    assert sessions.claim("new", ["a", "b"]) == {"a", "b"}
    assert sessions.claim("new", ["b", "c"]) == {"c"}
    assert sessions.persist() == 1  # one transaction; prunes on its first run
    state.set("injected:ancient", {"ids": ["x"], "at": time.time() - 90 * 86400})
    assert sessions.prune(time.time() - 30 * 86400) == 1
    assert state.get("injected:ancient") is None
    assert sorted(state.get("injected:new")["ids"]) == ["a", "b", "c"]


def test_vector_cache_sees_writes_and_never_returns_stale_rows(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    inj = Injector(app, app.settings)
    assert ask(inj, p, "Which queue broker do we run?", session="c1").text == ""
    builds = inj.vectors.builds
    first = add(app, p, "The job queue runs on RabbitMQ 3.13.", kind="decision")
    assert "RabbitMQ" in ask(inj, p, "Which queue broker do we run?", session="c2").text
    assert inj.vectors.builds > builds  # a write made a new table version: rebuilt
    app.store.delete([first])  # a new table version: the entry is rebuilt
    assert ask(inj, p, "Which queue broker do we run?", session="c3").text == ""
    add(app, p, "The job queue moved to Redis streams.", kind="decision")
    inj.vectors.invalidate()
    assert "Redis streams" in ask(inj, p, "Which queue broker do we run?", session="c4").text


def test_projects_too_big_to_cache_use_the_table(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "Images are resized by a libvips worker.", kind="fact")
    inj = Injector(app, app.settings)
    inj.vectors.max_rows = 0
    try:
        assert inj.vectors.rows(p) is None
        assert "libvips" in ask(inj, p, "What resizes the images?").text
    finally:
        inj.vectors.max_rows = 20_000


def test_long_prompts_embed_their_head_and_tail(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "Database migrations are written with Alembic.", kind="decision")
    pasted = "\n".join(f"log line {n}: GET /static/app.js 200" for n in range(400))
    prompt = f"{pasted}\nHow are database migrations written here?"
    assert len(normalize_query(prompt)) < 700
    assert normalize_query(prompt).endswith("How are database migrations written here?")
    assert "Alembic" in ask(Injector(app, app.settings), p, prompt).text


def test_hit_counters_do_not_invalidate_the_cache(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    mid = add(app, p, "Emails are sent through Postmark.", kind="fact")
    inj = Injector(app, app.settings)
    assert "Postmark" in ask(inj, p, "How are emails sent?", session="t1").text
    builds = inj.vectors.builds
    assert inj.flush() == 1  # writes hits: a new table version, but only counters changed
    assert app.store.get(mid).hits == 1
    assert "Postmark" in ask(inj, p, "How are emails sent?", session="t2").text
    assert inj.vectors.builds == builds
    app.store.update_fields({mid: {"status": "archived"}})  # a real change: rebuilt
    assert ask(inj, p, "How are emails sent?", session="t3").text == ""
    assert inj.vectors.builds > builds


def test_int8_vectors_rank_like_the_exact_cosine() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes, scales = quantize(vectors)
    assert codes.dtype == np.int8 and codes.nbytes == vectors.nbytes // 4
    for q in range(20):
        query = vectors[q] + 0.5 * rng.standard_normal(384).astype(np.float32) / np.sqrt(384)
        query /= np.linalg.norm(query)
        exact = vectors @ query
        approx = np.einsum("ij,j->i", codes, query) * scales
        assert np.abs(exact - approx).max() < 0.005
        assert np.argmax(approx) == np.argmax(exact) == q
        # Any other top-5 pick is within the error of the exact 5th best (a near tie).
        fifth = np.sort(exact)[-5]
        assert all(exact[i] > fifth - 0.01 for i in np.argsort(-approx)[:5])
    zero_codes, zero_scales = quantize(np.zeros((2, 384), dtype=np.float32))
    assert not zero_codes.any() and np.isfinite(zero_scales).all()


def test_cached_scores_are_the_cosine_of_the_stored_vectors(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    texts = ["Logs are shipped with Vector to Loki.", "The CDN is Fastly.", "We deploy on Fridays."]
    add_many(app, p, texts, kind="fact")
    inj = Injector(app, app.settings)
    vector = app.store.embedder.embed_one("Where do the logs go?")
    cached = inj.vectors.search(vector, [p], 3)
    table = app.store.vector_search(vector, match(project=p), 3)
    assert cached is not None and [m.text for m, _ in cached] == [m.text for m, _ in table]
    for (_, fast), (_, exact) in zip(cached, table, strict=True):
        assert abs(fast - exact) < 0.005


def test_search_through_the_cache_matches_the_table_and_keeps_sources(
    app: App, tmp_path: Path
) -> None:
    from memd.models import Source
    from memd.recall import retrieve

    p = make_project(tmp_path, "p")
    texts = [
        "The billing service retries webhooks three times with backoff.",
        "Invoices are rendered to PDF with WeasyPrint.",
        "Stripe is the payment provider; PayPal was dropped in March.",
        "The staging database is refreshed from production every Sunday.",
        "Feature flags live in LaunchDarkly.",
    ]
    app.store.write(
        [
            Memory(text=t, project=p, kind="fact", sources=[Source(f"s{i}", f"u{i}", "")])
            for i, t in enumerate(texts)
        ],
        {},
    )
    inj = Injector(app, app.settings)
    for query in ("payment provider", "how are invoices made", "webhook retries", "zebra"):
        plain = retrieve.search(app.store, query, [p], limit=3)
        cached = retrieve.search(app.store, query, [p], limit=3, cache=inj.vectors)
        assert [r.id for r in cached] == [r.id for r in plain]
        for a, b in zip(cached, plain, strict=True):
            assert a.sources == b.sources  # read back by id when only the cache had it
            assert a.sources or a.project != p
            assert abs(a.score - b.score) < 0.01
    assert inj.vectors.builds >= 1
    # Filters the cache cannot answer (kinds, other statuses) still go to the table.
    builds = inj.vectors.builds
    only = retrieve.search(app.store, "payment", [p], kinds=["decision"], cache=inj.vectors)
    assert only == [] and inj.vectors.builds == builds


def test_warming_builds_the_caches_before_the_first_hook(app: App, tmp_path: Path) -> None:
    p = make_project(tmp_path, "p")
    add(app, p, "Background jobs run on Celery with a Redis broker.", kind="fact")
    inj = Injector(app, app.settings)
    before = inj.vectors.builds  # the app's cache, shared by every injector and search
    assert inj.warm([p, make_project(tmp_path, "empty")]) >= 1
    builds = inj.vectors.builds
    assert builds - before == 3  # both projects and the user-wide scope
    assert "Celery" in ask(inj, p, "What runs the background jobs?").text
    assert inj.vectors.builds == builds  # the hook found its project warm


def window(mid: str, score: float, lines: list[str], first: int) -> dict[str, Any]:
    """An excerpt result in the recall shape: one line per turn, turns ``first``..."""
    return {
        "id": mid,
        "text": "[2026-11-20] " + "\n".join(lines),
        "kind": "excerpt",
        "score": score,
        "relevant": True,
        "sources": [
            {"uuid": f"t{first + i}", "timestamp": "2026-11-20T10:00:00Z"}
            for i in range(len(lines))
        ],
        "score_breakdown": {"total": score, "importance": 0.3, "recency": 1.0},
    }


def test_the_block_is_filled_turn_by_turn() -> None:
    """The turns that match the prompt come first, from every relevant excerpt, then their
    neighbours while the budget lasts; a turn shared by two windows is shown once."""
    a = window(
        "a",
        0.9,
        [
            "user: Good morning, I am back after the weekend.",
            "assistant: The deploy script lives in tools/deploy.sh and reads AWS_PROFILE.",
            "user: Thanks, I will have a look after lunch today.",
        ],
        0,
    )
    b = window(
        "b",
        0.8,
        [
            "user: Thanks, I will have a look after lunch today.",
            "user: The deploy script failed: AWS_PROFILE was not set in the shell.",
            "assistant: Export it in your shell profile before you run it again.",
        ],
        2,
    )
    from memd.text.searchterms import terms as lexical_terms

    query = lexical_terms(normalize_query("Where is the deploy script, what is AWS_PROFILE?"))
    only = [Item(hit(w), "excerpt", w["score"], w["text"].split("\n")[1]) for w in (a, b)]
    room = len(render(only)) + 20  # the two matching turns, and less than any neighbour
    tight = choose([hit(a), hit(b)], set(), room, query, brief=False)
    text = render(tight.items, tight.footer)
    assert "tools/deploy.sh" in text and "AWS_PROFILE was not set" in text
    assert "Good morning" not in text and "after lunch" not in text  # neighbours wait
    roomy = choose([hit(a), hit(b)], set(), 1500, query, brief=False)
    text = render(roomy.items, roomy.footer)
    assert "Good morning" in text and "Export it in your shell" in text  # the room is used
    assert text.count("after lunch") == 1  # turn t2 is in both windows, shown once
    cited = [t for item in roomy.items for t in item.turns]
    assert sorted(cited) == ["t0", "t1", "t2", "t3", "t4"]
    for item in roomy.items:  # each excerpt cites exactly the turns it shows, in order
        lines = (a if item.memory.id == "a" else b)["text"].split("\n")
        shown = [n for n, x in enumerate(lines) if spoken(x.split("] ")[-1]) in item.display]
        assert item.turns == frozenset(item.memory.sources[n].uuid for n in shown)


def test_a_turn_without_the_prompts_terms_only_joins_its_neighbours() -> None:
    """A request line with nothing of the prompt ("lint is failing") is not shown on its own
    when another turn of its excerpt carries the prompt's terms: it says nothing without its
    answer. Next to a matching turn it still is."""
    lone = window(
        "lone",
        0.9,
        ["user: lint is failing", "assistant: " + "The mirror of the big repo needs gofmt. " * 40],
        0,
    )
    pair = window(
        "pair",
        0.8,
        [
            "user: can you give me the command to mirror the big repo?",
            "assistant: Run git-sync replicate --all-refs with GITSYNC_SOURCE_TOKEN set.",
        ],
        5,
    )
    from memd.text.searchterms import terms as lexical_terms

    query = lexical_terms(normalize_query("How do I mirror the big repo with git-sync again?"))
    plan = choose([hit(lone), hit(pair)], set(), 1500, query, brief=False)
    text = render(plan.items, plan.footer)
    assert "GITSYNC_SOURCE_TOKEN" in text and "big repo?" in text
    assert "lint is failing" not in text
    # An excerpt relevant by meaning alone (no turn carries a prompt term: another language,
    # other words) is still shown: "我日常用的编辑器是什么？" and "我已经改用 Neovim 了".
    meant = window("meant", 0.9, ["user: 我已经改用 Neovim 了，不用再维护那份插件配置。"], 9)
    plan = choose([hit(meant)], set(), 1500, query, brief=False)
    assert "Neovim" in render(plan.items, plan.footer)


def test_a_typed_memory_stays_when_the_line_shown_from_its_turn_is_cut() -> None:
    """Defect: a bug fix whose source turn was shown as an excerpt line was left out ("its
    turns are already shown"), though the line shown said nothing of the fix."""
    excerpt = window(
        "x",
        0.9,
        ["assistant: The otel settings broke the boot with a BadMapError in the processor."],
        0,
    )
    fix = hit(
        {
            "id": "fix",
            "kind": "bugfix",
            "text": "BadMapError at boot - fixed by using `traces_exporter: :stdout` instead of "
            "a nested processor map",
            "score": 0.8,
            "sources": [{"uuid": "t0", "timestamp": "2026-11-20T10:00:00Z"}],
        }
    )
    from memd.text.searchterms import terms as lexical_terms

    query = lexical_terms(normalize_query("the app refuses to boot with a map error after otel"))
    plan = choose([hit(excerpt), fix], set(), 1500, query, brief=False)
    assert "traces_exporter" in render(plan.items, plan.footer)
    same = hit(
        {**excerpt, "id": "same", "kind": "fact", "text": excerpt["text"][13:], "score": 0.5}
    )
    plan = choose([hit(excerpt), same], set(), 1500, query, brief=False)
    assert [item.memory.id for item in plan.items] == ["x"]  # saying it again: left out
    assert any(x.reason == "its turns are already shown" for x in plan.left_out)


def test_a_turn_up_to_whole_turn_chars_is_shown_whole() -> None:
    """A turn of a few sentences is shown whole (cut to one matching sentence, it would lose
    what else it said); a longer one is cut to its matching sentences."""
    from memd.recall.block import WHOLE_TURN_CHARS
    from memd.text.searchterms import terms as lexical_terms

    said = (
        "assistant: The flaky test was a race in the cache warmer. It started before the "
        "fixture had created the temporary directory, so the first read failed. I moved the "
        "warmer start behind the fixture and added a barrier. The suite passed 50 times in a "
        "row afterwards, and the CI job is green again on the main branch."
    )
    assert 280 < len(said) <= WHOLE_TURN_CHARS
    query = lexical_terms("Why was the cache warmer test flaky?")
    plan = choose([hit(window("w", 0.9, [said], 0))], set(), 1500, query, brief=False)
    assert said.split(": ", 1)[1] in render(plan.items)
    long_turn = said + " " + " ".join(f"Unrelated remark number {n}." for n in range(30))
    assert len(long_turn) > WHOLE_TURN_CHARS
    plan = choose([hit(window("w", 0.9, [long_turn], 0))], set(), 1500, query, brief=False)
    text = render(plan.items)
    assert "race in the cache warmer" in text and "Unrelated remark number 29" not in text


def test_a_prompt_term_every_candidate_carries_still_ranks_turns() -> None:
    """A term all the candidates share (here the person asked about) tells them apart little,
    but a turn naming it still comes before a neighbour that says nothing of the prompt."""
    from memd.recall.lexical import LOCAL_FLOOR, local_weights
    from memd.text.searchterms import terms as lexical_terms

    a = window(
        "a",
        0.9,
        ["user: Good morning, I am back after the long weekend.", "assistant: Alice owns it."],
        0,
    )
    b = window("b", 0.8, ["user: Alice moved to the platform team."], 2)
    query = lexical_terms("What does Alice do?")
    weights = local_weights(query, [a["text"], b["text"]])
    assert weights["alice"] == LOCAL_FLOOR > 0  # in every candidate: the floor, not ~0
    only = [Item(hit(a), "excerpt", a["score"], a["text"].split("\n")[1])]
    plan = choose([hit(a), hit(b)], set(), len(render(only)) + 5, query, brief=False)
    text = render(plan.items)
    assert "Alice owns it" in text and "Good morning" not in text


def test_excerpts_show_their_day_once_and_who_said_what() -> None:
    """Excerpts sit under one line per day, in the order they were said (oldest day first);
    each turn still says who spoke, Claude's turns as "claude:"; a typed memory keeps its own
    date."""
    from memd.text.searchterms import terms as lexical_terms

    older = window(
        "o",
        0.7,
        ["user: The webhook handler times out on retries.", "assistant: I moved it to a job."],
        0,
    )
    older["text"] = older["text"].replace("2026-11-20", "2026-11-18")
    newer = window("n", 0.9, ["user: Why do the webhook retries pile up?"], 5)
    same_day = window("s", 0.8, ["assistant: The webhook retries now back off."], 9)
    same_day["sources"][0]["timestamp"] = "2026-11-20T09:00:00Z"  # said before "newer"
    decision = {
        **window("d", 0.95, ["Webhook retries back off exponentially."], 20),
        "kind": "decision",
        "text": "Webhook retries back off exponentially.",
    }
    query = lexical_terms("How do the webhook retries work?")
    candidates = [hit(r) for r in (older, newer, same_day, decision)]
    plan = choose(candidates, set(), 1500, query, brief=False)
    text = render(plan.items, plan.footer)
    assert "- Webhook retries back off exponentially. (2026-11-20)" in text
    assert "assistant:" not in text and text.count("claude: ") == 2
    assert "user: The webhook handler times out" in text
    assert text.count("2026-11-20:") == 1 and text.count("2026-11-18:") == 1
    assert "[2026-" not in text
    days = text.index("Excerpts:\n2026-11-18:\n- user: The webhook handler times out on retries.")
    assert days < text.index("2026-11-20:\n- ")  # the older day first
    assert [i.memory.id for i in plan.items] == ["d", "o", "s", "n"]  # in the order said
    assert text.index("claude: The webhook retries now") < text.index("user: Why do the webhook")
    assert len(text) == BlockSize.of(plan.items).total()
    # An older excerpt (not one line per turn) is shown whole, speakers named the same way.
    whole = {**older, "id": "w", "sources": older["sources"][:1]}
    plan = choose([hit(whole)], set(), 1500, query, brief=False)
    assert plan.items[0].display == (
        "user: The webhook handler times out on retries. claude: I moved it to a job."
    )
    assert plan.items[0].day == "2026-11-18"


def test_near_misses_fill_the_room_left_only_after_a_relevant_memory() -> None:
    """A prompt about the project's work: memories just under the threshold come after every
    relevant one; an unrelated prompt (nothing relevant) stays empty."""
    from memd.recall.inject import SECOND_TIER, second_tier

    def result(mid: str, relevance: float, score: float, project: str = "p") -> Hit:
        b = {"relevance": relevance, "threshold": 0.35}
        return hit(
            {
                "id": mid,
                "project": project,
                "relevant": relevance >= 0.35,
                "score": score,
                "score_breakdown": b,
            }
        )

    near = 0.35 * SECOND_TIER + 0.01
    found = [result("a", 0.5, 0.6), result("b", near, 0.9), result("c", 0.05, 0.9)]
    found.append(result("u", near, 0.9, project="user"))  # user-wide: goes with every project
    out = {r.id: r for r in second_tier(found, "p")}
    assert out["b"].relevant and out["b"].score < out["a"].score
    assert not out["c"].relevant and not out["u"].relevant
    alone = second_tier([result("b", near, 0.9)], "p")
    assert not alone[0].relevant


def test_a_long_memory_that_matches_nowhere_is_clipped_not_cut_to_its_head() -> None:
    """A long memory is cut to its first piece and the pieces matching the prompt; when no
    piece matched (the words were in a path, or it was relevant by meaning) the first piece
    alone ("…would like to combine…: `/Users/dain/workspace/project/subdir` (4 parts);") was
    all the block showed of the sentence that answered."""
    from memd.recall.block import MAX_ITEM_CHARS, cut_item

    text = (
        "Please have a look at this patch diff, I changed my mind a bit about it: "
        "`/a/project/subdir` (4 parts, index 0); `/a/project` (3 parts, index 1); "
        "`/a/other-project` (3 parts, index 2); It will choose `/a/project` because it has "
        "fewer parts than the first path, and while it has the same depth as the third path, "
        "it appears earlier in the list, which is the more recent working directory of all "
        "the directories the sessions of this project were started in."
    )
    assert len(text) > MAX_ITEM_CHARS
    shown = cut_item(text, {"gizmo": 1.0})
    assert "fewer parts" in shown and len(shown) <= MAX_ITEM_CHARS
    matched = cut_item(text, {"fewer": 1.0})  # a piece matches: the head and that piece
    assert matched.startswith("Please have a look") and "… It will choose" in matched


def test_a_long_sentence_is_cut_to_the_prompts_terms_only_when_the_block_has_no_room() -> None:
    """A block of code is one long sentence: shown whole while the block has room for it, and
    cut to the words around the prompt's terms when it has not, so a second excerpt fits (the
    other region of "which aws regions is beacon running in?" was left out over the budget).
    A mark in it is kept whole, with the words it marks."""
    hcl = " ".join(
        f'module "m{i}" {{ source = "../../modules/m{i}" cidr = "10.{i}.0.0/16" }}'
        for i in range(12)
    )
    first = window("first", 0.9, ["user: terraform skeleton for beacon prod", f'assistant: ```hcl provider "aws" {{ region = "us-east-1" }} {hcl} ``` `terraform plan` added 47.'], 0)  # fmt: skip
    second = window("second", 0.8, ["user: stand up a second stack for EU tenants", f'assistant: ```hcl provider "aws" {{ region = "eu-west-1" }} {hcl} ``` [until 2026-11-21; now: moved] applied.'], 2)  # fmt: skip
    from memd.text.searchterms import terms as lexical_terms

    query = lexical_terms(normalize_query("which aws regions is beacon running in?"))
    plan = choose([hit(first), hit(second)], set(), 1500, query, brief=False)
    text = render(plan.items, plan.footer)
    assert 'region = "us-east-1"' in text and 'region = "eu-west-1"' in text, text
    assert text.count('cidr = "10.5.0.0/16"') == 1  # the first whole, the second cut
    assert '"10.11.0.0/16" } ``` [until 2026-11-21; now: moved]' in text  # what it marks
    assert len(text) <= 1500
    alone = render(choose([hit(second)], set(), 1500, query, brief=False).items)
    assert 'cidr = "10.5.0.0/16"' in alone  # room for it: whole


def test_the_projects_own_name_in_a_prompt_is_no_term_to_cover(app: App, tmp_path: Path) -> None:
    """ "what's meridian's default branch called?" asked in meridian: every memory there is of
    meridian, though none says so, so the name is no term to cover. Asked in another project
    the name is a term like any other, and nothing there carries it."""
    text = "user: we renamed the default branch on github to trunk; the apply job filters on it"
    others = [
        "user: fmt fails in CI: local terraform is 1.5.7 and CI uses 1.8.5",
        "user: add a workflow that runs terraform plan on PRs",
        "user: the state bucket lives in eu-west-1 with versioning on",
    ]
    prompt = "what's meridian's default branch called"
    here, other = make_project(tmp_path, "meridian"), make_project(tmp_path, "kestrel")
    for p in (here, other):
        for t in (text, *others):
            add(app, p, t, kind="excerpt")
    inj = Injector(app, app.settings)
    assert "trunk" in ask(inj, here, prompt).text
    assert ask(inj, other, prompt, session="s2").text == ""
