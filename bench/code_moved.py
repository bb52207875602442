"""Memories that know when the code moved (#33), replayed on real commit histories.

    .venv/bin/python bench/code_moved.py [--repo encode/httpx@2019-07-01 ...] [--steps 300]
                                         [--refs 200] [--seed 7]

For each repository (a bare snapshot with its history, as the search tool's ``fetch`` brings it
to ``/work/.mirror/<owner>+<name>/repo``; ``--mirror`` says where), a temporary clone is checked
out at the first first-parent commit on or after the given day. There, memories are written
about its Python files and the functions, classes, methods and constants they define (sampled
with ``--seed``), and memd's checker (:class:`memd.recall.codecheck.CodeCheck`, the daemon's)
sees each reference once, as it would at the memory's first recall. Then the working tree moves
forward one first-parent commit at a time for ``--steps`` commits, and at each commit every
reference is checked again and compared with what git and Python's ``ast`` say happened to it:

- a file: still there; renamed (followed commit by commit through ``git diff -M``'s renames,
  as ``git log --follow`` does); or deleted;
- a symbol: still defined in its file (its definition's source the same, or changed); defined
  in other files now (moved: memd's new place must be one of them); or defined nowhere (gone).

A tenth more memories must never be flagged: event records (a fix naming a function and its
file), hub files (README, changelog, CI config), and a name said with a file that only calls it.
A flag is right when it says what happened (moved to one of the right places; gone when defined
nowhere; changed when the definition's source differs). Figures are over (reference, commit)
observations; the cost is the time of one reference's check, with memd's caches as in the
daemon (files re-read when their size or mtime changed; git asked again when the index did).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import markdown_table, percentile

from memd.recall.codecheck import CHANGED, GONE, MOVED, CodeCheck
from memd.recall.references import Reference, is_hub, references

DEFAULT_REPOS = [
    "encode/httpx@2019-08-01",
    "pallets/click@2020-03-15",
    "pallets/itsdangerous@2018-10-27",
    "encode/starlette@2018-07-01",
]
SKIP_PARTS = {"tests", "test", "docs", "examples", "scripts", "benchmarks"}


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def normal(segment: str) -> str:
    return "\n".join(
        line.rstrip() for line in textwrap.dedent(segment).splitlines() if line.strip()
    )


def definitions(source: str) -> dict[str, str]:
    """Every name a Python file defines (functions, classes, methods, module constants) ->
    the source of its first definition."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.setdefault(node.name, normal(ast.get_source_segment(source, node) or ""))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                out.setdefault(t.id, normal(ast.get_source_segment(source, node) or ""))
    return out


@dataclass
class Tree:
    """The Python files of a checkout and what each defines, kept up to date commit by commit."""

    root: str
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    def load(self, paths: list[str]) -> None:
        for rel in paths:
            if not rel.endswith(".py"):
                continue
            try:
                text = Path(self.root, rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self.files.pop(rel, None)
                continue
            self.files[rel] = definitions(text)

    def definers(self, name: str) -> set[str]:
        return {rel for rel, defs in self.files.items() if name in defs}


@dataclass
class Memory:
    id: str
    text: str
    ref: Reference
    source: str = ""
    """A symbol's definition at the first commit (its source)."""
    kind: str = "fact"
    noise: bool = False
    """A memory no change can falsify (an event record, a hub file, a name mentioned in a file
    that does not define it): any flag on it is wrong."""


def sample_memories(tree: Tree, n: int, seed: int) -> list[Memory]:
    """About a quarter files, the rest symbols, each written as a memory would say it."""
    rng = random.Random(seed)
    files = sorted(
        rel
        for rel in tree.files
        if not SKIP_PARTS.intersection(rel.split("/")[:-1])
        and not rel.rsplit("/", 1)[-1].startswith(("test", "conftest"))
        and rel != "setup.py"
    )
    symbols = [
        (rel, name)
        for rel in files
        for name in tree.files[rel]
        if len(name) >= 3 and not name.startswith("__")
    ]
    picked_files = rng.sample(files, min(len(files), n // 4))
    picked_symbols = rng.sample(symbols, min(len(symbols), n - len(picked_files)))
    out = []
    for rel in picked_files:
        out.append(Memory(f"f{len(out)}", f"The code for this lives in `{rel}`.", Reference(rel)))
    for rel, name in picked_symbols:
        text = f"`{name}` in `{rel}` is where this is handled."
        source = tree.files[rel][name]
        out.append(Memory(f"s{len(out)}", text, Reference(rel, name), source))
    return out + noise_memories(tree, files, symbols, n // 10, rng)


def noise_memories(
    tree: Tree, files: list[str], symbols: list[tuple[str, str]], n: int, rng: random.Random
) -> list[Memory]:
    """Memories that must never be flagged: event records about a symbol, hub files, and a
    name said with a file that only uses it (defined elsewhere)."""
    out = []
    for rel, name in rng.sample(symbols, min(n, len(symbols))):
        text = f"Fixed the crash in `{name}` (`{rel}`) by checking for empty input."
        out.append(Memory(f"e{len(out)}", text, Reference(rel, name), kind="bugfix", noise=True))
    hubs = [p for p in git(tree.root, "ls-files").splitlines() if is_hub(p)]
    for rel in rng.sample(hubs, min(n, len(hubs))):
        out.append(Memory(f"h{len(out)}", f"`{rel}` lists the steps.", Reference(rel), noise=True))
    texts = {rel: Path(tree.root, rel).read_text(errors="replace") for rel in files}
    passing = [
        (other, name)
        for rel, name in symbols
        for other in files
        if other != rel and name not in tree.files[other] and f"{name}(" in texts[other]
    ]
    for rel, name in rng.sample(passing, min(n, len(passing))):
        text = f"`{name}` in `{rel}` is where this is handled."
        out.append(Memory(f"p{len(out)}", text, Reference(rel, name), noise=True))
    return out


def follow(where: dict[str, str], status: str) -> None:
    """Move each file of ``where`` (first path -> where it is now, "" once deleted) along one
    commit's renames and deletions (``git diff -M --name-status``), as ``git log --follow``."""
    renamed, deleted = {}, set()
    for parts in (line.split("\t") for line in status.splitlines()):
        if len(parts) == 3 and parts[0].startswith("R"):
            renamed[parts[1]] = parts[2]
        elif len(parts) == 2 and parts[0] == "D":
            deleted.add(parts[1])
    for first, now in where.items():
        if now in renamed:
            where[first] = renamed[now]
        elif now in deleted:
            where[first] = ""


def truth_of(memory: Memory, tree: Tree, where: dict[str, str]) -> tuple[str, set[str]]:
    """What happened to a reference since the first commit: ("", set()) nothing, ("changed",
    ...), ("moved", {new places}) or ("gone", set())."""
    ref = memory.ref
    if not ref.symbol:
        if os.path.exists(os.path.join(tree.root, ref.path)):
            return "", set()
        new = where.get(ref.path, "")
        return (MOVED, {new}) if new else (GONE, set())
    defs = tree.files.get(ref.path)
    if defs is not None and ref.symbol in defs:
        return (CHANGED, set()) if defs[ref.symbol] != memory.source else ("", set())
    places = tree.definers(ref.symbol)
    return (MOVED, places) if places else (GONE, set())


@dataclass
class Score:
    observations: int = 0
    flags: Counter[str] = field(default_factory=Counter)
    right: Counter[str] = field(default_factory=Counter)
    truth: Counter[str] = field(default_factory=Counter)
    caught: Counter[str] = field(default_factory=Counter)
    false_outdated: int = 0
    refs_hit: set[str] = field(default_factory=set)
    refs_caught: set[str] = field(default_factory=set)
    costs: list[float] = field(default_factory=list)
    unparsed: int = 0
    wrong: list[str] = field(default_factory=list)
    """The first wrong flag of each reference, and the first missed move, for reading."""

    def add(self, memory: Memory, found: str, now: str, truth: str, places: set[str]) -> None:
        self.observations += 1
        if truth:
            self.truth[truth] += 1
        if truth in (MOVED, GONE):
            self.refs_hit.add(memory.id)
        if found:
            self.flags[found] += 1
            ok = found == truth and (found != MOVED or now in places)
            self.right[found] += ok
            if not ok and not any(w.startswith(memory.id + " ") for w in self.wrong):
                self.wrong.append(f"{memory.id} {memory.ref}: {found} {now} vs {truth} {places}")
        elif truth in (MOVED, GONE) and not any(w.startswith(memory.id + " ") for w in self.wrong):
            self.wrong.append(f"{memory.id} {memory.ref}: missed, {truth} {places}")
            if found == GONE and truth != GONE:
                self.false_outdated += 1
        if truth and found:
            self.caught[truth] += 1
            if truth in (MOVED, GONE):
                self.refs_caught.add(memory.id)


def replay(
    mirror: str, start: str, steps: int, n: int, seed: int
) -> tuple[Score, dict[str, object]]:
    work = tempfile.mkdtemp(prefix="memd-moved-")
    try:
        git(work, "clone", "-q", "--shared", "--no-checkout", mirror, "repo")
        root = os.path.join(work, "repo")
        line = git(root, "rev-list", "--first-parent", "--reverse", "--format=%H %cs", "HEAD")
        commits = [tuple(x.split()) for x in line.splitlines() if not x.startswith("commit ")]
        first = next(i for i, (_, day) in enumerate(commits) if day >= start)
        window = commits[first : first + steps + 1]
        c0, day0 = window[0]
        git(root, "checkout", "-q", "-f", c0)
        tree = Tree(root)
        tree.load(git(root, "ls-files", "*.py").splitlines())
        memories = sample_memories(tree, n, seed)
        checker = CodeCheck()
        score = Score()
        parsed = []
        refs_of = {}
        for m in memories:
            refs = references(m.text, m.kind, root)
            if refs != (m.ref,) and not m.noise:
                score.unparsed += 1
                continue
            refs_of[m.id] = refs
            checker.check(m.id, refs, root, day0, day=day0)  # its first recall
            parsed.append(m)
        prev = c0
        where = {m.ref.path: m.ref.path for m in parsed if not m.ref.symbol and not m.noise}
        for commit, day in window[1:]:
            git(root, "checkout", "-q", "-f", commit)
            changed = git(root, "diff", "--no-renames", "--name-only", prev, commit).splitlines()
            tree.load(changed)
            follow(where, git(root, "diff", "-M", "--name-status", prev, commit))
            for m in parsed:
                t0 = time.perf_counter()
                found = checker.check(m.id, refs_of[m.id], root, day0, day=day)
                score.costs.append(time.perf_counter() - t0)
                truth, places = ("", set()) if m.noise else truth_of(m, tree, where)
                f = found[0] if found else None
                score.add(m, f.state if f else "", f.now if f else "", truth, places)
            prev = commit
        info = {
            "from": f"{c0[:8]} ({day0})",
            "to": f"{window[-1][0][:8]} ({window[-1][1]})",
            "commits": len(window) - 1,
            "refs": f"{len(parsed)} ({sum(m.noise for m in parsed)})",
            "git_runs": checker.tree.git_runs,
            "reads": checker.tree.reads,
        }
        return score, info
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ratio(a: int, b: int) -> str:
    return f"{a / b:.1%} ({a}/{b})" if b else "-"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repo", action="append", help="owner/name@YYYY-MM-DD (repeatable)")
    p.add_argument("--mirror", default="/work/.mirror", help="where owner+name/repo snapshots are")
    p.add_argument("--steps", type=int, default=300, help="first-parent commits to replay")
    p.add_argument("--refs", type=int, default=200, help="references sampled per repository")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--show", type=int, default=0, help="print this many wrong flags per repo")
    args = p.parse_args()
    rows = []
    total = Score()
    for spec in args.repo or DEFAULT_REPOS:
        name, _, start = spec.partition("@")
        mirror = os.path.join(args.mirror, name.replace("/", "+"), "repo")
        score, info = replay(mirror, start or "1970-01-01", args.steps, args.refs, args.seed)
        rows.append(row(name, score, info))
        for attr in ("flags", "right", "truth", "caught"):
            getattr(total, attr).update(getattr(score, attr))
        total.observations += score.observations
        total.false_outdated += score.false_outdated
        total.costs += score.costs
        total.unparsed += score.unparsed
        total.refs_hit |= {f"{name}:{r}" for r in score.refs_hit}
        total.refs_caught |= {f"{name}:{r}" for r in score.refs_caught}
        print(f"{name}: {info}", file=sys.stderr)
        for line in score.wrong[: args.show]:
            print(f"  {line}", file=sys.stderr)
    rows.append(row("all", total, {"commits": "", "refs": "", "from": "", "to": ""}))
    headers = [
        "repository",
        "commits",
        "refs (of them never to flag)",
        "flags (moved / gone / changed)",
        "precision",
        "false outdated / flags",
        "moved+gone flagged (moved / gone obs.)",
        "refs moved/gone flagged",
        "changed: precision, recall",
        "check p50 / p95 (µs)",
    ]
    print(markdown_table(headers, rows))


def row(name: str, s: Score, info: dict[str, object]) -> list[object]:
    flags = sum(s.flags.values())
    right = sum(s.right.values())
    moved_gone = s.truth[MOVED] + s.truth[GONE]
    caught = s.caught[MOVED] + s.caught[GONE]
    changed = (
        f"{ratio(s.right[CHANGED], s.flags[CHANGED])}, {ratio(s.caught[CHANGED], s.truth[CHANGED])}"
    )
    costs = [c * 1e6 for c in s.costs]
    cost = f"{percentile(costs, 50):.0f} / {percentile(costs, 95):.0f}" if costs else "-"
    return [
        name,
        info["commits"],
        info["refs"],
        f"{flags} ({s.flags[MOVED]} / {s.flags[GONE]} / {s.flags[CHANGED]})",
        ratio(right, flags),
        ratio(s.false_outdated, flags),
        f"{ratio(caught, moved_gone)} ({s.truth[MOVED]} / {s.truth[GONE]})",
        ratio(len(s.refs_caught), len(s.refs_hit)),
        changed,
        cost,
    ]


if __name__ == "__main__":
    main()
