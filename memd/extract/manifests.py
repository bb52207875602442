"""What a project file the agent read states, quoted as the file writes it: the versions a
manifest pins ("Versions in `package.json`: next 15.5.2, react 19.1.0") and the ports a
configuration sets ("Ports in `config/dev.exs`: `http: [ip: {0, 0, 0, 0}, port: 1100]`").

A file read several times in a segment (in parts, or again after an edit) gives one fact: a
name's newest version, the newest lines that set a port. Only a file of the project counts (not
one under ``node_modules`` or another package directory). Each fact has the file as its
subject, so a later session's read that shows other versions replaces it.
"""

from __future__ import annotations

import re

from memd.extract.rules import IMPORTANCE
from memd.models import Candidate

PROJECT_FILE = re.compile(
    r"(?:^|/)(?:package\.json|pyproject\.toml|go\.mod|Cargo\.toml|mix\.exs|Gemfile"
    r"|requirements[\w-]*\.txt|docker-compose[\w.-]*\.ya?ml|compose\.ya?ml|\.env\.example"
    r"|config/[\w.-]+\.(?:exs|ya?ml|toml|json|ini)|[\w-]+\.config\.[cm]?[jt]s)$"
)
"""A manifest or a configuration file: a read of it keeps 4,000 characters of its text, for
the versions it pins and the ports it sets (read below)."""
MAX_NAMES = 12
MAX_PORT_LINES = 3
_VENDORED = re.compile(
    r"(?:^|/)(?:node_modules|vendor|\.venv|venv|site-packages|_build|deps|dist)/"
)
_LINE_NUMBER = re.compile(r"^\s*\d+(?:→|\t)", re.M)
"""The line numbers Claude Code's Read prefixes ("    13→")."""
_JSON_BLOCK = re.compile(r'"(dependencies|devDependencies|engines)"\s*:\s*\{([^{}]*)\}')
_JSON_PAIR = re.compile(r'"(@?[\w./-]+)"\s*:\s*"([^"\s]{1,40})"')
_PY_DEP = re.compile(r'^\s*"?([A-Za-z][\w.-]*)(?:\[[\w,]+\])?\s*((?:[<>=!~]=?|\^)\s*[\w.*]+)', re.M)
_PY_PYTHON = re.compile(r'^\s*(?:requires-python|python)\s*=\s*"([^"]{1,30})"', re.M)
_TOML_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$", re.M)
_TOML_DEP = re.compile(
    r'^\s*([A-Za-z][\w.-]*)\s*=\s*(?:"([^"]{1,30})"|\{[^}\n]*?version\s*=\s*"([^"]{1,30})")', re.M
)
_GO_VERSION = re.compile(r"^go\s+(\d+\.\d+(?:\.\d+)?)\s*$", re.M)
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w.-]+\.[a-z]{2,}/[\w./-]+)\s+(v[\w.+-]+)", re.M)
_MIX_ELIXIR = re.compile(r'\belixir:\s*"([^"]{1,30})"')
_MIX_DEP = re.compile(r'\{:(\w+),\s*"([^"]{1,30})"')
_GEM = re.compile(r"""^\s*gem\s+['"]([\w.-]+)['"]\s*,\s*['"]([^'"]{1,30})['"]""", re.M)
_PORT_LINE = re.compile(
    r"""(?:\bport\b["']?\s*[:=]>?\s*["']?\d{2,5}\b|--port[= ]\d{2,5}\b|\bPORT=\d{2,5}\b"""
    r"""|^\s*-\s*["']?\d{2,5}:\d{2,5}["']?\s*$)""",
    re.I,
)


def _lines(text: str) -> str:
    return _LINE_NUMBER.sub("", text)


def _package_json(text: str) -> list[str]:
    out = []
    for block, body in _JSON_BLOCK.findall(text):
        pairs = [f"{name} {version}" for name, version in _JSON_PAIR.findall(body)]
        if block == "devDependencies" and pairs:
            pairs[0] = f"dev: {pairs[0]}"
        out += pairs
    return out


def _toml_deps(text: str, sections: tuple[str, ...]) -> list[str]:
    out = []
    parts = _TOML_SECTION.split(text)
    for name, body in zip(parts[1::2], parts[2::2], strict=False):
        if name.strip().endswith(sections):
            out += [f"{dep} {a or b}" for dep, a, b in _TOML_DEP.findall(body) if dep != "python"]
    return out


def _pyproject(text: str) -> list[str]:
    out = [f"python {v}" for v in _PY_PYTHON.findall(text)[:1]]
    m = re.search(r"^\s*dependencies\s*=\s*\[((?:[^\[\]]|\[[^\]]*\])*)\]", text, re.M)
    if m:
        out += [f"{name} {spec.replace(' ', '')}" for name, spec in _PY_DEP.findall(m.group(1))]
    return out + _toml_deps(text, ("poetry.dependencies",))


def _requirements(text: str) -> list[str]:
    return [
        f"{name} {spec.replace(' ', '')}"
        for name, spec in _PY_DEP.findall(text)
        if not name.startswith("-")
    ]


def _go_mod(text: str) -> list[str]:
    out = [f"go {v}" for v in _GO_VERSION.findall(text)[:1]]
    return out + [f"{path} {version}" for path, version in _GO_REQUIRE.findall(text)]


def _mix_exs(text: str) -> list[str]:
    out = [f"elixir {v}" for v in _MIX_ELIXIR.findall(text)[:1]]
    return out + [f"{name} {version}" for name, version in _MIX_DEP.findall(text)]


def _gemfile(text: str) -> list[str]:
    return [f"{name} {version}" for name, version in _GEM.findall(text)]


def _cargo(text: str) -> list[str]:
    return _toml_deps(text, ("dependencies",))


_READERS = {
    "package.json": _package_json,
    "pyproject.toml": _pyproject,
    "go.mod": _go_mod,
    "mix.exs": _mix_exs,
    "Gemfile": _gemfile,
    "Cargo.toml": _cargo,
}


def versions(path: str, text: str) -> list[str]:
    """The versions the manifest at ``path`` pins, as written ("next 15.5.2", "go 1.23")."""
    name = path.rsplit("/", 1)[-1]
    reader = _READERS.get(name)
    if reader is None and re.fullmatch(r"requirements[\w-]*\.txt", name):
        reader = _requirements
    return list(dict.fromkeys(reader(_lines(text))))[:MAX_NAMES] if reader else []


def port_lines(text: str) -> list[str]:
    """The lines of a configuration file that set a port, as written."""
    out = []
    for line in _lines(text).splitlines():
        line = line.strip().rstrip(",")
        if 3 < len(line) <= 160 and _PORT_LINE.search(line) and not line.startswith(("#", "//")):
            out.append(line)
    return list(dict.fromkeys(out))[:MAX_PORT_LINES]


def project_file_facts(reads: dict[str, list[tuple[str, str]]]) -> list[Candidate]:
    """Facts from the reads of each project file: ``reads`` maps a path relative to the
    project to its reads in order (the text read, the uuid of the turn that read it)."""
    out = []
    for path, seen in reads.items():
        if _VENDORED.search(path):
            continue
        pinned: dict[str, tuple[str, str]] = {}  # name: (as written, uuid of the read)
        ports: tuple[list[str], str] = ([], "")
        for text, uuid in seen:
            for item in versions(path, text):
                pinned[item.removeprefix("dev: ").split(" ", 1)[0]] = (item, uuid)
            lines = port_lines(text)
            ports = (lines, uuid) if lines else ports
        if pinned:
            items = list(pinned.values())
            shown = ", ".join(item for item, _ in items[:MAX_NAMES])
            if len(items) > MAX_NAMES:
                shown += f" (and {len(items) - MAX_NAMES} more)"
            uuids = [uuid for _, uuid in items]
            out.append(_fact("Versions", path, shown, uuids))
        if ports[0]:
            out.append(
                _fact("Ports", path, "; ".join(f"`{line}`" for line in ports[0]), [ports[1]])
            )
    return out


def _fact(what: str, path: str, shown: str, uuids: list[str]) -> Candidate:
    subject = f"{what.lower()} in {path}"
    return Candidate(
        kind="fact",
        text=f"{what} in `{path}`: {shown}",
        topic=subject,
        keywords=[path],
        importance=IMPORTANCE["fact"],
        source_uuids=list(dict.fromkeys(uuids))[:5],
        subject=subject,
        value=shown,
        origin="work",
    )
