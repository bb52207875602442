"""`memd ui` over HTTP against a real daemon: every page, every write, and every attack refused.

The app runs in-process (Starlette's TestClient, Host 127.0.0.1:PORT); the daemon is a real
`memd serve` on a real socket over a store of a few thousand memories.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from daemon_process import DaemonProcess, remove_socket_dir, short_socket_path
from starlette.testclient import TestClient
from ui_data import EXCERPT_TEXT, LINE, SAID_CLAUDE, SAID_USER, SESSION, SHOP, build_home

from memd.models import KINDS
from memd.settings import load_settings
from memd.ui.security import COOKIE, Guard
from memd.ui.web import create_app

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGES = ["/", "/projects", "/memories", "/memories?q=deploy+shop", "/sessions", "/health"]
PAGES += [f"/preview?project={SHOP}&prompt=how+do+we+deploy+the+shop"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("ui")
    sock = short_socket_path()
    env, ids = build_home(root, sock, 2000)
    proc = DaemonProcess(env, root / "serve.log").start()
    settings = load_settings(home=env["MEMD_HOME"], socket=sock)
    guard = Guard(PORT)
    try:
        yield {"proc": proc, "ids": ids, "guard": guard, "app": create_app(settings, guard)}
    finally:
        code = proc.stop()
        remove_socket_dir(sock)
        assert code == 0, proc.log()


def client_for(stack: dict[str, Any], login: bool = True) -> TestClient:
    client = TestClient(stack["app"], base_url=BASE)
    if login:
        reply = client.get(f"/?token={stack['guard'].token}", follow_redirects=False)
        assert reply.status_code == 303
    return client


def show(stack: dict[str, Any], mid: str) -> dict[str, Any]:
    """The memory as `memd show --json` prints it."""
    out = stack["proc"].memd("show", mid, "--json")
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.script_text.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


# ---- security: each attack is refused
def test_login_token_becomes_an_httponly_strict_cookie_and_leaves_the_url(stack: dict[str, Any]):
    client = client_for(stack, login=False)
    token = stack["guard"].token
    reply = client.get(f"/memories?kind=decision&token={token}", follow_redirects=False)
    assert reply.status_code == 303
    assert reply.headers["location"] == "/memories?kind=decision"  # the token is dropped
    cookie = reply.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert token not in cookie
    page = client.get("/memories?kind=decision")
    assert page.status_code == 200 and "Memories" in page.text
    assert '<link rel="stylesheet" href="/kinds.css">' in page.text
    css = client.get("/kinds.css")  # each kind's label colour, from memd/kinds.py
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert ".kind-decision { background: #dbe6f5; }" in css.text


@pytest.mark.parametrize("path", ["/", "/memories", "/health", "/static/ui.js", "/kinds.css"])
def test_without_the_cookie_every_page_is_refused(stack: dict[str, Any], path: str):
    client = client_for(stack, login=False)
    reply = client.get(path)
    assert reply.status_code == 401
    assert "memd ui" in reply.text
    forged = TestClient(stack["app"], base_url=BASE, cookies={COOKIE: "forged-session-value"})
    assert forged.get(path).status_code == 401


def test_a_wrong_token_is_refused_and_sets_no_cookie(stack: dict[str, Any]):
    client = client_for(stack, login=False)
    reply = client.get("/?token=not-the-token", follow_redirects=False)
    assert reply.status_code == 403
    assert "set-cookie" not in reply.headers
    assert client.get("/").status_code == 401


@pytest.mark.parametrize(
    "host",
    ["evil.example", f"evil.example:{PORT}", "127.0.0.1:9999", f"localhost.evil.example:{PORT}"],
)
def test_dns_rebinding_a_foreign_host_header_is_refused(stack: dict[str, Any], host: str):
    client = client_for(stack)  # even with a valid session cookie
    reply = client.get("/memories", headers={"host": host})
    assert reply.status_code == 421
    assert "memd-context" not in reply.text and "Memories" not in reply.text


def test_localhost_host_header_is_accepted(stack: dict[str, Any]):
    client = client_for(stack)
    assert client.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_a_write_without_the_csrf_token_is_refused_and_changes_nothing(stack: dict[str, Any]):
    mid = stack["ids"]["xss"]
    client = client_for(stack)
    before = show(stack, mid)
    assert before["pinned"] is False
    for form in ({}, {"csrf": "wrong"}, {"csrf": ""}):
        reply = client.post(f"/memories/{mid}/pin", data=form, follow_redirects=False)
        assert reply.status_code == 403, form
    cross = client.post(
        f"/memories/{mid}/pin",
        data={"csrf": stack["guard"].csrf},
        headers={"origin": "http://evil.example"},
        follow_redirects=False,
    )
    assert cross.status_code == 403
    not_logged_in = client_for(stack, login=False).post(
        f"/memories/{mid}/forget", data={"csrf": stack["guard"].csrf}, follow_redirects=False
    )
    assert not_logged_in.status_code == 401
    assert show(stack, mid)["pinned"] is False
    assert show(stack, mid)["status"] == "active"


def test_other_methods_are_refused(stack: dict[str, Any]):
    mid = stack["ids"]["xss"]
    client = client_for(stack)
    assert client.delete(f"/memories/{mid}").status_code == 405
    assert client.put(f"/memories/{mid}/pin").status_code == 405


@pytest.mark.parametrize("path", [*PAGES, "/memories/{locks}", "/does-not-exist"])
def test_every_response_forbids_inline_script_and_framing(stack: dict[str, Any], path: str):
    client = client_for(stack)
    reply = client.get(path.format(**stack["ids"]))
    csp = reply.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert reply.headers["x-frame-options"] == "DENY"
    assert reply.headers["referrer-policy"] == "same-origin"
    assert reply.headers["x-content-type-options"] == "nosniff"
    tags = parse(reply.text)
    assert not tags.script_text, "inline script"
    for tag, attrs in tags.tags:
        if tag == "script":
            assert attrs.get("src", "").startswith("/static/"), attrs
        handlers = [a for a in attrs if a.startswith("on")]
        assert not handlers, (tag, attrs)
        assert "style" not in attrs, (tag, attrs)  # style-src 'self' would block it anyway
        for value in attrs.values():
            assert not (value or "").strip().lower().startswith("javascript:")


@pytest.mark.parametrize(
    "path",
    [
        "/memories/{xss}",
        "/memories?q=blue-green+releases",
        f"/memories?project={SHOP}&kind=decision",
    ],
)
def test_memory_text_is_always_escaped(stack: dict[str, Any], path: str):
    client = client_for(stack)
    html = client.get(path.format(**stack["ids"])).text
    assert "We deploy the &lt;script&gt;alert(1)&lt;/script&gt; shop" in html
    assert "<script>alert(1)" not in html
    tags = parse(html)
    assert not tags.script_text
    assert all("onmouseover" not in attrs for _tag, attrs in tags.tags)


def test_the_preview_escapes_injected_memories(stack: dict[str, Any]):
    client = client_for(stack)
    html = client.get(f"/preview?project={SHOP}&prompt=blue-green+releases+of+the+shop").text
    assert "&lt;script&gt;alert(1)" in html and "<script>alert(1)" not in html
    assert all("onmouseover" not in attrs for _tag, attrs in parse(html).tags)


# ---- pages
@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders(stack: dict[str, Any], path: str):
    reply = client_for(stack).get(path)
    assert reply.status_code == 200, reply.text[:2000]
    assert "server-timing" in reply.headers


def test_projects_page_counts_by_kind(stack: dict[str, Any]):
    html = client_for(stack).get("/").text
    stats = json.loads(stack["proc"].memd("stats", "--json").stdout)
    shop = next(p for p in stats["projects"] if p["project"] == SHOP)
    assert f"decision {shop['by_kind']['decision']}" in html
    assert f"{stats['total']} memories" in html


def test_memories_are_paginated_and_filtered(stack: dict[str, Any]):
    client = client_for(stack)
    first = client.get(f"/memories?project={SHOP}&status=active&order=recent").text
    total = int(re.search(r"(\d+) memories", first).group(1))  # type: ignore[union-attr]
    assert total > 50
    assert "page 1 of" in first
    ids_1 = re.findall(r'data-id="([0-9a-f]+)"', first)
    second = client.get(f"/memories?project={SHOP}&status=active&order=recent&page=2").text
    ids_2 = re.findall(r'data-id="([0-9a-f]+)"', second)
    assert len(ids_1) == 50 and ids_2 and not set(ids_1) & set(ids_2)
    knowledge = [k for k in KINDS if k != "excerpt"]  # the default view hides the excerpts
    listed = stack["proc"].request(
        {"cmd": "list", "project": SHOP, "status": "active", "limit": 1, "kinds": knowledge}
    )
    assert listed["total"] == total  # same count as the daemon (project + user-wide scope)
    assert "excerpts (raw turns) hidden" in first and "kind-excerpt" not in first
    every = client.get(f"/memories?project={SHOP}&status=active&excerpts=1").text
    with_excerpts = int(re.search(r"(\d+) memories", every).group(1))  # type: ignore[union-attr]
    everything = stack["proc"].request({"cmd": "list", "project": SHOP, "status": "active"})
    assert with_excerpts == everything["total"] > total
    only = client.get(f"/memories?project={SHOP}&kind=excerpt").text
    rows = re.findall(r'<tr class="memory-row".*?</tr>', only, re.S)
    assert rows and all("kind-excerpt" in r for r in rows)
    archived = client.get("/memories?status=archived&kind=todo").text
    rows = re.findall(r'<tr class="memory-row".*?</tr>', archived, re.S)
    assert rows and all(">archived<" in r and "kind-todo" in r for r in rows)
    pinned = client.get("/memories?pinned=yes").text
    rows = re.findall(r'<tr class="memory-row".*?</tr>', pinned, re.S)
    assert rows and all("pinned" in r for r in rows)


def test_search_shows_the_explain_breakdown(stack: dict[str, Any]):
    html = client_for(stack).get("/memories?q=advisory+locks+job+queue").text
    assert "We chose Postgres advisory locks" in html
    assert re.search(
        r"total \d\.\d{3} = relevance \d\.\d\d (?:&gt;=|&lt;) \d\.\d\d \(semantic \d\.\d\d "
        r"from cosine \d\.\d\d, lexical \d\.\d\d\), rrf",
        html,
    )


def test_memory_page_shows_provenance_and_the_source_excerpt(stack: dict[str, Any]):
    html = client_for(stack).get(f"/memories/{stack['ids']['locks']}").text
    assert SESSION in html and LINE in html and "2026-11-20 10:00" in html
    assert "Excerpt of the source turns" in html
    assert "Postgres advisory locks are simpler here" in html
    assert EXCERPT_TEXT.splitlines()[0] in html
    # What was said, read back from the session's transcript on disk.
    said = html.split('id="source-turns"')[1].split("</ol>")[0]
    assert SAID_USER in said and SAID_CLAUDE in said
    assert said.index(SAID_USER) < said.index(SAID_CLAUDE)
    shown = stack["proc"].request({"cmd": "show", "id": stack["ids"]["locks"], "turns": True})
    assert [t["role"] for t in shown["memory"]["turns"]] == ["user", "assistant"]
    assert shown["memory"]["turns_missing"] == []


def test_a_source_whose_transcript_is_gone_says_so(stack: dict[str, Any]):
    reply = stack["proc"].request(
        {
            "cmd": "add",
            "text": "Nightly exports are written to the reports bucket",
            "project": SHOP,
            "kind": "fact",
        }
    )
    assert reply["ok"], reply
    page = client_for(stack).get(f"/memories/{reply['memory']['id']}").text
    assert "Added by hand" in page and "source-turns" not in page


def bulk(stack: dict[str, Any], client: TestClient, action: str, ids: list[str], back: str) -> Any:
    form = [("csrf", stack["guard"].csrf), ("action", action), ("back", back)]
    form += [("id", i) for i in ids]
    return client.post(
        "/memories/bulk",
        content=urlencode(form),
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )


def test_bulk_forget_restore_pin_in_one_request_each(stack: dict[str, Any]):
    client = client_for(stack)
    page = client.get(f"/memories?project={SHOP}&status=active&order=recent").text
    ids = re.findall(r'name="id" value="([0-9a-f]+)"', page)[:3]
    assert len(ids) == 3
    back = f"/memories?project={SHOP}&status=active&order=recent"
    reply = bulk(stack, client, "forget", ids, back)
    assert reply.status_code == 303
    location = reply.headers["location"]
    assert location.startswith("/memories?project=%2Fdemo%2Fshop&status=active&order=recent&")
    assert location.endswith("&done=forget&n=3")
    assert [show(stack, i)["status"] for i in ids] == ["archived"] * 3
    landed = client.get(reply.headers["location"]).text
    assert "Forgot 3 memories: archived, not deleted" in landed
    reply = bulk(stack, client, "restore", ids, back)
    assert reply.headers["location"].endswith("done=restore&n=3")
    assert [show(stack, i)["status"] for i in ids] == ["active"] * 3
    bulk(stack, client, "pin", ids[:2], back)
    assert [show(stack, i)["pinned"] for i in ids] == [True, True, show(stack, ids[2])["pinned"]]
    bulk(stack, client, "unpin", ids[:2], back)
    assert [show(stack, i)["pinned"] for i in ids[:2]] == [False, False]
    nothing = bulk(stack, client, "forget", [], "https://evil.example/")
    assert nothing.headers["location"] == "/memories?done=none&n=0"
    assert bulk(stack, client, "explode", ids, back).status_code == 400
    bad = bulk(stack, client, "forget", [ids[0], "deadbeef"], back)
    assert bad.status_code == 404 and show(stack, ids[0])["status"] == "active"


def test_restore_a_session_from_the_sessions_page(stack: dict[str, Any]):
    client = client_for(stack)
    html = client.get(f"/sessions?project={SHOP}").text
    found = re.search(r'name="session" value="([^"]+)"', html)
    assert found, "no session with archived memories on the first page"
    session = found.group(1)
    before = stack["proc"].request({"cmd": "restore", "session": "no-such-session"})
    assert before["ok"] is False and "no archived memory matches session" in before["error"]
    reply = client.post(
        "/restore",
        data={"csrf": stack["guard"].csrf, "session": session, "back": f"/sessions?project={SHOP}"},
        follow_redirects=False,
    )
    assert reply.status_code == 303 and "done=restore" in reply.headers["location"]
    again = stack["proc"].request({"cmd": "restore", "session": session})
    assert again["ok"] is False  # nothing of that session is archived any more
    empty = client.post("/restore", data={"csrf": stack["guard"].csrf})
    assert empty.status_code == 400 and "name a project, a session or a cleanup run" in empty.text


def test_edit_pin_forget_restore_through_the_pages(stack: dict[str, Any]):
    mid = stack["ids"]["locks"]
    client = client_for(stack)
    csrf = stack["guard"].csrf
    reply = client.post(
        f"/memories/{mid}/edit",
        data={"csrf": csrf, "text": "We chose Postgres advisory locks for the job queue (edited)"},
        follow_redirects=False,
    )
    assert reply.status_code == 303 and reply.headers["location"] == f"/memories/{mid}?done=edit"
    memory = show(stack, mid)
    assert memory["text"].endswith("(edited)")
    assert memory["history"][-1]["was"]["text"].startswith(
        "We chose Postgres advisory locks for the shop"
    )
    page = client.get(f"/memories/{mid}").text
    assert "edited; before: text" in page
    client.post(f"/memories/{mid}/pin", data={"csrf": csrf})
    assert show(stack, mid)["pinned"] is True
    client.post(f"/memories/{mid}/unpin", data={"csrf": csrf})
    assert show(stack, mid)["pinned"] is False
    client.post(f"/memories/{mid}/forget", data={"csrf": csrf})
    assert show(stack, mid)["status"] == "archived"
    hits = stack["proc"].request({"cmd": "search", "query": "advisory locks", "cwd": SHOP})
    assert mid not in [r["id"] for r in hits["results"]]
    client.post(f"/memories/{mid}/restore", data={"csrf": csrf})
    assert show(stack, mid)["status"] == "active"
    hits = stack["proc"].request({"cmd": "search", "query": "advisory locks edited", "cwd": SHOP})
    assert hits["results"][0]["id"] == mid  # re-embedded and searchable again


def test_bad_edits_are_refused_with_a_message(stack: dict[str, Any]):
    mid = stack["ids"]["locks"]
    client = client_for(stack)
    csrf = stack["guard"].csrf
    before = show(stack, mid)
    for form in ({"text": "   "}, {"importance": "7"}, {"importance": "lots"}, {"kind": "nope"}):
        reply = client.post(f"/memories/{mid}/edit", data={"csrf": csrf, **form})
        assert reply.status_code == 400, form
        assert "That did not work" in reply.text
    assert show(stack, mid)["text"] == before["text"]


def test_unknown_memory_is_a_404_page(stack: dict[str, Any]):
    reply = client_for(stack).get("/memories/0123456789abcdef")
    assert reply.status_code == 404 and "no memory with id" in reply.text


def test_sessions_timeline_lists_what_each_session_taught(stack: dict[str, Any]):
    client = client_for(stack)
    html = client.get(f"/sessions?project={SHOP}").text
    assert "sessions taught memd something" in html
    assert 'id="s-sess-demo-locks"' in html and "Postgres advisory locks" in html
    known = html.split('id="s-sess-demo-locks"')[1].split("</li>\n</ol>")[0].split('<li id="s-')[0]
    learned, folded = known.split('<details class="excerpts">')
    assert "We chose Postgres advisory locks" in learned  # the typed memory leads
    assert "1 learned, 1 excerpts" in learned
    assert "<summary>1 excerpt (raw turns)</summary>" in folded
    assert "Postgres advisory locks are simpler here" in folded  # the excerpt, folded
    every = client.get("/sessions").text
    assert "page 1 of 5" in every  # 2,000 memories in sessions of 25, + the known one
    assert every.count('<li id="s-') == 20


def test_health_shows_jobs_lag_spend_and_charts(stack: dict[str, Any]):
    html = client_for(stack).get("/health").text
    for job in ("decay", "dedupe", "cleanup", "optimize"):
        assert f"<td>{job}" in html
    assert "Extraction lag" in html and "Tokens spent" in html
    assert html.count('<svg class="chart"') == 4
    assert html.count("<rect x=") > 20


def test_pages_say_when_the_daemon_is_down(tmp_path: Path):
    settings = load_settings(home=str(tmp_path / "nohome"), socket=str(tmp_path / "none.sock"))
    guard = Guard(PORT)
    client = TestClient(create_app(settings, guard), base_url=BASE)
    client.get(f"/?token={guard.token}")
    for path in ("/", "/memories", "/memories?q=x", "/health", "/sessions", "/preview"):
        reply = client.get(path)
        assert reply.status_code == 503
        assert "The memd daemon is not running" in reply.text
        assert "memd serve" in reply.text


def test_memd_ui_prints_its_url_serves_on_loopback_and_stops_on_ctrl_c(tmp_path: Path):
    import http.client
    import select
    import signal
    import socket
    import subprocess

    from daemon_process import MEMD, daemon_env

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    env = daemon_env(tmp_path, str(tmp_path / "none.sock"))
    proc = subprocess.Popen(
        [MEMD, "ui", "--port", str(port), "--no-browser"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert select.select([proc.stdout], [], [], 60)[0], "no URL printed"
        url = proc.stdout.readline().strip()
        assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=[\w-]{{40,}}", url), url
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", url.split(str(port), 1)[1])
        login = conn.getresponse()
        login.read()
        assert login.status == 303 and login.getheader("location") == "/"
        cookie = (login.getheader("set-cookie") or "").split(";")[0]
        conn.request("GET", "/memories?q=anything", headers={"Cookie": cookie})
        page = conn.getresponse()
        assert page.status == 503 and "memd serve" in page.read().decode()
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    assert code == 0


def test_delete_for_good_from_the_memory_page(stack: dict[str, Any]):
    """ "Delete for good" purges: the memory is gone, and restore cannot bring it back."""
    added = stack["proc"].request(
        {"cmd": "add", "text": "A throwaway note about the staging VPN", "project": SHOP}
    )
    assert added["ok"], added
    mid = added["memory"]["id"]
    client = client_for(stack)
    reply = client.post(f"/memories/{mid}/delete", data={"csrf": stack["guard"].csrf})
    assert reply.status_code == 200 and "staging VPN" in reply.text
    gone = stack["proc"].memd("show", mid, "--json")
    assert gone.returncode != 0
    again = stack["proc"].request({"cmd": "restore", "id": mid})
    assert again["ok"] is False
