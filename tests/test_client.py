"""The CLI's daemon client: nobody listening falls back to local; a silent daemon does not."""

from __future__ import annotations

import socket
import threading

import pytest

from memd import client
from memd.errors import DaemonUnavailable, MemdError
from memd.settings import load_settings


def test_no_daemon_is_unavailable(short_socket: str) -> None:
    settings = load_settings(socket=short_socket)
    with pytest.raises(DaemonUnavailable):
        client.daemon_request(settings, "ping", timeout=1)


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
            client.daemon_request(settings, "ingest", timeout=0.5, paths=["/nowhere"])
        assert not isinstance(err.value, DaemonUnavailable)
    finally:
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()
