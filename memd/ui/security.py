"""The UI's guards, as one ASGI middleware: Host check, token login, session cookie, CSRF, headers.

- A request whose Host is not 127.0.0.1 or localhost (with the served port) gets 421: a page
  on another site that rebinds its DNS name to 127.0.0.1 cannot read or write through the UI.
- ``?token=`` with the token `memd ui` printed sets an HttpOnly, SameSite=Strict session cookie
  and redirects to the same URL without the token; any other request without that cookie gets 401.
- Every POST must carry the CSRF token in its form (and a same-origin Origin when one is sent).
- Every response forbids inline scripts and framing (Content-Security-Policy, X-Frame-Options),
  sniffing, cross-site referrers and caching.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from hmac import compare_digest
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "memd_ui_session"
CSRF_FIELD = "csrf"
MAX_FORM_BYTES = 1 << 20
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # "no-referrer" makes Chromium send Origin: null
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
LOCAL_NAMES = ("127.0.0.1", "localhost")


class Guard:
    """The secrets of one `memd ui` run: the login token, the session cookie, the CSRF token."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.session = secrets.token_urlsafe(32)
        self.csrf = secrets.token_urlsafe(32)

    def host_ok(self, host: str) -> bool:
        name, sep, port = host.strip().lower().rpartition(":")
        if not sep:
            name, port = port, ""
        if name not in LOCAL_NAMES:
            return False
        return port == "" or port == str(self.port)

    def origin_ok(self, origin: str) -> bool:
        return origin in {f"http://{n}:{self.port}" for n in LOCAL_NAMES}

    def session_ok(self, cookie: str | None) -> bool:
        return bool(cookie) and compare_digest(str(cookie).encode(), self.session.encode())

    def token_ok(self, token: str) -> bool:
        return compare_digest(token.encode(), self.token.encode())

    def csrf_ok(self, value: str | None) -> bool:
        return bool(value) and compare_digest(str(value).encode(), self.csrf.encode())


class GuardMiddleware:
    """Applies :class:`Guard` to every HTTP request before the app sees it."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in HEADERS.items():
                    headers[key] = value
            await send(message)

        refusal, body = await self.check(scope, receive)
        if refusal is not None:
            await refusal(scope, receive, send_secured)
            return
        if body is not None:
            replayed = False

            async def receive_body() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, receive_body, send_secured)
            return
        await self.app(scope, receive, send_secured)

    async def check(self, scope: Scope, receive: Receive) -> tuple[Response | None, bytes | None]:
        """A refusal (or the login redirect), else None and the POST body it already read."""
        guard = self.guard
        headers = Headers(scope=scope)
        if not guard.host_ok(headers.get("host", "")):
            return refuse(421, "memd ui answers only to http://127.0.0.1 or http://localhost"), None
        request = Request(scope)
        token = request.query_params.get("token")
        if token is not None:
            if not guard.token_ok(token):
                return refuse(403, "wrong token: open the URL that `memd ui` printed"), None
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = scope["path"] + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, guard.session, httponly=True, samesite="strict", path="/")
            return response, None
        if not guard.session_ok(request.cookies.get(COOKIE)):
            return refuse(
                401, "not logged in: open the URL (with its token) that `memd ui` printed"
            ), None
        method = scope["method"]
        if method in ("GET", "HEAD"):
            return None, None
        if method != "POST":
            return refuse(405, f"{method} is not allowed"), None
        origin = headers.get("origin")
        if origin is not None and not guard.origin_ok(origin):
            return refuse(403, "cross-origin request refused"), None
        body = await read_body(receive)
        if body is None:
            return refuse(413, "form too large"), None
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not guard.csrf_ok(form.get(CSRF_FIELD)):
            return refuse(403, "missing or wrong CSRF token: reload the page and try again"), None
        return None, body


async def read_body(receive: Receive) -> bytes | None:
    chunks = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks += message.get("body", b"")
        if len(chunks) > MAX_FORM_BYTES:
            return None
        if not message.get("more_body"):
            break
    return bytes(chunks)


def refuse(status: int, text: str) -> Response:
    return PlainTextResponse(f"{status}: {text}\n", status_code=status)
