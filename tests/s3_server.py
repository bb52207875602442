"""A real S3 API on loopback for the sync tests: moto's server mode, in this process.

moto keeps its buckets in module state, so a server stopped and started again on the same port
serves the same data (how the tests simulate an outage). Credentials are moto's test ones.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
from typing import Any

REGION = "us-east-1"
KEY_ID = "memdtestkey"
SECRET = "memdtestsecret"


class S3Server:
    def __init__(self) -> None:
        self.port = 0
        self._server: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        for _ in range(50):  # after a stop, the port can take a moment to be free again
            try:
                self._server = ThreadedMotoServer(
                    ip_address="127.0.0.1", port=self.port, verbose=False
                )
                self._server.start()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"moto could not listen on 127.0.0.1:{self.port}")
        self.port = int(self._server.get_host_and_port()[1])
        wait_listening(self.port)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def env(self) -> dict[str, str]:
        """The standard AWS variables memd (LanceDB) reads to reach this server."""
        return {
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }

    def create_bucket(self, name: str) -> None:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )
        client.create_bucket(Bucket=name)


AWS_VARS = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_ENDPOINT",
)


def wait_listening(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class HangingServer:
    """Accepts TCP connections and never answers: a bucket that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self._stop = True
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.sock.close()


REQUEST_LINE = re.compile(rb"(?:^|\r\n)(?:GET|PUT|POST|HEAD|DELETE) /[^ ]* HTTP/1\.1\r\n")


class FaultProxy:
    """A TCP proxy in front of the S3 server that counts traffic and can break one kind of
    request on purpose.

    ``arm(pattern, mode)``: a request whose bytes match ``pattern`` is cut ``before`` it reaches
    the server (the connection closes; while armed, every retry is cut too), or ``after`` it
    (the server gets and applies it, the client never sees the answer; once).
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.pattern: Any = None
        self.mode = "before"
        self.cuts = 0
        self.sent = 0
        """Bytes from the client to the server (requests and uploads)."""
        self.received = 0
        """Bytes from the server to the client (listings and downloads)."""
        self.requests = 0
        self._lock = threading.Lock()
        self._stop = False
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def arm(self, pattern: bytes, mode: str) -> None:
        with self._lock:
            self.pattern, self.mode = re.compile(pattern), mode

    def disarm(self) -> None:
        with self._lock:
            self.pattern = None

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                client, _ = self.sock.accept()
            except OSError:
                continue
            client.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            doomed = threading.Event()
            self._spawn(self._to_server, client, upstream, doomed)
            self._spawn(self._to_client, upstream, client, doomed)

    def _to_server(self, client: socket.socket, upstream: socket.socket, doomed: Any) -> None:
        try:
            while data := client.recv(65536):
                with self._lock:
                    hit = self.pattern is not None and self.pattern.search(data)
                    if hit:
                        self.cuts += 1
                        if self.mode == "after":
                            self.pattern = None
                            doomed.set()
                if hit and self.mode == "before":
                    return
                with self._lock:
                    self.sent += len(data)
                    self.requests += len(REQUEST_LINE.findall(data))
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            if not doomed.is_set():
                _close(client, upstream)

    def _to_client(self, upstream: socket.socket, client: socket.socket, doomed: Any) -> None:
        try:
            while data := upstream.recv(65536):
                if doomed.is_set():
                    return  # the server applied it; the client never hears so
                with self._lock:
                    self.received += len(data)
                client.sendall(data)
        except OSError:
            pass
        finally:
            _close(client, upstream)

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def _close(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()
