"""The `memd` command. Thin edges: parse, make one call, print."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memd import __version__
from memd.errors import MemdError

if TYPE_CHECKING:
    from memd.client import DaemonClient, Progress

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Only the CLI turns a MemdError into a one-line message and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MemdError as exc:
            click.echo(f"memd: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memd")
@click.option(
    "--config", "config", type=click.Path(dir_okay=False), help="Config file (MEMD_CONFIG)."
)
@click.option(
    "--home", "home", type=click.Path(file_okay=False), help="Data directory (MEMD_HOME)."
)
@click.pass_context
def main(ctx: click.Context, config: str | None, home: str | None) -> None:
    """memd: long-term memory for Claude Code."""
    # Paths are resolved here, in the user's directory, never in the daemon's.
    ctx.obj = {"config": absolute(config), "home": absolute(home)}


def absolute(path: str | None) -> str | None:
    return os.path.abspath(os.path.expanduser(path)) if path else path


def setup_logging() -> None:
    """Warnings of in-process work on stderr. Not done at start: `logging` costs an import
    that a command answered by the daemon does not need."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="memd: %(levelname)s %(name)s: %(message)s")


def settings_from(ctx: click.Context, **extra: Any) -> Any:
    from memd.settings import load_settings

    setup_logging()
    overrides = {**(ctx.find_root().obj or {}), **extra}
    return load_settings(**overrides)


def target_from(ctx: click.Context) -> Any:
    """Where a daemon-first command goes (``memd.client.Target``): the socket is found without
    building Settings; they are built only if the command has to run in this process."""
    from memd.client import Target

    class CliTarget(Target):
        def settings(self) -> Any:
            setup_logging()
            return super().settings()

    obj = ctx.find_root().obj or {}
    return CliTarget(home=obj.get("home"), config=obj.get("config"))


def client_from(
    ctx: click.Context, timeout: float | None = 600.0, progress: Progress | None = None
) -> DaemonClient:
    """The daemon's client for a command that also works without a daemon: through the daemon
    when it runs, else in this process (at ``target_from(ctx)``)."""
    from memd.client import DaemonClient

    return DaemonClient(target_from(ctx), timeout=timeout, local=True, progress=progress)


def _register() -> None:
    from memd.cli import connect, daemon, ingest, jobs, memories, search, service, sync, ui

    for module in (search, memories, ingest, daemon, jobs, service, ui, connect, sync):
        module.register(main)


_register()
