"""The package layout reads as the data flow (#17): every module says its one job, stays small,
and no package imports one that comes after it in the order below."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

import memd

ROOT = Path(memd.__file__).resolve().parent
MAX_LINES = 520
""""No module over ~500 lines": a little slack, so that a docstring line is not a refactor."""

ORDER = [
    # the foundations: no memd imports beyond each other
    {"__init__", "errors", "kinds", "names", "settings", "models", "project", "protocol"},
    {"atomic", "heap", "timestamps", "phrasing", "timeline"},  # small utilities
    {"text"},  # text knowledge every stage shares: what is Chinese, tokens, stems
    {"embedding", "extract"},  # models and extraction: text in, vectors or candidate memories out
    {"state"},  # memd's durable state DB: offsets, sessions, the extraction queue, key/values
    {"ingest"},  # transcripts -> sessions -> segments
    {"store"},  # the table, its filters, the insert path, maintenance
    {"recall", "sync"},  # reading the store for a prompt; sharing it across machines
    {"daemon"},  # composes every stage behind the socket
    {"hook", "hookrun", "client", "setup", "mcp_server", "ui"},  # the ways in
    {"cli"},
]
LEVEL = {unit: i for i, units in enumerate(ORDER) for unit in units}


def modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "static" not in p.parts)


def unit_of(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def memd_imports(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memd"):
            if node.module == "memd":
                out |= {f"memd.{a.name}" for a in node.names}
            else:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("memd")}
    return out


@pytest.mark.filterwarnings("default::UserWarning")
def test_every_module_says_its_job_and_stays_small() -> None:
    """A module without a docstring saying its job fails; a long one is a warning (in the
    test summary), a hint to split it by job rather than squeeze it under a number."""
    problems = []
    for path in modules():
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text))
        if not doc or len(doc.split()) < 4:
            problems.append(f"{path.relative_to(ROOT)}: no docstring saying its job")
        lines = text.count("\n")
        if lines > MAX_LINES:
            warnings.warn(
                f"{path.relative_to(ROOT)}: {lines} lines (over {MAX_LINES})", stacklevel=1
            )
    assert not problems, "\n".join(problems)


def test_no_package_imports_a_later_stage() -> None:
    unknown, upward = [], []
    for path in modules():
        rel = path.relative_to(ROOT)
        unit = rel.parts[0].removesuffix(".py")
        if unit not in LEVEL:
            unknown.append(str(rel))
            continue
        for name in memd_imports(ast.parse(path.read_text(encoding="utf-8"))):
            target = unit_of(name)
            if target == unit or target == "__version__":
                continue
            if target not in LEVEL:
                unknown.append(f"{rel} imports {name}")
            elif LEVEL[target] > LEVEL[unit]:
                upward.append(
                    f"{rel} ({unit}, level {LEVEL[unit]}) imports {name} (level {LEVEL[target]})"
                )
    assert not unknown, "not placed in ORDER (add it where it belongs):\n" + "\n".join(unknown)
    assert not upward, "\n".join(upward)


def test_the_hook_imports_nothing_of_memd() -> None:
    """The hook runs on every prompt with ``-I -S``: only the standard library, built-in first."""
    for name in ("hook.py", "hookrun.py"):
        assert not memd_imports(ast.parse((ROOT / name).read_text(encoding="utf-8"))), name


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = ["memd", *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def test_one_chinese_character_class() -> None:
    """What is Chinese is decided in memd/text/chinese.py alone: a copy elsewhere (with its own
    ranges) would let search, dedupe and TODO closing disagree."""
    copies = [
        str(path.relative_to(ROOT))
        for path in modules()
        if "text" not in path.relative_to(ROOT).parts
        and re.search(r"\\u(?:3400|4e00|9fff)", path.read_text(encoding="utf-8"))
    ]
    assert not copies, copies


def test_no_reach_into_another_packages_private_names() -> None:
    """``from memd.x.y import _private`` or ``y._private`` from another package is a seam that
    should be public (or a copy that should not exist)."""
    reaches = []
    for path in modules():
        me = package_of(module_name(path))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memd"):
                for a in node.names:
                    target = f"{node.module}.{a.name}"
                    aliases[a.asname or a.name] = target
                    private = a.name.startswith("_") and not a.name.startswith("__")
                    if private and package_of(node.module) != me:
                        reaches.append(f"{module_name(path)} imports {target}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("memd"):
                        aliases[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
                continue
            target = aliases.get(node.value.id)
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if target and (private or node.attr == "__wrapped__") and package_of(target) != me:
                reaches.append(f"{module_name(path)} reads {target}.{node.attr}")
    assert not reaches, "\n".join(sorted(set(reaches)))


def runtime_imports(tree: ast.Module) -> set[str]:
    """:func:`memd_imports` but those under ``if TYPE_CHECKING:`` (types only: no cycle)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    return memd_imports(tree)


def test_no_import_cycle_between_modules() -> None:
    """Every import, at module level or inside a function: a cycle means two modules that
    cannot be read (or changed) one without the other."""
    names = {module_name(p): p for p in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found = set()
        for target in runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            while target and target not in names:
                target = target.rpartition(".")[0]  # "memd.x.y.func" -> the module
            if target and target != name and names[target].name != "__init__.py":
                found.add(target)
        graph[name] = found
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)
