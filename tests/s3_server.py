"""A real S3 API on loopback for the sync tests: moto's server mode, in this process.

moto keeps its buckets in module state, so a server stopped and started again on the same port
serves the same data (how the tests simulate an outage). Credentials are moto's test ones.
"""

from __future__ import annotations

import logging
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
