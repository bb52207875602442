"""Settings precedence (CLI > env > file > default), `memd config`, and broken config files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memd.errors import ConfigError
from memd.settings import Settings, describe_settings, load_settings
from memd.store.maintenance import half_life_of


def write_config(text: str) -> Path:
    path = Path(os.environ["MEMD_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_every_field_has_a_default_and_description() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description, name
    assert load_settings().extractor == "heuristic"


def test_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config('extractor = "anthropic"\nsession_idle_seconds = 30\nsearch_limit = 7\n')
    monkeypatch.setenv("MEMD_SESSION_IDLE_SECONDS", "45")
    s = load_settings(search_limit=3)
    assert s.extractor == "anthropic"  # file beats default
    assert s.session_idle_seconds == 45  # env beats file
    assert s.search_limit == 3  # CLI beats everything
    rows = {r["name"]: r for r in describe_settings(s, search_limit=3)}
    assert rows["extractor"]["source"].startswith("file ")
    assert rows["session_idle_seconds"]["source"] == "env MEMD_SESSION_IDLE_SECONDS"
    assert rows["search_limit"]["source"] == "cli"
    assert rows["prompt_budget_chars"]["source"] == "default"


def test_memd_table_in_file_is_accepted() -> None:
    write_config("[memd]\nprompt_budget_chars = 900\n")
    assert load_settings().prompt_budget_chars == 900


def test_socket_defaults_under_home() -> None:
    s = load_settings()
    assert s.socket_path == Path(os.environ["MEMD_HOME"]) / "memd.sock"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("extractor = \n", "not valid TOML"),
        ("no_such_setting = 1\n", "unknown key 'no_such_setting'"),
        ('session_idle_seconds = "soon"\n', "setting 'session_idle_seconds'"),
        ("prompt_budget_chars = 50000\n", "setting 'prompt_budget_chars'"),
    ],
)
def test_broken_config_names_file_and_key(text: str, message: str) -> None:
    path = write_config(text)
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_bad_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMD_EXTRACTOR", "gpt")
    with pytest.raises(ConfigError, match="MEMD_EXTRACTOR"):
        load_settings()


def test_unreadable_config(tmp_path: Path) -> None:
    path = write_config("extractor = 'heuristic'\n")
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything: use a directory instead
        path.unlink()
        path.mkdir()
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings()


def test_example_config_is_complete_and_current(monkeypatch: pytest.MonkeyPatch) -> None:
    from memd.settings import example_toml

    shipped = (Path(__file__).parents[1] / "config" / "memd.toml").read_text()
    assert shipped == example_toml(), "regenerate with: memd config --example > config/memd.toml"
    # Uncommented, every line with a value is valid and equals the default.
    body = "\n".join(
        line[2:]
        for line in shipped.splitlines()
        if line.startswith("# ") and " = " in line and not line.endswith("= ")
    )
    for name in Settings.model_fields:
        assert f"{name} = " in shipped, name
    write_config(body)
    monkeypatch.delenv("MEMD_HOME")
    monkeypatch.delenv("MEMD_TRANSCRIPTS_DIR")
    s = load_settings()
    assert s.home == Path.home() / ".local" / "share" / "memd"
    assert half_life_of("todo", s) == 7 and half_life_of("decision", s) == 365
    assert s.model_dump(exclude={"home", "transcripts_dir", "config"}) == Settings(
        home=s.home, transcripts_dir=s.transcripts_dir
    ).model_dump(exclude={"home", "transcripts_dir", "config"})


def test_settings_itself_reads_the_config_file_through_the_toml_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pydantic-settings' TOML source is a source of every Settings(), not a merge beside it."""
    write_config("search_limit = 4\nhalf_life_days = { todo = 3.0 }\n")
    assert Settings().search_limit == 4
    assert Settings(search_limit=2).search_limit == 2
    # A table (dict) setting set in both places is merged key by key, the environment winning.
    monkeypatch.setenv("MEMD_HALF_LIFE_DAYS", '{"todo": 5.0, "fact": 10.0}')
    assert Settings().half_life_days == {"todo": 5.0, "fact": 10.0}
    write_config("half_life_days = { todo = 3.0, bugfix = 9.0 }\n")
    assert Settings().half_life_days == {"todo": 5.0, "fact": 10.0, "bugfix": 9.0}
    # The kinds not set keep their own half-life (a partial table used to leave them at 90).
    assert half_life_of("todo", Settings()) == 5.0
    assert half_life_of("decision", Settings()) == 365.0
    # --config names another file; a broken one is an error even without load_settings.
    other = Path(os.environ["MEMD_CONFIG"]).with_name("other.toml")
    other.write_text("search_limit = 6\n")
    assert Settings(config=other).search_limit == 6
    other.write_text("serach_limit = 6\n")
    with pytest.raises(ConfigError, match=f"{other}: unknown key 'serach_limit'"):
        Settings(config=other)
