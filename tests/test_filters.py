"""memd.store.filters: every value is rendered so that LanceDB reads back the same value, and what
cannot be rendered safely is refused. Checked against a real LanceDB table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pyarrow as pa
import pytest

from memd.daemon.app import App
from memd.models import Memory
from memd.store.filters import (
    NOTHING,
    Filter,
    FilterError,
    all_of,
    any_of,
    clause,
    contains,
    is_in,
    literal,
    match,
)
from memd.store.upsert import upsert

AWKWARD = [
    "it's",
    "''",
    "a\\b",
    "end\\",
    "\\'",
    "日本語のプロジェクト",
    "emoji 🧠",
    "100%",
    "snake_case",
    "x_y%z",
    "tab\there",
    "two\nlines",
    'say "hi"',
    "nul\x00byte",
    "') OR TRUE --",
    "?",
    "",
]


@pytest.fixture
def table(tmp_path: Path):
    import lancedb

    db = lancedb.connect(tmp_path / "db")
    data = {
        "s": [*AWKWARD, "snakeXcase", "x1y%z", "100"],
        "n": list(range(len(AWKWARD) + 3)),
    }
    data["flag"] = [n % 2 == 0 for n in data["n"]]
    data["x"] = [n * 0.5 for n in data["n"]]
    return db.create_table("t", pa.table(data))


def rows(table, where: Filter) -> list[str]:
    return sorted(r["s"] for r in table.search().where(where.sql).limit(100).to_list())


@pytest.mark.parametrize("value", AWKWARD)
def test_each_awkward_value_finds_exactly_itself(table, value: str) -> None:
    assert rows(table, match(s=value)) == [value]
    assert rows(table, clause("s = ?", value)) == [value]
    assert rows(table, is_in("s", [value, "no such value"])) == [value]


def test_an_in_list_of_every_awkward_value_finds_them_all(table) -> None:
    assert rows(table, match(s=AWKWARD)) == sorted(AWKWARD)
    assert rows(table, clause("s IN ?", AWKWARD)) == sorted(AWKWARD)


def test_an_empty_in_list_matches_nothing_and_cannot_go_in_a_template(table) -> None:
    assert is_in("s", []) == NOTHING
    assert match(s=[]) == NOTHING
    assert rows(table, match(s=[])) == []
    assert rows(table, match(s=[]) | match(s="it's")) == ["it's"]
    with pytest.raises(FilterError, match="empty list"):
        clause("s IN ?", [])


@pytest.mark.parametrize(
    ("needle", "found"),
    [
        ("100%", ["100%"]),  # the % is not a wildcard: "100" alone is not found
        ("snake_case", ["snake_case"]),  # the _ is not a wildcard: "snakeXcase" is not found
        ("x_y%z", ["x_y%z"]),
        ("a\\b", ["a\\b"]),
        ("end\\", ["end\\"]),
        ("it's", ["it's"]),
        ("のプロ", ["日本語のプロジェクト"]),
    ],
)
def test_contains_matches_the_text_literally(table, needle: str, found: list[str]) -> None:
    assert rows(table, contains("s", needle)) == found


def test_contains_folds_case_of_the_column(table) -> None:
    assert rows(table, contains("s", 'say "hi', fold_case=True)) == ['say "hi"']
    assert rows(table, contains("s", "SAY", fold_case=False)) == []
    assert rows(table, contains("s", "say", fold_case=True)) == ['say "hi"']


def test_numbers_and_booleans(table) -> None:
    assert rows(table, clause("n > ? AND n < ?", 0, 3)) == sorted(AWKWARD[1:3])
    assert rows(table, match(n=[0, 2], flag=True)) == sorted([AWKWARD[0], AWKWARD[2]])
    assert rows(table, clause("x < ?", 0.75)) == sorted(AWKWARD[:2])
    assert rows(table, clause("x >= ? AND x <= ?", 0.5, 1.0)) == sorted(AWKWARD[1:3])


def test_combining_keeps_the_meaning(table) -> None:
    either = match(n=0) | match(n=1)
    both = either & match(flag=True)
    assert both.sql == "(n = 0 OR n = 1) AND flag = true"
    assert rows(table, both) == [AWKWARD[0]]
    templated = clause("n = ? OR n = ?", 0, 1) & clause("flag = ?", False)
    assert templated.sql == "(n = 0 OR n = 1) AND flag = false"
    assert rows(table, templated) == [AWKWARD[1]]
    flat = all_of(match(n=0), all_of(match(flag=True), match(s=AWKWARD[0])))
    assert flat.sql == f"n = 0 AND flag = true AND s = {literal(AWKWARD[0])}"
    assert any_of(match(n=0)) == match(n=0)


def test_equal_filters_render_equal_text() -> None:
    # They key caches (the page cache, the document frequency memo).
    assert is_in("id", ["b", "a", "b"]) == is_in("id", ("a", "b"))
    assert is_in("id", ["b", "a"]).sql == "id IN ('a', 'b')"
    assert hash(match(project="p", status="active")) == hash(match(project="p", status="active"))


@pytest.mark.parametrize(
    "template",
    [
        "s = 'x'",  # a literal of its own
        's = "x"',
        "s = ? -- comment",
        "s = ? /* comment */",
        "s = ?; DROP TABLE t",
        "s LIKE ? ESCAPE \\",
    ],
)
def test_a_template_holds_no_literal_comment_or_second_statement(template: str) -> None:
    with pytest.raises(FilterError, match="template"):
        clause(template, "x")


def test_placeholders_and_values_must_agree() -> None:
    with pytest.raises(FilterError, match="2 placeholders for 1 values"):
        clause("a = ? AND b = ?", "x")
    with pytest.raises(FilterError, match="0 placeholders for 1 values"):
        clause("a = b", "x")


@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), None, b"bytes", object(), "\ud800", Path("/p")]
)
def test_what_cannot_be_rendered_is_refused(bad: object) -> None:
    with pytest.raises(FilterError):
        literal(bad)  # type: ignore[arg-type]
    with pytest.raises(FilterError):
        match(s=[bad])  # type: ignore[list-item]
    if not isinstance(bad, str):
        with pytest.raises(FilterError):
            match(s=bad)  # type: ignore[arg-type]
        with pytest.raises(FilterError):
            clause("s = ?", bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["Project", "a b", "x;y", "1st", "lower(text)", ""])
def test_column_names_are_plain_identifiers(name: str) -> None:
    with pytest.raises(FilterError, match="column"):
        is_in(name, ["x"])
    with pytest.raises(FilterError, match="column"):
        contains(name, "x")


def test_match_needs_a_condition() -> None:
    with pytest.raises(FilterError):
        match()
    with pytest.raises(FilterError):
        all_of()


def test_the_store_reads_awkward_projects_and_counts_literal_terms(app: App) -> None:
    projects = ["/p/it's", "/p/a\\b", "/p/日本"]
    texts = [
        "the deploy uses AWS_PROFILE from the shell",
        # a "_" wildcard would count this one too:
        "deploy notes: the lint step flagged AWSXPROFILE as a misspelt constant in the wiki",
        "coverage must stay at 100% for the parser",
    ]
    upsert(app.store, [Memory(text=t, kind="fact", project=p) for p in projects for t in texts])
    store = app.store
    for project in projects:
        found = store.query(match(project=project, status="active"))
        assert sorted(m.text for m in found) == sorted(texts)
        assert {m.project for m in found} == {project}
    where = match(project=projects[0], status="active")
    total, counts = store.document_frequencies(where, ["aws_profile", "100%", "deploy"])
    assert total == 3
    assert counts == {"aws_profile": 1, "100%": 1, "deploy": 2}
    assert store.count(match(project=[])) == 0
    assert store.query(is_in("id", [])) == []


STORE_MODULES = {"store/filters.py", "store/table.py", "store/layout.py"}
"""The store package's modules that may write SQL text for LanceDB (relative to memd/)."""
TAKES_A_FILTER = {
    "where",
    "count_rows",
    "delete",
    "query",
    "count",
    "vector_search",
    "text_search",
    "document_frequencies",
}
COMPARED = re.compile(r"\b[a-z_]+\s(?:=|!=|<>|>=|<=|>|<|IN|LIKE)\s*\(?'?$")
"""The end of an f-string's text just before a value: ``column = '`` and the like."""
SQL_TEXT = re.compile(r"(?:\b(?:AND|OR|IN|LIKE|NOT)\b|\s(?:=|!=|<>|<=|>=|<|>)\s|starts_with\()")


def assembled(node: ast.AST) -> bool:
    """An f-string, a concatenation or a formatting call: text put together at run time."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return any(
            isinstance(side, ast.JoinedStr)
            or (isinstance(side, ast.Constant) and isinstance(side.value, str))
            or assembled(side)
            for side in (node.left, node.right)
        )
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"format", "join", "replace"}
    )


def sql_like(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and bool(SQL_TEXT.search(node.value))
    )


def sql_outside_store(root: Path) -> list[str]:
    """Where the package at ``root`` writes SQL for LanceDB outside the store modules."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in STORE_MODULES:
            continue
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(root.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(
                a.name in {"sql_str", "sql_in", "literal"} for a in node.names
            ):
                found.append(f"{where}:{node.lineno}: imports a quoting helper")
            if isinstance(node, ast.JoinedStr) and not ast.unparse(node).startswith("f'PRAGMA "):
                # (SQLite's PRAGMA takes no bound parameter; memd's are integers it made)
                for text, value in zip(node.values, node.values[1:], strict=False):
                    if (
                        isinstance(text, ast.Constant)
                        and isinstance(value, ast.FormattedValue)
                        and COMPARED.search(str(text.value))
                    ):
                        found.append(f"{where}:{node.lineno}: {ast.unparse(node)[:80]}")
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in TAKES_A_FILTER and not any(
                k.arg == "where" for k in node.keywords
            ):
                continue
            args = [*node.args[:2], *(k.value for k in node.keywords if k.arg == "where")]
            for arg in args:
                if assembled(arg) or sql_like(arg):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_no_sql_is_assembled_outside_the_store() -> None:
    """Every LanceDB filter outside the store modules comes from memd.store.filters: no f-string
    compares a column with a value, no call that takes a filter gets an f-string, a
    concatenation or SQL text, and nobody quotes by hand."""
    import memd

    found = sql_outside_store(Path(memd.__file__).resolve().parent)
    assert not found, "SQL assembled outside the store:\n" + "\n".join(found)
