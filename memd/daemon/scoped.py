"""Scope made visible for `memd search` and `memd list`: one project (with the user-wide scope)
or every project, and, when the asked project has nothing, where else there is something and,
for ``--explain``, the nearest candidates that missed and why.

The extra work runs only for an empty answer, so a search that finds something costs what it
did; the prompt hook never comes here (it recalls through :mod:`memd.recall.inject`).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from memd.errors import UserError
from memd.models import STATUSES, USER_SCOPE
from memd.recall import retrieve
from memd.recall.hits import hit_json
from memd.store import curate

if TYPE_CHECKING:
    from memd.daemon.app import App

MISSES_SHOWN = 3
"""``--explain`` with no result names this many of the nearest candidates."""
ELSEWHERE_SHOWN = 5
"""An empty answer names at most this many other projects that have matches."""


def search(
    app: App,
    query: str,
    project: str,
    *,
    limit: int,
    kinds: list[str] | None,
    include_all: bool,
    all_projects: bool,
    explain: bool,
) -> dict[str, Any]:
    """`search` in ``project`` (and the user-wide scope), or in every project."""
    if not query or not query.strip():
        raise UserError("the search query is empty")
    statuses = STATUSES if include_all else ("active",)
    weights = retrieve.weights_from(app.settings)
    if all_projects:
        scope = curate.projects_of(app.store) or [USER_SCOPE]
        vectors = queries = None  # the hooks' cache holds few projects: the table, as `find` does
    else:
        scope = [project]
        vectors, queries = app._recall or (None, None)
    results = retrieve.search(
        app.store,
        query,
        scope,
        limit=limit,
        kinds=kinds,
        statuses=statuses,
        weights=weights,
        cache=vectors,
        embed_later=queries.submit if queries is not None else None,
    )
    out: dict[str, Any] = {
        "results": [hit_json(r) for r in results],
        "project": None if all_projects else project,
    }
    if results:
        return out
    if explain:  # the same recall (and depth) as search, read for the candidates that missed
        found = retrieve.recall(
            app.store,
            query,
            scope,
            depth=max(limit * 4, 40),
            kinds=kinds,
            statuses=statuses,
            weights=weights,
        )
        missed = [r for r in found if not r.relevant][:MISSES_SHOWN]
        out["missed"] = [hit_json(r) for r in retrieve.complete(app.store, missed)]
    if not all_projects:
        others = [p for p in curate.projects_of(app.store) if p not in (project, USER_SCOPE)]
        if others:
            found = retrieve.search(
                app.store, query, others, limit=limit, kinds=kinds, statuses=statuses
            )
            tally = Counter(r.project for r in found if r.project != USER_SCOPE)
            out["elsewhere"] = [
                {"project": p, "count": n} for p, n in tally.most_common(ELSEWHERE_SHOWN)
            ]
    return out


def elsewhere_count(
    app: App, kind: str | tuple[str, ...] | None, status: str | None, pinned: bool | None
) -> int:
    """How many memories with these filters the other projects hold (for an empty `list`)."""
    return curate.list_page(app.store, None, kind, status, pinned, 0, 0)[1]
