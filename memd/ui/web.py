"""The UI's pages: each handler makes one or two socket requests to the daemon and renders a template.

Pages: Projects (``/``), Memories (``/memories``, ``?q=`` searches; excerpts hidden unless asked
for; bulk forget / restore / pin / unpin of the ticked rows), a memory (``/memories/{id}``, with
edit / pin / unpin / forget / restore / delete forms and the text of its source turns), Preview
(``/preview``), Sessions (``/sessions``) and Health (``/health``); ``POST /restore`` brings back
every archived memory of a project, a session or a cleanup run. When the daemon is down every
page says so, and how to start it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memd import kinds, protocol
from memd.client import AsyncDaemonClient, DaemonClient
from memd.errors import DaemonUnavailable, MemdError
from memd.models import KINDS, STATUSES, USER_SCOPE
from memd.recall.hits import breakdown_from_json, explain
from memd.settings import Settings
from memd.ui import charts
from memd.ui.security import CSRF_FIELD, Guard, GuardMiddleware

HERE = Path(__file__).resolve().parent
PAGE_SIZE = 50
SEARCH_LIMIT = 20
TIMEOUT = 30.0


KNOWLEDGE = [k.name for k in kinds.KINDS if not k.raw]
"""The Memories page's default view: what memd learned, without the raw excerpts."""
BULK_ACTIONS = ("forget", "restore", "pin", "unpin")
BULK_DONE = {"forget": "forgot", "restore": "restored", "pin": "pinned", "unpin": "unpinned"}


def safe_back(url: str) -> str:
    """Where a form returns to: a page of this UI, never another site."""
    if url.startswith(("/memories", "/sessions", "/health", "/projects")) and "//" not in url:
        return url
    return "/memories"


def with_notice(url: str, action: str, count: int) -> str:
    """``url`` with the outcome of a bulk action (``done``, ``n``), replacing an earlier one."""
    path, _, query = url.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query) if k not in ("done", "n")]
    return f"{path}?{urlencode([*kept, ('done', action), ('n', str(count))])}"


def bulk_notice(params: Any) -> str:
    """The line a page shows after a bulk action or a bulk restore."""
    action, count = params.get("done", ""), params.get("n", "")
    if action == "none":
        return "Nothing was selected."
    if action not in BULK_DONE or not count.isdigit():
        return ""
    n = int(count)
    what = f"{n} {'memory' if n == 1 else 'memories'}"
    if action == "forget":
        return f"Forgot {what}: archived, not deleted (status “archived” lists them to restore)."
    return f"{BULK_DONE[action].capitalize()} {what}."


def short_project(project: str) -> str:
    """The last two path parts of a project (the full path is in the title attribute)."""
    if project.startswith("user:"):
        return project
    parts = [p for p in project.split("/") if p]
    return "/".join(parts[-2:]) or project


def human_bytes(n: int | float | None) -> str:
    value = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def when(stamp: str | None) -> str:
    """An ISO stamp as ``YYYY-MM-DD HH:MM`` (UTC)."""
    if not stamp:
        return "never"
    return str(stamp).replace("T", " ")[:16]


def make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short_project"] = short_project
    env.filters["bytes"] = human_bytes
    env.filters["when"] = when
    env.filters["when_s"] = lambda stamp: str(stamp or "").replace("T", " ")[:19]
    env.filters["explain"] = lambda m: explain(breakdown_from_json(m["score_breakdown"]))
    env.globals.update(KINDS=KINDS, STATUSES=STATUSES, USER_SCOPE=USER_SCOPE, quote=quote)
    return env


class UI:
    def __init__(self, settings: Settings, guard: Guard) -> None:
        self.settings = settings
        self.guard = guard
        self.daemon = AsyncDaemonClient(DaemonClient(settings, timeout=TIMEOUT))
        self.env = make_env()

    # ---- rendering
    def render(self, name: str, request: Request, code: int = 200, **ctx: Any) -> HTMLResponse:
        started = request.scope.get("memd.started", time.perf_counter())
        ctx.setdefault("page", name.removesuffix(".html"))
        html = self.env.get_template(name).render(
            csrf=self.guard.csrf,
            csrf_field=CSRF_FIELD,
            socket=str(self.settings.socket_path),
            request_path=request.url.path,
            **ctx,
        )
        ms = (time.perf_counter() - started) * 1000
        return HTMLResponse(html, status_code=code, headers={"server-timing": f"app;dur={ms:.1f}"})

    def down(self, request: Request, exc: Exception) -> HTMLResponse:
        return self.render("down.html", request, code=503, error=str(exc), page="down")

    def failed(self, request: Request, exc: MemdError) -> HTMLResponse:
        text = str(exc)
        status = 404 if "no memory with id" in text else 400
        return self.render("error.html", request, code=status, error=text, page="error")

    async def page(
        self, request: Request, build: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        request.scope["memd.started"] = time.perf_counter()
        try:
            response: Response = await build(request)
            return response
        except DaemonUnavailable as exc:
            return self.down(request, exc)
        except MemdError as exc:
            return self.failed(request, exc)

    async def projects_list(self) -> list[str]:
        return list((await self.daemon.projects(fresh=False))["projects"])

    # ---- pages
    async def projects(self, request: Request) -> Response:
        reply = await self.daemon.stats(fresh=False)
        return self.render(
            "projects.html", request, stats=reply["stats"], table=reply.get("table", {})
        )

    async def memories(self, request: Request) -> Response:
        p = request.query_params
        q = p.get("q", "").strip()
        project = p.get("project", "")
        kind = p.get("kind", "") or None
        with_excerpts = p.get("excerpts", "") == "1" or kind == "excerpt"
        kinds = None if kind or with_excerpts else KNOWLEDGE
        status = p.get("status", "active")
        pinned = {"yes": True, "no": False}.get(p.get("pinned", ""))
        order = p.get("order", "recent")
        try:
            page_no = max(1, int(p.get("page", "1")))
        except ValueError:
            page_no = 1
        projects = await self.projects_list()
        filters = {
            "q": q,
            "project": project,
            "kind": kind or "",
            "status": status,
            "pinned": p.get("pinned", ""),
            "order": order,
            "excerpts": "1" if with_excerpts and kind != "excerpt" else "",
        }
        rows: Sequence[Mapping[str, Any]]
        if q:
            found = await self.daemon.find(
                query=q,
                project=project or None,
                kind=kind,
                kinds=kinds,
                status=status or None,
                pinned=pinned,
                limit=SEARCH_LIMIT,
            )
            rows, total, pages = found["results"], len(found["results"]), 1
        else:
            listed = await self.daemon.list_memories(
                project=project or None,
                all_projects=not project,
                kind=kind,
                kinds=kinds,
                include_all=True,
                status=status or None,
                pinned=pinned,
                offset=(page_no - 1) * PAGE_SIZE,
                limit=PAGE_SIZE,
                order=order,
            )
            rows, total = listed["memories"], int(listed["total"])
            pages = max(1, math.ceil(total / PAGE_SIZE))
        keep = {k: v for k, v in filters.items() if v}
        return self.render(
            "memories.html",
            request,
            rows=rows,
            total=total,
            page_no=page_no,
            pages=pages,
            filters=filters,
            projects=projects,
            searching=bool(q),
            excerpts_hidden=kinds is not None,
            page_url=lambda n: "/memories?" + urlencode({**keep, "page": n}),
            here=request.url.path + ("?" + request.url.query if request.url.query else ""),
            notice=bulk_notice(p),
        )

    async def memory(self, request: Request) -> Response:
        mid = request.path_params["id"]
        memory = (await self.daemon.show(id=mid, excerpts=True, turns=True))["memory"]
        return self.render(
            "memory.html",
            request,
            m=memory,
            notice=request.query_params.get("done", ""),
        )

    async def memory_action(self, request: Request) -> Response:
        mid = request.path_params["id"]
        action = request.path_params["action"]
        form = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
        if action == "edit":
            args: protocol.EditRequest = {"id": mid}
            if "text" in form:
                args["text"] = form["text"]
            if form.get("kind"):
                args["kind"] = form["kind"]
            if form.get("importance", "").strip():
                try:
                    args["importance"] = float(form["importance"])
                except ValueError:
                    raise MemdError("importance must be a number between 0 and 1") from None
            await self.daemon.edit(**args)
        elif action in ("pin", "unpin"):
            await self.daemon.pin(id=mid, pinned=action == "pin")
        elif action == "forget":
            await self.daemon.forget(id=mid, reason="forgotten in memd ui")
        elif action == "restore":
            await self.daemon.restore(id=mid)
        elif action == "delete":
            reply = await self.daemon.forget(id=mid, purge=True)
            return self.render(
                "deleted.html", request, forgotten=reply["forgotten"], text=reply.get("text", "")
            )
        else:
            return self.render(
                "error.html", request, code=404, error=f"no action {action!r}", page="error"
            )
        return RedirectResponse(f"/memories/{quote(mid)}?done={quote(action)}", status_code=303)

    async def bulk(self, request: Request) -> Response:
        """Forget, restore, pin or unpin the memories ticked on the Memories page, in one write."""
        form = parse_qsl((await request.body()).decode("utf-8", "replace"))
        fields = dict(form)
        ids = [v for k, v in form if k == "id" and v]
        action = fields.get("action", "")
        back = safe_back(fields.get("back", ""))
        if action not in BULK_ACTIONS:
            raise MemdError(f"no bulk action {action!r}; choose one of: {', '.join(BULK_ACTIONS)}")
        if not ids:
            return RedirectResponse(with_notice(back, "none", 0), status_code=303)
        if action == "forget":
            reply = await self.daemon.forget(ids=ids, reason="forgotten in memd ui")
            done = len(reply["forgotten"])
        elif action == "restore":
            done = len((await self.daemon.restore(ids=ids))["restored"])
        else:
            done = len((await self.daemon.pin(ids=ids, pinned=action == "pin"))["ids"])
        return RedirectResponse(with_notice(back, action, done), status_code=303)

    async def restore_many(self, request: Request) -> Response:
        """Restore every archived memory of a project, a session or a cleanup run."""
        fields = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
        args: protocol.RestoreRequest = {}
        if fields.get("project"):
            args["project"] = fields["project"]
        if fields.get("session"):
            args["session"] = fields["session"]
        if fields.get("run"):
            args["run"] = fields["run"]
        if not args:
            raise MemdError("name a project, a session or a cleanup run to restore")
        reply = await self.daemon.restore(**args)
        back = safe_back(fields.get("back", ""))
        return RedirectResponse(with_notice(back, "restore", len(reply["restored"])), 303)

    async def preview(self, request: Request) -> Response:
        p = request.query_params
        project = p.get("project", "")
        prompt = p.get("prompt", "")
        event = p.get("event", "user-prompt-submit")
        if event not in ("user-prompt-submit", "session-start"):
            event = "user-prompt-submit"
        projects = await self.projects_list()
        result = None
        if project and (prompt.strip() or event == "session-start"):
            result = await self.daemon.context(cwd=project, prompt=prompt, event=event)
        return self.render(
            "preview.html",
            request,
            projects=[x for x in projects if x != USER_SCOPE],
            project=project,
            prompt=prompt,
            event=event,
            result=result,
        )

    async def sessions(self, request: Request) -> Response:
        p = request.query_params
        project = p.get("project", "")
        try:
            page_no = max(1, int(p.get("page", "1")))
        except ValueError:
            page_no = 1
        per_page = 20
        projects = await self.projects_list()
        reply = await self.daemon.sessions(
            project=project or None,
            offset=(page_no - 1) * per_page,
            limit=per_page,
            fresh=False,
        )
        total = int(reply["total"])
        return self.render(
            "sessions.html",
            request,
            sessions=reply["sessions"],
            total=total,
            page_no=page_no,
            pages=max(1, math.ceil(total / per_page)),
            project=project,
            projects=projects,
            page_url=lambda n: (
                "/sessions?" + urlencode({**({"project": project} if project else {}), "page": n})
            ),
            here=request.url.path + ("?" + request.url.query if request.url.query else ""),
            notice=bulk_notice(p),
        )

    async def health(self, request: Request) -> Response:
        status = await self.daemon.status()
        stats = (await self.daemon.stats(fresh=False))["stats"]
        return self.render(
            "health.html",
            request,
            status=status,
            stats=stats,
            growth=charts.stacked(stats["growth"]),
            archived=charts.stacked(stats["archived_per_week"]),
            used=charts.stacked(stats["used_per_week"]),
            hits=charts.bars(stats["hits"]["buckets"]),
            notice=bulk_notice(request.query_params),
        )

    # ---- app
    def routes(self) -> list[Route | Mount]:
        def wrap(build: Any) -> Any:
            async def endpoint(request: Request) -> Response:
                return await self.page(request, build)

            return endpoint

        return [
            Route("/", wrap(self.projects)),
            Route("/projects", wrap(self.projects)),
            Route("/memories", wrap(self.memories)),
            Route("/memories/bulk", wrap(self.bulk), methods=["POST"]),
            Route("/restore", wrap(self.restore_many), methods=["POST"]),
            Route("/memories/{id}", wrap(self.memory)),
            Route("/memories/{id}/{action}", wrap(self.memory_action), methods=["POST"]),
            Route("/preview", wrap(self.preview)),
            Route("/sessions", wrap(self.sessions)),
            Route("/health", wrap(self.health)),
            Route("/kinds.css", kinds_css),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ]


KINDS_CSS = "".join(f".kind-{k.name} {{ background: {k.tint}; }}\n" for k in kinds.KINDS)
"""Each kind's label colour, from the registry (a kind added there gets its colour here)."""


async def kinds_css(request: Request) -> Response:
    return Response(KINDS_CSS, media_type="text/css", headers={"Cache-Control": "max-age=3600"})


def create_app(settings: Settings, guard: Guard) -> Any:
    """The ASGI app: the pages behind the guard middleware."""
    ui = UI(settings, guard)
    app = Starlette(routes=ui.routes())
    return GuardMiddleware(app, guard)
