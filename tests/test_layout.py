"""The package layout reads as the data flow (#17): every module says its one job, stays small,
and no package imports one that comes after it in the order below."""

from __future__ import annotations

import ast
from pathlib import Path

import memd

ROOT = Path(memd.__file__).resolve().parent
MAX_LINES = 520
""""No module over ~500 lines": a little slack, so that a docstring line is not a refactor."""

ORDER = [
    # the foundations: no memd imports beyond each other
    {"__init__", "errors", "kinds", "names", "settings", "models", "project", "protocol"},
    {"atomic", "heap", "timestamps", "phrasing", "timeline"},  # small utilities
    {"embedding", "extract"},  # models and extraction: text in, vectors or candidate memories out
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


def test_every_module_says_its_job_and_stays_small() -> None:
    problems = []
    for path in modules():
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text))
        if not doc or len(doc.split()) < 4:
            problems.append(f"{path.relative_to(ROOT)}: no docstring saying its job")
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {lines} lines (over {MAX_LINES})")
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
