"""`memd ui` page latency at N memories: each page's median over repeated requests.

    .venv/bin/python bench/ui.py [--rows 100000] [--repeat 15] [--record] [--keep DIR]

Builds a store of N synthetic memories (tests/ui_data.py: varied kinds, statuses, pins, hits,
sessions and dates over 30 weeks; random unit vectors instead of embeddings, which would take
~12 minutes at 100k here), starts a real `memd serve` and a real `memd ui`, logs in with the
printed token and requests each page ``--repeat`` times after one warm-up request.

Reported per page: the median and p90 wall time of the HTTP request (client side, loopback) and
the median of the app's own ``Server-Timing`` (socket calls to the daemon + template rendering),
warm (repeated requests) and cold (each request right after a write through the socket, a pin
toggle, so whatever the daemon keeps for one state of the table is patched or recomputed). One
search row asks new words on every request, so nothing of an earlier query is reused. The load
average before and after the run is printed and recorded. The target is <= 200 ms server-side
per page.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from bench.common import append_section, markdown_table, percentile  # noqa: E402

TARGET_MS = 200.0


def build(home_root: Path, sock: str, rows: int) -> tuple[dict[str, str], dict[str, str]]:
    from ui_data import build_home

    started = time.perf_counter()
    env, ids = build_home(home_root, sock, rows)
    print(f"built {rows} memories in {time.perf_counter() - started:.0f} s", flush=True)
    return env, ids


def wait_daemon(sock: str, proc: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    from memd import protocol

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("memd serve exited")
        try:
            if protocol.request(sock, {"cmd": "ping"}, timeout=2).get("ok"):
                return
        except (OSError, ValueError):
            time.sleep(0.2)
    raise SystemExit("memd serve did not answer")


def login(port: int, token: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", f"/?token={token}")
    reply = conn.getresponse()
    reply.read()
    cookie = reply.getheader("set-cookie") or ""
    conn.close()
    if reply.status != 303 or not cookie:
        raise SystemExit(f"login failed: {reply.status}")
    return cookie.split(";")[0]


def timed(port: int, cookie: str, path: str) -> tuple[float, float, int]:
    """(wall ms, Server-Timing ms, status) of one GET."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie})
    reply = conn.getresponse()
    reply.read()
    wall = (time.perf_counter() - started) * 1000
    conn.close()
    timing = reply.getheader("server-timing") or "app;dur=nan"
    return wall, float(timing.split("dur=")[1]), reply.status


def fresh_queries() -> Iterator[str]:
    """Search paths whose two words no earlier path asked (the first 15; then new pairs)."""
    from ui_data import OBJECTS, SUBJECTS

    asked = {"deploy", "script", "terraform", "advisory", "locks"}  # by the other rows
    first = [w for o in OBJECTS if (w := o.split()[0].lower()) not in asked]
    second = [w for s in SUBJECTS if (w := s.split()[-2].lower()) not in asked]
    second += ["outage", "costs", "review", "rewrite", "migrated", "tested", "stores", "team"]
    for shift in itertools.count():
        for i, word in enumerate(first):
            yield f"/memories?q={quote(word)}+{quote(second[(i + shift) % len(second)])}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--record", action="store_true", help="Append to bench/results/log.md.")
    parser.add_argument("--keep", type=Path, help="Build the store here once and reuse it.")
    args = parser.parse_args()

    from ui_data import SHOP

    load_before = os.getloadavg()
    root = args.keep or Path(tempfile.mkdtemp(prefix="memd-bench-ui-"))
    sock_dir = tempfile.mkdtemp(prefix="memd-", dir="/tmp")
    sock = os.path.join(sock_dir, "m.sock")
    marker = root / "ids.txt"
    if args.keep and marker.exists():
        from daemon_process import daemon_env

        env = daemon_env(root, sock)
        ids = dict(line.split("=", 1) for line in marker.read_text().split())
    else:
        root.mkdir(parents=True, exist_ok=True)
        env, ids = build(root, sock, args.rows)
        marker.write_text("\n".join(f"{k}={v}" for k, v in ids.items()))
    memd = str(Path(sys.executable).parent / "memd")
    daemon = subprocess.Popen(
        [memd, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    ui = None
    try:
        wait_daemon(sock, daemon)
        ui = subprocess.Popen(
            [memd, "ui", "--port", "0", "--no-browser"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert ui.stdout is not None
        if not select.select([ui.stdout], [], [], 60)[0]:
            raise SystemExit("memd ui printed no URL")
        url = ui.stdout.readline().strip()
        port = int(url.split(":")[2].split("/")[0])
        cookie = login(port, url.split("token=")[1])
        time.sleep(3)  # let the daemon finish warming its vector cache
        shop = quote(SHOP, safe="")
        pages = [
            ("Projects", "/"),
            ("Memories, page 1", "/memories"),
            ("Memories, page 1000", "/memories?page=1000&status="),
            ("Memories, one project, decisions", f"/memories?project={shop}&kind=decision"),
            ("Memories, search", "/memories?q=deploy+script+terraform"),
            ("Memories, search, any status", "/memories?q=advisory+locks&status="),
            ("Memories, search, new words each time", ""),
            ("A memory", f"/memories/{ids['locks']}"),
            ("Preview", f"/preview?project={shop}&prompt=how+do+we+lock+the+job+queue"),
            ("Sessions, all projects", "/sessions"),
            ("Sessions, one project", f"/sessions?project={shop}"),
            ("Health", "/health"),
        ]
        from memd import protocol

        pinned = False

        def write() -> None:
            nonlocal pinned
            pinned = not pinned
            protocol.request(sock, {"cmd": "pin", "id": ids["excerpt"], "pinned": pinned})

        rows = []
        queries = fresh_queries()
        for name, fixed in pages:

            def path_now(fixed: str = fixed) -> str:
                return fixed or next(queries)

            timed(port, cookie, path_now())  # warm-up
            walls, apps, colds = [], [], []
            for _ in range(args.repeat):
                path = path_now()
                wall, app_ms, status = timed(port, cookie, path)
                if status != 200:
                    raise SystemExit(f"{path}: HTTP {status}")
                walls.append(wall)
                apps.append(app_ms)
            for _ in range(max(3, args.repeat // 2)):
                write()
                colds.append(timed(port, cookie, path_now())[1])
            path = fixed or "/memories?q=<two new words>"
            med = statistics.median(apps)
            cold = statistics.median(colds)
            rows.append(
                [
                    name,
                    f"`{path.replace(shop, 'P')}`",
                    f"{statistics.median(walls):.1f}",
                    f"{percentile(walls, 90):.1f}",
                    f"{med:.1f}",
                    f"{cold:.1f}",
                    "yes" if max(med, cold) <= TARGET_MS else "**no**",
                ]
            )
            print(
                f"{name:36s} wall p50 {statistics.median(walls):7.1f}  server warm {med:7.1f}  "
                f"cold {cold:7.1f} ms",
                flush=True,
            )
    finally:
        if ui is not None:
            ui.send_signal(signal.SIGINT)
            ui.wait(30)
            if ui.stdout is not None:
                ui.stdout.close()
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(120)
        shutil.rmtree(sock_dir, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    table = markdown_table(
        [
            "page",
            "path (P = /demo/shop)",
            "wall p50 ms",
            "wall p90 ms",
            "server p50 ms, warm",
            "server p50 ms, after a write",
            "<= 200 ms",
        ],
        rows,
    )
    load_after = os.getloadavg()
    load = (
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; "
        f"after: {', '.join(f'{x:.1f}' for x in load_after)} (2 cores)."
    )
    print(table)
    print(load)
    if args.record:
        body = (
            f"{args.rows:,} memories (tests/ui_data.py, random vectors), a real `memd serve` and "
            f"`memd ui`; {args.repeat} requests per page after one warm-up, one at a time, then "
            f"{max(3, args.repeat // 2)} each right after a write (a pin toggle over the socket). "
            "Server = the app's Server-Timing (daemon socket calls + rendering); wall = HTTP "
            "request on loopback. The machine is shared (2 cores, other jobs running): noisy.\n\n"
            + table
            + "\n\n"
            + load
        )
        append_section("memd ui: page latency (bench/ui.py)", body)


if __name__ == "__main__":
    main()
