"""End-to-end fixtures: a real ``streamlit run app.py`` server on a free port against a test store,
driven by real headless Chromium (Debian's ``/usr/bin/chromium`` through Playwright).

Usable by every browser suite:

- ``start_app(db_url, accounts=[("alice", "admin", "pw"), ...], env={...})`` (fixture
  ``app_factory``) migrates the store, creates the accounts (``automonitor.annotation.accounts.create_user``),
  starts the server and returns an :class:`AppServer` (``.url``, ``.port``, ``.log()``); every server
  started is stopped at the end of the session.
- ``migrated_sqlite(path)`` (session fixture) -> URL: a SQLite store at ``path`` that is a backup-API copy
  of the run's empty store migrated to head (``empty_sqlite_template``), so a suite's ``init_db`` on it
  finds the schema current instead of migrating a new file.
- ``browser`` (session): a Chromium browser; ``new_page(browser)``/``page`` fixture: a fresh context
  and page (1400x1000) with dialog/console capture: ``page.dialogs`` lists every alert/confirm that
  fired (and dismisses it), ``page.console_errors`` collects console errors.
- ``shot(page, name)`` saves ``test-artifacts/<name>.png`` (git-ignored; CI keeps it as an artifact);
  ``viewport_shot(page, name)`` the viewport only, at its size.
- ``wait_app(page)`` waits until the Streamlit script run finished (no "running" indicator).
- ``log_in(page, name, password, url=..., retry=...)`` fills in and submits the login form.
- ``lockstep({page: actions, ...})`` drives several pages (two annotators) at once: each page's generator
  yields its next key press (or a callable action), every page acts, then every page settles; the
  pages' waits overlap instead of adding up; ``log_in_steps(page, name, password, url=...)`` is ``log_in``'s
  steps for it.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Union

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = os.environ.get("AUTOMONITOR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
STREAMLIT = Path(sys.executable).parent / "streamlit"


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    """A running ``streamlit run app.py`` process (started by :func:`start_app`)."""

    port: int
    db_url: str
    proc: subprocess.Popen
    log_path: Path
    extra: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def stop_all(servers: Iterable[AppServer]) -> None:
    """Stop every server at once: each is sent SIGTERM first, then each is waited for (a Streamlit
    server takes 1.5-2 s to shut down; one after the other, a worker's 10 servers cost 15-20 s)."""
    servers = [s for s in servers if s.proc.poll() is None]
    for s in servers:
        s.proc.terminate()
    for s in servers:
        s.stop()  # waits for the exit (SIGKILL after 15 s)


def create_accounts(db_url: str, accounts: Iterable[tuple[str, str, str]]) -> None:
    """Create ``(name, role, password)`` accounts in the store at ``db_url`` (migrated first)."""
    from automonitor.annotation.accounts import create_user
    from store import get_engine, init_db

    eng = init_db(get_engine(db_url, fresh=True))
    try:
        for name, role, password in accounts:
            create_user(eng, name, role, password)
    finally:
        eng.dispose()


def start_app(
    db_url: str,
    *,
    accounts: Iterable[tuple[str, str, str]] = (),
    env: dict | None = None,
    log_dir: Path | None = None,
    timeout: float = 90,
    cwd: Path | None = None,
) -> AppServer:
    """Start the app on a free port against the store ``db_url`` and wait until it is healthy.

    ``accounts`` are created first; ``env`` adds environment variables to the server process (keys
    would come from there, never from a form); ``cwd``: the server's working directory (default the
    repository; where the app looks for ``make demo``'s ``demo-llm.log``). Raises ``RuntimeError`` with the server log when the
    server does not come up within ``timeout`` seconds.
    """
    from store import get_engine, init_db

    eng = init_db(get_engine(db_url, fresh=True))
    eng.dispose()
    if accounts:
        create_accounts(db_url, accounts)
    port = free_port()
    log_dir = log_dir or ARTIFACTS
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"streamlit-{port}.log"
    full_env = {**os.environ, "AUTOMONITOR_DB": db_url, "PYTHONUNBUFFERED": "1", **(env or {})}
    cmd = [
        str(STREAMLIT),
        "run",
        str(REPO / "app.py"),
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd or REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    server = AppServer(port=port, db_url=db_url, proc=proc, log_path=log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{server.log()}")
        try:
            with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.05)  # a refused connection costs nothing: the server is used as soon as it answers
    server.stop()
    raise RuntimeError(f"streamlit did not become healthy in {timeout}s:\n{server.log()}")


@pytest.fixture(scope="session")
def migrated_sqlite(empty_sqlite_template):
    """``migrated_sqlite(path)`` -> ``sqlite:///<path>``: ``path`` (a new file) becomes a copy of the run's
    empty store migrated to head by the real ``store.init_db`` (SQLite's backup API); ``init_db`` on it
    then finds the schema current, as a second command would. Raises ``FileExistsError`` if ``path`` exists."""

    def make(path: Path) -> str:
        if path.exists():
            raise FileExistsError(path)
        with sqlite3.connect(empty_sqlite_template) as src, sqlite3.connect(path) as dst:
            src.backup(dst)
        src.close()
        dst.close()
        return f"sqlite:///{path}"

    return make


@pytest.fixture(scope="session")
def app_factory():
    """``app_factory(db_url, accounts=..., env=...)`` -> :class:`AppServer`; each is sent SIGTERM at the
    end of its test module (:func:`_stop_module_servers`) and all are waited for at the end of the session."""
    servers: list[AppServer] = []

    def factory(db_url: str, **kw) -> AppServer:
        s = start_app(db_url, **kw)
        servers.append(s)
        return s

    factory.servers = servers  # type: ignore[attr-defined]
    yield factory
    stop_all(servers)


@pytest.fixture(scope="module", autouse=True)
def _stop_module_servers(request):
    """At the end of a test module, SIGTERM to every server it started (no test of another module uses
    them), without waiting: a server's 1.5-2 s shut-down goes on beside the next module instead of
    piling up in the session's tear-down (``app_factory`` waits for them there)."""
    servers = request.getfixturevalue("app_factory").servers
    first = len(servers)
    yield
    for s in servers[first:]:
        if s.proc.poll() is None:
            s.proc.terminate()


@pytest.fixture(scope="session")
def playwright_instance():
    from playwright.sync_api import expect, sync_playwright

    # a Streamlit rerun can still be drawing when wait_app returns: visibility checks wait for it
    # (expect(...).to_be_visible(), never a bare `assert locator.is_visible()`, which does not wait)
    expect.set_options(timeout=15_000)
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance):
    """Headless Debian Chromium (Playwright's own browser download is not used)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM} (run scripts/ensure_chromium.sh)")
    b = playwright_instance.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    yield b
    b.close()


def new_page(browser, width: int = 1400, height: int = 1000):
    """A fresh context + page; ``page.dialogs`` records every JS dialog (alert would mean XSS),
    ``page.console_errors`` every console error."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    ctx.add_init_script(_ACTIVITY_JS)  # every page and frame of the context: see wait_app
    page = ctx.new_page()
    page.dialogs = []
    page.console_errors = []

    def on_dialog(d):
        page.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(30_000)
    return page


@pytest.fixture
def page(browser):
    p = new_page(browser)
    yield p
    p.context.close()


def shot(page, name: str, max_height: int = 5000) -> Path:
    """Whole-app screenshot ``test-artifacts/<name>.png``. Streamlit scrolls inside its main
    container, so the viewport is stretched to the content's height for the shot, then restored."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    vp = page.viewport_size
    h = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]')
                                  || document.scrollingElement; return m.scrollHeight; }""")
    if h and h > vp["height"]:
        page.set_viewport_size({"width": vp["width"], "height": min(int(h) + 40, max_height)})
        # the width is kept, so no chart redraws: the new height's layout is painted after two frames
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.screenshot(path=str(path), full_page=True)
    if page.viewport_size != vp:
        page.set_viewport_size(vp)
    return path


def viewport_shot(page, name: str) -> Path:
    """Screenshot of the viewport only (what a user sees at its size, e.g. 1280x720, never stretched)
    as ``test-artifacts/<name>.png``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


# Installed in every frame of a test's browser context (``new_page``) before the page's own scripts run:
# records on the top window when anything that can start a Streamlit script run last happened, in
# ``Date.now()`` ms: a key, mouse or input event in any frame (component iframes included), a message sent
# on the app's websocket (a rerun request, a heartbeat) and a change of the run state or of an element's
# staleness; and whether a sent message still waits for the server's first answer (``__amSent`` later
# than ``__amHeard``: a rerun request the server has not started yet).
_ACTIVITY_JS = """(() => {
  let top = window;
  try { if (window.top.__amLast !== undefined) top = window.top; } catch (e) {}
  const touch = () => { top.__amLast = Date.now(); };
  if (top === window) { window.__amLast = Date.now(); window.__amSent = 0; window.__amHeard = 0; }
  for (const ev of ['keydown', 'keyup', 'mousedown', 'mouseup', 'click', 'input', 'change']) {
    window.addEventListener(ev, touch, true);
  }
  if (top !== window || !window.WebSocket) return;
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    if (!this.__amHeard) {
      this.__amHeard = true;
      this.addEventListener('message', () => { window.__amHeard = Date.now(); touch(); });
    }
    window.__amSent = Date.now();
    touch();
    return send.call(this, data);
  };
  const watch = () => new MutationObserver(touch).observe(document.documentElement, {
    subtree: true, attributes: true,
    attributeFilter: ['data-test-script-state', 'data-test-connection-state', 'data-stale'],
  });
  if (document.documentElement) watch(); else document.addEventListener('DOMContentLoaded', watch);
})()"""

_IDLE_JS = """() => { const a = document.querySelector('[data-testid="stApp"]');
    if (!a) return false;
    return a.getAttribute('data-test-script-state') === 'notRunning'
        && a.getAttribute('data-test-connection-state') === 'CONNECTED'
        && !document.querySelector('[data-stale="true"]'); }"""

# idle, the server has answered the last message sent to it (or 2 s went by: a message it does not answer),
# and nothing happened for ``quiet`` ms
_SETTLED_JS = (
    "(quiet) => (" + _IDLE_JS + ")() && (window.__amSent <= window.__amHeard || Date.now() - window.__amSent > 2000)"
    " && Date.now() - window.__amLast >= quiet"
)

#: how long nothing may happen before a page counts as settled (a component that sets its value once it is
#: drawn asks for its rerun within this time after the run that drew it; a key press is sent at once)
QUIET_MS = 250

#: counts a page's script runs in ``window.__amRuns`` (each time the app's script state turns to running); add it
#: with ``add_init_script`` before the page's scripts (the returning-browser test, ``bench_page_cold.py``)
RUNS_JS = """(() => {
  if (window.top !== window) return;
  window.__amRuns = 0;
  let last = null;
  const note = () => {
    const a = document.querySelector('[data-testid="stApp"]');
    const s = a && a.getAttribute('data-test-script-state');
    if (s !== last) { if (s === 'running') window.__amRuns += 1; last = s; }
  };
  const watch = () => new MutationObserver(note).observe(document.documentElement,
    {subtree: true, childList: true, attributes: true, attributeFilter: ['data-test-script-state']});
  if (document.documentElement) watch(); else document.addEventListener('DOMContentLoaded', watch);
})()"""


def wait_app(page, timeout: float = 60_000) -> None:
    """Wait until the Streamlit script run has finished, no element is stale, the server has answered
    every message sent to it (a rerun asked for by a key press or click has started; at most 2 s
    are given to a message it does not answer) and nothing (no
    input, run-state change or message) happened for :data:`QUIET_MS` ms: a rerun triggered by a run or
    an action starts within that time. A page opened without :func:`new_page`'s activity recorder falls
    back to checking the idle state three times, 250 ms apart."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    if page.evaluate("() => window.__amLast !== undefined"):
        page.wait_for_function(_SETTLED_JS, arg=QUIET_MS, timeout=timeout, polling=50)
        return
    for _ in range(2):
        page.wait_for_function(_IDLE_JS, timeout=timeout)
        page.wait_for_timeout(250)
    page.wait_for_function(_IDLE_JS, timeout=timeout)


def log_in(page, name: str, password: str, *, url: str | None = None, retry: bool = False) -> None:
    """Fill in and submit the login form, then :func:`wait_app`. With ``url``, open it first (a new page
    load is a new, logged-out session, so the form is served at every page's URL). With ``retry``, wait
    until the form is gone and submit it once more if it was not (a form filled while the first script
    run is still wiring it can be lost); without, a refused login can be checked afterwards."""
    if url is not None:
        _open_logged_out(page, url)
        wait_app(page)
    for attempt in range(2 if retry else 1):
        _submit_login(page, name, password)
        if not retry:
            break
        try:
            page.wait_for_selector('input[type="password"]', state="detached", timeout=20_000)
            break
        except Exception:
            if attempt:
                raise
            wait_app(page)
    wait_app(page)


#: what a :func:`lockstep` script yields: a key for ``page.keyboard.press``, or an action to call
Step = Union[str, Callable[[], object]]


def _open_logged_out(page, url: str) -> None:
    page.context.clear_cookies()  # a fresh login: the session cookie would keep an earlier one
    page.goto(url)


def _submit_login(page, name: str, password: str) -> None:
    page.get_by_role("textbox", name="User name").fill(name)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def log_in_steps(page, name: str, password: str, *, url: str | None = None) -> Iterator[Step]:
    """:func:`log_in` without ``retry`` as :func:`lockstep` steps (``yield from`` it in a page's script):
    open ``url`` afresh (cookies cleared), then fill in and submit the form; each step is settled by
    ``lockstep``, so several people log in at once."""
    if url is not None:
        yield lambda: _open_logged_out(page, url)
    yield lambda: _submit_login(page, name, password)


def lockstep(scripts: dict[object, Iterator[Step]]) -> None:
    """Drive several pages of :func:`new_page` at once, as several people work at once: ``scripts`` maps
    each page to an iterator (a generator) of its steps, each a key (pressed with ``page.keyboard.press``, on
    whatever has the focus: a script blurs or tabs first itself) or a callable (a click, a fill). In each
    round every page that has a step left does it, then those pages are settled together: each is waited
    for (:func:`wait_app`), and again until all of them are settled at one moment (every one idle, answered
    and quiet for :data:`QUIET_MS` ms), so that a rerun one session's run asked for (``st.rerun``), which
    the server starts late while it runs another session's script, is not missed. Only then does any
    script go on, so a script's code between two ``yield``s (its reads and assertions) runs on a settled
    page, as after ``press(key); wait_app(page)``, while the pages' script runs and quiet waits overlap
    instead of adding up. A script that ends drops out; an exception in a script or an action propagates
    at once."""
    live: dict = dict(scripts)
    while live:
        acted = []
        for page, script in list(live.items()):
            step = next(script, None)
            if step is None:
                del live[page]
                continue
            if isinstance(step, str):
                page.keyboard.press(step)
            else:
                step()
            acted.append(page)
        while acted:
            for page in acted:
                wait_app(page)
            if all(page.evaluate(_SETTLED_JS, QUIET_MS) for page in acted):
                break


@pytest.fixture(scope="session")
def e2e():
    """The helpers above as one object (``e2e.new_page``, ``e2e.shot``, ``e2e.wait_app``, ``e2e.log_in``,
    ``e2e.start_app``, ``e2e.create_accounts``, ``e2e.viewport_shot``, ``e2e.lockstep``, ``e2e.log_in_steps``),
    for test modules that cannot import this conftest."""
    from types import SimpleNamespace

    return SimpleNamespace(
        new_page=new_page,
        shot=shot,
        viewport_shot=viewport_shot,
        wait_app=wait_app,
        log_in=log_in,
        start_app=start_app,
        create_accounts=create_accounts,
        lockstep=lockstep,
        log_in_steps=log_in_steps,
        ARTIFACTS=ARTIFACTS,
        RUNS_JS=RUNS_JS,
    )
