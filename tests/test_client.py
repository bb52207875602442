"""The daemon's one client: a method per socket command, checked against the daemon's command
table; nobody listening falls back to local, a silent daemon does not."""

from __future__ import annotations

import inspect
import socket
import threading
import typing
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from memd import protocol
from memd.client import AsyncDaemonClient, DaemonClient
from memd.daemon.app import App
from memd.daemon.commands import APP_COMMANDS
from memd.daemon.server import Server
from memd.errors import DaemonNoReply, DaemonUnavailable, MemdError
from memd.settings import load_settings

PLUMBING = {"call", "request", "runs_here", "run_here", "socket_path"}
"""DaemonClient's members that are not a command."""


def daemon_commands() -> dict[str, inspect.Signature]:
    """Every command the daemon dispatches, with the signature of its handler."""
    handlers = {
        name.removeprefix("cmd_"): getattr(Server, name)
        for name in dir(Server)
        if name.startswith("cmd_")
    }
    handlers |= {name: getattr(App, command.method) for name, command in APP_COMMANDS.items()}
    return {name: inspect.signature(fn) for name, fn in handlers.items()}


def command_methods() -> list[str]:
    return [
        name
        for name, member in vars(DaemonClient).items()
        if not name.startswith("_") and name not in PLUMBING and callable(member)
    ]


def request_type(method: str) -> tuple[set[str], set[str]]:
    """The arguments of ``DaemonClient.<method>`` (its ``**request`` TypedDict): all, required."""
    hints = typing.get_type_hints(getattr(DaemonClient, method))
    if "request" not in hints:
        return set(), set()
    (shape,) = typing.get_args(hints["request"])  # Unpack[XRequest]
    keys = typing.get_type_hints(shape, include_extras=True)
    required = {
        key
        for key, hint in keys.items()
        if shape.__total__ and typing.get_origin(hint) is not typing.NotRequired
    }
    return set(keys), required


def sent_by(method: str) -> tuple[str, dict[str, Any]]:
    """The command and arguments that ``method`` sends, given its required arguments."""
    sent: list[tuple[str, dict[str, Any]]] = []

    class Recorder(DaemonClient):
        def call(self, cmd: str, args: Mapping[str, Any]) -> dict[str, Any]:
            sent.append((cmd, dict(args)))
            return {"ok": True}

    _, required = request_type(method)
    getattr(Recorder("/nowhere"), method)(**{key: "x" for key in required})
    assert len(sent) == 1
    return sent[0]


def test_each_command_of_the_daemon_has_one_client_method() -> None:
    commands = daemon_commands()
    sent = {method: sent_by(method)[0] for method in command_methods()}
    assert sorted(sent.values()) == sorted(commands), "a command without a method, or the reverse"
    for method, cmd in sent.items():  # named as the daemon names it (``list``: list_memories)
        assert method == (APP_COMMANDS[cmd].method if cmd in APP_COMMANDS else cmd)


@pytest.mark.parametrize("method", command_methods())
def test_a_method_takes_the_arguments_of_its_handler(method: str) -> None:
    cmd, args = sent_by(method)
    keys, required = request_type(method)
    params = {
        name: p
        for name, p in daemon_commands()[cmd].parameters.items()
        if name not in ("self", "progress")  # ``progress``: an in-process callback only
    }
    assert keys == set(params), f"{method}: the request's keys differ from {cmd}'s arguments"
    assert required == {n for n, p in params.items() if p.default is inspect.Parameter.empty}
    assert args == dict.fromkeys(required, "x"), "sends only the arguments it was given"


def test_the_async_client_has_the_same_methods() -> None:
    for method in command_methods():
        wrapper = getattr(AsyncDaemonClient, method)
        assert inspect.iscoroutinefunction(wrapper), method
        assert wrapper.__name__ == method


def test_a_reply_type_is_declared_for_each_method() -> None:
    for method in command_methods():
        reply = typing.get_type_hints(getattr(DaemonClient, method))["return"]
        assert typing.is_typeddict(reply), method
        assert set(protocol.Reply.__annotations__) <= set(typing.get_type_hints(reply)), method


def test_no_daemon_is_unavailable(short_socket: str) -> None:
    settings = load_settings(socket=short_socket)
    with pytest.raises(DaemonUnavailable):
        DaemonClient(settings, timeout=1).ping()


def test_the_async_client_turns_errors_into_the_callers(short_socket: str) -> None:
    """MCP turns them into tool errors; without ``error`` they pass as they are."""
    mapped = AsyncDaemonClient(DaemonClient(short_socket, timeout=1), lambda e: KeyError(str(e)))
    with pytest.raises(KeyError, match="not reachable"):
        anyio.run(mapped.ping)
    plain = AsyncDaemonClient(DaemonClient(short_socket, timeout=1))
    with pytest.raises(DaemonUnavailable):
        anyio.run(plain.status)


def test_a_daemon_that_took_the_request_is_never_bypassed(short_socket: str) -> None:
    """A timeout after connecting must not make the CLI redo the work in-process."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(short_socket)
    server.listen(1)
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    settings = load_settings(socket=short_socket)
    try:
        with pytest.raises(MemdError, match="did not answer") as err:
            DaemonClient(settings, timeout=0.5, local=True).ingest(paths=["/nowhere"])
        assert isinstance(err.value, DaemonNoReply)
        assert not isinstance(err.value, DaemonUnavailable)
    finally:
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()
