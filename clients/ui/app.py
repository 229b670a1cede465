"""The web UI's HTTP server (aiohttp): a separate process beside a running service, reading it
through the API's RPCs with each browser user's own bearer token (docs/ui.md says why).

Routes: ``/`` the caller's sessions, ``/session/{id}`` one session, ``/perfect-info/{id}`` a
perfect-information session's model weights, each with a ``/live`` fragment the page's script
polls; ``/login`` stores the token in a cookie of this site (HttpOnly,
SameSite=Strict); a request may instead carry ``Authorization: Bearer ...`` itself. Errors of the
service come back as pages: UNAUTHENTICATED asks for a token, NOT_FOUND (also another owner's
session) says there is no such session, UNAVAILABLE says the service cannot be reached.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape
from typing import Any

from aiohttp import web

from oppmodel.clients.ui import pages
from oppmodel.clients.ui.reader import ServiceReader
from oppmodel.modeling import errors

COOKIE = "oppmodel_token"
_READER = web.AppKey("reader", ServiceReader)
_SETTINGS = web.AppKey("settings", object)
_SECURITY_HEADERS = {
    # nothing but this site's own files: no asset from elsewhere, no inline script
    "Content-Security-Policy": "default-src 'self'; style-src 'self'; script-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class UiConfig:
    """Where the UI listens, which service it reads, and how often a page refreshes."""

    service: str
    host: str = "127.0.0.1"
    port: int = 8080
    refresh_seconds: float = 1.0
    model_seconds: float = 5.0  # a busy session's models are read again at most this often
    root_certificates: bytes | None = None
    timeout: float = 30.0


def token_of(request: web.Request) -> str | None:
    """The browser user's token: the request's own bearer header, else the login cookie."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header[len("Bearer ") :] or None
    return request.cookies.get(COOKIE) or None


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _service_errors(handler: Handler) -> Handler:
    """Turn the service's refusals into pages (a fragment gets the status and one line)."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        fragment = request.path.endswith("/live")
        try:
            return await handler(request)
        except errors.UnauthenticatedError as exc:
            if fragment:
                return web.Response(status=401, text=f"a token is needed: {exc}")
            raise web.HTTPSeeOther(f"/login?next={request.path}") from None
        except (errors.NotFoundError, errors.InvalidArgumentError) as exc:
            return _html(pages.page("Not found", _line(exc)), 404)
        except (errors.UnavailableError, errors.DeadlineExceededError) as exc:
            return _html(pages.page("Service unavailable", _line(exc)), 503)

    return wrapped


def _line(exc: BaseException) -> str:
    """The service's refusal as one paragraph of the page."""
    return f'<p class="error">{escape(" ".join(str(exc).split()))}</p>'


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")


def _refresh_ms(request: web.Request) -> int:
    settings = request.app[_SETTINGS]
    assert isinstance(settings, UiConfig)
    return round(settings.refresh_seconds * 1000)


@_service_errors
async def _sessions(request: web.Request) -> web.StreamResponse:
    body = pages.session_list(await request.app[_READER].sessions(token_of(request)))
    return _html(pages.page("Sessions", body, live="/live", refresh_ms=_refresh_ms(request)))


@_service_errors
async def _sessions_live(request: web.Request) -> web.StreamResponse:
    return _html(pages.session_list(await request.app[_READER].sessions(token_of(request))))


def _session_pages(
    title: str, path: str, view_of: Callable[..., Awaitable[Any]], panel: Callable[[Any], str]
) -> tuple[Handler, Handler]:
    """The page of one session (``path`` + its id) and its live fragment: ``view_of(reader,
    token, session_id)`` reads the view, ``panel`` draws it, once per view (a view is one read
    of the session's models, cached by the reader): a refresh between two reads costs one call
    (GetWinnings; a perfect-information session's GetPerfectInfoSession) and no drawing, and a
    page that holds the view's panel gets 304 and no body."""

    async def drawn(request: web.Request) -> Any:
        reader = request.app[_READER]
        view = await view_of(reader, token_of(request), request.match_info["session_id"])
        if view.html is None:
            view.html = panel(view)
        return view

    @_service_errors
    async def page(request: web.Request) -> web.StreamResponse:
        session_id = request.match_info["session_id"]
        view = await drawn(request)
        return _html(
            pages.page(
                f"{title} {session_id}",
                view.html,
                live=f"{path}/{session_id}/live",
                refresh_ms=_refresh_ms(request),
                tag=view.tag,
            )
        )

    @_service_errors
    async def live(request: web.Request) -> web.StreamResponse:
        view = await drawn(request)
        if request.headers.get("If-None-Match") == view.tag:
            return web.Response(status=304, headers={"ETag": view.tag})
        response = _html(view.html)
        response.headers["ETag"] = view.tag
        return response

    return page, live


_session, _session_live = _session_pages(
    "Session", "/session", ServiceReader.session_view, pages.session_panel
)
_weights, _weights_live = _session_pages(
    "Perfect-information session", "/perfect-info", ServiceReader.weights_view, pages.weights_panel
)


def _local(path: str) -> str:
    """``path`` if it is a path of this site (never another site's URL), else ``/``."""
    return path if path.startswith("/") and not path.startswith("//") else "/"


async def _login_form(request: web.Request) -> web.StreamResponse:
    return _html(pages.page("Token", pages.login_form(_local(request.query.get("next", "/")))))


async def _login(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    token = str(form.get("token", "")).strip()
    back = _local(str(form.get("next", "/")))
    if not token:
        message = "token: give the bearer token"
        return _html(pages.page("Token", pages.login_form(back, message)), 400)
    response = web.HTTPSeeOther(back)
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
    raise response


async def _static(request: web.Request) -> web.StreamResponse:
    if request.match_info["name"] == "ui.css":
        return web.Response(text=pages.STYLE, content_type="text/css")
    return web.Response(text=pages.SCRIPT, content_type="text/javascript")


@web.middleware
async def _headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
        response.headers.update(_SECURITY_HEADERS)
        raise
    response.headers.update(_SECURITY_HEADERS)
    return response


def build_app(config: UiConfig) -> web.Application:
    """The aiohttp application of ``config`` (its reader opens on start, closes on cleanup)."""
    app = web.Application(middlewares=[_headers])
    app[_SETTINGS] = config

    async def reader_context(app: web.Application):  # type: ignore[no-untyped-def]
        app[_READER] = ServiceReader(
            config.service,
            root_certificates=config.root_certificates,
            timeout=config.timeout,
            model_seconds=config.model_seconds,
        )
        yield
        await app[_READER].close()

    app.cleanup_ctx.append(reader_context)
    app.router.add_get("/", _sessions)
    app.router.add_get("/live", _sessions_live)
    app.router.add_get("/session/{session_id}", _session)
    app.router.add_get("/session/{session_id}/live", _session_live)
    app.router.add_get("/perfect-info/{session_id}", _weights)
    app.router.add_get("/perfect-info/{session_id}/live", _weights_live)
    app.router.add_get("/login", _login_form)
    app.router.add_post("/login", _login)
    app.router.add_get("/static/{name:ui\\.(css|js)}", _static)
    return app


async def start(config: UiConfig) -> tuple[web.AppRunner, int]:
    """Start serving ``config`` on this event loop; (the runner to clean up, the bound port)."""
    runner = web.AppRunner(build_app(config), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()  # the reader's channel too
        raise
    return runner, int(runner.addresses[0][1])


async def serve_forever(config: UiConfig, on_ready: Callable[[int], None]) -> None:
    """Serve until cancelled (Ctrl-C); ``on_ready(port)`` once listening."""
    runner, port = await start(config)
    on_ready(port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


class BackgroundUi:
    """The UI on its own event loop in a daemon thread (tests, benchmarks): ``with
    BackgroundUi(config) as port: ...`` serves on the returned port until the block ends."""

    def __init__(self, config: UiConfig) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    def __enter__(self) -> int:
        self._thread.start()
        try:
            self._runner, port = asyncio.run_coroutine_threadsafe(
                start(self.config), self._loop
            ).result()
        except BaseException:
            self.__exit__()
            raise
        return port

    def __exit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
