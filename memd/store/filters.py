"""Filters on the LanceDB tables: the one place that writes the SQL text of a ``WHERE``.

LanceDB takes a filter as SQL text and has no bound parameters, so no caller writes SQL with a
value in it. A caller gives conditions as keywords (``match(project=p, status="active")``, a
list meaning ``IN``) or a template whose ``?`` stand for values (``clause("created_at > ?",
since)``), in the spirit of sqlite-utils' ``rows_where(where, where_args)``; this module renders
every value as a literal. A template may hold no quote, backslash, comment or semicolon, so
each value in a filter went through :func:`literal`. Filters combine with ``&`` and ``|``.

What LanceDB's parser (DataFusion's, lance 0.40) does with a string literal, measured: only a
quote is special (doubled); a backslash, a newline, a NUL and any Unicode stay as they are. In
a ``LIKE`` pattern the backslash escapes ``%``, ``_`` and itself (no other escape character is
accepted), which :func:`contains` uses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache

from memd.errors import MemdError

Value = str | int | float | bool
"""What a filter can hold (``None`` cannot: ``x = NULL`` is never true)."""
SCALARS = (str, int, float)  # bool is an int
LISTS = (list, tuple, set, frozenset, dict)
"""The usual collections of values (others are checked to be a Collection, and not text)."""

IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
FORBIDDEN = re.compile(r"['\"`\\;]|--|/\*")
"""What a template may not hold: a literal (values go in as arguments), a comment, a second
statement."""
CONNECTIVE = re.compile(r"\b(?:and|or|not)\b", re.IGNORECASE)


class FilterError(MemdError, ValueError):
    """A filter that cannot be rendered safely (a bug in the caller, never the user's input)."""


@dataclass(frozen=True, slots=True)
class Filter:
    """A rendered filter: ``sql`` is what LanceDB gets. Hashable, so it can key a cache."""

    sql: str
    joins: str = ""
    """How its top level joins conditions: "" (a single one), "AND", "OR", or "?" (a template
    with AND, OR or NOT in it). It is parenthesised when combined by another connective."""

    def __str__(self) -> str:
        return self.sql

    def __and__(self, other: Filter) -> Filter:
        return all_of(self, other)

    def __or__(self, other: Filter) -> Filter:
        return any_of(self, other)

    def _part(self, joined_by: str) -> str:
        return self.sql if self.joins in ("", joined_by) else f"({self.sql})"


NOTHING = Filter("FALSE")
"""Matches no row (what an empty ``IN`` list renders as)."""


def literal(value: Value) -> str:
    """``value`` as a SQL literal LanceDB reads back as the same value."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise FilterError(f"a filter value is not valid text: {value!r}") from exc
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"a filter cannot hold the number {value!r}")
        return repr(value)
    raise FilterError(f"a filter cannot hold a {type(value).__name__}: {value!r}")


@lru_cache(maxsize=256)
def column(name: str) -> str:
    """``name``, checked to be a plain column name."""
    if not IDENTIFIER.fullmatch(name):
        raise FilterError(f"not a column name: {name!r}")
    return name


def values(items: Collection[Value]) -> list[Value]:
    """Distinct values in a stable order (sorted when they can be), so that equal filters
    render equal text (they key caches)."""
    if type(items) not in LISTS and (
        not isinstance(items, Collection) or isinstance(items, str | bytes | bytearray)
    ):
        raise FilterError(f"a filter cannot hold a {type(items).__name__}: {items!r}")
    unique = list(dict.fromkeys(items))
    try:
        return sorted(unique)
    except TypeError:
        return unique


def is_in(name: str, items: Collection[Value]) -> Filter:
    """``name IN (...)``; :data:`NOTHING` for no values."""
    found = values(items)
    if not found:
        return NOTHING
    return Filter(f"{column(name)} IN ({', '.join(literal(v) for v in found)})")


def match(**conditions: Value | Collection[Value]) -> Filter:
    """Every condition holds: ``column=value`` is equality, ``column=[...]`` is ``IN`` (an
    empty list matches nothing). Rendered in the order given."""
    if not conditions:
        raise FilterError("match() needs at least one condition")
    parts = [
        Filter(f"{column(name)} = {literal(value)}")
        if isinstance(value, SCALARS)
        else is_in(name, value)
        for name, value in conditions.items()
    ]
    return parts[0] if len(parts) == 1 else all_of(*parts)


def clause(template: str, *args: Value | Collection[Value]) -> Filter:
    """``template`` with each ``?`` replaced by the next argument as a literal (a list or tuple
    renders as ``(a, b)``, for ``IN ?``). The template holds no literal of its own."""
    if FORBIDDEN.search(template):
        raise FilterError(f"a filter template holds no literal or comment: {template!r}")
    pieces = template.split("?")
    if len(pieces) - 1 != len(args):
        raise FilterError(
            f"the template {template!r} has {len(pieces) - 1} placeholders for {len(args)} values"
        )
    out = [pieces[0]]
    for arg, piece in zip(args, pieces[1:], strict=True):
        if isinstance(arg, SCALARS):
            out.append(literal(arg))
        else:
            found = values(arg)
            if not found:  # "x IN ()" does not parse, and NOT (x IN (NULL)) is not TRUE
                raise FilterError(f"an empty list in the template {template!r}: use is_in()")
            out.append("(" + ", ".join(literal(v) for v in found) + ")")
        out.append(piece)
    return Filter("".join(out), "?" if CONNECTIVE.search(template) else "")


def contains(name: str, text: str, *, fold_case: bool = False) -> Filter:
    """``text`` occurs in the column as a substring (``%`` and ``_`` in it match themselves);
    ``fold_case`` compares lower-cased columns (give ``text`` lower-cased)."""
    pattern = "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"
    target = f"lower({column(name)})" if fold_case else column(name)
    return Filter(f"{target} LIKE {literal(pattern)}")


def all_of(*filters: Filter) -> Filter:
    """Every filter holds (one filter is itself)."""
    if not filters:
        raise FilterError("all_of() needs at least one filter")
    if len(filters) == 1:
        return filters[0]
    return Filter(" AND ".join(f._part("AND") for f in filters), "AND")


def any_of(*filters: Filter) -> Filter:
    """At least one filter holds (one filter is itself)."""
    if not filters:
        raise FilterError("any_of() needs at least one filter")
    if len(filters) == 1:
        return filters[0]
    return Filter(" OR ".join(f._part("OR") for f in filters), "OR")
