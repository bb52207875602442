"""Honouring a request in conversation to forget something: archive every active memory of the
user's project (and the user-wide scope) that carries what the request names.

A memory *carries* a subject when one of its sentences states the user's own value for it
("My home address is 42 Elm Street", "我的手机号是 138…", "The user's SSN is …"), or when it
holds one of the values those statements gave (Claude's "I set 42 Elm Street as the default"
carries it too). A bare "forget that" carries the statement it follows: the memories citing
that turn, and those holding its values. Statements said after the request are kept: "forget
my old address; my new one is …" keeps the new one. Archiving is :mod:`memd.store.forgetting`'s,
so `memd restore` brings any of them back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from memd.extract import forget_requests
from memd.extract.forget_requests import SUBJECT_RES, ForgetRequest
from memd.models import USER_SCOPE, Memory
from memd.store.filters import is_in, match
from memd.store.forgetting import archive_memories
from memd.store.table import MemoryStore
from memd.text.chinese import has_chinese

if TYPE_CHECKING:
    from memd.settings import Settings

log = logging.getLogger(__name__)

_PERSONAL = re.compile(
    r"\b(?:my|i|i'm|i've|me|mine|our|we|user'?s|the user)\b|我|用户", re.IGNORECASE
)
_SPEAKER = re.compile(r"(?:^|\n|\] )\s*(?:user|assistant|claude|agent|用户|助手)\s*[:：]\s*")
_MARKER = re.compile(
    r"^[^.;\n。；]{0,24}?(?:\b(?:is|was|are)\b(?: now| still| changed to)?|[:=：]|是|为)"
    r"\s*(?P<value>[^.;\n。；]{2,80})",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?;\n。！？；]+(?:\.\d[^.!?;\n。！？；]*)*")
_DIGITS = re.compile(r"\+?\d[\d\s().-]{2,}\d|\b[A-Za-z]*\d{4,}[A-Za-z]*\b")
_REDACTED = re.compile(r"\[REDACTED:[a-z_]+\]")
MIN_VALUE = 4
"""A value shorter than this many characters is too common to look for elsewhere."""


def statement_values(text: str, request: ForgetRequest) -> tuple[bool, list[str]]:
    """Whether ``text`` states the user's own value of the request's subject, and the values
    it gives (each a string to look for in other memories)."""
    found = False
    values: list[str] = []
    for sentence in _SENTENCE.findall(_SPEAKER.sub("\n", text)):
        term = _term(sentence, request)
        if term is None or not _PERSONAL.search(sentence[: term.start()] + " " + term.group(0)):
            continue
        rest = sentence[term.end() :]
        if re.search(r"(?:\bat|\bon|在)$", term.group(0)):  # "I live at …", "我住在 …"
            value = rest.strip()
        else:
            m = _MARKER.match(rest)
            if m is None:
                continue
            value = m.group("value")
        found = True
        values += value_keys(value)
    return found, values


def _term(sentence: str, request: ForgetRequest) -> re.Match[str] | None:
    if request.subject:
        return SUBJECT_RES[request.subject].search(sentence)
    if not request.words:
        return None
    low = sentence.lower()
    if not all(re.search(rf"\b{re.escape(w)}", low) for w in request.words):
        return None
    last = max(request.words, key=lambda w: low.find(w))
    return re.search(rf"\b{re.escape(last)}\w*", sentence, re.IGNORECASE)


def value_keys(value: str) -> list[str]:
    """What to look for elsewhere of a stated value: its numbers (phone numbers, codes) and
    its first phrase ("42 Elm Street" of "42 Elm Street, Springfield for the form")."""
    value = _REDACTED.sub(" ", value).strip(" \"'`“”")
    keys = [d.strip() for d in _DIGITS.findall(value) if sum(c.isdigit() for c in d) >= 4]
    head = re.split(r"[,，、]|\s+(?:for|and|but|so|which|because|if|when)\s+", value)[0].strip()
    if len(head) >= 6 and (re.search(r"\d|[A-Z]", head) or has_chinese(head)):
        keys.append(head)
    return [k for k in dict.fromkeys(keys) if len(k) >= MIN_VALUE]


def said_before(memory: Memory, request: ForgetRequest) -> bool:
    """True unless every source of ``memory`` was said after the request (in its session)."""
    if not request.timestamp or not memory.sources:
        return True
    return any(not s.timestamp or s.timestamp <= request.timestamp for s in memory.sources)


def carriers(memories: list[Memory], request: ForgetRequest) -> list[Memory]:
    """The memories among ``memories`` that carry what ``request`` names."""
    earlier = [m for m in memories if said_before(m, request)]
    chosen: dict[str, Memory] = {}
    values: list[str] = []
    if request.bare:
        cited = set(request.said_uuids)
        for m in earlier:
            if any(s.uuid in cited for s in m.sources):
                chosen[m.id] = m
        values += bare_values(request.said)
    else:
        for m in earlier:
            states, found = statement_values(m.text, request)
            if states:
                chosen[m.id] = m
                values += found
    keys = [v.lower() for v in dict.fromkeys(values)]
    if keys:
        for m in earlier:
            low = m.text.lower()
            if m.id not in chosen and any(k in low for k in keys):
                chosen[m.id] = m
    return list(chosen.values())


def bare_values(said: str) -> list[str]:
    """The values of a statement a bare "forget that" points at: what it states of any known
    subject, and its numbers."""
    values = [d.strip() for d in _DIGITS.findall(_REDACTED.sub(" ", said))]
    values = [v for v in values if sum(c.isdigit() for c in v) >= 4]
    for subject in SUBJECT_RES:
        values += statement_values(said, ForgetRequest("", subject=subject))[1]
    return [v for v in dict.fromkeys(values) if len(v) >= MIN_VALUE]


def what(request: ForgetRequest) -> str:
    """What a request names, in words that never repeat the fact itself."""
    if request.bare:
        return "the statement before the request"
    return request.subject.replace("_", " ") or " ".join(request.words)


def record(project: str, request: ForgetRequest) -> dict[str, Any]:
    """What is kept of a request to apply it to memories stored later (a session read after
    the one that asked): never its sentence, nor the statement it points at, only their turn."""
    return {
        "project": project,
        "timestamp": request.timestamp,
        "subject": request.subject,
        "words": list(request.words),
        "bare": request.bare,
        "said_uuids": list(request.said_uuids),
    }


def from_record(raw: dict[str, Any]) -> ForgetRequest:
    return ForgetRequest(
        "",
        timestamp=str(raw.get("timestamp") or ""),
        subject=str(raw.get("subject") or ""),
        words=tuple(raw.get("words") or ()),
        bare=bool(raw.get("bare")),
        said_uuids=tuple(raw.get("said_uuids") or ()),
    )


def honour(
    store: MemoryStore,
    home: Any,
    project: str,
    requests: Iterable[ForgetRequest],
    ids: Iterable[str] | None = None,
) -> list[Memory]:
    """Archive the active memories of ``project`` and the user-wide scope (or only those of
    ``ids``) that carry what each request names. Returns the memories archived."""
    requests = list(requests)
    if not requests:
        return []
    where = match(project=[project, USER_SCOPE], status="active")
    if ids is not None:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        where = where & is_in("id", wanted)
    active = store.query(where)
    archived: list[Memory] = []
    for request in requests:
        found = [m for m in carriers(active, request) if m.id not in {a.id for a in archived}]
        if not found:
            log.info("a request to forget %s: nothing to archive", what(request))
            continue
        reason = f"asked in conversation to forget {what(request)}"
        done, _ = archive_memories(store, home, [m.id for m in found], reason)
        archived += done
        log.info("a request to forget %s archived %d memories", what(request), len(done))
    return archived


def prompt_job(
    store: MemoryStore, settings: Settings, payload: dict[str, Any]
) -> Callable[[], list[Memory]] | None:
    """For a prompt that asks to forget something it names ("forget my home address"), the
    work that archives what carries it now, so neither the session's next prompts nor the next
    brief bring it back (extraction does it again with the session's turns, and for a bare
    "forget that"); None for any other prompt."""
    prompt = str(payload.get("prompt") or "")
    if not forget_requests.is_forget_request(prompt):
        return None
    from memd.extract.redact import redact
    from memd.project import resolve_project

    requests = forget_requests.named_in(redact(prompt, settings.redact_patterns))
    if not requests:
        return None
    project = resolve_project(payload.get("cwd") or None)
    return partial(honour, store, settings.home, project, requests)
