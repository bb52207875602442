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
import locomo_budget  # noqa: E402
import locomo_memd  # noqa: E402

from memd.ingest.transcript import parse_lines  # noqa: E402

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
    assert conv.adversarial == ["Trap?"]  # only asked to see whether the hook abstains
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
    from memd.embedding.embed import Embedder
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


# ---------------------------------------------------------------- budgeted recall


def test_content_words_rule() -> None:
    words = locomo_budget.content_words("Ada's GREY cat, Pixel, didn't eat 3 fish on 2023-05-08!")
    assert words == {"ada", "grey", "cat", "pixel", "eat", "fish"}  # no "s", "didn", "t", "on"
    assert locomo_budget.content_words("It was what they had done") == {"done"}
    assert locomo_budget.content_words("Wow, yeah, thanks! I\u2019ll hike") == {"hike"}
    assert locomo_budget.content_words("café naïve zoo") == {"café", "naïve", "zoo"}
    assert all(len(w) >= 3 and w == w.lower() and w.isalpha() for w in locomo_budget.STOP_WORDS)


def test_a_turn_is_carried_by_60_percent_of_its_content_words() -> None:
    turn = "I adopted a grey cat named Pixel."  # adopted, grey, cat, named, pixel
    block = locomo_budget.Block.of
    assert locomo_budget.carried(turn, block("- Ada has a grey cat called Pixel (2023-05-08)"))
    assert not locomo_budget.carried(turn, block("- Ada has a cat called Pixel"))  # 2 of 5
    assert locomo_budget.carried(turn, block("Pixel named grey"))  # 3 of 5 = 60 %
    # order, case and punctuation do not matter; a clipped word does not count
    assert locomo_budget.carried(turn, block("PIXEL! named... GREY?"))
    assert not locomo_budget.carried(turn, block("Pixel nam… grey"))
    # a turn without content words needs its whole text in the block
    assert locomo_budget.carried("Wow, yes!", block("- Bo: wow yes! (2023-05-08)"))
    assert not locomo_budget.carried("Wow, yes!", block("- Bo: yes, wow"))
    assert not locomo_budget.carried("", block("anything"))


def test_the_frame_of_a_block_credits_nothing() -> None:
    framed = (
        "<memd-context>\n# memd: memories from earlier sessions may be outdated\n"
        "Last session:\nFacts:\n- Ada likes tea (2023-05-08)\n</memd-context>"
    )
    assert locomo_budget.judged_text(framed) == "- Ada likes tea (2023-05-08)"
    block = locomo_budget.Block.of(framed)
    assert not locomo_budget.carried("The last session had outdated memories", block)
    assert locomo_budget.carried("Ada likes tea", block)
    assert locomo_budget.recall(["Ada likes tea", "Bo likes coffee"], block) == 0.5
    with pytest.raises(ValueError):
        locomo_budget.recall([], block)


def test_fill_stops_at_the_budget_and_clips_the_last_line() -> None:
    lines = ["a" * 10, "b" * 10, "c" * 10]
    assert locomo_budget.fill(lines, 100) == "\n".join(lines)  # everything fits
    assert locomo_budget.fill(lines, 21) == "a" * 10 + "\n" + "b" * 10  # exact fit
    clipped = locomo_budget.fill(lines, 25)
    assert clipped == "a" * 10 + "\n" + "b" * 10 + "\n" + "cc…" and len(clipped) == 25
    assert locomo_budget.fill(["x" * 50, "short"], 20) == "x" * 19 + "…"  # clipped, then stop
    assert locomo_budget.fill(lines, 11) == "a" * 10  # one character left: nothing clipped
    assert locomo_budget.fill([], 100) == "" and locomo_budget.fill(lines, 0) == ""
    for budget in range(0, 40):
        assert len(locomo_budget.fill(lines, budget)) <= budget


def test_baseline_lines_are_dated_and_judged_without_the_speaker(
    conv: locomo.Conversation,
) -> None:
    judge = locomo_budget.Judge(conv)
    assert judge.line["D1:2"] == (
        "- Bo: Cute! I painted a lake yesterday. "
        "[shares a photo: a painting of a lake at dusk] (2023-05-08)"
    )
    assert judge.body["D1:1"] == "I adopted a grey cat named Pixel."
    text = judge.filled(["D1:1", "D1:2", "D2:1"], 150)
    assert len(text) == 150 and text.startswith("- Ada: I adopted") and text.endswith("…")
    recall, missed = judge.score(["D1:1", "D2:1"], text)
    assert recall == 0.5 and missed == ("D2:1",)
    assert judge.score(["D1:1"], "") == (0.0, ("D1:1",))


def test_budgeted_run_and_report(conv: locomo.Conversation, tmp_path: Path) -> None:
    from memd.embedding.embed import Embedder
    from memd.settings import load_settings

    cache = locomo.VectorCache(Embedder(load_settings()), folder=tmp_path / "cache")
    raw = locomo.RawTurns([conv], cache, tmp_path)
    asked: list[tuple[str, str]] = []

    def context(project: str, prompt: str) -> str:  # a hook that knows only about the cat
        asked.append((project, prompt))
        return "<memd-context>\n- Ada: I adopted a grey cat named Pixel.\n</memd-context>" * (
            "cat" in prompt
        )

    rows = locomo_budget.run([conv], {"toy-1": "/p"}, context, raw, 120)
    n_unrelated = len(locomo_budget.UNRELATED_PROMPTS)
    assert n_unrelated >= 60 and len(set(locomo_budget.UNRELATED_PROMPTS)) == n_unrelated
    assert asked[0] == ("/p", "warm up the vector cache") and len(asked) == 1 + 3 + 1 + n_unrelated
    hook = [r for r in rows if r.system == "memd-hook"]
    scored = {r.category: r for r in hook if r.recall is not None}
    assert scored[4].recall == 1.0 and scored[2].recall == 0 and scored[2].chars == 0
    assert [r.category for r in hook if r.recall is None].count(0) == n_unrelated
    assert all(r.chars <= 120 for r in rows if r.system != "memd-hook")
    assert {r.system for r in rows} == set(locomo_budget.SYSTEMS)
    oracle = [r for r in rows if r.system == "oracle"]
    # 120 characters hold one dated line with a photo caption, or two short ones: the rest is
    # clipped away, and the oracle loses what it cannot show
    assert [(r.category, r.missed) for r in oracle] == [(4, ()), (2, ("D2:1",)), (1, ("D1:3",))]
    report = locomo_budget.render(rows, [conv], 120, {"home": "/h"})
    assert "| memd-hook | A | 3 | 0.333 [" in report
    assert "| memd-hook | 100.0% (1/1) | 0 |" in report  # the trap question gets nothing
    assert "- home: /h" in report and "memd-hook − raw-bm25, half A:" in report


def test_budgeted_cli_ingests_once_then_reuses_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole ``--budgeted`` path on the invented sample: a real ``memd serve``, ``memd
    ingest``, the ``context`` socket command; then ``--reuse`` asks a new daemon the same."""
    monkeypatch.setenv("MEMD_DECAY_INTERVAL_MINUTES", "60")  # restored after the test
    data = tmp_path / "toy.json"
    data.write_text(json.dumps([SAMPLE]))
    home = tmp_path / "bench"
    argv = ["--budgeted", "--data", str(data), "--home", str(home), "--skip-baselines"]
    first = locomo.main(argv)
    report = json.loads((home / locomo.INGEST_REPORT).read_text())["ingest"]
    assert report["turns"] == 5 and report["extraction_failures"] == 0
    hook = [r for r in first["rows"] if r.system == "memd-hook"]
    assert len(hook) == 3 + 1 + len(locomo_budget.UNRELATED_PROMPTS)
    assert all(r.chars <= locomo.PROMPT_BUDGET and r.ms is not None for r in hook)
    details = sorted(home.joinpath("runs").glob("budgeted-*.jsonl"))
    lines = [json.loads(x) for x in details[0].read_text().splitlines()]
    assert [x["prompt"] for x in lines] == [
        p for _, p, _ in locomo_budget.prompts_of(locomo.parse_conversation(1, SAMPLE))
    ]
    judge = locomo_budget.Judge(locomo.parse_conversation(1, SAMPLE))
    for line, row in zip(lines, hook, strict=True):  # the figures are the blocks' figures
        assert row.chars == len(line["context"])
        if line["gold"]:
            assert row.recall == judge.score(line["gold"], line["context"])[0]
        if line["context"]:
            assert line["context"].startswith("<memd-context>")
    with pytest.raises(SystemExit):  # an ingested home is never ingested twice
        locomo.main(argv)
    again = locomo.main([*argv, "--reuse"])
    assert [(r.category, r.chars, r.recall) for r in again["rows"] if r.system == "memd-hook"] == [
        (r.category, r.chars, r.recall) for r in hook
    ]
