"""Guess a memory's kind from how its text is phrased, for `memd add` without ``--kind``.

A few plain rules, English and Chinese, checked in order: a TODO (``TODO:``, "we need to",
"待办"), a decision ("we decided", "we chose", "决定"), a bug fix ("fixed", "root cause",
"修复"), a preference ("always", "never", "prefer", "use X, not Y", "不要"), progress
("finished", "shipped", "已完成"), else a fact. The user can always say ``--kind``.
"""

from __future__ import annotations

import re

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "todo",
        re.compile(
            r"^\s*(?:todo|fixme|to-do|to do)\b|^\s*(?:we|i)?\s*(?:still\s+)?(?:need|have)\s+to\b"
            r"|^\s*(?:don't|do not)\s+forget\s+to\b|^\s*remember\s+to\b|^\s*(?:待办|待做|还要|还需要|记得)",
            re.I,
        ),
    ),
    (
        "decision",
        re.compile(
            r"\b(?:we|i|the team|team)\s+(?:have\s+)?(?:decided|chose|picked|agreed|settled\s+on|"
            r"went\s+with|are\s+going\s+with|will\s+go\s+with|opted)\b|^\s*decision\s*:|^\s*decided\b"
            r"|决定|选定|选择了|定下",
            re.I,
        ),
    ),
    (
        "bugfix",
        re.compile(
            r"\b(?:fixed|fixes|the\s+fix\s+(?:is|was)|root\s+cause|was\s+caused\s+by|"
            r"bug\s*:|workaround)\b|修复|修好|根因|原因是",
            re.I,
        ),
    ),
    (
        "preference",
        re.compile(
            r"^\s*(?:always|never|prefer|please|avoid|don't|do\s+not)\b"
            r"|^\s*use\b.*[,;]\s*(?:not|never)\b|\b(?:i|we)\s+(?:prefer|like|'d\s+rather|would\s+rather)\b"
            r"|^\s*(?:总是|永远|不要|别|请|优先|偏好|喜欢|一律)",
            re.I,
        ),
    ),
    (
        "progress",
        re.compile(
            r"^\s*(?:done|finished|completed|shipped|implemented|merged|released)\b|已完成|完成了",
            re.I,
        ),
    ),
)


def kind_of(text: str) -> str:
    """The kind ``text`` reads as: the first rule that matches, else ``fact``."""
    for kind, pattern in RULES:
        if pattern.search(text):
            return kind
    return "fact"
