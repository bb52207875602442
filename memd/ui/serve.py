"""Run the UI: bind 127.0.0.1, print the login URL, serve with uvicorn until interrupted."""

from __future__ import annotations

import socket
import threading
import webbrowser
from collections.abc import Callable

from memd.errors import UserError
from memd.settings import Settings

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 only (``port`` 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {HOST}:{port}: {exc}") from exc
    sock.listen(128)
    return sock


def run(settings: Settings, port: int, open_browser: bool, announce: Callable[[str], None]) -> None:
    import uvicorn

    from memd.ui.security import Guard
    from memd.ui.web import create_app

    sock = bind(port)
    port = sock.getsockname()[1]
    guard = Guard(port)
    url = f"http://{HOST}:{port}/?token={guard.token}"
    config = uvicorn.Config(
        create_app(settings, guard),
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
    )
    server = uvicorn.Server(config)
    announce(url)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, (url,)).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled: a clean stop, exit 0
    finally:
        sock.close()
