"""The daemon's socket file and its peers: a private directory, a stale socket removed only when
nobody listens on it, a 0600 listening socket removed at the end only while it is still ours,
and the uid of the process at the other end (SO_PEERCRED on Linux, getpeereid elsewhere).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import struct
from pathlib import Path

from memd.errors import ServerError

log = logging.getLogger(__name__)


class SocketFile:
    """The daemon's socket at ``path``: checked before start (:meth:`prepare`, so a second
    daemon fails before loading the model), bound when the server starts (binding earlier would
    make hooks wait in the backlog instead of being refused at once), removed at the end."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._inode: int | None = None

    def prepare(self) -> None:
        """A private directory, and no stale socket. ServerError when another daemon listens."""
        prepare_socket_dir(self.path)
        clear_stale_socket(self.path)

    def bind(self) -> socket.socket:
        sock = bind_socket(self.path)
        self._inode = os.stat(self.path).st_ino
        return sock

    def remove(self) -> None:
        """Remove the socket file, if it is still the one bound here."""
        try:
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                os.unlink(self.path)
        except FileNotFoundError:
            pass


def prepare_socket_dir(path: Path) -> None:
    """Create the socket's directory 0700, or tighten it when it is ours and private."""
    parent = path.parent
    if not parent.exists():
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        parent.chmod(0o700)
        return
    st = parent.stat()
    shared = bool(st.st_mode & stat.S_ISVTX) or parent.resolve() == Path.home().resolve()
    if st.st_uid == os.getuid() and not shared:
        if stat.S_IMODE(st.st_mode) != 0o700:
            parent.chmod(0o700)
    else:
        log.warning(
            "socket directory %s is shared or not ours; relying on the socket's 0600 mode "
            "and the peer uid check",
            parent,
        )


def clear_stale_socket(path: Path) -> None:
    """Remove a socket file left by a crash, only after a connection attempt to it failed."""
    if not os.path.lexists(path):
        return
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise ServerError(f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        log.info("removing stale socket %s (nobody listens on it)", path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ServerError(f"cannot check the existing socket {path}: {exc}") from exc
    finally:
        probe.close()
    raise ServerError(f"another memd daemon is listening on {path}")


def bind_socket(path: Path) -> socket.socket:
    """A listening AF_UNIX socket at ``path``, mode 0600 from the start (umask)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ServerError(f"cannot bind the socket {path}: {exc}") from exc
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end, or None when the platform cannot tell."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return int(uid)
    return _getpeereid(sock.fileno())


def _getpeereid(fd: int) -> int | None:  # pragma: no cover - macOS and the BSDs
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if libc.getpeereid(fd, ctypes.byref(uid), ctypes.byref(gid)) != 0:
        return None
    return int(uid.value)


def same_user(sock: socket.socket | None) -> bool:
    """True when the peer runs as this process's user, or when the platform cannot tell (the
    socket's 0600 mode still applies); False when it is another user or unreadable."""
    try:
        uid = peer_uid(sock) if sock is not None else None
    except OSError as exc:
        log.warning("cannot read peer credentials: %s", exc)
        return False
    if uid is None:
        return True
    if uid != os.getuid():
        log.warning("refused a client with uid %d", uid)
        return False
    return True
