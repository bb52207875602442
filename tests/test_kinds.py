"""The kind registry (memd/kinds.py): every per-kind table is derived from it, and every kind
goes the whole way: stored, injected under its section, exported and imported back, decayed.
A kind missing from any table fails here, not at run time."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from minilm_app import minilm_app

from memd import kinds
from memd.daemon.app import App
from memd.kinds import KINDS, NAMES
from memd.models import Memory
from memd.recall.block import SECTION_TITLES
from memd.recall.inject import Injector
from memd.store import maintenance
from memd.store.export import export_dir
from memd.store.importing import import_dir

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def test_names_and_ranks_are_unique() -> None:
    assert len(set(NAMES)) == len(NAMES)
    assert len({k.block_rank for k in KINDS}) == len(KINDS)
    assert len({k.section for k in KINDS}) == len(KINDS)
    assert len({k.heading.lower() for k in KINDS}) == len(KINDS)
    with pytest.raises(AttributeError):
        KINDS[0].importance = 1.0  # type: ignore[misc]


def test_every_table_holds_every_kind() -> None:
    from memd.extract.rules import IMPORTANCE
    from memd.names import KINDS as CHOICES
    from memd.store.export import HEADING_TO_KIND
    from memd.ui.charts import PALETTE

    assert tuple(CHOICES) == NAMES
    assert set(IMPORTANCE) == set(NAMES)
    assert set(SECTION_TITLES) == {"pinned", "sessions", *NAMES}
    assert set(HEADING_TO_KIND.values()) == set(NAMES)
    assert set(PALETTE) >= set(NAMES)


def test_the_texts_that_list_kinds_name_every_one() -> None:
    from memd import mcp_server
    from memd.extract.prompt import INSTRUCTIONS
    from memd.extract.reply import LLM_KINDS, LlmMemory
    from memd.setup.claude_commands import render

    assert "the tool's kinds" in render("remember", "mcp__memd__")  # no list of its own
    from memd.ui.web import KINDS_CSS

    for kind in KINDS:
        assert f".kind-{kind.name} {{ background: {kind.tint}; }}" in KINDS_CSS, kind
        in_search = re.search(rf"\b{kind.name}\b", mcp_server.SEARCH_DOC)
        assert in_search, kind
        assert bool(re.search(rf"\b{kind.name}\b", mcp_server.ADD_DOC)) == kind.addable, kind
        if kind.addable:  # /remember defers to the tool's text, which means each kind
            assert f"{kind.name} for {kind.meaning}" in mcp_server.ADD_DOC, kind
        assert (kind.name in LLM_KINDS) == kind.llm
        if kind.llm:  # the extraction prompt explains each kind it asks for
            assert re.search(rf"\b{kind.name} \(", INSTRUCTIONS), kind
            for alias in kind.llm_aliases:
                assert LlmMemory.model_validate({"type": alias, "text": "x"}).kind == kind.name
    schema = LlmMemory.model_json_schema()["properties"]["kind"]
    assert schema["enum"] == list(LLM_KINDS)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    with minilm_app(tmp_path_factory.mktemp("kinds")) as application:
        yield application


def project_dir(root: Path) -> str:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    return str(root)


def text_of(kind: str) -> str:
    return f"The quokka-{kind} flag of the billing importer is read from importer.toml"


@pytest.mark.parametrize("kind", NAMES)
def test_every_kind_is_injected_under_its_section(app: App, tmp_path: Path, kind: str) -> None:
    project = project_dir(tmp_path / f"p-{kind}")
    app.add(text_of(kind), project=project, kind=kind)
    result = Injector(app, app.settings).prompt_context(
        {
            "prompt": f"Where is the quokka-{kind} flag of the billing importer read from?",
            "cwd": project,
            "session_id": f"s-{kind}",
        }
    )
    # A prompt's block shows a summary under "Sessions" (dated): "Last session" is the brief's.
    title = SECTION_TITLES["sessions" if kind == "summary" else kind]
    assert title in result.text, result.reason
    assert f"quokka-{kind} flag" in result.text


def test_every_kind_is_exported_and_imported_back(app: App, tmp_path: Path) -> None:
    project = project_dir(tmp_path / "roundtrip")
    for kind in NAMES:
        app.add(text_of(kind) + " (exported)", project=project, kind=kind)
    export_dir(app.store, tmp_path / "export")
    written = "\n".join(p.read_text() for p in (tmp_path / "export").glob("*.md"))
    for kind in KINDS:
        assert f"### {kind.heading}" in written, kind
    with minilm_app(tmp_path / "other") as fresh:
        import_dir(fresh.store, tmp_path / "export", [])
        back = {m.kind: m.text for m in fresh.store.query(None) if "(exported)" in m.text}
    assert back == {kind: text_of(kind) + " (exported)" for kind in NAMES}


@pytest.mark.parametrize("kind", KINDS, ids=NAMES)
def test_every_kind_decays_by_its_half_life_and_durable_ones_are_kept(
    app: App, tmp_path: Path, kind: kinds.Kind
) -> None:
    old = (NOW - timedelta(days=400)).isoformat().replace("+00:00", "Z")
    memory = Memory(
        text=f"An old quokka-{kind.name} note about the importer",
        kind=kind.name,
        project=project_dir(tmp_path / f"d-{kind.name}"),
        importance=kind.importance,
        created_at=old,
        updated_at=old,
    )
    one_half_life = NOW - timedelta(days=400 - kind.half_life_days)
    score = maintenance.effective_score(memory, app.settings, one_half_life)
    assert score == pytest.approx(kind.importance / 2, abs=1e-3), kind
    app.store.write([memory], {})
    maintenance.cleanup(app.store, app.settings, NOW)
    status = app.store.get(memory.id).status
    assert status == ("active" if kind.durable else "archived"), kind
