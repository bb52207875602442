"""`memd ui` in a real headless Chromium (Debian's package, driven by Playwright for Python).

A real daemon over 3,000 memories, the real `memd ui --port 0 --no-browser` process: open the
printed URL, search, open a memory (and what was said in its source turns), edit, pin, forget,
restore, delete, preview an injection, hide and show excerpts, forget and restore in bulk, undo a
cleanup run, restore a project, read the Sessions page, use it all at 420 px wide, and check each
result through `memd show` and the daemon. Screenshots of every page go to
``$MEMD_UI_SCREENSHOTS`` (else a temporary directory).

Skipped when Chromium or Playwright is missing, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_process import MEMD, DaemonProcess, remove_socket_dir, short_socket_path
from ui_data import SAID_CLAUDE, SAID_USER, SHOP, XSS_TEXT, build_home

CHROMIUM = os.environ.get("MEMD_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install playwright)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


if (why := missing()) is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests must run in CI: {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def read_url(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise RuntimeError("memd ui printed no URL")
    return proc.stdout.readline().strip()


@pytest.fixture(scope="module")
def private_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """This process (the model, Playwright's driver, Chromium) writes caches under HOME: a
    private one for the whole module (the autouse fixture only covers each test)."""
    home = tmp_path_factory.mktemp("browser-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            mp.setenv(name, str(home / name.lower()))
        yield home


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, private_home: Path) -> Iterator[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    root = tmp_path_factory.mktemp("uibrowser")
    shots = Path(os.environ.get("MEMD_UI_SCREENSHOTS") or root / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    sock = short_socket_path()
    env, ids = build_home(root, sock, 3000)
    env["MEMD_PROJECT_CAP"] = "500"  # a cleanup run (run by one test only) archives some
    daemon = DaemonProcess(env, root / "serve.log").start()
    ui_log = open(root / "ui.log", "wb")
    ui = subprocess.Popen(
        [MEMD, "ui", "--port", "0", "--no-browser"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=ui_log,
        text=True,
    )
    try:
        url = read_url(ui)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            context = browser.new_context(viewport={"width": 1200, "height": 760})
            page = context.new_page()
            console: list[str] = []
            dialogs: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))

            def on_dialog(dialog: Any) -> None:
                dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.accept() if dialog.type == "confirm" else dialog.dismiss()

            page.on("dialog", on_dialog)
            yield {
                "daemon": daemon,
                "ids": ids,
                "url": url,
                "base": url.split("/?")[0],
                "page": page,
                "context": context,
                "shots": shots,
                "console": console,
                "dialogs": dialogs,
            }
            browser.close()
    finally:
        ui.terminate()
        ui.wait(30)
        assert ui.stdout is not None
        ui.stdout.close()
        ui_log.close()
        code = daemon.stop()
        remove_socket_dir(sock)
        assert code == 0, daemon.log()


def shot(stack: dict[str, Any], name: str) -> None:
    stack["page"].screenshot(path=str(stack["shots"] / f"{name}.png"))


def show(stack: dict[str, Any], mid: str) -> dict[str, Any]:
    out = stack["daemon"].memd("show", mid, "--json")
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_the_printed_url_logs_in_and_drops_the_token(stack: dict[str, Any]):
    page = stack["page"]
    assert stack["url"].startswith("http://127.0.0.1:") and "token=" in stack["url"]
    page.goto(stack["url"])
    assert page.url == stack["base"] + "/"  # redirected: no token left in the address bar
    assert page.locator("h1").inner_text() == "Projects"
    assert page.locator("table.projects").inner_text().count("demo/") == 4
    cookie = next(c for c in stack["context"].cookies() if c["name"] == "memd_ui_session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    shot(stack, "projects")


def test_search_then_open_a_memory(stack: dict[str, Any]):
    page = stack["page"]
    page.fill("header input[name=q]", "advisory locks for the job queue")
    page.press("header input[name=q]", "Enter")
    page.wait_for_url("**/memories?q=*")
    first = page.locator("tr.memory-row").first
    assert "We chose Postgres advisory locks" in first.inner_text()
    assert "semantic" in first.locator(".why").inner_text()
    shot(stack, "search")
    first.locator("a.memlink").click()
    page.wait_for_url(f"**/memories/{stack['ids']['locks']}")
    assert "Excerpt of the source turns" in page.content()
    shot(stack, "memory")


def test_edit_a_memory(stack: dict[str, Any]):
    page = stack["page"]
    mid = stack["ids"]["locks"]
    page.goto(f"{stack['base']}/memories/{mid}")
    page.fill("#edit-text", "The job queue takes Postgres advisory locks (no Redis locks)")
    page.select_option("#edit-kind", "fact")
    page.fill("#edit-importance", "0.9")
    page.click("#save")
    page.wait_for_url("**?done=edit")
    assert "Done: edit" in page.locator("#notice").inner_text()
    assert page.locator("#memory-text").inner_text().startswith("The job queue takes Postgres")
    memory = show(stack, mid)
    assert memory["text"] == "The job queue takes Postgres advisory locks (no Redis locks)"
    assert memory["kind"] == "fact" and abs(memory["importance"] - 0.9) < 1e-6
    assert memory["history"][-1]["was"]["kind"] == "decision"


def test_pin_it_and_the_session_brief_has_it(stack: dict[str, Any]):
    page = stack["page"]
    mid = stack["ids"]["locks"]
    page.goto(f"{stack['base']}/memories/{mid}")
    page.click("#pin")
    page.wait_for_url("**?done=pin")
    assert page.locator("#memory-pinned").is_visible()
    assert show(stack, mid)["pinned"] is True
    brief = stack["daemon"].request(
        {"cmd": "context", "cwd": SHOP, "prompt": "", "event": "session-start"}
    )
    assert "The job queue takes Postgres advisory locks" in brief["context"]


def test_forget_and_restore(stack: dict[str, Any]):
    page = stack["page"]
    mid = stack["ids"]["locks"]
    page.goto(f"{stack['base']}/memories/{mid}")
    page.click("#forget")
    page.wait_for_url("**?done=forget")
    assert page.locator("#memory-status").inner_text().startswith("archived")
    assert show(stack, mid)["status"] == "archived"
    found = stack["daemon"].request({"cmd": "search", "query": "advisory locks", "cwd": SHOP})
    assert mid not in [r["id"] for r in found["results"]]
    page.click("#restore")
    page.wait_for_url("**?done=restore")
    assert page.locator("#memory-status").inner_text().startswith("active")
    assert show(stack, mid)["status"] == "active"
    found = stack["daemon"].request({"cmd": "search", "query": "advisory locks", "cwd": SHOP})
    assert found["results"][0]["id"] == mid


def test_preview_an_injection(stack: dict[str, Any]):
    page = stack["page"]
    page.goto(f"{stack['base']}/preview")
    page.select_option("select[name=project]", SHOP)
    prompt = "should the job queue take advisory locks?"
    page.fill("#preview-prompt", prompt)
    page.click("#preview-go")
    page.wait_for_url("**/preview?*")
    injected = page.locator("#preview-context").inner_text()
    expected = stack["daemon"].request({"cmd": "context", "cwd": SHOP, "prompt": prompt})
    assert injected.strip() == expected["context"].strip()
    assert "The job queue takes Postgres advisory locks" in injected
    chosen = page.locator("tr.chosen").all_inner_texts()
    assert len(chosen) == len(expected["chosen"]) and "total" in chosen[0]
    shot(stack, "preview")


def test_sessions_and_health_pages(stack: dict[str, Any]):
    page = stack["page"]
    page.goto(f"{stack['base']}/sessions?project={SHOP}")
    assert page.locator("ol.timeline > li").count() == 20
    shot(stack, "sessions")
    page.goto(f"{stack['base']}/health")
    assert page.locator("svg.chart").count() == 4
    assert page.locator("#jobs tbody tr").count() == 4
    shot(stack, "health")
    page.goto(f"{stack['base']}/memories?project={SHOP}")
    assert "page 1 of" in page.locator(".pager").first.inner_text()
    shot(stack, "memories")


def result_count(stack: dict[str, Any]) -> int:
    return int(stack["page"].locator("#result-count").inner_text().split()[0])


def test_the_knowledge_view_hides_excerpts_until_asked(stack: dict[str, Any]):
    page = stack["page"]
    page.goto(f"{stack['base']}/memories?project={SHOP}&status=active")
    kinds = page.locator("td.cell-kind").all_inner_texts()
    assert kinds and "excerpt" not in [k.strip() for k in kinds]
    assert "excerpts (raw turns) hidden" in page.locator("#result-count").inner_text()
    knowledge = result_count(stack)
    page.check("#show-excerpts")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**excerpts=1*")
    everything = stack["daemon"].request({"cmd": "list", "project": SHOP, "status": "active"})
    assert result_count(stack) == everything["total"] > knowledge
    assert "hidden" not in page.locator("#result-count").inner_text()


def test_bulk_select_forget_then_restore(stack: dict[str, Any]):
    page = stack["page"]
    page.goto(f"{stack['base']}/memories?project={SHOP}&status=active&order=recent")
    boxes = page.locator("input.pick[name=id]")
    ids = [str(boxes.nth(i).get_attribute("value")) for i in range(3)]
    for i in range(3):
        boxes.nth(i).check()
    assert page.locator("#selected-count").inner_text() == "3 selected"
    shot(stack, "bulk")
    page.click("#bulk-forget")
    page.wait_for_url("**done=forget*")
    assert "Forgot 3 memories" in page.locator("#notice").inner_text()
    assert [show(stack, i)["status"] for i in ids] == ["archived"] * 3
    page.goto(f"{stack['base']}/memories?project={SHOP}&status=archived&order=recent")
    for mid in ids:
        page.check(f"input.pick[value='{mid}']")
    page.click("#bulk-restore")
    page.wait_for_url("**done=restore*")
    assert page.locator("#notice").inner_text() == "Restored 3 memories."
    assert [show(stack, i)["status"] for i in ids] == ["active"] * 3
    page.check("#select-all")
    rows = page.locator("input.pick[name=id]").count()
    checked = page.locator("input.pick[name=id]:checked").count()
    assert (
        rows == checked > 0 and page.locator("#selected-count").inner_text() == f"{rows} selected"
    )
    page.uncheck("#select-all")
    assert page.locator("input.pick[name=id]:checked").count() == 0


def test_a_memory_page_shows_what_was_said(stack: dict[str, Any]):
    page = stack["page"]
    page.goto(f"{stack['base']}/memories/{stack['ids']['locks']}")
    said = page.locator("#source-turns").inner_text()
    assert SAID_USER in said and SAID_CLAUDE in said
    assert said.index("user") < said.index(SAID_USER) < said.index("claude")


def test_sessions_lead_with_what_was_learned(stack: dict[str, Any]):
    page = stack["page"]
    page.goto(f"{stack['base']}/sessions?project={SHOP}")
    item = page.locator("#s-sess-demo-locks")
    assert "Postgres advisory locks" in item.locator("ul.learned").inner_text()
    excerpt = item.locator("details.excerpts li").first
    assert not excerpt.is_visible()  # folded
    item.locator("details.excerpts summary").click()
    assert excerpt.is_visible() and "simpler here" in excerpt.inner_text()


def test_the_narrow_layout_at_420px(stack: dict[str, Any]):
    page = stack["page"]
    page.set_viewport_size({"width": 420, "height": 860})
    try:
        page.goto(f"{stack['base']}/memories?project={SHOP}&status=active")
        assert page.evaluate("document.documentElement.scrollWidth") <= 420
        row = page.locator("tr.memory-row").first
        for cell in ("td.cell-kind", "td.cell-project", "td.cell-status"):
            box = row.locator(cell).bounding_box()
            assert row.locator(cell).is_visible() and box is not None, cell
            assert box["x"] >= 0 and box["x"] + box["width"] <= 420, (cell, box)
        assert row.locator("td.cell-status").inner_text().strip().endswith("active")
        shot(stack, "narrow-memories")
        mid = str(row.locator("input.pick").get_attribute("value"))
        row.locator("input.pick").check()
        page.click("#bulk-pin")  # a bulk action works at this width too
        page.wait_for_url("**done=pin*")
        assert show(stack, mid)["pinned"] is True
        for path in (f"/memories/{stack['ids']['locks']}", f"/sessions?project={SHOP}", "/health"):
            page.goto(stack["base"] + path)
            assert page.evaluate("document.documentElement.scrollWidth") <= 420, path
        shot(stack, "narrow-health")
    finally:
        page.set_viewport_size({"width": 1200, "height": 760})


def test_undo_a_cleanup_run_then_restore_a_project(stack: dict[str, Any]):
    daemon, page = stack["daemon"], stack["page"]
    ran = daemon.request({"cmd": "jobs_run", "name": "cleanup"}, timeout=120)
    result = ran["last_result"]
    archived = result["todos_closed"] + result["archived_stale"] + result["archived_cap"]
    assert archived > 0 and result["run"], result
    page.goto(f"{stack['base']}/health")
    page.click("#undo-run-cleanup")
    page.wait_for_url("**/health?done=restore*")
    assert page.locator("#notice").inner_text() == f"Restored {archived} memories."
    again = daemon.request({"cmd": "restore", "run": result["run"]})
    assert again["ok"] is False and "no archived memory matches" in again["error"]
    page.goto(f"{stack['base']}/memories?project={SHOP}&status=archived&excerpts=1")
    left = result_count(stack)
    assert left > 0
    page.click("#restore-project")
    page.wait_for_url("**done=restore*")
    # The list shows the project with the user-wide scope; the button restores the project's.
    listed = daemon.request({"cmd": "list", "project": SHOP, "status": "archived"})
    assert all(m["project"] == "user:global" for m in listed["memories"])
    restored = left - listed["total"]
    assert restored > 0
    assert page.locator("#notice").inner_text() == f"Restored {restored} memories."


def test_hostile_text_stays_text_and_delete_for_good(stack: dict[str, Any]):
    page = stack["page"]
    mid = stack["ids"]["xss"]
    page.goto(f"{stack['base']}/memories/{mid}")
    assert page.locator("#memory-text").inner_text() == XSS_TEXT
    page.hover("#memory-text")
    assert not [d for d in stack["dialogs"] if d.startswith("alert")]
    page.click("#delete")  # the confirm dialog is accepted by the fixture
    page.wait_for_url(f"**/memories/{mid}/delete")
    assert "Deleted for good" in page.locator("h1").inner_text()
    assert stack["dialogs"][-1].startswith("confirm: Delete this memory for good")
    gone = stack["daemon"].memd("show", mid)
    assert gone.returncode != 0 and "no memory" in gone.stderr


def test_no_script_errors_or_csp_violations(stack: dict[str, Any]):
    bad = [m for m in stack["console"] if m.startswith(("error", "pageerror"))]
    assert not bad, bad
