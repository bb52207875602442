"""Proposed changes and how they end: a PR, an MR or a branch closed without being merged.

"Opened PR #482 that sets ``CATALOG_TTL_SECONDS=3600``" proposes a value; "Closed #482 without
merging" calls it off. The value it proposed never held, and what it would have replaced is
still current.
"""

from __future__ import annotations

import re

_NUMBERED = re.compile(
    r"(?:\b(?P<kind>PR|pull request|MR|merge request)s?\s*)?(?P<sign>[#!])?(?P<n>\d+)\b", re.I
)
_BRANCH = re.compile(
    r"\bbranch(?:es)?\s+`(?P<a>[\w./-]+)`|\bbranch(?:es)?\s+(?P<b>[\w.-]+/[\w./-]+)"
    r"|`(?P<c>[\w./-]+)`\s*(?:branch\b|分支)|分支\s*`?(?P<d>[\w./-]*[\w-]/[\w./-]+|[\w./-]+(?=`))",
    re.I,
)
PROPOSAL = re.compile(r"\b(?:PR|MR|pull request|merge request|draft|branch)\b|!\d+|分支", re.I)
"""Words that say a change was proposed for review or tried aside, not made."""
CALLED_OFF = re.compile(
    r"\b(?:clos(?:ed|ing)|abandon(?:ed|ing)|discard(?:ed|ing)|declin(?:ed|ing)|withdr[ae]w\w*"
    r"|revert(?:ed|ing)?)\b|关闭|关掉|关了|废弃|放弃|撤回|回滚|回退",
    re.I,
)
MERGED = re.compile(
    r"(?<!without )(?<!not )(?<!n't )(?<!never )(?<!be )\bmerged\b|已合并|合并了|合进了|合入了",
    re.I,
)
"""A proposal that landed ("closed after it was merged"): not called off."""


def refs(sentence: str) -> frozenset[str]:
    """The PRs, MRs and branches ``sentence`` names: ``#482`` (a PR, "PR 482"), ``!88`` (an MR,
    "MR 88"), a branch's name (```feat/ofetch``` branch)."""
    out = set()
    for m in _NUMBERED.finditer(sentence):
        kind, sign = (m.group("kind") or "").lower(), m.group("sign")
        if not kind and not sign:
            continue  # a bare number
        mr = sign == "!" or kind in ("mr", "merge request")
        out.add(("!" if mr else "#") + m.group("n"))
    for m in _BRANCH.finditer(sentence):
        name = next(g for g in m.groups() if g)
        out.add(name.casefold())
    return frozenset(out)


def calls_off(new: str, old: str, shared: frozenset[str]) -> str:
    """The PR, MR or branch of ``shared`` that ``new`` says was closed unmerged, when ``old``
    proposed a change on it; else ""."""
    if not shared or not CALLED_OFF.search(new) or MERGED.search(new):
        return ""
    if not PROPOSAL.search(old) or CALLED_OFF.search(old):
        return ""
    return sorted(shared)[0]
