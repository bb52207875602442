"""Budgeted recall for ``bench/locomo.py --budgeted``: is a gold turn in the text Claude is shown?

The rule. A gold turn counts as recalled only when the injected block *carries* it: at least
``CARRY_SHARE`` (60 %) of the turn's distinct content words appear among the block's words.

- **Content words** (:func:`content_words`): the text is lower-cased (curly apostrophes made
  straight), split into runs of letters (Unicode letters; digits and punctuation separate words,
  so ``don't`` gives ``don`` and ``t``), words shorter than 3 letters are dropped, and so are the
  words of :data:`STOP_WORDS` (English function words, contraction stems and chat fillers, listed
  below). No stemming: ``paint`` and ``painted`` are different words.
- **The turn** is what the transcript line says, without the ``"Name: "`` speaker prefix: its
  text plus, when LoCoMo has one, ``[shares a photo: <caption>]`` (both memd and the raw
  baselines are given the caption). A turn with no content word at all (``"Wow!"``) is carried
  only when its normalised text occurs in the block (:func:`carried`).
- **The block** is judged without its frame (:func:`judged_text`): tag lines (``<memd-context>``),
  lines starting with ``#`` (memd's header) and bare section titles (``"Facts:"``) are dropped,
  so a word in memd's boilerplate never credits a turn.

The baselines (:func:`fill`). Raw BM25, raw hybrid and the oracle get the same budget as memd's
prompt hook (``prompt_budget_chars``, 1,500), counted the same way (every character of the
block, newlines included). Their block is ranked turns, one per line, formatted like memd's
memory lines: ``"- Name: text [shares a photo: …] (YYYY-MM-DD)"`` with the session date, since
memd dates every line it injects. Turns are added in rank order; the first turn that no longer
fits is **clipped** to the characters left (ending in ``…``) and filling stops, so a baseline
block is exactly as long as the budget whenever it has enough turns. A clipped turn is judged
like any other (it counts only if 60 % of its content words survive the cut). memd's block
spends ~140 of its 1,500 characters on its own frame (tags and header); the baselines do not.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

CARRY_SHARE = 0.6
"""Share of a turn's distinct content words the block must contain for the turn to count."""
MIN_WORD = 3
WORD = re.compile(r"[^\W\d_]+")
SECTION_TITLE = re.compile(r"^[A-Za-z][A-Za-z' -]{0,40}:$")


def _words(text: str) -> list[str]:
    return text.split()


STOP_WORDS = frozenset(
    # English function words (NLTK's list, the words of 3+ letters) ...
    _words("""
    about above after again against all and any are aren because been before being below
    between both but can couldn did didn does doesn doing don down during each few for from
    further had hadn has hasn have haven having her here hers herself him himself his how
    into isn its itself just mightn more most mustn myself needn nor not now off once only
    other our ours ourselves out over own same shan she should shouldn some such than that
    the their theirs them themselves then there these they this those through too under until
    very was wasn were weren what when where which while who whom why will with won wouldn you
    your yours yourself yourselves
    """)
    # ... other function words ...
    + _words("""
    also although among anyone anything could every everyone everything may might must onto
    per since shall though thus toward towards upon would yet
    """)
    # ... and chat fillers that carry no fact.
    + _words("""
    yeah yes yep wow hey hello thanks thank okay really sure well gonna wanna
    """)
)
"""Words that never count as content (all of them 3+ letters, lower-case)."""


def content_words(text: str) -> set[str]:
    """The distinct content words of ``text``: see the module docstring for the rule."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return {w for w in WORD.findall(text) if len(w) >= MIN_WORD and w not in STOP_WORDS}


def normalised(text: str) -> str:
    """Lower-case words of ``text`` joined by single spaces (for turns without content words)."""
    return " ".join(WORD.findall(text.lower()))


def judged_text(block: str) -> str:
    """``block`` without its frame: tag lines, ``#`` lines and bare section titles."""
    kept = []
    for line in block.splitlines():
        s = line.strip()
        if not s or s.startswith("#") or (s.startswith("<") and s.endswith(">")):
            continue
        if SECTION_TITLE.match(s) and len(s.split()) <= 3:
            continue
        kept.append(line)
    return "\n".join(kept)


@dataclass(frozen=True)
class Block:
    """An injected or filled block, prepared once for judging many turns."""

    text: str
    words: frozenset[str]
    flat: str

    @classmethod
    def of(cls, text: str) -> Block:
        body = judged_text(text)
        return cls(text, frozenset(content_words(body)), normalised(body))


def carried(turn: str, block: Block, share: float = CARRY_SHARE) -> bool:
    """Whether ``block`` carries ``turn`` (its spoken text and caption, no speaker prefix)."""
    words = content_words(turn)
    if not words:
        flat = normalised(turn)
        return bool(flat) and flat in block.flat
    return len(words & block.words) >= share * len(words)


def recall(gold_turns: Sequence[str], block: Block) -> float:
    """Fraction of ``gold_turns`` the block carries."""
    if not gold_turns:
        raise ValueError("a question without gold turns cannot be scored")
    return sum(carried(t, block) for t in gold_turns) / len(gold_turns)


def fill(lines: Iterable[str], budget: int) -> str:
    """Ranked lines joined by newlines up to ``budget`` characters; the first line that does not
    fit is clipped to what is left (ending in ``…``) and filling stops there."""
    out = ""
    for line in lines:
        sep = "\n" if out else ""
        room = budget - len(out) - len(sep)
        if len(line) <= room:
            out += sep + line
            continue
        if room > 1:
            out += sep + line[: room - 1].rstrip() + "…"
        break
    return out


# ---------------------------------------------------------------- unrelated prompts

UNRELATED_PROMPTS: tuple[str, ...] = (
    # coding chores
    "Rename the variable tmp to buffer in src/parser.c",
    "Add a --verbose flag to the CLI entry point",
    "Fix the failing unit test in tests/test_config.py",
    "Bump the version in pyproject.toml to 2.3.1",
    "Run the linter and fix every warning it reports",
    "Convert this callback-based function to async/await",
    "Add type hints to the functions in utils.py",
    "Write a Dockerfile for this Flask application",
    "Set up a GitHub Actions workflow that runs pytest on every push",
    "Why does this regex not match trailing whitespace?",
    "Refactor the database connection code into a context manager",
    "Add pagination to the /api/users endpoint",
    "The build fails with 'undefined reference to main', what is wrong?",
    "Squash the last three commits into one",
    "Make the Makefile target 'clean' also remove the dist folder",
    "Replace the deprecated datetime.utcnow calls",
    "Add a retry with exponential backoff to the HTTP client",
    "Why is this SQL query doing a full table scan?",
    "Write a migration that adds an index on orders.created_at",
    "Update the README with installation instructions for Windows",
    # generic programming questions
    "What is the difference between a process and a thread?",
    "Explain Big-O notation with an example",
    "How do I reverse a linked list in place?",
    "What does the volatile keyword do in Java?",
    "How does garbage collection work in Go?",
    "When should I use a tuple instead of a list in Python?",
    "Explain how TCP's three-way handshake works",
    "What is a race condition and how do I avoid one?",
    "How do I read a CSV file with pandas?",
    "What is the difference between git merge and git rebase?",
    "How do Rust lifetimes work?",
    "Explain dependency injection in simple terms",
    "What is a closure in JavaScript?",
    "How do I profile memory usage of a Python script?",
    "What are the SOLID principles?",
    "How do I center a div with CSS grid?",
    "What is the CAP theorem?",
    "How do I write a binary search without off-by-one errors?",
    "What does 'segmentation fault (core dumped)' mean?",
    "Compare REST and GraphQL for a public API",
    # small talk and creative requests
    "Write a haiku about autumn",
    "Tell me a joke about compilers",
    "Good morning! How are you today?",
    "What is the capital of Australia?",
    "Translate 'good night' into Japanese",
    "Suggest a name for a new Kubernetes namespace",
    "How many ounces are in a pound?",
    "Write a limerick about a sleepy database administrator",
    "What is the boiling point of water at high altitude?",
    "How many bits are in an IPv6 address?",
    "Give me a synonym for 'quickly'",
    "What time zone is Reykjavik in?",
    "Convert 72 degrees Fahrenheit to Celsius",
    "What is the largest moon of Saturn?",
    "Write a sonnet about a memory leak",
    "What is the square root of 1764?",
    "Explain photosynthesis to a ten-year-old",
    "Who invented the printing press?",
    "List three prime numbers greater than 100",
    "Thanks, that is all for now",
)
"""Prompts about nothing in any LoCoMo conversation, asked against every conversation's
project: an abstaining injector returns an empty block for them."""


# ---------------------------------------------------------------- the run

SYSTEMS = ("memd-hook", "raw-bm25", "raw-hybrid", "oracle")
"""``memd-hook``: the daemon's ``context`` command; ``oracle``: the gold turns, filled."""
RAW_DEPTH = 60
"""Ranked turns a raw baseline may draw on (a 1,500-character block holds 10-20)."""


@dataclass
class Asked:
    """One prompt put to one system: what came back and how it scores."""

    system: str
    sample_id: str
    half: str
    category: int
    """1-4 as in LoCoMo, 5 adversarial, 0 an unrelated prompt."""
    chars: int
    recall: float | None = None
    """Categories 1-4 only."""
    ms: float | None = None
    missed: tuple[str, ...] = ()
    """Gold dia_ids the block does not carry."""


def turn_body(turn: dict[str, object]) -> str:
    """What a gold turn says, without the speaker prefix: text plus the photo caption."""
    text = str(turn.get("text") or "").strip()
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def raw_line(turn: dict[str, object], day: str) -> str:
    """A raw turn as a baseline block shows it, dated like memd's memory lines."""
    from locomo import turn_text

    return f"- {turn_text(turn)} ({day})"


class Judge:
    """One conversation's turns: the body each gold turn is judged on and each baseline line."""

    def __init__(self, conv: Any) -> None:
        self.body: dict[str, str] = {}
        self.line: dict[str, str] = {}
        for session in conv.sessions:
            day = session.start.strftime("%Y-%m-%d")
            for turn in session.turns:
                self.body[turn["dia_id"]] = turn_body(turn)
                self.line[turn["dia_id"]] = raw_line(turn, day)

    def score(self, gold: Sequence[str], text: str) -> tuple[float, tuple[str, ...]]:
        block = Block.of(text)
        missed = tuple(d for d in gold if not carried(self.body[d], block))
        return 1 - len(missed) / len(gold), missed

    def filled(self, ranked: Iterable[str], budget: int) -> str:
        return fill((self.line[d] for d in ranked), budget)


Context = Callable[[str, str], str]
"""(project dir, prompt) → the block the daemon's ``context`` command returns."""


def prompts_of(conv: Any) -> list[tuple[int, str, list[str]]]:
    """(category, prompt, gold) for every prompt asked in ``conv``'s project."""
    out = [(q.category, q.text, q.gold) for q in conv.questions if q.gold]
    out += [(5, text, []) for text in conv.adversarial]
    out += [(0, text, []) for text in UNRELATED_PROMPTS]
    return out


def run(
    convs: Sequence[Any],
    projects: dict[str, str],
    context: Context | None,
    raw: Any,
    budget: int,
    details: Any = None,
) -> list[Asked]:
    """Every prompt of every conversation through memd's ``context`` and the baselines.

    ``details``: an open text file that receives one JSON line per memd prompt (the block and
    the missed turns), for reading by eye; it holds LoCoMo text, so it stays outside the repo.
    """
    import json

    rows: list[Asked] = []
    for conv in convs:
        judge = Judge(conv)
        project = projects[conv.sample_id]
        if context is not None:
            context(project, "warm up the vector cache")
        for category, prompt, gold in prompts_of(conv):
            blocks: list[tuple[str, str, float | None]] = []
            if context is not None:
                t0 = time.perf_counter()
                text = context(project, prompt)
                blocks.append(("memd-hook", text, (time.perf_counter() - t0) * 1000))
            if raw is not None:
                blocks.append(
                    ("raw-bm25", judge.filled(raw.bm25(conv, prompt, RAW_DEPTH), budget), None)
                )
                blocks.append(
                    ("raw-hybrid", judge.filled(raw.hybrid(conv, prompt, RAW_DEPTH), budget), None)
                )
            if gold:
                blocks.append(("oracle", judge.filled(gold, budget), None))
            for system, text, ms in blocks:
                row = Asked(system, conv.sample_id, conv.half, category, len(text), ms=ms)
                if gold:
                    row.recall, row.missed = judge.score(gold, text)
                rows.append(row)
                if details is not None and system == "memd-hook":
                    line = {
                        "sample_id": conv.sample_id,
                        "category": category,
                        "prompt": prompt,
                        "gold": gold,
                        "missed": list(row.missed),
                        "recall": row.recall,
                        "chars": row.chars,
                        "context": text,
                    }
                    details.write(json.dumps(line, ensure_ascii=False) + "\n")
    return rows


# ---------------------------------------------------------------- report


def ci_cell(values: Sequence[float]) -> str:
    from common import bootstrap_ci

    if not values:
        return "-"
    lo, hi = bootstrap_ci(values)
    return f"{sum(values) / len(values):.3f} [{lo:.2f}, {hi:.2f}]"


def mean_of(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def recall_table(rows: Sequence[Asked], systems: Sequence[str], halves: Sequence[str]) -> str:
    """Per system and half: recall c1-4 and per category with 95% CIs, chars, empty share."""
    from common import markdown_table
    from locomo import CATEGORIES

    headers = ["system", "half", "n", "recall c1-4 [95% CI]"]
    headers += [f"{name} [c{c}]" for c, name in CATEGORIES.items()]
    headers += ["mean chars", "empty"]
    body = []
    for system in systems:
        for half in halves:
            sub = [
                r
                for r in rows
                if r.system == system and r.recall is not None and half in ("all", r.half)
            ]
            if not sub:
                continue
            cells: list[object] = [system, half, len(sub), ci_cell([r.recall or 0 for r in sub])]
            for cat in CATEGORIES:
                cells.append(ci_cell([r.recall or 0 for r in sub if r.category == cat]))
            cells.append(round(mean_of([r.chars for r in sub])))
            cells.append(f"{mean_of([float(r.chars == 0) for r in sub]):.1%}")
            body.append(cells)
    return markdown_table(headers, body)


def abstention_table(rows: Sequence[Asked], systems: Sequence[str]) -> str:
    """Per system: share of empty blocks for adversarial (c5) and unrelated prompts."""
    from common import markdown_table, percentile

    headers = ["system", "c5 empty", "c5 mean chars", "unrelated empty", "unrelated mean chars"]
    headers += ["p50 ms", "p95 ms"]
    body = []
    for system in systems:
        if not any(r.system == system and r.recall is None for r in rows):
            continue  # the oracle answers only questions with gold turns
        cells: list[object] = [system]
        for cat in (5, 0):
            sub = [r for r in rows if r.system == system and r.category == cat]
            if not sub:
                cells += ["-", "-"]
                continue
            empty = sum(r.chars == 0 for r in sub)
            cells += [f"{empty / len(sub):.1%} ({empty}/{len(sub)})"]
            cells += [round(mean_of([r.chars for r in sub]))]
        lat = [r.ms for r in rows if r.system == system and r.ms is not None]
        cells += [f"{percentile(lat, 50):.1f}", f"{percentile(lat, 95):.1f}"] if lat else ["-"] * 2
        body.append(cells)
    return markdown_table(headers, body)


def paired_lines(rows: Sequence[Asked], a: str, b: str, halves: Sequence[str]) -> list[str]:
    """``a`` minus ``b`` on the same questions, per half, with a bootstrap 95% CI."""
    from common import bootstrap_ci

    def by_key(system: str) -> dict[tuple[str, int, int], float]:
        out: dict[tuple[str, int, int], float] = {}
        seen: dict[str, int] = {}
        for r in rows:
            if r.system == system and r.recall is not None:
                i = seen[r.sample_id] = seen.get(r.sample_id, -1) + 1
                out[(r.sample_id, i, r.category)] = r.recall
        return out

    left, right = by_key(a), by_key(b)
    half_of = {r.sample_id: r.half for r in rows}
    out = []
    for half in halves:
        keys = [k for k in left if k in right and half in ("all", half_of[k[0]])]
        if not keys:
            continue
        diffs = [left[k] - right[k] for k in keys]
        lo, hi = bootstrap_ci(diffs)
        out.append(
            f"- {a} − {b}, half {half}: {mean_of(diffs):+.3f} [{lo:+.3f}, {hi:+.3f}] "
            f"(paired over {len(keys)} questions)"
        )
    return out


def render(rows: Sequence[Asked], convs: Sequence[Any], budget: int, info: dict[str, Any]) -> str:
    systems = [s for s in SYSTEMS if any(r.system == s for r in rows)]
    halves = [h for h in ("A", "B") if any(c.half == h for c in convs)]
    halves += ["all"] if len(halves) > 1 else []
    parts = [
        f"Budgeted recall at {budget} characters, LoCoMo categories 1-4 "
        f"({', '.join(c.sample_id for c in convs)}; A = conversations 1-5, B = 6-10). "
        "A gold turn counts only when the block carries it: at least 60 % of the turn's distinct "
        "content words (3+ letters, stop words removed, lower-cased; rules in "
        "bench/locomo_budget.py) appear in the block. memd-hook = the daemon's `context` command "
        "(event user-prompt-submit, what the prompt hook injects); raw-bm25 / raw-hybrid = "
        "ranked raw turns (`- Name: text (date)`), last turn clipped, filled to the same budget; "
        "oracle = the gold turns filled the same way. Cells: mean [bootstrap 95% CI].",
        "",
        recall_table(rows, systems, halves),
        "",
        "Abstention: share of empty blocks for category-5 (adversarial) questions and for "
        f"{len(UNRELATED_PROMPTS)} unrelated prompts asked in every conversation's project; "
        "latency = `context` round trip on the socket.",
        "",
        abstention_table(rows, systems),
    ]
    if "memd-hook" in systems and "raw-bm25" in systems:
        parts += ["", *paired_lines(rows, "memd-hook", "raw-bm25", halves)]
    parts.append("")
    for key, value in info.items():
        parts.append(f"- {key}: {value}")
    return "\n".join(parts)
