"""The pipeline on a real store: TODOs closed by a later session as soon as it is stored, and
what the heuristic extractor stores from a few sessions (real LanceDB, real embedding model)."""

from __future__ import annotations

import pytest

from memd.daemon.app import App
from memd.daemon.pipeline import Pipeline
from memd.models import Segment, Turn
from memd.store.filters import match

PROJECT = "/home/dev/shop"


def session(sid: str, day: int, *said: tuple[str, str]) -> Segment:
    turns = [
        Turn(
            uuid=f"{sid}-{i}",
            session_id=sid,
            role=role,
            text=text,
            timestamp=f"2026-11-{day:02d}T10:00:{i:02d}.000Z",
            cwd=PROJECT,
        )
        for i, (role, text) in enumerate(said)
    ]
    return Segment(session_id=sid, project=PROJECT, turns=turns, reason="session-end")


def active(app: App, kind: str) -> list[str]:
    rows = app.store.query(match(status="active", kind=kind))
    return sorted(m.text for m in rows)


def test_a_todo_done_in_a_later_session_is_closed_when_that_session_is_stored(
    app: App, pipeline: Pipeline
) -> None:
    pipeline.process(
        session(
            "s1",
            20,
            ("user", "Let's prepare the v0.5.0 release."),
            ("assistant", "I drafted the changelog entries for v0.5.0."),
            ("user", "TODO: finish the v0.5.0 release checklist before Friday."),
            ("user", "We still need to add the refunds endpoint later."),
        )
    )
    todos = active(app, "todo")
    assert any("release checklist" in t for t in todos) and any("refunds" in t for t in todos)
    pipeline.process(
        session(
            "s2",
            21,
            ("user", "Good news: the v0.5.0 release checklist is done."),
            ("assistant", "Great, I tagged v0.5.0."),
        )
    )
    todos = active(app, "todo")
    # The closing sentence is progress, not a new TODO; the checklist TODO is closed at once
    # (no cleanup job ran); the unrelated TODO stays open.
    assert not any("release checklist" in t for t in todos), todos
    assert any("refunds" in t for t in todos)
    assert any("release checklist is done" in t for t in active(app, "progress"))
    closed = [m for m in app.store.query(match(kind="todo", status="archived"))]
    assert [m.text for m in closed] == ["TODO: finish the v0.5.0 release checklist before Friday."]
    assert "release checklist is done" in closed[0].history[-1]["text"]
    assert pipeline.stats["todos_closed"] == 1
    archived = list((app.settings.home / "archive").glob("*.md"))
    assert archived and "release checklist before Friday" in archived[0].read_text()


def test_a_negated_or_unrelated_completion_closes_nothing(app: App, pipeline: Pipeline) -> None:
    pipeline.process(session("s1", 20, ("user", "TODO: migrate the billing tables to Postgres.")))
    pipeline.process(
        session(
            "s2",
            21,
            ("user", "The billing tables migration is not done yet, it needs another pass."),
            ("user", "The docs site build is finished and deployed."),
        )
    )
    # "not done yet" leaves the TODO open (and is an open item itself); a completion about
    # something else closes nothing.
    assert "TODO: migrate the billing tables to Postgres." in active(app, "todo")
    assert pipeline.stats["todos_closed"] == 0
    assert not app.store.query(match(status="archived"))


def test_the_same_todo_said_three_times_is_stored_once_citing_all_three(
    app: App, pipeline: Pipeline
) -> None:
    pipeline.process(
        session(
            "s1",
            20,
            ("user", "TODO: add rate limiting to the public API."),
            ("assistant", "Noted."),
            ("user", "Remember, TODO: add rate limiting to the public API!"),
            ("user", "We still need to add rate limiting to the public API."),
        )
    )
    (todo,) = app.store.query(match(kind="todo"))
    assert sorted(s.uuid for s in todo.sources) == ["s1-0", "s1-2", "s1-3"]


def test_a_replay_after_a_crash_before_closing_still_closes_the_todo(
    app: App, pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline.process(session("s1", 20, ("user", "TODO: finish the v0.5.0 release checklist.")))
    done = session("s2", 21, ("user", "The v0.5.0 release checklist is done."))
    # The daemon dies after the memories are stored, before the TODO step: nothing closed,
    # and the segment is not marked extracted, so it is processed again on restart.
    with monkeypatch.context() as m:
        m.setattr(pipeline, "close_todos", lambda memories: None)
        pipeline.process(done)
    assert any("release checklist." in t for t in active(app, "todo"))
    pipeline.process(done)  # the replay: its memories are all "unchanged" now
    assert not any("release checklist." in t for t in active(app, "todo"))
