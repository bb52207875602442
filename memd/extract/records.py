"""What Claude Code's own tool records say, read offline: todo lists and tasks with the state
they ended in, approved plans, answered questions, commits, edited files and the commands that
worked. Each reader returns candidate memories that cite the turns holding the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memd.extract import vocabulary as vocab
from memd.extract.episodes import Episode, heading, informative, split_sentences
from memd.extract.evidence import shell_commands, tool_path
from memd.extract.rules import IMPORTANCE
from memd.extract.rules import clip_words as clip
from memd.models import Candidate, ToolCall, Turn
from memd.names import COMMANDS_TOPIC
from memd.project import repo_relative

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
MAX_TODOS = 12
_TODO_DONE = frozenset({"completed", "done", "cancelled", "canceled", "deleted"})
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?\s*\n(.*?)(?:\n\s*\1\b|…?\Z)", re.DOTALL)
"""A heredoc's text; a long command is stored cut (:data:`memd.ingest.toolcalls.TOOL_ARGS`),
so its end may be missing."""
_MESSAGE = re.compile(r"""(?:^|\s)(?:-m|--message)(?:=|\s+)(?:"((?:[^"\\]|\\.)*)"|'([^']*)')""")
_LAUNCHED = re.compile(r"agent launched|agentId:|working in the background", re.IGNORECASE)
_TASK_ID = re.compile(r"Task #(\w+) created")
_ANSWERED = re.compile(r'"([^"]{3,300})"\s*=\s*"([^"]{1,300})"')
_CO_AUTHOR = re.compile(r"^\s*(?:Co-Authored-By|Signed-off-by|🤖 Generated with).*$", re.I | re.M)
_PLAN_TITLE = re.compile(r"^\s*#+\s*(?:Plan:\s*)?(.+?)\s*$", re.M)
_PLAN_SECTION = re.compile(
    r"^\s*#+\s*(?:solution|approach|the fix|fix|design|decision|changes?|implementation|summary)"
    r"\b.*$",
    re.I | re.M,
)


def command_of(call: ToolCall) -> str:
    """A shell call's command (from its input, else its short summary)."""
    command = call.args.get("command")
    if isinstance(command, str):
        return command
    summary = call.summary.strip()
    return summary[len("command:") :].strip() if summary.startswith("command:") else summary


def path_of(call: ToolCall) -> str:
    """An edit's or a read's file path (from its input, else its short summary)."""
    for key in ("file_path", "notebook_path"):
        value = call.args.get(key)
        if isinstance(value, str) and value:
            return value
    return tool_path(call.summary) or ""


@dataclass
class Todo:
    content: str
    status: str
    uuid: str
    first_uuid: str


@dataclass
class TodoList:
    """The todos of a segment in the state they ended in (TodoWrite lists, TaskCreate/Update)."""

    items: dict[str, Todo] = field(default_factory=dict)

    def see(self, turn: Turn, name: str, args: dict[str, Any], result: str) -> None:
        if name == "TodoWrite":
            todos = args.get("todos")
            if not isinstance(todos, list):
                return
            seen = set()
            for entry in todos:
                content = entry.get("content") if isinstance(entry, dict) else None
                if not isinstance(content, str) or not content.strip():
                    continue  # malformed entries exist (a bare string in the list)
                status = str(entry.get("status") or "pending").lower()
                key = todo_key(content)
                seen.add(key)
                old = self.items.get(key)
                first = old.first_uuid if old else turn.uuid
                uuid = turn.uuid if (old is None or old.status != status) else old.uuid
                self.items[key] = Todo(content.strip(), status, uuid, first)
            # A list written whole: an item left out of it was dropped, not left open.
            for key, todo in list(self.items.items()):
                if key not in seen and not key.startswith("#") and todo.status not in _TODO_DONE:
                    self.items[key] = Todo(todo.content, "dropped", turn.uuid, todo.first_uuid)
        elif name == "TaskCreate":
            subject = str(args.get("subject") or "").strip()
            m = _TASK_ID.search(result)
            if subject:
                key = f"#{m.group(1)}" if m else todo_key(subject)
                self.items[key] = Todo(subject, "pending", turn.uuid, turn.uuid)
        elif name == "TaskUpdate":
            key = f"#{args.get('taskId')}"
            status = str(args.get("status") or "").lower()
            old = self.items.get(key)
            if old is not None and status:
                self.items[key] = Todo(old.content, status, turn.uuid, old.first_uuid)

    def open(self) -> list[Todo]:
        return [t for t in self.items.values() if t.status not in (*_TODO_DONE, "dropped")]

    def done(self) -> list[Todo]:
        return [t for t in self.items.values() if t.status in ("completed", "done")]


def todo_key(content: str) -> str:
    return re.sub(r"\W+", " ", content.lower()).strip()


def todo_candidates(todos: TodoList) -> list[Candidate]:
    """An open todo per item still pending at the end of the segment; one progress memory
    listing what was completed (it also closes the todos of earlier segments: the pipeline
    matches them by their text)."""
    out = []
    for todo in todos.open()[:MAX_TODOS]:
        out.append(
            Candidate(
                kind="todo",
                text=f"TODO: {todo.content}",
                topic="todo list",
                keywords=[],
                importance=IMPORTANCE["todo"],
                source_uuids=[todo.uuid],
            )
        )
    done = todos.done()
    if done:
        shown = [t.content for t in done[:MAX_TODOS]]
        more = f" (+{len(done) - MAX_TODOS} more)" if len(done) > MAX_TODOS else ""
        out.append(
            Candidate(
                kind="progress",
                text="Completed: " + "; ".join(shown) + more,
                topic="todo list",
                importance=IMPORTANCE["progress"],
                source_uuids=list(dict.fromkeys(t.uuid for t in done[:MAX_TODOS])),
                closes=[t.content for t in done],
            )
        )
    return out


def commit_message(command: str) -> str:
    """The message of a ``git commit`` in a shell command (``-m "..."``, repeated ``-m``, or a
    heredoc), trailers dropped; "" when there is none."""
    if not re.search(r"\bgit\b[^|;&]*\bcommit\b", command):
        return ""
    m = _HEREDOC.search(command)
    if m:
        message = m.group(2)
    else:
        parts = [a or b for a, b in _MESSAGE.findall(command)]
        message = "\n\n".join(p.replace('\\"', '"') for p in parts)
    message = _CO_AUTHOR.sub("", message)
    return message.strip()


_COMMITTED = re.compile(r"^\[[^\]\s]+(?: \([^)]*\))? ([0-9a-f]{7,12})\]", re.M)


def commit_candidate(turn: Turn, message: str, result: str = "") -> Candidate | None:
    """ "Committed <hash> "<subject>": <first paragraph of the body>" (the author's own
    words; the hash from git's answer "[branch 9877e04] subject")."""
    subject, _, body = message.partition("\n")
    subject = subject.strip().strip("\"'")
    if len(subject) < 8:
        return None
    para = " ".join(body.strip().split("\n\n")[0].split())
    sha = _COMMITTED.search(result)
    head = f"Committed {sha.group(1)}" if sha else "Committed"
    text = f'{head} "{subject}"' + (f": {clip(para, 320)}" if para else "")
    return Candidate(
        kind="progress",
        text=text,
        topic="commits",
        keywords=[],
        importance=0.55,
        source_uuids=[turn.uuid],
    )


def plan_candidate(turn: Turn, plan: str) -> Candidate | None:
    """An approved plan: its title and the start of its solution (or first) section."""
    titles = _PLAN_TITLE.findall(plan)
    title = titles[0].strip() if titles else ""
    sec = _PLAN_SECTION.search(plan)
    body = plan[sec.end() :] if sec else plan[len(title) :]
    lines: list[str] = []
    for line in body.split("\n"):
        s = line.strip().lstrip("-*• ").strip()
        if not s:
            continue
        if s.startswith("#"):
            if lines:
                break
            continue
        lines.append(s)
        if sum(len(x) for x in lines) > 260:
            break
    detail = clip(" ".join(lines), 300)
    if not title and not detail:
        return None
    text = f"Plan approved: {title}" + (f" ({detail})" if detail else "")
    return Candidate(
        kind="decision",
        text=clip(text, 420),
        topic=clip(title, 80),
        importance=IMPORTANCE["decision"],
        source_uuids=[turn.uuid],
    )


def answer_candidates(turn: Turn, result: str) -> list[Candidate]:
    """The user's choices in an AskUserQuestion result (``"question"="answer"``)."""
    out = []
    for question, answer in _ANSWERED.findall(result):
        out.append(
            Candidate(
                kind="decision",
                text=clip(f"{question.strip()} Chosen: {answer.strip()}", 400),
                topic=clip(question, 80),
                importance=IMPORTANCE["decision"] + 0.05,
                source_uuids=[turn.uuid],
            )
        )
    return out


def edited_paths(episode: Episode, roots: tuple[str, ...]) -> dict[str, str]:
    """Repo-relative paths the episode edited (worktrees folded in) -> the first turn's uuid;
    paths outside the project are left out."""
    return {path: uuid for path, (uuid, _) in edits(episode, roots).items()}


def edits(episode: Episode, roots: tuple[str, ...]) -> dict[str, tuple[str, list[str]]]:
    """Repo-relative paths the episode edited -> (the turn cited, the code names added by the
    first of its edits that added any: the memory says only what the turn it cites holds),
    in order; paths outside the project are left out."""
    out: dict[str, tuple[str, list[str]]] = {}
    for turn, call in episode.calls:
        if call.name not in EDIT_TOOLS or call.status in ("error", "rejected"):
            continue
        path = path_of(call)
        if not path:
            continue
        rel = path
        for root in roots:
            if root:
                rel = repo_relative(path, root)
                if rel != path:
                    break
        if not rel or rel.startswith(("/", "~", "..")):
            continue
        uuid, added = out.get(rel, (turn.uuid, []))
        if not added:
            new = [a for a in call.args.get("added") or [] if isinstance(a, str)]
            if new:
                uuid, added = turn.uuid, new
        out[rel] = (uuid, added)
    return out


FILES_NAMED = 6
"""Up to this many files, each is listed with up to 5 of the names it gained; a bigger
change lists every file that fits in :data:`FILES_ROOM` (a component's file often names it:
``AddTodoForm.tsx``), with 2 names each. A name that is the file's own (``TodoItem`` in
``TodoItem.tsx``) is not repeated."""
FILES_ROOM = 600


def files_candidate(
    episode: Episode, changed: dict[str, tuple[str, list[str]]], topic: str
) -> Candidate | None:
    """Where the work of an episode happened, tied to what it was about, with the names each
    file gained (``ci.yml`` (pull_request, continue-on-error))."""
    if not changed or not topic:
        return None
    names = list(changed)
    head = f"Files changed for {topic}: "
    per_file = 5 if len(names) <= FILES_NAMED else 2  # a big change: more files, fewer names
    parts: list[str] = []
    for path in names:
        stem = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
        added = [n for n in changed[path][1] if n.lower() != stem][:per_file]
        part = f"`{path}`" + (f" ({', '.join(added)})" if added else "")
        if parts and len(head) + sum(len(p) + 2 for p in parts) + len(part) > FILES_ROOM:
            break
        parts.append(part)
    shown = names[: len(parts)]
    more = f" (+{len(names) - len(shown)} more)" if len(names) > len(shown) else ""
    uuids = [episode.request.uuid] if episode.request is not None else []
    uuids += [changed[f][0] for f in shown]
    return Candidate(
        kind="fact",
        text=clip(f"{head}{'; '.join(parts)}{more}", FILES_ROOM + 40),
        topic="files",
        keywords=names[:5],
        importance=0.45,
        source_uuids=list(dict.fromkeys(uuids)),
    )


_RUN_SUMMARY = re.compile(
    r"(?:\b\d+ (?:passed|failed|errors?|skipped)\b[^\n]{0,60})|(?:^(?:FAIL|ok|PASS)\s+\S+[^\n]{0,40})"
    r"|(?:Tests?:\s+[^\n]{0,80})",
    re.M,
)


_ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|\b(?:error|ERROR)(?:\[\w+\]| [A-Z]+\d+)?\s*[:\]]"
    r"|^error\b|\bpanic:",
    re.M,
)


def error_line(result: str) -> str:
    """The last line of a failed run that names its error ("[TypeError: generate is not a
    function]"), cut to 100 characters; "" when none does."""
    for line in reversed(result.splitlines()):
        line = line.strip(" \t>[]")
        if _ERROR_LINE.search(line) and len(line) > 8:
            return clip(line, 100)
    return ""


def run_summary(result: str) -> str:
    """A test or check run's verdict line ("5 failed, 6 passed in 0.37s"), else ""."""
    found = _RUN_SUMMARY.findall(result)
    return clip(found[-1].strip(" =").strip(), 80) if found else ""


def _depth(command: str) -> int:
    """How deep the paths a command names go (``./...`` 1, ``./cmd/entire/cli/...`` 4): a run
    over one part of the project is not how the project's check runs."""
    return max((a.count("/") for a in command.split() if _PATH_ARG.search(a)), default=0)


_PATH_ARG = re.compile(r"^\.{0,2}/|/(?:\.\.\.)?$|/[\w-]+\.\w{1,5}$")
"""An argument that is a path (``./...``, ``internal/gitproto/``, ``tests/test_x.py``), not a
platform or an image (``linux/amd64``)."""


@dataclass
class Commands:
    """The latest command of each family (test, lint, format, typecheck, build, ...) that
    succeeded, with the turns that ran it."""

    found: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    last: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Per family, the last run: (command, turn uuid, its failure verdict or "")."""

    def see(self, turn: Turn, command: str, status: str, result: str = "") -> None:
        for cmd in shell_commands(_HEREDOC.sub(" ", command)):
            family = vocab.command_family(cmd)
            if family and family != "format":
                failed = status == "error" or bool(re.search(r"\b[1-9]\d* failed\b", result))
                verdict = (run_summary(result) or error_line(result) or "failed") if failed else ""
                self.last[family] = (cmd, turn.uuid, verdict)
        if status not in ("ok", ""):  # "": no result recorded (it did not fail)
            return
        for cmd in shell_commands(_HEREDOC.sub(" ", command)):
            family = vocab.check_of(cmd)
            if family:
                kept, uuids = self.found.get(family, ("", []))
                if kept and _depth(cmd) > _depth(kept):
                    continue  # `go build ./cmd/cli/agent/...` after `go build ./...`: one part
                self.found[family] = (cmd, [turn.uuid, *[u for u in uuids if u != turn.uuid]])

    def failing(self) -> list[Candidate]:
        """A todo for each check whose last run in the segment failed: left broken."""
        out = []
        for family, (cmd, uuid, verdict) in self.last.items():
            if not verdict:
                continue
            out.append(
                Candidate(
                    kind="todo",
                    text=f"Still failing at the end of the session: `{cmd}` ({verdict})",
                    topic="failing checks",
                    keywords=[family],
                    importance=IMPORTANCE["todo"],
                    source_uuids=[uuid],
                )
            )
        return out

    def candidates(self) -> list[Candidate]:
        return [
            Candidate(
                kind="fact",
                text=f"{vocab.FAMILY_TEXT[family]} with `{cmd}`",
                topic=COMMANDS_TOPIC,
                keywords=[family.split(":")[0], cmd.split()[0]],
                importance=0.5,
                source_uuids=uuids[:5],
            )
            for family, (cmd, uuids) in self.found.items()
        ]


def report_candidates(turn: Turn, description: str, report: str) -> list[Candidate]:
    """A subagent's report to the parent agent: what it found, as findings of the session (a
    background agent's launch notice is not a report). Its opening sentences are one finding;
    each later section under a heading that names something ("### 6. opentelemetry_ash") is
    another, so what the report says of its sixth package is not cut away with the rest."""
    if _LAUNCHED.search(report[:300]) or is_review(description):
        return []  # a launch notice; a review's suggestions (what was kept, the agent says)
    text = informative(report)
    if not text:
        return []
    said = [s for s in split_sentences(text) if len(s) > 25][:4]
    if not said:
        return []
    lead = f"{description.strip().rstrip('.')}: " if description.strip() else ""
    opening = clip(lead + " ".join(said), 420)

    def finding(body: str) -> Candidate:
        return Candidate(
            kind="fact",
            text=body,
            topic=clip(description, 80),
            importance=0.45,
            source_uuids=[turn.uuid],
        )

    out = [finding(opening)]
    for title, body in report_sections(report):
        content = " ".join(informative(body).split("\n"))
        if content and title not in opening and len(out) <= MAX_REPORT_SECTIONS:
            out.append(finding(clip(f"{lead}{title}: {content}", 300)))
    return out


_REVIEW = re.compile(
    r"^\W*(?:code )?review\b|\breview\W*$|\b(?:code|peer) review\b|\breviewer\b|\bcritique\b"
    r"|\breview (?:a|the|this|these|my|our|your)\b[^.\n]{0,40}?\b(?:changes?|diff|pr|pull request"
    r"|patch|commits?|branch|implementation|code)\b|审查|评审",
    re.I,
)
"""A subagent asked to review a change reports suggestions, not what holds: read by hand,
none of its findings was worth a line; the parent agent says which it applied. (An audit
reports what it found: "Audit version wiring" found a shipping bug. "How review body content
is processed" and a path such as ``coderabbit-review-helper`` ask for no review.)"""


def is_review(request: str) -> bool:
    """Whether a subagent was asked to review a change (its findings are suggestions)."""
    return _REVIEW.search(request[:400]) is not None


MAX_REPORT_SECTIONS = 8
"""A report's sections filed as findings of their own, at most."""
_FENCE = re.compile(r"^\s*```.*?^\s*```[^\n]*$", re.MULTILINE | re.DOTALL)


def report_sections(report: str) -> list[tuple[str, str]]:
    """A report's sections whose heading names something, as (heading, body without code
    blocks); none unless there are at least two (one heading is a title, not a list)."""
    sections: list[tuple[str, list[str]]] = []
    for line in _FENCE.sub("", report).split("\n"):
        bare = line.strip().replace("**", "")
        if bare.startswith("#"):
            sections.append((heading(bare), []))
        elif sections:
            sections[-1][1].append(line)
    named = [(title, "\n".join(body)) for title, body in sections if title]
    return named if len(named) >= 2 else []
