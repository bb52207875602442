"""The LoCoMo harness's pure pieces, on a tiny conversation written here in LoCoMo's JSON shape.

No LoCoMo data is used or copied (it is CC BY-NC): the speakers, turns and questions below are
invented for the test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import common  # noqa: E402
import locomo  # noqa: E402
import locomo_memd  # noqa: E402

from memd.transcript import parse_lines  # noqa: E402

# Keys are built with f-strings so this invented sample is never mistaken for LoCoMo data.
SAMPLE = {
    "sample_id": "toy-1",
    "conversation": {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        f"session_{2}_date_time": "9:05 am on 3 June, 2023",
        "session_2": [
            {"speaker": "Ada", "dia_id": "D2:1", "text": "My sister visits in July."},
            {"speaker": "Bo", "dia_id": "D2:2", "text": "Nice, will you go hiking?"},
        ],
        f"session_{1}_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
            {
                "speaker": "Bo",
                "dia_id": "D1:2",
                "text": "Cute! I painted a lake yesterday.",
                "img_url": ["https://example.invalid/x.jpg"],
                "blip_caption": "a painting of a lake at dusk",
            },
            {"speaker": "Bo", "dia_id": "D1:3", "text": " I also run on Sundays. "},
        ],
        f"session_{3}_date_time": "10:00 am on 1 July, 2023",
    },
    "qa": [
        {
            "question": "What is the cat called?",
            "answer": "Pixel",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {"question": "When?", "answer": "May", "evidence": ["D1:02; D2:1"], "category": 2},
        {"question": "Both?", "answer": "x", "evidence": ["D1:1 D2:2", "D:1:3"], "category": 1},
        {"question": "Broken?", "answer": "x", "evidence": ["D9:9", "D"], "category": 3},
        {"question": "Trap?", "adversarial_answer": "no", "evidence": ["D1:1"], "category": 5},
    ],
}


@pytest.fixture
def conv() -> locomo.Conversation:
    return locomo.parse_conversation(1, SAMPLE)


def test_session_time_and_order(conv: locomo.Conversation) -> None:
    assert [s.number for s in conv.sessions] == [1, 2]  # date keys without content are ignored
    assert conv.sessions[0].start.isoformat() == "2023-05-08T13:56:00+00:00"
    assert locomo.parse_session_time("10:00 am on 1 July, 2023").hour == 10
    assert conv.half == "A" and locomo.parse_conversation(6, SAMPLE).half == "B"


def test_evidence_parsing() -> None:
    assert locomo.normalize_dia_id("D30:05") == "D30:5"
    assert locomo.normalize_dia_id("D:11:26") == "D11:26"
    assert locomo.normalize_dia_id("D") is None
    ids, bad = locomo.parse_evidence(["D8:6; D9:17", "D30:05 D1:1", "D", "D8:6"])
    assert ids == ["D8:6", "D9:17", "D30:5", "D1:1"]
    assert bad == ["D"]


def test_questions_resolve_against_the_conversation(conv: locomo.Conversation) -> None:
    qs = {q.text: q for q in conv.questions}
    assert "Trap?" not in qs  # category 5 is not scored for recall
    assert qs["When?"].gold == ["D1:2", "D2:1"]
    assert qs["Both?"].gold == ["D1:1", "D2:2", "D1:3"]
    assert qs["Broken?"].gold == [] and sorted(qs["Broken?"].unresolved) == ["D", "D9:9"]


def test_uuids_are_deterministic_and_distinct(conv: locomo.Conversation) -> None:
    mapping = locomo.uuid_to_dia(conv)
    assert len(mapping) == 5 and set(mapping.values()) == conv.dia_ids()
    assert locomo.turn_uuid("toy-1", "D1:1") == locomo.turn_uuid("toy-1", "D1:1")
    assert locomo.turn_uuid("toy-1", "D1:1") != locomo.turn_uuid("toy-2", "D1:1")


def test_transcripts_read_back_through_memds_parser(
    conv: locomo.Conversation, tmp_path: Path
) -> None:
    project = locomo.make_project(conv, tmp_path / "projects")
    assert (Path(project) / ".git").is_dir()
    paths = locomo.write_transcripts(conv, project, tmp_path / "transcripts")
    assert len(paths) == 2
    assert paths[0].parent.name == locomo.project_slug(project)
    assert paths[0].stem == locomo.session_uuid("toy-1", 1)
    raw = [json.loads(x) for x in paths[0].read_text().splitlines()]
    assert raw[0]["parentUuid"] is None and raw[1]["parentUuid"] == raw[0]["uuid"]
    assert {r["entrypoint"] for r in raw} == {"cli"} and {r["cwd"] for r in raw} == {project}
    turns = parse_lines(paths[0].read_text().splitlines(), session_hint=paths[0].stem)
    assert [t.role for t in turns] == ["user", "assistant", "assistant"]
    assert [t.uuid for t in turns] == [
        locomo.turn_uuid("toy-1", d) for d in ("D1:1", "D1:2", "D1:3")
    ]
    assert {t.session_id for t in turns} == {locomo.session_uuid("toy-1", 1)}
    assert [t.timestamp for t in turns] == [
        "2023-05-08T13:56:00.000Z",
        "2023-05-08T13:56:30.000Z",
        "2023-05-08T13:57:00.000Z",
    ]
    assert turns[0].text == "Ada: I adopted a grey cat named Pixel."
    assert (
        turns[1].text
        == "Bo: Cute! I painted a lake yesterday. [shares a photo: a painting of a lake at dusk]"
    )
    assert turns[2].text == "Bo: I also run on Sundays."
    assert all(t.cwd == project for t in turns)


def H(*ids: str, chars: int = 10) -> locomo.Hit:
    return locomo.Hit(frozenset(ids), chars)


def test_score_fraction_all_hit_and_rr() -> None:
    ranked = [H("D1:9"), H("D1:2", chars=5), H(), H("D2:1", "D1:3"), H("D1:1")]
    m = locomo.score(ranked, ["D1:1", "D1:2", "D2:1"], ks=(1, 2, 4, 5))
    assert m["r@1"] == 0 and m["hit@1"] == 0 and m["ctx@1"] == 10
    assert m["r@2"] == pytest.approx(1 / 3) and m["hit@2"] == 1 and m["all@2"] == 0
    assert m["r@4"] == pytest.approx(2 / 3) and m["ctx@4"] == 35
    assert m["r@5"] == 1 and m["all@5"] == 1
    assert m["rr"] == pytest.approx(1 / 2)
    assert m["strict@5"] == 1  # no result cites more than MAX_SPAN turns
    wide = locomo.score([H("D1:1", "D1:2", "D1:3", "D1:4"), H("D2:1")], ["D1:1", "D2:1"])
    assert wide["r@1"] == 0.5 and wide["strict@1"] == 0 and wide["strict@5"] == 0.5
    assert locomo.score([H("x")], ["D1:1"])["rr"] == 0
    assert locomo.score([], ["D1:1"])["r@10"] == 0
    with pytest.raises(ValueError):
        locomo.score([H("x")], [])


def test_aggregate_and_held_out_pick() -> None:
    def row(system: str, half: str, r: float) -> dict:
        metrics = {"r@5": r, "r@10": r, "rr": r}
        return {"system": system, "half": half, "category": 4, "metrics": metrics, "ms": 2.0}

    rows = [row("a", "A", 0.9), row("a", "B", 0.1), row("b", "A", 0.2), row("b", "B", 0.8)]
    agg = locomo.aggregate(rows[:2])
    assert agg["r@5"] == pytest.approx(0.5) and agg["n"] == 2 and agg["p50_ms"] == 2.0
    text, picks = locomo.held_out(rows, ["a", "b"])
    assert picks == ["a", "b"]  # best on A is reported on B, and the reverse
    assert "| a | A | 0.900 | 0.900 | B | 0.100 |" in text


def test_question_normalisation() -> None:
    assert locomo_memd.normalize_question("When did Ada adopt a cat?") == "Ada adopt a cat"
    assert locomo_memd.normalize_question("Would Bo enjoy a lake trip?") == "Bo enjoy a lake trip"
    assert locomo_memd.normalize_question("How many cats does Ada have?") == "cats does Ada have"
    assert locomo_memd.normalize_question("Pixel?") == "Pixel"


def test_budget_recall() -> None:
    ranked = [H("D1:1", chars=600), H("D1:2", chars=300), H("D2:1", chars=200)]
    m = locomo.score(ranked, ["D1:1", "D1:2", "D2:1"])
    assert m[f"r@{locomo.BUDGET_CHARS}c"] == pytest.approx(2 / 3)
    assert m["r@3"] == 1


def test_parse_range() -> None:
    assert locomo.parse_range("1-3,7") == [1, 2, 3, 7]
    assert locomo.parse_range("5") == [5]


def test_proto_windows_keep_neighbours_as_sources(conv: locomo.Conversation) -> None:
    pairs = locomo_memd.proto_memories(conv, "/p", "w1+0d")
    assert len(pairs) == 5
    second, key = pairs[1]
    assert second.text.startswith("[8 May 2023] Ada: I adopted") and key == second.text
    assert [s.uuid for s in second.sources] == [
        locomo.turn_uuid("toy-1", "D1:1"),
        locomo.turn_uuid("toy-1", "D1:2"),
    ]
    assert second.created_at == "2023-05-08T13:56:30.000Z"
    only, key = locomo_memd.proto_memories(conv, "/p", "w1+1k")[1]
    assert (
        only.text
        == "Bo: Cute! I painted a lake yesterday. [shares a photo: a painting of a lake at dusk]"
    )
    assert [s.uuid for s in only.sources] == [locomo.turn_uuid("toy-1", "D1:2")]
    assert key.count("\n") == 2 and only.topic == key
    assert locomo_memd.parse_proto("w2+1") == (2, 1, False, False)
    with pytest.raises(ValueError):
        locomo_memd.parse_proto("window")


def test_raw_turn_baselines_on_the_toy(conv: locomo.Conversation, tmp_path: Path) -> None:
    from memd.embed import Embedder
    from memd.settings import load_settings

    cache = locomo.VectorCache(Embedder(load_settings()), folder=tmp_path / "cache")
    raw = locomo.RawTurns([conv], cache, tmp_path)
    assert raw.bm25(conv, "What is the cat called, Pixel?", 3)[0] == "D1:1"
    assert raw.dense(conv, "a painting of a lake", 1) == ["D1:2"]
    assert set(raw.hybrid(conv, "hiking with my sister", 10)) <= conv.dia_ids()
    rows = locomo.evaluate("raw-bm25", [conv], raw.searcher("bm25"))
    assert len(rows) == 3 and {r["half"] for r in rows} == {"A"}
    cache.save()
    again = locomo.VectorCache(cache.embedder, folder=tmp_path / "cache")
    assert len(again.vectors) == len(cache.vectors) > 0


def test_common_table_percentile_ci_and_append(tmp_path: Path) -> None:
    table = common.markdown_table(["a", "b"], [[1, 0.5]])
    assert table.splitlines() == ["| a | b |", "|---|---|", "| 1 | 0.500 |"]
    assert common.percentile([1, 2, 3, 4], 50) == 2.5 and common.percentile([], 50) == 0
    lo, hi = common.bootstrap_ci([0.0, 1.0] * 50, rounds=200)
    assert 0.3 < lo < 0.5 < hi < 0.7
    target = tmp_path / "BENCHMARKS.md"
    target.write_text("# Benchmarks\n\nintro kept\n")
    common.append_section("T", "body line", command="cmd", path=target)
    common.append_section("T2", "second", command="cmd2", path=target)
    text = target.read_text()
    assert text.startswith("# Benchmarks\n\nintro kept\n\n## T (")
    assert "- command: `cmd`" in text and "- machine: " in text and "- commit: `" in text
    assert text.index("body line") < text.index("## T2")
