"""Tool calls in transcript lines: the input fields extraction reads (trimmed), the results
joined to their calls by ``tool_use_id`` with how each ended, and background subagents'
reports (``<task-notification>``) as calls of their own.

Standard library only, like :mod:`memd.ingest.transcript`, which calls these while parsing.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from memd.extract.codenames import code_names
from memd.extract.lintfixes import suppression_lines
from memd.extract.manifests import PROJECT_FILE
from memd.models import ToolCall, Turn
from memd.text import stopwords

MAX_TOOL_SUMMARY_CHARS = 200
SYSTEM_TEXTS = frozenset({"Tool loaded.", "Tool loaded"})
"""User text blocks that Claude Code writes itself (never the user's words)."""
_SUMMARY_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")
_NOTIFICATION = re.compile(
    r"<task-notification>.*?(?:<summary>(?P<summary>.*?)</summary>)?.*?"
    r"(?:<result>(?P<result>.*?)(?:</result>|\Z))",
    re.DOTALL,
)

TOOL_ARGS: dict[str, dict[str, int]] = {
    "TodoWrite": {"todos": 4000},
    "TaskCreate": {"subject": 300, "description": 600},
    "TaskUpdate": {"taskId": 40, "status": 40, "subject": 300},
    "Edit": {"file_path": 500},
    "MultiEdit": {"file_path": 500},
    "Write": {"file_path": 500},
    "NotebookEdit": {"notebook_path": 500},
    "Read": {"file_path": 500},
    "Bash": {"command": 1500, "description": 300},
    "ExitPlanMode": {"plan": 4000},
    "AskUserQuestion": {"questions": 2000},
    "Task": {"description": 300, "subagent_type": 100, "prompt": 400},
    "Agent": {"description": 300, "subagent_type": 100, "prompt": 400},
}
"""Per tool, the input fields extraction reads and how many characters of each are kept (a
list or dict field is kept as JSON-able data within that many characters of JSON)."""
RESULT_CHARS = {"Bash": 1200, "Task": 5000, "Agent": 5000, "AskUserQuestion": 800}
"""Characters of a call's result kept (its start and its end); other tools keep 300. A
subagent's report (Task, Agent) is the finding of the parent session: most of it is kept."""
USER_SHELL_ID = "user-shell"
"""The id of a command the user ran in Claude Code's shell mode; its output joins it."""
_SHELL_PART = re.compile(r"<bash-(input|stdout|stderr)>(.*?)(?:</bash-\1>|\Z)", re.DOTALL)
REJECTED = "doesn't want to proceed with this tool use"
"""In a refused call's result: the user said no (and maybe what to do instead)."""


def tool_summary(raw_input: Any) -> str:
    if isinstance(raw_input, dict):
        for key in _SUMMARY_KEYS:
            value = raw_input.get(key)
            if isinstance(value, str) and value.strip():
                return short(value)
        try:
            return short(json.dumps(raw_input, ensure_ascii=False, sort_keys=True))
        except (TypeError, ValueError):
            return ""
    if isinstance(raw_input, str):
        return short(raw_input)
    return ""


def short(value: str) -> str:
    value = " ".join(value.split())
    if len(value) > MAX_TOOL_SUMMARY_CHARS:
        return value[: MAX_TOOL_SUMMARY_CHARS - 1] + "…"
    return value


def result_chars(call: ToolCall) -> int:
    """How much of ``call``'s result is kept (:data:`RESULT_CHARS`, :data:`PROJECT_FILE`)."""
    if call.name == "Read" and PROJECT_FILE.search(_str(call.args.get("file_path"))):
        return 4000
    return RESULT_CHARS.get(call.name, 300)


def attach_result(turn: Turn, result: ToolCall) -> None:
    """Give the call of ``turn`` whose id is ``result.id`` its result and status (the newest
    such call; a result whose call is not in ``turn`` is dropped)."""
    for call in reversed(turn.tools):
        if call.id and call.id == result.id:
            call.result = _head_tail(result.result, result_chars(call))
            call.status = result.status
            return


def user_shell(text: str) -> list[ToolCall]:
    """A command the user ran in shell mode (``<bash-input>``) as a Bash call, or its output
    (``<bash-stdout>``, ``<bash-stderr>``) as that call's result: the user's action, never a
    prompt to the agent."""
    parts = {kind: body.strip() for kind, body in _SHELL_PART.findall(text)}
    out = []
    if parts.get("input"):
        command = parts["input"]
        out.append(
            ToolCall(
                name="Bash",
                summary=short(command),
                id=USER_SHELL_ID,
                args={"command": command[:1500], "description": "run by the user"},
            )
        )
    if "stdout" in parts or "stderr" in parts:
        output = "\n".join(p for p in (parts.get("stdout"), parts.get("stderr")) if p)
        failed = bool(parts.get("stderr")) or bool(_FAILED_RUN.search(output))
        out.append(
            ToolCall(
                name="",
                id=USER_SHELL_ID,
                result=_head_tail(output, RESULT_CHARS["Bash"]),
                status="error" if failed else "ok",
            )
        )
    return out


_FAILED_RUN = re.compile(r"\b\d+ failed\b|^FAIL\b|\bERROR\b|Traceback \(most recent", re.M)


_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_AGENT_NAMED = re.compile(r'^Agent "(.+)" (?:came to rest|completed|finished|failed)\b')


def agent_report(text: str) -> ToolCall | None:
    """A ``<task-notification>`` (a background subagent came to rest) as a finished call of
    its own, ``TaskNotification``: the subagent's report is the agent's, never the user's."""
    m = _NOTIFICATION.search(text)
    if m is None or not (m.group("result") or "").strip():
        return None
    said = _SUMMARY.search(text)  # (the notification's own regex skips its optional part)
    summary = _unescape(said.group(1) if said else "").strip()
    named = _AGENT_NAMED.match(summary)  # 'Agent "Efficiency review" came to rest'
    summary = named.group(1) if named else summary
    return ToolCall(
        name="TaskNotification",
        summary=short(summary),
        args={"description": summary[:300]},
        result=_head_tail(_unescape(m.group("result")).strip(), RESULT_CHARS["Task"]),
        status="ok",
    )


EDITS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
MAX_ADDED = 12


def edit_pairs(name: str, raw_input: dict[str, Any]) -> list[tuple[str, str]]:
    """An edit's (old text, new text) pairs; a Write's and a notebook cell's old text is ""."""
    pairs: list[tuple[str, str]] = []
    if name == "Write":
        pairs = [("", str(raw_input.get("content") or ""))]
    elif name == "Edit":
        pairs = [(str(raw_input.get("old_string") or ""), str(raw_input.get("new_string") or ""))]
    elif name == "MultiEdit":
        for edit in raw_input.get("edits") or []:
            if isinstance(edit, dict):
                pairs.append((str(edit.get("old_string") or ""), str(edit.get("new_string") or "")))
    elif name == "NotebookEdit":
        pairs = [("", str(raw_input.get("new_source") or ""))]
    return pairs


def added_names(name: str, raw_input: dict[str, Any]) -> list[str]:
    """What an edit added: the code names of its new text that its old text lacked (a Write,
    a whole new file: every name), at most :data:`MAX_ADDED`."""
    out: list[str] = []
    for old, new in edit_pairs(
        name, raw_input
    ):  # what the edit defines (functions, types, keys), not every call
        before = set(code_names(old[:20000], used=False))
        out += [
            n
            for n in code_names(new[:20000], used=False)
            if n not in before and len(n) <= 80 and names_something(n)
        ]
    return list(dict.fromkeys(out))[:MAX_ADDED]


_LITERALS = frozenset({"true", "false", "null", "none", "nil", "yes", "no", "on", "off"})
_MEASURE = re.compile(r"\d[\d.]*[a-z]{0,3}")


def names_something(name: str) -> bool:
    """Whether a name an edit added is a code name, not a word of its comments or values
    ("we", "was", "true", "3.72s")."""
    folded = name.casefold()
    if not folded or _MEASURE.fullmatch(folded) or folded in _LITERALS:
        return False
    plain = name.isalpha() and name.islower()
    return not (plain and (folded in stopwords.EXTRACTION or folded in stopwords.SEARCH))


def tool_args(name: str, raw_input: Any) -> dict[str, Any]:
    """The fields of :data:`TOOL_ARGS` for ``name``, trimmed; {} for other tools. An edit
    also keeps the code names it added (``added``)."""
    keep = TOOL_ARGS.get(name)
    if not keep or not isinstance(raw_input, dict):
        return {}
    out: dict[str, Any] = {}
    if name in EDITS:
        added = added_names(name, raw_input)
        if added:
            out["added"] = added
        suppressed = [
            line for old, new in edit_pairs(name, raw_input) for line in suppression_lines(old, new)
        ]
        if suppressed:
            out["suppressed"] = suppressed[:3]
    for key, limit in keep.items():
        value = raw_input.get(key)
        if isinstance(value, str):
            if value.strip():
                out[key] = value if len(value) <= limit else value[: limit - 1] + "…"
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = str(value)
        elif isinstance(value, (list, dict)):
            out[key] = _trim_data(value, limit)
    return out


def _trim_data(value: Any, limit: int) -> Any:
    """A list's items (or a dict) kept while their JSON fits in ``limit`` characters; strings
    inside cut to 400 characters."""
    if isinstance(value, str):
        return value if len(value) <= 400 else value[:399] + "…"
    if isinstance(value, dict):
        return {str(k): _trim_data(v, limit) for k, v in list(value.items())[:20]}
    if isinstance(value, list):
        out: list[Any] = []
        used = 2
        for item in value[:60]:
            trimmed = _trim_data(item, limit)
            try:
                size = len(json.dumps(trimmed, ensure_ascii=False)) + 1
            except (TypeError, ValueError):
                continue
            if used + size > limit:
                break
            out.append(trimmed)
            used += size
        return out
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return str(value)[:400]


def pending_result(block: dict[str, Any]) -> ToolCall:
    """A tool_result block as a result waiting for its call (``name`` empty)."""
    text = full_result_text(block.get("content"))
    if block.get("is_error"):
        status = "rejected" if REJECTED in text else "error"
    else:
        status = "ok"
    return ToolCall(
        name="",
        id=_str(block.get("tool_use_id")),
        result=_head_tail(text, max(RESULT_CHARS.values())),
        status=status,
    )


def full_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(_str(b.get("text")))
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(p for p in parts if p).strip()
    return ""


def _head_tail(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its start and its end (where test runners and
    compilers print their verdict), joined by "…"."""
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}\n…\n{text[-(limit - head - 3) :]}"


def _unescape(text: str) -> str:
    return html.unescape(text)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
