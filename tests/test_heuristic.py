"""The heuristic extractor: kinds and provenance in English and Chinese, quality, speed."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from labelled import TYPED_KINDS, load_labelled, score

from memd.extract import get_extractor
from memd.extract.excerpts import WINDOW_CHARS
from memd.extract.heuristic import HeuristicExtractor, clear_caches
from memd.extract.rules import classify
from memd.models import KINDS, Candidate, Segment, ToolCall, Turn
from memd.settings import Settings

CWD = "/home/dev/shop"


def turn(n: int, role: str, text: str, *tools: tuple[str, str], **kw: object) -> Turn:
    return Turn(
        uuid=f"00000000-0000-4000-8000-{n:012d}",
        session_id="sess-1",
        role=role,
        text=text,
        cwd=CWD,
        tools=[ToolCall(name, summary) for name, summary in tools],
        **kw,  # type: ignore[arg-type]
    )


def seg(*turns: Turn) -> Segment:
    return Segment(session_id="sess-1", project=CWD, turns=list(turns))


def by_kind(cands: list, kind: str) -> list:
    return [c for c in cands if c.kind == kind]


ENGLISH = seg(
    turn(1, "user", "Let's switch formatting from ruff to black because the team uses black."),
    turn(
        2,
        "assistant",
        "Let me run the tests first.",
        ("Bash", f"cd {CWD} && uv run pytest -q 2>&1 | tail"),
    ),
    turn(
        3,
        "assistant",
        "The bug was caused by a missing await in the retry loop. I fixed it by awaiting the "
        "sleep. The retry helpers live in src/shop/retry.py.",
        ("Edit", f"{CWD}/src/shop/retry.py"),
    ),
    turn(4, "user", "I prefer small commits. Never push directly to main."),
    turn(5, "user", "TODO: add a CI job for the e2e tests later."),
    turn(6, "user", "ok thanks"),
)

CHINESE = seg(
    turn(11, "user", "我们决定采用 PostgreSQL 作为主数据库，因为需要 JSONB。"),
    turn(12, "user", "不要在测试里用 mock，统一用真实的临时数据库。"),
    turn(13, "assistant", "问题出在连接池没有关闭，每个请求都新建了连接。"),
    turn(14, "assistant", "已修复：请求结束时归还连接。", ("Edit", f"{CWD}/app/db.py")),
    turn(15, "user", "迁移脚本还没写，下次再做。"),
    turn(16, "user", "继续"),
)


def test_english_kinds_and_provenance() -> None:
    cands = HeuristicExtractor().extract(ENGLISH)
    (decision,) = by_kind(cands, "decision")
    assert decision.text.startswith("Let's switch formatting from ruff to black")
    assert decision.source_uuids == [ENGLISH.turns[0].uuid]
    assert decision.supersedes_hint == "use ruff for formatting"
    (bug,) = by_kind(cands, "bugfix")
    assert "missing await" in bug.text and "awaiting the sleep" in bug.text
    assert bug.source_uuids == [ENGLISH.turns[2].uuid]
    prefs = by_kind(cands, "preference")
    assert [p.text for p in prefs] == ["I prefer small commits.", "Never push directly to main."]
    assert all(p.source_uuids == [ENGLISH.turns[3].uuid] for p in prefs)
    assert prefs[1].importance > prefs[0].importance  # "never" is a strong rule
    (todo,) = by_kind(cands, "todo")
    assert "CI job" in todo.text and todo.source_uuids == [ENGLISH.turns[4].uuid]
    facts = {c.text: c.source_uuids for c in by_kind(cands, "fact")}
    # Tools as the turns write them, never with a role the transcript does not state.
    assert facts["Project uses pytest"] == [ENGLISH.turns[1].uuid]
    assert facts["Project uses uv"] == [ENGLISH.turns[1].uuid]
    assert facts["Tests run with `uv run pytest -q`"] == [ENGLISH.turns[1].uuid]
    files = (
        "Files changed for Let's switch formatting from ruff to black because the team uses "
        "black: `src/shop/retry.py`"
    )
    assert facts[files] == [ENGLISH.turns[0].uuid, ENGLISH.turns[2].uuid]
    assert "Project uses Python" not in facts  # a .py file edited does not say "Python"
    assert "The retry helpers live in src/shop/retry.py." in facts


def test_chinese_kinds_and_provenance() -> None:
    cands = HeuristicExtractor().extract(CHINESE)
    uuids = [t.uuid for t in CHINESE.turns]
    (decision,) = by_kind(cands, "decision")
    assert "PostgreSQL" in decision.text and decision.source_uuids == [uuids[0]]
    prefs = by_kind(cands, "preference")
    assert [p.text for p in prefs] == ["不要在测试里用 mock", "统一用真实的临时数据库。"]
    assert all(p.source_uuids == [uuids[1]] for p in prefs)
    (bug,) = by_kind(cands, "bugfix")  # the cause and the fix, one memory, both turns
    assert "连接池" in bug.text and "归还连接" in bug.text
    assert bug.source_uuids == [uuids[2], uuids[3]]
    (todo,) = by_kind(cands, "todo")
    assert "迁移脚本" in todo.text and todo.source_uuids == [uuids[4]]
    assert "PostgreSQL" in decision.keywords


def test_every_candidate_is_well_formed() -> None:
    for segment in (ENGLISH, CHINESE, *(c.segment for c in load_labelled())):
        uuids = {t.uuid for t in segment.turns}
        for c in HeuristicExtractor().extract(segment):
            assert c.kind in KINDS
            assert c.text.strip()
            assert c.source_uuids and set(c.source_uuids) <= uuids
            assert 0 <= c.importance <= 1
            assert isinstance(c.keywords, list)


def test_summary_memory() -> None:
    cands = HeuristicExtractor().extract(ENGLISH)
    (summary,) = by_kind(cands, "summary")
    assert summary.topic and summary.keywords
    assert "black" in summary.keywords
    # What the session worked on: no restated decision, fix or TODO (stored on their own).
    assert summary.text == "Files: src/shop/retry.py"
    assert "Decided" not in summary.text and "ruff to black" not in summary.text
    assert summary.source_uuids == [ENGLISH.turns[2].uuid]


def test_summary_says_what_was_asked_without_small_talk_or_labels() -> None:
    token = "ghp_" + "a1B2c3D4e5" * 4
    segment = seg(
        turn(1, "user", "Hi! How are you today?"),
        turn(2, "assistant", "Doing well, thanks. What are we working on?"),
        turn(3, "user", f"Can you rotate the deploy token {token} in the staging config?"),
        turn(4, "assistant", "Rotated it.", ("Edit", f"{CWD}/deploy/staging.env")),
        turn(5, "user", "Thanks so much!"),
        turn(6, "user", "Also rename the deploy script to deploy_staging.sh."),
    )
    from memd.extract.redact import redact_turn

    clean = replace(segment, turns=[redact_turn(t) for t in segment.turns])
    cands = HeuristicExtractor().extract(clean)
    (summary,) = by_kind(cands, "summary")
    assert summary.text == (
        "Asked: Can you rotate the deploy token [REDACTED:github_token] in the staging config? "
        "Also rename the deploy script to deploy_staging.sh; Files: deploy/staging.env"
    ).replace("[REDACTED:github_token] ", "")
    assert summary.source_uuids == [clean.turns[i].uuid for i in (2, 5, 3)]
    for cand in cands:  # never a redaction label nor markup as a topic or keyword
        assert "github_token" not in cand.topic and "REDACTED" not in cand.topic
        assert not any("github_token" in k or "REDACTED" in k for k in cand.keywords)


def test_summary_keeps_the_url_a_request_names() -> None:
    """A URL is the value of "our registry is …": the summary quotes it (cut out, the summary
    said "our private npm registry is" and nothing more)."""
    segment = seg(
        turn(1, "user", "CI can't install the UI kit. Our private npm registry is https://npm.internal.example.io."),
        turn(2, "assistant", "Added the scope line to .npmrc.", ("Edit", f"{CWD}/.npmrc")),
    )  # fmt: skip
    (summary,) = by_kind(HeuristicExtractor().extract(segment), "summary")
    assert "registry is https://npm.internal.example.io" in summary.text


def test_summary_skips_chit_chat_locomo_style() -> None:
    segment = seg(
        turn(1, "user", "Caroline: Hey Mel! Good to see you! How have you been?"),
        turn(2, "assistant", "Melanie: Hey Caroline! Good to see you! I'm swamped with the kids."),
        turn(
            3, "user", "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."
        ),
    )
    (summary,) = by_kind(HeuristicExtractor().extract(segment), "summary")
    assert summary.text == (
        "Said: Caroline: I went to a LGBTQ support group yesterday and it was so powerful"
    )
    assert summary.source_uuids == [segment.turns[2].uuid]


def test_excerpts_are_episodes_request_and_outcome() -> None:
    """An excerpt is an episode's request and the replies that closed it: never a window that
    slides over the agent's work, never a turn in two excerpts, never narration."""
    long_text = "We looked at the store layout in detail. " * 60
    segment = seg(
        turn(1, "user", "Why is checkout slow?"),
        turn(
            2, "assistant", "Let me look at the checkout service.", ("Read", f"{CWD}/checkout.py")
        ),
        turn(3, "assistant", "Now let me run the profiler.", ("Bash", "py-spy top")),
        turn(
            4, "assistant", "Checkout is slow because it loads every cart item one query at a time."
        ),
        turn(5, "user", "Fix it with one query."),
        turn(6, "assistant", "", ("Edit", f"{CWD}/checkout.py")),  # tool-only: nothing said
        turn(7, "assistant", "Perfect! Let me summarise. " + long_text),
        turn(8, "user", "继续"),
        turn(9, "user", "Summary of earlier work", is_compact_summary=True),
        turn(20, "user", "Warmup", is_sidechain=True),
        turn(
            21,
            "user",
            "<system-reminder>remember X</system-reminder>Please rename the module to shop.api",
        ),
        turn(22, "assistant", "Let me check the imports first.", ("Bash", "grep -r shop .")),
    )
    excerpts = by_kind(HeuristicExtractor().extract(segment), "excerpt")
    uuid = [t.uuid for t in segment.turns]
    # Episode 1: the question and the reply that answered it (the narration between: no).
    # Episode 2: the request and its closing reply, "继续" being an answer inside it.
    # Episode 3: the request alone (its only text announced a step).
    assert [e.source_uuids for e in excerpts] == [
        [uuid[0], uuid[3]],
        [uuid[4], uuid[6]],
        [uuid[10]],
    ]
    cited = [u for e in excerpts for u in e.source_uuids]
    assert len(cited) == len(set(cited))  # no turn in two excerpts
    for e in excerpts:  # the contract: line i is turn source_uuids[i], role first
        lines = e.text.splitlines()
        assert len(lines) == len(e.source_uuids)
        roles = [next(t.role for t in segment.turns if t.uuid == u) for u in e.source_uuids]
        assert [line.split(": ", 1)[0] for line in lines] == roles
        assert "Let me" not in e.text and "Perfect!" not in e.text
    long_line = excerpts[1].text.splitlines()[1]
    # An excerpt over WINDOW_CHARS is cut in proportion, at a sentence end.
    assert len(excerpts[1].text) <= WINDOW_CHARS + 40
    assert long_line.startswith("assistant: We looked at the store layout")
    assert long_line.endswith("in detail.…") and len(long_line) > 1000
    assert excerpts[-1].text == "user: Please rename the module to shop.api"  # no date
    # requests that gave a typed memory rank above plain ones
    assert excerpts[0].importance >= excerpts[2].importance


def test_a_subagents_prompt_is_the_agents_not_the_users() -> None:
    """A segment of a subagent alone: its first "user" turn is the parent agent's prompt. It
    is labelled ``agent:``, never makes a preference or a decision, and no summary says the
    user asked it; the subagent's report is its outcome."""
    segment = seg(
        turn(1, "user", "Always use pnpm. Find where the retry limit is set.", is_sidechain=True),
        turn(2, "assistant", "Let me grep.", ("Grep", "retry"), is_sidechain=True),
        turn(
            3,
            "assistant",
            "The retry limit is set in `src/net/retry.ts` as `MAX_RETRIES = 5`.",
            is_sidechain=True,
        ),
    )
    cands = HeuristicExtractor().extract(segment)
    (excerpt,) = by_kind(cands, "excerpt")
    assert excerpt.text.splitlines()[0].startswith("agent: Always use pnpm.")
    assert not by_kind(cands, "preference") and not by_kind(cands, "decision")
    assert not any(c.text.startswith(("Asked", "Said")) for c in by_kind(cands, "summary"))
    assert any("MAX_RETRIES = 5" in c.text for c in cands if c.kind == "fact")


def test_a_subagents_turns_are_the_parents_work() -> None:
    """Sidechain turns interleaved with the main thread (Claude Code 1.x): the subagent's
    prompt is never an excerpt line, its edits count as the episode's work."""
    segment = seg(
        turn(1, "user", "Build the TODO list page."),
        turn(2, "assistant", "", ("Task", "Create the page component")),
        turn(3, "user", "Create src/pages/Todo.tsx with a list.", is_sidechain=True),
        turn(4, "assistant", "", ("Write", f"{CWD}/src/pages/Todo.tsx"), is_sidechain=True),
        turn(5, "assistant", "Created the page component.", is_sidechain=True),
        turn(6, "assistant", "The TODO list page lives in `src/pages/Todo.tsx`."),
    )
    cands = HeuristicExtractor().extract(segment)
    (excerpt,) = by_kind(cands, "excerpt")
    assert excerpt.source_uuids == [segment.turns[0].uuid, segment.turns[5].uuid]
    assert "Create src/pages" not in excerpt.text
    files = [c for c in cands if c.text.startswith("Files changed for")]
    assert files and "src/pages/Todo.tsx" in files[0].text


def test_excerpt_windows_carry_the_turn_date() -> None:
    from dataclasses import replace

    first = replace(
        turn(1, "user", "Where did Caroline move last spring?"), timestamp="2023-05-08T13:56:00Z"
    )
    second = replace(
        turn(2, "assistant", "She moved to Sweden with her family."),
        timestamp="2023-05-08T13:57:00Z",
    )
    excerpts = by_kind(HeuristicExtractor().extract(seg(first, second)), "excerpt")
    window = (
        "[2023-05-08] user: Where did Caroline move last spring?\n"
        "assistant: She moved to Sweden with her family."
    )
    # A two-turn segment: both turns' windows would be the same, so there is one.
    assert [e.text for e in excerpts] == [window]
    assert [e.source_uuids for e in excerpts] == [[first.uuid, second.uuid]]


def test_excerpt_lines_keep_the_evidence_next_to_the_turn() -> None:
    """LoCoMo's case: a long turn before the evidence was clipped at 400 characters, just
    before what answered the question. Now each line is one whole turn (whitespace collapsed)
    until the window passes WINDOW_CHARS; then every turn is cut in proportion, the turn
    before keeping its end."""
    story = (
        "Caroline: I spent the weekend at the shelter helping with intake forms.\n\n"
        + "We sorted donations and talked to new volunteers for hours. " * 8
        + "Researching adoption agencies is what I am doing now."
    )
    segment = seg(
        turn(1, "user", story),
        turn(2, "assistant", "Melanie: That's big news! Which agency are you looking at?"),
        turn(3, "user", "Caroline: One that supports LGBTQ+ parents."),
    )
    excerpts = by_kind(HeuristicExtractor().extract(segment), "excerpt")
    first = excerpts[0].text.splitlines()
    assert first[0] == "user: " + " ".join(story.split())  # whole: the window fits
    # A window that does not fit: the turn before keeps its end (next to the evidence).
    long_before = "Some chatter about the weather and the garden today. " * 40 + (
        "Researching adoption agencies is what I am doing now."
    )
    answer = "Melanie: That's great! " + "I hope the process goes smoothly for you. " * 20
    segment = seg(
        turn(1, "user", "Caroline: hi"),
        turn(2, "user", long_before),
        turn(3, "assistant", answer),
        turn(4, "user", "Caroline: Thanks, Mel."),
    )
    excerpts = by_kind(HeuristicExtractor().extract(segment), "excerpt")
    window = next(e for e in excerpts if e.source_uuids[1] == segment.turns[2].uuid)
    before, focus, after = window.text.splitlines()
    assert before.startswith("user: …") and before.endswith("what I am doing now.")
    assert focus.startswith("assistant: Melanie: That's great!") and focus.endswith("…")
    assert after == "user: Caroline: Thanks, Mel."
    assert len(window.text) <= WINDOW_CHARS + 40


def test_secrets_never_reach_candidates() -> None:
    key = "sk-proj-" + "Hq3_Vb8-" * 8
    segment = seg(
        turn(1, "user", f"We decided to use OpenAI with key {key} for the summaries."),
        turn(2, "assistant", f"Saved OPENAI_API_KEY={key} to .env", ("Write", f"{CWD}/.env")),
    )
    cands = HeuristicExtractor().extract(segment)
    assert cands and all(key not in c.text for c in cands)
    assert any("[REDACTED:openai_key]" in c.text for c in cands)
    assert not any(key in " ".join(c.keywords) for c in cands)


@pytest.mark.parametrize(
    ("role", "sentence"),
    [
        ("user", "Should we switch to pnpm?"),
        ("user", "要不要换成 Postgres？"),
        ("assistant", "The failure might be caused by a race in the fixture."),
        ("assistant", "可能是后端没有加索引，没法确定。"),
        ("assistant", "Let me switch to the tests directory and run them."),
        ("assistant", "I switched the lockfile to pnpm and updated the README."),
        ("assistant", "已经全部改用 httpx.AsyncClient 了。"),
        ("user", "Can you explain what the deploy script does?"),
        ("user", "The dashboard build is slow, 90 seconds."),
        ("assistant", "Here's what was completed:"),  # the lead-in of a list
        ("assistant", "The implementation is complete - we successfully:"),
        ("assistant", "Let me fix it by removing the propagator setup."),  # an intention
        ("assistant", "TODO App Creation Complete"),  # a heading naming the product
        ("user", "Using commit message: Create a hello script"),  # a pasted log line
        ("assistant", "Out of scope for `/simplify`; worth a follow-up if you want it."),  # offer
        ("assistant", "Committing as a follow-up to the review findings."),  # what it does now
        ("user", "The TODO List component renders every item twice."),
        ("assistant", "That's now decided — against."),  # a decision that says nothing alone
        ("assistant", "Now the tasks file — replace section 4 with what was actually decided."),
    ],
)
def test_questions_hedges_and_narration_are_not_memories(role: str, sentence: str) -> None:
    assert classify(sentence, role) is None


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Always write commit messages in the imperative.", "preference"),
        ("Commit messages: use conventional commits.", "preference"),
        ("提交信息统一用英文。", "preference"),
        ("Removing the dead TaskStart paths still needs a follow-up PR.", "todo"),
    ],
)
def test_commit_rules_and_follow_ups_that_are_meant(sentence: str, kind: str) -> None:
    role = "assistant" if sentence.startswith("Removing") else "user"
    assert classify(sentence, role) == kind


@pytest.mark.parametrize(
    ("sentence", "role"),
    [
        ("Please, make a simple list, with concise root cause so I can understand.", "user"),
        ("帮我查一下这次超时的根本原因。", "user"),
        ("打算把所有接口迁到 /api/v2 前缀，顺便把响应结构统一一下，先出个方案。", "user"),  # a plan
        ("Now the Next Steps section.", "assistant"),
    ],
)
def test_requests_and_what_the_agent_writes_next_state_nothing(sentence: str, role: str) -> None:
    """Read by a person on the real sessions: a request filed as a bug fix, narration as a
    TODO."""
    assert classify(sentence, role) is None
    assert classify("The root cause was a missing index on orders.user_id.", role) == "bugfix"


def test_deterministic() -> None:
    a = HeuristicExtractor().extract(ENGLISH)
    b = HeuristicExtractor().extract(replace(ENGLISH))
    assert a == b


TOOL_TEMPLATES = ("Files changed", "Tests run", "Formatting runs", "Linting runs", "The build runs")


def test_labelled_quality_floor() -> None:
    """A regression guard: precision first (typed memories get injected), recall close behind.

    The sentence rules are scored alone, on the statements labelled; the facts phrased from
    tool records (commands that worked, files changed) are checked for recall apart, since an
    episode's work gives more of them than these labels list (one per episode): their
    precision is measured on real sessions (bench/realwork.py)."""
    from dataclasses import replace as copy

    ext = HeuristicExtractor()
    cases = load_labelled()
    assert {c.lang for c in cases} == {"en", "zh"} and len(cases) >= 10
    said, tools = [], []
    for case in cases:
        cands = ext.extract(case.segment)
        mine = [e for e in case.expected if not e.words[0].startswith(TOOL_TEMPLATES)]
        theirs = [e for e in case.expected if e.words[0].startswith(TOOL_TEMPLATES)]
        said.append((copy(case, expected=mine), [c for c in cands if c.origin != "work"]))
        tools.append((copy(case, expected=theirs), [c for c in cands if c.origin == "work"]))
    scores = score(said)
    assert scores["all"].precision >= 0.95, scores["all"].extras
    assert scores["all"].recall >= 0.9, scores["all"].misses
    for kind in TYPED_KINDS:
        assert scores[kind].precision >= 0.85, (kind, scores[kind].extras)
        assert scores[kind].recall >= 0.75, (kind, scores[kind].misses)
    recorded = score(tools)["all"]
    assert recorded.tp >= 25 and recorded.recall >= 0.9, recorded.misses


def test_speed_at_least_500_turns_per_second() -> None:
    base = [t for c in load_labelled() for t in c.segment.turns]
    turns = [
        replace(t, uuid=f"{t.uuid[:-6]}{i:06d}", text=f"{t.text} (#{i})")
        for i, t in enumerate(base * (1500 // len(base) + 1))
    ][:1500]
    segments = [seg(*turns[i : i + 40]) for i in range(0, len(turns), 40)]
    ext = HeuristicExtractor()
    clear_caches()
    start = time.perf_counter()
    for s in segments:
        ext.extract(s)
    rate = len(turns) / (time.perf_counter() - start)
    assert rate >= 500, f"{rate:.0f} turns/s"


def test_get_extractor_and_stats() -> None:
    ext = get_extractor(Settings(redact_patterns=[r"ACME-\d+"]))
    assert isinstance(ext, HeuristicExtractor) and ext.name == "heuristic"
    cands = ext.extract(seg(turn(1, "user", "We decided to track ticket ACME-1234 in the board.")))
    assert all("ACME-1234" not in c.text for c in cands)
    stats = ext.stats()
    assert stats["calls"] == 1 and stats["tokens_in"] == 0 and stats["budget_exhausted"] is False


def test_a_diagnosis_without_a_fix_is_not_a_bugfix() -> None:
    wip = seg(
        turn(
            1, "assistant", "The issue is that the macro needs the tracer module at compile time."
        ),
        turn(2, "assistant", "Now the tests compile.", ("Bash", "mix test")),
        turn(3, "user", "The root cause was the stale cache file in /tmp."),
    )
    bugs = by_kind(HeuristicExtractor().extract(wip), "bugfix")
    assert [b.text for b in bugs] == ["The root cause was the stale cache file in /tmp."]


@pytest.mark.parametrize(
    ("sentence", "hint"),
    [
        ("Let's switch formatting from ruff to black.", "use ruff for formatting"),
        ("We'll use httpx instead of requests.", "use requests"),
        ("我们决定把缓存从 Redis 改成本地 LRU。", "use Redis"),
        ("我们决定用 uv 替代 pip 来装依赖。", "use pip"),
    ],
)
def test_decisions_that_replace_a_choice_carry_a_supersedes_hint(sentence: str, hint: str) -> None:
    (decision,) = by_kind(HeuristicExtractor().extract(seg(turn(1, "user", sentence))), "decision")
    assert decision.supersedes_hint == hint


def test_one_statement_said_three_times_is_one_candidate_citing_all_three() -> None:
    segment = seg(
        turn(1, "user", "TODO: add rate limiting to the public API."),
        turn(2, "assistant", "Noted."),
        turn(3, "user", "Remember, TODO: add rate limiting to the public API!"),
        turn(4, "user", "We still need to add rate limiting to the public API."),
        turn(5, "user", "We decided to use Redis as the job broker."),
        turn(6, "user", "As I said, we decided to use Redis as the job broker."),
        turn(7, "user", "TODO: add rate limiting to the admin API."),  # not the same
    )
    cands = HeuristicExtractor().extract(segment)
    uuids = [t.uuid for t in segment.turns]
    todos = by_kind(cands, "todo")
    assert [t.source_uuids for t in todos] == [[uuids[0], uuids[2], uuids[3]], [uuids[6]]]
    (decision,) = by_kind(cands, "decision")
    assert decision.source_uuids == [uuids[4], uuids[5]]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        # remarks in conversation: never preferences
        ("My sister is getting married next month and I always cry at weddings.", None),
        ("Don't forget to call your mom!", None),
        ("Always believe in yourself, Caroline!", None),
        ("I don't want to go to the party alone.", None),
        # first-person habits and tastes: facts about the speaker
        ("Caroline: I love hiking with my friends on weekends.", "fact"),
        ("I always go running in the morning before work.", "fact"),
        # how to work: preferences
        ("I prefer small commits.", "preference"),
        ("Never push directly to main.", "preference"),
        ("Always use snake_case for variables.", "preference"),
        ("不要在测试里用 mock", "preference"),
        (
            "To be clear: don't use ClMail for communication, use the builtin subagents.",
            "preference",
        ),
        ("Also, don't forget to call your mom!", None),
        # a sentence that closes a TODO is progress, never a new TODO
        ("The v0.5.0 release checklist is done, no follow-up needed.", "progress"),
        ("发布检查清单已经完成了，后续不用再跟。", "progress"),
        ("I finished the migration of the billing tables.", "progress"),
        ("The migration is done but we still need to drop the old tables.", "todo"),
    ],
)
def test_preferences_are_about_work_and_completions_are_progress(
    sentence: str, kind: str | None
) -> None:
    assert classify(sentence, "user") == kind


@pytest.mark.parametrize(
    "sentence",
    [
        "I'll catch up with you later.",
        "That's why I love my job so much.",
        "It turned out that she loves a good lager beer.",
        "It must be really putting your skills to the test.",
        "Let's keep supporting each other on our journey.",
        "But I never decided to try it.",
        "Keep going with it!",
    ],
)
def test_everyday_speech_is_no_todo_bugfix_or_decision(sentence: str) -> None:
    """LoCoMo-like chat: the loose markers ("later", "that's why", "turned out", "let's keep",
    "must be") only count in a sentence about work."""
    assert classify(sentence, "user") is None
    assert classify(sentence, "assistant") is None


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("We'll add the retry test later.", "todo"),
        ("That's why the upload test failed on CI.", "bugfix"),
        ("Let's keep the old API for now.", "decision"),
    ],
)
def test_the_same_markers_about_work_still_count(sentence: str, kind: str) -> None:
    assert classify(sentence, "user") == kind


def test_a_numbered_issue_still_open_upstream_is_no_todo() -> None:
    """ "… in 4.3 (upstream issue #94732, still open)" tells why a bug happens, not work left;
    "two items are still open" is."""
    cause = "It comes from `platform_on_leave` in 4.3 (upstream issue #94732, still open)."
    assert classify(cause, "assistant") != "todo"
    assert classify("Two items are still open: the CI job and the docs.", "user") == "todo"


def test_topics_and_keywords_never_come_from_markup_or_redaction_labels() -> None:
    segment = seg(
        turn(
            1,
            "user",
            'Please fix the <span class="badge">status</span> colour on the billing page, see '
            "[the style notes](https://example.com/docs/badge-colours). "
            "Token [REDACTED:github_token] [REDACTED:github_token] [REDACTED:github_token].",
        ),
        turn(2, "assistant", "<div>Fixed the status colour on the billing page.</div>"),
    )
    cands = HeuristicExtractor().extract(segment)
    banned = {"span", "class", "badge", "div", "https", "example.com", "github_token", "REDACTED"}
    for cand in cands:
        got = {cand.topic, *cand.topic.split(), *cand.keywords}
        assert not any(b.lower() in w.lower() for w in got for b in banned), (cand.kind, got)
    (summary,) = by_kind(cands, "summary")
    assert "span" not in summary.text and "https" not in summary.text
    assert summary.text.startswith("Asked: Please fix the status colour on the billing page")


@pytest.mark.parametrize(
    ("command", "family"),
    [
        ("uv run pytest -q", "test"),
        ("make test", "test"),
        ("ruff check .", "lint"),
        ("ruff format .", "format"),
        ("pnpm run build", "build"),
        ("make build", "build"),
        ("uv run alembic upgrade head", "migrate"),
        ("python manage.py migrate", "migrate"),
        ("mix ecto.migrate", "migrate"),
        ("pnpm run db:migrate", "migrate"),
        ("kubectl apply -f k8s/", "deploy"),
        ("helm upgrade --install api ./chart", "deploy"),
        ("fly deploy", "deploy"),
        ("act --container-architecture linux/amd64 -j test", "ci"),
        ("actionlint", None),
        ("mise run test", "test"),
        ("mise run lint:go", "lint"),
        ("mise run fmt", "format"),
        ("mise run test:integration", "test"),
        ("just build", "build"),
        ("make fmt", "format"),
        ("mise run dev", None),
        ("make install", None),
        ("kubectl get pods", None),
        ("make", None),  # the default target may be anything: no purpose is guessed
        ("make serve", None),
    ],
)
def test_command_families_only_where_the_command_says_it(command: str, family: str | None) -> None:
    from memd.extract.vocabulary import command_family

    assert command_family(command) == family


@pytest.mark.parametrize(
    ("command", "check"),
    [
        ("mise run test:integration", "test:integration"),
        ("go test -tags=integration ./cmd/entire/cli/integration_test/...", "test:integration"),
        ("npm run test:e2e", "test:e2e"),
        ("pytest -m smoke", "test:smoke"),
        ("go test ./...", "test"),
        ("pytest tests/test_integration_db.py", "test"),  # one file, not a kind of tests
        ("mise run lint", "lint"),
        # a build for another platform (the variables before it are kept for it alone)
        ("GOOS=windows go build ./cmd/entire/cli/telemetry/", "build:cross"),
        ("cargo build --release --target aarch64-unknown-linux-gnu", "build:cross"),
        ("go build ./...", "build"),
    ],
)
def test_integration_and_end_to_end_tests_are_checks_of_their_own(command: str, check: str) -> None:
    from memd.extract.vocabulary import FAMILY_TEXT, check_of

    assert check_of(command) == check
    assert check in FAMILY_TEXT


def test_only_the_platform_is_kept_of_the_variables_before_a_command() -> None:
    from memd.extract.evidence import shell_commands

    assert shell_commands("GOOS=windows go build ./cmd/x/ && echo OK") == [
        "GOOS=windows go build ./cmd/x/"
    ]
    assert shell_commands("CI=true DATABASE_URL=postgres://x pytest -q") == ["pytest -q"]


def test_migrations_deploys_and_local_ci_runs_that_worked_are_how_to_do_it() -> None:
    """#30: commands that migrate or deploy and succeeded say how it is done in this project,
    like tests and builds; a failed deploy is not offered as the way to deploy."""
    work = seg(
        turn(1, "user", "Please apply the new migration and ship it."),
        turn(2, "assistant", "Migrating.", ("Bash", f"cd {CWD} && uv run alembic upgrade head")),
        turn(3, "assistant", "Deploying.", ("Bash", "fly deploy --remote-only")),
        turn(4, "assistant", "Checking CI.", ("Bash", "act --container-architecture linux/amd64")),
    )
    texts = {c.text for c in by_kind(HeuristicExtractor().extract(work), "fact")}
    assert "Migrations run with `uv run alembic upgrade head`" in texts
    assert "Deploys run with `fly deploy --remote-only`" in texts
    assert "The CI workflow runs locally with `act --container-architecture linux/amd64`" in texts
    failed = seg(
        turn(1, "user", "Deploy it please."),
        turn(2, "assistant", "Deploying.", ("Bash", "kubectl apply -f k8s/")),
    )
    failed.turns[1].tools[0].status = "error"
    texts = {c.text for c in HeuristicExtractor().extract(failed)}
    assert not any(t.startswith("Deploys run with") for t in texts), texts


def test_a_reply_heading_that_names_something_is_kept() -> None:
    """A subagent's report lists "- Latest version: 0.1.3" under "### 6. opentelemetry_ash":
    without its heading the line no longer says of what. Structure-only headings still go."""
    from memd.extract.episodes import heading, informative

    assert heading("### 6. opentelemetry_ash") == "opentelemetry_ash"
    assert heading("### Step 2: Wire the exporter") == "Wire the exporter"
    assert heading("## Root cause") == "Root cause"
    assert heading("## Summary of changes") == heading("# Next steps:") == ""
    assert heading("## Let me check the tests") == ""  # narration, as a heading
    report = (
        "## Summary\n### 5. opentelemetry_phoenix\n- Latest version: 2.0.1\n"
        "### 6. opentelemetry_ash\n- Latest version: 0.1.3"
    )
    assert informative(report) == (
        "opentelemetry_phoenix\n- Latest version: 2.0.1\nopentelemetry_ash\n- Latest version: 0.1.3"
    )


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("- `Setup` - triggered via --init flags (v2.1.10+)", None),
        ("Here is what changed in app.py:", None),
        ("以下是修改内容：", None),
        (
            "Ended with: Experiment complete. All six tasks done. Summary of what happened:",
            "Ended with: Experiment complete. All six tasks done.",
        ),
        (
            "The retry helpers live in src/shop/retry.py.",
            "The retry helpers live in src/shop/retry.py.",
        ),
    ],
)
def test_a_piece_cut_from_a_list_is_no_memory(text: str, kept: str | None) -> None:
    """A bullet cut from its list, or a lead-in whose list was left behind, says nothing on its
    own; a trailing lead-in is dropped from a memory that stands without it."""
    from memd.extract.heuristic import fragment

    cand = Candidate(kind="fact", text=text)
    assert (None if fragment(cand) else cand.text) == kept


def test_a_progress_line_another_memory_says_whole_is_dropped() -> None:
    from memd.extract.heuristic import contained

    stopped = Candidate(
        kind="progress", text="Ended with: Fixed and pushed. The lint failure was gofmt."
    )
    alone = Candidate(kind="progress", text="Fixed and pushed. The lint failure was gofmt.")
    rule = Candidate(kind="preference", text="Never push directly to main.")
    asked = Candidate(kind="progress", text="Last worked on: Never push directly to main.")
    assert contained([stopped, alone, rule, asked]) == [stopped, rule, asked]


@pytest.mark.parametrize(
    "sentence",
    [
        "The session state has no `strategy` field; this appears to be from an older CLI version.",
        "Rebuilt `/tmp/git-sync` with a tunable batch size in `internal/gitproto/push.go`.",
        "Continuing the investigation into why `AgentType` is `Agent` in `metadata.json`.",
    ],
)
def test_a_guess_a_scratch_copy_or_narration_is_no_finding(sentence: str) -> None:
    from memd.extract.findings import finding_score

    assert finding_score(sentence) == 0.0
    kept = "SaveChanges in strategy/manual_commit_git.go is the only place CheckpointCount grows."
    assert finding_score(kept) > 0


def test_a_slash_command_names_its_episode_and_a_big_change_lists_its_files() -> None:
    def write(n: int, path: str, *names: str) -> Turn:
        call = ToolCall("Write", path, args={"file_path": f"{CWD}/{path}", "added": list(names)})
        call.status = "ok"
        return replace(turn(n, "assistant", ""), tools=[call])

    paths = [f"src/components/Part{i}.tsx" for i in range(8)] + ["src/app/page.tsx"]
    segment = seg(
        turn(1, "user", "/orchestrator create TODO app by Next.js"),
        *(
            write(i + 2, p, p.rsplit("/", 1)[1].split(".")[0], f"Props{i}")
            for i, p in enumerate(paths)
        ),
        turn(20, "assistant", "The TODO app is ready: the page wires the parts together."),
    )
    (files,) = [c for c in HeuristicExtractor().extract(segment) if c.text.startswith("Files")]
    # The request's words, not the command's name, say what the change was for.
    assert files.text.startswith("Files changed for create TODO app by Next.js: ")
    # Nine files: every one fits, each with what it gained but not its own name again.
    assert "`src/app/page.tsx` (Props8)" in files.text and "more)" not in files.text
    assert "`src/components/Part0.tsx` (Props0)" in files.text


def test_a_closing_reports_sections_are_memories_of_their_own() -> None:
    report = (
        "Done. Here's a summary.\n\n## Root cause\n\nThe server rejects a push: `receive_pack.go` "
        "caps one request at `maxRefUpdateCommands = 25_000`. The relay sent all 55,006 updates "
        "in one request. `replicate.go` sends every command at once. `incremental.go` and "
        "`materialized.go` do the same.\n\n"
        "## Fix in `push.go`\n\n- New `maxRefUpdatesPerPush = 20_000` and a `chunkRefUpdates` "
        "helper.\n- `PushPack` sends the full pack with the first batch.\n\n"
        "The split is safe because receive-pack commits the entire received pack: "
        "`CommitQuarantinedFanout` commits even objects of refs that failed.\n\n"
        "## Does it work with GitHub? Yes.\n\nGitHub's per-push branch limit is opt-in, so "
        "20k-ref batches are fine on default repos. Would you like me to open a PR?\n\n"
        "## Warnings\n\nNone.\n\n## Sources\n\n[docs](https://docs.github.com/en/push-policy)"
    )
    segment = seg(
        turn(1, "user", "Mirroring fails with too many ref-update commands, can you fix it?"),
        turn(2, "assistant", "", ("Edit", f"{CWD}/internal/gitproto/push.go")),
        turn(3, "assistant", report),
    )
    sections = [c for c in HeuristicExtractor().extract(segment) if c.topic.startswith("Mirror")]
    texts = [c.text for c in sections if c.kind == "fact" and not c.text.startswith("Files")]
    # Each named section, its later paragraph included; not what the outcome says already,
    # not an offer, not "None", not a list of links.
    assert any("CommitQuarantinedFanout" in t and t.startswith("Fix in") for t in texts), texts
    assert any(t.startswith("Does it work with GitHub? Yes.: GitHub's") for t in texts), texts
    assert not any("Would you like" in t or "Warnings" in t or "Sources" in t for t in texts)
    assert not any(t.startswith("Root cause") for t in texts), texts
    assert all(c.source_uuids == [segment.turns[2].uuid] for c in sections if c.text in texts)


def test_a_commit_message_in_a_heredoc_cut_short_keeps_its_subject() -> None:
    """A long `git commit -m "$(cat <<'EOF' …` is stored cut at 1,500 characters, its
    terminator gone: its subject was filed as "$(cat <<'EOF"."""
    from memd.extract.records import commit_message
    from memd.ingest.toolcalls import tool_args

    body = "\n".join(f"- point {i}: the lease is checked per ref" for i in range(60))
    command = f"git commit -m \"$(cat <<'EOF'\nAddress review findings\n\n{body}\nEOF\n)\""
    stored = tool_args("Bash", {"command": command})["command"]
    assert len(stored) < len(command)  # cut, without its EOF
    message = commit_message(stored)
    assert message.startswith("Address review findings\n\n- point 0")
    assert commit_message('git commit -m "Short one"') == "Short one"


def test_a_check_run_on_one_part_does_not_replace_the_whole_projects() -> None:
    from memd.extract.records import Commands

    commands = Commands()
    first, later = turn(1, "assistant", ""), turn(2, "assistant", "")
    commands.see(first, "go build ./...", "ok")
    commands.see(later, "go build ./cmd/entire/cli/agent/claudecode/...", "ok")
    commands.see(later, "go test ./internal/gitproto/", "ok")
    texts = sorted(c.text for c in commands.candidates())
    assert texts == [
        "Tests run with `go test ./internal/gitproto/`",
        "The build runs with `go build ./...`",
    ]


def test_integration_tests_are_kept_beside_the_unit_tests() -> None:
    """Read on the real entire CLI sessions: `mise run test` and `mise run test:integration`
    were both run; only one of them was kept, as "how tests run"."""
    from memd.extract.records import Commands

    commands = Commands()
    first, later = turn(1, "assistant", ""), turn(2, "assistant", "")
    commands.see(first, "mise run test", "ok")
    commands.see(later, "mise run test:integration", "ok")
    assert sorted(c.text for c in commands.candidates()) == [
        "Integration tests run with `mise run test:integration`",
        "Tests run with `mise run test`",
    ]


def test_the_works_passing_state_and_a_recaps_showcase_are_no_findings() -> None:
    """Read by a person on the real sessions: "`golangci-lint` is clean locally." and a
    closing recap's "🚀 Key Features" were filed as facts; neither is worth a next session."""
    from memd.extract.findings import finding_score

    assert finding_score("`golangci-lint` is clean locally.") == 0
    assert finding_score("Mode bit is now `100755` in the index.") == 0
    assert finding_score("The `Pusher` is constructed once in `syncer.go:741`.") > 0
    recap = (
        "## 🚀 Key Features\n\n- Add, toggle and delete todos with `useTodos`\n\n"
        "## 🧩 Reusable Components\n\n- `TodoItem` shows one todo with its checkbox\n\n"
        "## Storage\n\nTodos are kept in `localStorage` under the key `todos-v1` on every change."
    )
    segment = seg(
        turn(1, "user", "Build the TODO app with persistence please."),
        turn(2, "assistant", "", ("Write", f"{CWD}/src/hooks/useTodos.ts")),
        turn(
            3,
            "assistant",
            "The app is built in `src/app/page.tsx`. State lives in `useTodos`. Styles use "
            "`tailwind.config.ts`. Icons come from `lucide-react`.\n\n" + recap,
        ),
    )
    texts = [c.text for c in HeuristicExtractor().extract(segment) if c.kind == "fact"]
    assert any(t.startswith("Storage: Todos are kept") for t in texts), texts
    assert not any("Key Features" in t or "Reusable Components" in t for t in texts), texts


def test_a_question_answered_without_tools_in_a_coding_session_is_a_fact() -> None:
    """In a session with work, the agent's answer to a follow-up question is knowledge even when
    it needed no tool; in a dialogue (no tool anywhere) the turns stay excerpts."""
    answer = (
        "Good question. **Top-level fields are preserved** because both functions read the "
        "file into `map[string]json.RawMessage` and write the whole map back; only the "
        "`hooks` object is unmarshaled into the typed `ClaudeHooks` struct."
    )
    segment = seg(
        turn(1, "user", "Is the settings loader dropping hook types it doesn't know?"),
        turn(2, "assistant", "", ("Read", f"{CWD}/cmd/agent/hooks.go")),
        turn(3, "assistant", "Yes: `InstallHooks` unmarshals into `ClaudeHooks`, six types."),
        turn(4, "user", "and other unknown top level fields?"),
        turn(5, "assistant", answer),
    )
    facts = [c for c in HeuristicExtractor().extract(segment) if c.kind == "fact"]
    (fact,) = [c for c in facts if "RawMessage" in c.text]
    assert fact.text.startswith(
        "and other unknown top level fields: Top-level fields are preserved because"
    )
    assert fact.source_uuids == [segment.turns[3].uuid, segment.turns[4].uuid]
    dialogue = seg(segment.turns[3], segment.turns[4])
    assert not [c for c in HeuristicExtractor().extract(dialogue) if c.kind == "fact"]


def test_a_bug_fix_says_the_fix_told_on_the_causes_subject() -> None:
    def call(n: int, text: str, name: str, summary: str, status: str = "ok") -> Turn:
        args = {"command": summary} if name == "Bash" else {"file_path": summary}
        tool = ToolCall(name, summary, args=args, status=status)
        return replace(turn(n, "assistant", text), tools=[tool])

    segment = seg(
        turn(1, "user", "TestResume_AfterMergingMain fails: stat ./cmd/entire/main.go"),
        call(2, "The issue is that `GitMerge` triggers the git hooks, which run main.go.", "Read",
             f"{CWD}/integration_test/resume_test.go"),
        call(3, "Added `--no-verify` to the `GitMerge` helper so the hooks are skipped.", "Edit",
             f"{CWD}/integration_test/resume_test.go"),
        call(4, "", "Bash", "go test ./integration_test/..."),
        turn(5, "assistant", "Fixed. Added OpenTelemetry dependencies to mix.exs earlier too."),
    )  # fmt: skip
    (bug,) = by_kind(HeuristicExtractor().extract(segment), "bugfix")
    assert bug.text.endswith(
        "(fixed in `resume_test.go`) Fix: Added `--no-verify` to the `GitMerge` helper so the "
        "hooks are skipped."
    ), bug.text
    assert segment.turns[2].uuid in bug.source_uuids
    # A recap's change on another subject is no fix of this cause.
    recap = seg(*segment.turns[:2], replace(segment.turns[2], text=""), *segment.turns[3:])
    (bug,) = by_kind(HeuristicExtractor().extract(recap), "bugfix")
    assert "Fix:" not in bug.text, bug.text


def test_a_version_or_a_flag_opening_a_sentence_is_no_list_marker() -> None:
    """The summary of "1.9.0 测试过了，上生产吧。" said "9.0 测试过了": "1." was read as a list's
    number. A list marker is followed by a space."""
    from memd.extract.rules import sentences

    assert sentences("1.9.0 测试过了，上生产吧。") == ["1.9.0 测试过了，上生产吧。"]
    assert sentences("--force-blind replaces the old flag.") == [
        "--force-blind replaces the old flag."
    ]
    assert sentences("1. First, pin the registry.\n- Then run the build.") == [
        "First, pin the registry.",
        "Then run the build.",
    ]


def test_a_topic_ends_without_its_colon() -> None:
    """A topic of "can you help me understand again how this happens:" showed "happens::"."""
    from memd.extract.episodes import build
    from memd.extract.heuristic import episode_topic

    segment = seg(
        turn(1, "user", "can you help me understand again how this happens:"),
        turn(2, "assistant", "It happens when the shadow branch has checkpoints."),
    )
    (episode,) = build(segment)
    assert episode_topic(episode) == "can you help me understand again how this happens"


def test_the_closing_replys_fix_goes_to_the_latest_cause_only() -> None:
    """Read on the real entire CLI session: two causes stated in turn, each edited and tested,
    both ended "Fix: Use --no-verify to skip hooks", and the brief showed that fix twice."""

    def call(n: int, text: str, name: str, summary: str) -> Turn:
        args = {"command": summary} if name == "Bash" else {"file_path": summary}
        tool = ToolCall(name, summary, args=args, status="ok")
        return replace(turn(n, "assistant", text), tools=[tool])

    path = f"{CWD}/integration_test/resume_test.go"
    segment = seg(
        turn(1, "user", "TestResume_AfterMergingMain fails: stat ./cmd/entire/main.go"),
        call(2, "The issue is that `GitMerge` triggers the git hooks without the test env.", "Edit", path),
        call(3, "", "Bash", "go test ./integration_test/..."),
        call(4, "The issue is that the hooks use `go run` with a relative main.go path.", "Edit", path),
        call(5, "", "Bash", "go test ./integration_test/..."),
        turn(6, "assistant", "Fixed. Fix: Use --no-verify so `GitMerge` skips the hooks."),
    )  # fmt: skip
    from memd.extract.episodes import build
    from memd.extract.findings import bug_fixes

    (episode,) = build(segment)
    first, last = [b.text for b in bug_fixes(episode)]
    assert first.endswith("(fixed in `resume_test.go`)"), first
    assert last.endswith("Fix: Use --no-verify so `GitMerge` skips the hooks."), last


def test_a_users_choice_and_the_work_done_on_it_is_a_decision() -> None:
    def edit(n: int, path: str) -> Turn:
        call = ToolCall("Edit", path, args={"file_path": f"{CWD}/{path}"}, status="ok")
        return replace(turn(n, "assistant", ""), tools=[call])

    reply = "Changed the hooks handling to keep unknown hook types: `InstallHooks` now uses a map."
    chosen = seg(
        turn(1, "user", "ok, I think we should change that to not be strict, we don't want to "
             "play catch up with new hook types"),
        edit(2, "cmd/agent/hooks.go"),
        turn(3, "assistant", reply),
    )  # fmt: skip
    (decision,) = by_kind(HeuristicExtractor().extract(chosen), "decision")
    assert decision.text.startswith("I think we should change that to not be strict")
    assert decision.text.endswith(reply)
    asked = seg(
        turn(1, "user", "Please keep unknown hook types in the settings."), *chosen.turns[1:]
    )
    assert not by_kind(HeuristicExtractor().extract(asked), "decision")
    assert by_kind(HeuristicExtractor().extract(asked), "progress")


def test_the_summary_leaves_out_what_the_user_took_back() -> None:
    """A real session (claude-code-log 03eb5929) opened with "I very much like this idea, and
    I used it already with some success in the clmail project" and later said "I actually
    don't like much this idea, and I somewhat struggled with it in the clmail project"; the
    next session's brief said "Last session: Said: … I very much like this idea…"."""
    cands = HeuristicExtractor().extract(
        seg(
            turn(1, "user", "One idea about organizing the docs folder of generated notes. "
                 "I very much like this idea, and I used it already in the clmail project."),
            turn(2, "assistant", "It splits reference docs from work in progress."),
            turn(3, "user", "I actually don't like much this idea, and I somewhat struggled "
                 "with it in the clmail project. What are its weak points?"),
            turn(4, "assistant", "Files end up in the wrong folder and are never moved."),
        )
    )  # fmt: skip
    (summary,) = by_kind(cands, "summary")
    assert "organizing the docs folder" in summary.text
    assert "very much like" not in summary.text, summary.text


def test_a_cause_under_a_root_cause_heading_is_filed_without_it() -> None:
    """A real report (git-sync) said "## Root cause" and, on the next line, "The error is the
    **server** (`entiredb`) rejecting a push: …"; the bug fix read "## Root cause The error is
    the **server** …", heading and bold marks included."""

    def call(n: int, text: str, name: str, summary: str, status: str = "ok") -> Turn:
        args = {"command": summary} if name == "Bash" else {"file_path": summary}
        return replace(
            turn(n, "assistant", text), tools=[ToolCall(name, summary, args=args, status=status)]
        )

    segment = seg(
        turn(1, "user", "Mirroring the big repo fails with 'too many ref updates'."),
        call(2, "## Root cause\n\nThe server is **rejecting** the push: `receive_pack.go` caps a "
             "request at 25,000 ref updates.", "Edit", f"{CWD}/internal/gitproto/push.go"),
        call(3, "", "Bash", "go test ./..."),
        turn(4, "assistant", "Fixed: pushes are sent in batches of 10,000 ref updates."),
    )  # fmt: skip
    bugs = [c.text for c in by_kind(HeuristicExtractor().extract(segment), "bugfix")]
    (bug,) = [b for b in bugs if "caps a request" in b]
    assert "The server is rejecting the push: `receive_pack.go` caps" in bug, bugs
    assert "#" not in bug and "**" not in bug, bugs
