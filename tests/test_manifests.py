"""What a project file the agent read states: the versions a manifest pins and the ports a
configuration sets, quoted as written, and replaced when a later session reads other ones."""

from __future__ import annotations

import json

import pytest

from memd.daemon.app import App
from memd.daemon.pipeline import Pipeline
from memd.extract.heuristic import HeuristicExtractor
from memd.extract.manifests import port_lines, versions
from memd.ingest.transcript import parse_lines
from memd.models import Segment, ToolCall, Turn
from memd.store.filters import match

CWD = "/home/dev/shop"
PACKAGE_JSON = """{
  "name": "shop",
  "scripts": {"dev": "next dev --port 3001", "build": "next build"},
  "dependencies": {
    "next": "15.5.2",
    "react": "19.1.0"
  },
  "devDependencies": {
    "typescript": "^5",
    "eslint": "^9"
  }
}"""


def numbered(text: str) -> str:
    """``text`` as Claude Code's Read tool returns it: "     1→" before each line."""
    return "\n".join(f"{i:>6}→{line}" for i, line in enumerate(text.splitlines(), 1))


def read_turn(
    n: int, path: str, text: str, *, sid: str = "s1", day: int = 10, **kw: object
) -> Turn:
    call = ToolCall(
        "Read", f"file_path: {path}", f"t{n}", {"file_path": path}, numbered(text), "ok"
    )
    return Turn(
        uuid=f"{sid}-{n}",
        session_id=sid,
        role="assistant",
        text="",
        timestamp=f"2026-11-{day:02d}T10:00:{n:02d}.000Z",
        cwd=CWD,
        tools=[call],
        **kw,  # type: ignore[arg-type]
    )


def session(sid: str, day: int, *turns: Turn) -> Segment:
    ask = Turn(f"{sid}-0", sid, "user", "Check which versions the shop uses.", cwd=CWD,
               timestamp=f"2026-11-{day:02d}T09:59:00.000Z")  # fmt: skip
    reply = Turn(f"{sid}-99", sid, "assistant", "Done.", cwd=CWD,
                 timestamp=f"2026-11-{day:02d}T10:01:00.000Z")  # fmt: skip
    return Segment(session_id=sid, project=CWD, turns=[ask, *turns, reply], reason="session-end")


def facts(segment: Segment) -> list[str]:
    cands = HeuristicExtractor().extract(segment)
    return [c.text for c in cands if c.text.startswith(("Versions in", "Ports in"))]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("package.json", PACKAGE_JSON, ["next 15.5.2", "react 19.1.0", "dev: typescript ^5", "eslint ^9"]),
        ("pyproject.toml", 'requires-python = ">=3.12"\ndependencies = [\n  "click>=8.0",\n  "pydantic[email] ~= 2.5",\n]\n',
         ["python >=3.12", "click >=8.0", "pydantic ~=2.5"]),
        ("go.mod", "module example.com/shop\n\ngo 1.23.2\n\nrequire (\n\tgithub.com/spf13/cobra v1.8.0\n)\n",
         ["go 1.23.2", "github.com/spf13/cobra v1.8.0"]),
        ("mix.exs", 'elixir: "~> 1.19",\n  {:phoenix, "~> 1.8.3"},\n  {:credo, "~> 1.7", only: [:dev]}',
         ["elixir ~> 1.19", "phoenix ~> 1.8.3", "credo ~> 1.7"]),
        ("Cargo.toml", '[package]\nname = "shop"\nversion = "0.1.0"\n\n[dependencies]\nserde = "1.0"\n'
         'tokio = { version = "1.38", features = ["full"] }\n', ["serde 1.0", "tokio 1.38"]),
        ("requirements-dev.txt", "pytest==8.3.2\nruff>=0.6\n-r base.txt\n", ["pytest ==8.3.2", "ruff >=0.6"]),
        ("Gemfile", "gem 'rails', '~> 7.1'\n", ["rails ~> 7.1"]),
        ("README.md", '"next": "15.5.2"', []),
    ],
)  # fmt: skip
def test_the_versions_each_manifest_pins_as_written(
    name: str, text: str, expected: list[str]
) -> None:
    assert versions(f"app/{name}", numbered(text)) == expected


def test_the_lines_that_set_a_port_and_no_other() -> None:
    config = numbered(
        "config :shop, ShopWeb.Endpoint,\n  http: [ip: {0, 0, 0, 0}, port: 1100],\n"
        '  # port: 9999 is the old one\n  secret_key_base: "dev-only",\n'
        'ports:\n  - "5433:5432"\nPORT=8080\ndatabase_url: postgres://db:5432/shop\n'
    )
    assert port_lines(config) == [
        "http: [ip: {0, 0, 0, 0}, port: 1100]",
        '- "5433:5432"',
        "PORT=8080",
    ]


def test_a_read_of_the_manifest_and_the_config_becomes_one_fact_each() -> None:
    got = facts(
        session(
            "s1",
            10,
            read_turn(1, f"{CWD}/package.json", PACKAGE_JSON),
            read_turn(
                2, f"{CWD}/config/dev.exs", "config :shop,\n  http: [port: 1100],\n  debug: true"
            ),
            read_turn(
                3,
                f"{CWD}/node_modules/next/package.json",
                '"dependencies": {"styled-jsx": "5.1.6"}',
            ),
            read_turn(4, "/etc/other/package.json", '"dependencies": {"left-pad": "1.3.0"}'),
        )
    )
    assert got == [
        "Versions in `package.json`: next 15.5.2, react 19.1.0, dev: typescript ^5, eslint ^9",
        'Ports in `package.json`: `"scripts": {"dev": "next dev --port 3001", "build": "next build"}`',
        "Ports in `config/dev.exs`: `http: [port: 1100]`",
    ]


def test_reads_of_one_file_merge_and_the_newest_version_wins() -> None:
    first = PACKAGE_JSON
    second = '  "dependencies": {\n    "next": "16.0.1"\n  },'  # a part, read after an edit
    got = facts(session("s1", 10, read_turn(1, f"{CWD}/package.json", first),
                        read_turn(2, f"{CWD}/package.json", second, is_sidechain=True)))  # fmt: skip
    assert (
        got[0]
        == "Versions in `package.json`: next 16.0.1, react 19.1.0, dev: typescript ^5, eslint ^9"
    )


def test_a_failed_read_states_nothing() -> None:
    turn = read_turn(1, f"{CWD}/package.json", PACKAGE_JSON)
    turn.tools[0].status = "error"
    assert facts(session("s1", 10, turn)) == []


def test_a_long_manifest_read_keeps_its_dependencies() -> None:
    """A Read result is kept short (300 characters) but for a manifest's or a config's."""
    deps = "".join(f'    {{:dep_{i}, "~> {i}.0"}},\n' for i in range(40))
    text = numbered(
        f'defmodule Shop.MixProject do\n  elixir: "~> 1.19",\n  defp deps do\n    [\n{deps}    ]\n  end\nend'
    )
    lines = [
        {"type": "assistant", "uuid": "a1", "sessionId": "s1", "cwd": CWD, "timestamp": "2026-11-10T10:00:00Z",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": f"{CWD}/mix.exs"}}]}},
        {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": CWD, "timestamp": "2026-11-10T10:00:01Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "tu1", "content": text}]}},
    ]  # fmt: skip
    turns = parse_lines(json.dumps(line) for line in lines)
    (call,) = [c for t in turns for c in t.tools if c.name == "Read"]
    assert len(text) > 1000 and "dep_20" in call.result
    assert versions("mix.exs", call.result)[:3] == [
        "elixir ~> 1.19",
        "dep_0 ~> 0.0",
        "dep_1 ~> 1.0",
    ]


def test_a_later_sessions_read_replaces_the_versions_even_when_read_first(
    app: App, pipeline: Pipeline
) -> None:
    """Real store and model: the session of 20 November is stored before the one of the 10th."""
    newer = '{\n  "dependencies": {\n    "next": "16.0.1",\n    "react": "19.2.0"\n  }\n}'
    pipeline.process(
        session("s2", 20, read_turn(1, f"{CWD}/package.json", newer, sid="s2", day=20))
    )
    pipeline.process(session("s1", 10, read_turn(1, f"{CWD}/package.json", PACKAGE_JSON)))
    rows = app.store.query(match(kind="fact"))
    by_text = {m.text: m.status for m in rows if m.text.startswith("Versions in")}
    assert by_text == {
        "Versions in `package.json`: next 16.0.1, react 19.2.0": "active",
        "Versions in `package.json`: next 15.5.2, react 19.1.0, dev: typescript ^5, eslint ^9": "superseded",
    }


def test_what_two_files_state_is_kept_for_each(app: App, pipeline: Pipeline) -> None:
    """config/dev.exs and config/test.exs set two ports that both hold (real store and model)."""
    pipeline.process(
        session(
            "s1",
            10,
            read_turn(
                1, f"{CWD}/config/dev.exs", "config :shop, ShopWeb.Endpoint,\n  http: [port: 1100]"
            ),
            read_turn(
                2, f"{CWD}/config/test.exs", "config :shop, ShopWeb.Endpoint,\n  http: [port: 4002]"
            ),
        )
    )
    rows = app.store.query(match(kind="fact"))
    assert {m.text: m.status for m in rows if m.text.startswith("Ports in")} == {
        "Ports in `config/dev.exs`: `http: [port: 1100]`": "active",
        "Ports in `config/test.exs`: `http: [port: 4002]`": "active",
    }
