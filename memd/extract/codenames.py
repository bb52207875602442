"""The names a piece of code or text uses that are worth remembering: ``snake_case``,
``camelCase``, ``CONSTANTS``, dotted or scoped paths, ``--flags``, and what code defines
(``def x``, ``class Y``, a config ``key:``). Standard library only (the parser uses it).
"""

from __future__ import annotations

import itertools
import re

_CODE_TOKEN = re.compile(r"--[A-Za-z][\w-]+|[A-Za-z_$][\w$]*(?:(?:\.|::|/)[A-Za-z_$][\w$]*)*")
_KEY_LINE = re.compile(r"^\s*-?\s*([A-Za-z_][\w.-]*)\s*[:=]", re.M)
_DEFINES = re.compile(
    r"\b(?:def|defp|defmacro|defmodule|func|function|class|interface|struct|enum|type|trait|fn"
    r"|const|let|var|module)\s+([A-Za-z_$][\w$.]*)"
)
_KEYWORDS_TEXT = """
    self this true false null none nil undefined return import from export default async await
    const let var function class def defp defmacro defmodule end else elif then with when case
    string number boolean object array list dict int float bool bytes error errors println
    printf require include public private protected static void new delete typeof instanceof
"""
_KEYWORDS = frozenset(_KEYWORDS_TEXT.split())


def distinctive(token: str) -> bool:
    """A code name worth remembering: ``snake_case``, ``camelCase``, ``CONSTANT``, a dotted
    or scoped path, a ``--flag``; not a keyword or a plain word."""
    if len(token) < 4 or token.lower() in _KEYWORDS:
        return False
    if token.startswith("--") or "_" in token.strip("_") or "." in token or "::" in token:
        return True
    if token.isupper() and sum(c.isalpha() for c in token) >= 4:
        return True
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(token))


def code_names(text: str, used: bool = True) -> list[str]:
    """The names a piece of code defines (``def x``, ``class Y``, ``key:``), then (with
    ``used``) the other distinctive names it uses, each once, in order."""
    defined = [m.group(1) for m in _DEFINES.finditer(text)]
    keys = [k for k in _KEY_LINE.findall(text) if distinctive(k) or "-" in k.strip("-")]
    names = [t for t in _CODE_TOKEN.findall(text) if distinctive(t)] if used else []
    return list(dict.fromkeys([*defined, *keys, *names]))
