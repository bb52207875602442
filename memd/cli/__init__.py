"""The `memd` command. Thin edges: parse, make one call, print."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memd import __version__
from memd.errors import MemdError

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
    logging.basicConfig(level=logging.WARNING, format="memd: %(levelname)s %(name)s: %(message)s")
    ctx.obj = {"config": config, "home": home}


def settings_from(ctx: click.Context, **extra: Any) -> Any:
    from memd.settings import load_settings

    overrides = {**(ctx.find_root().obj or {}), **extra}
    return load_settings(**overrides)


def _register() -> None:
    from memd.cli import connect, daemon, ingest, jobs, memories, service

    for module in (memories, ingest, daemon, jobs, service, connect):
        module.register(main)


_register()
