"""A real browser: JupyterLab on 127.0.0.1, notebooks run by Chromium via Playwright.

Chromium is Debian's (`/usr/bin/chromium`, installed by `.ci/run`); nothing is downloaded
(never `playwright install`). The notebooks are copied to a temporary folder so that JupyterLab
never writes outputs into the committed ones. Screenshots go to a temporary folder, or to
`docs/img/` (which the README shows) with EVALBOOK_UPDATE_SCREENSHOTS=1. Skipped when chromium,
JupyterLab or Playwright is missing, except under CI=true.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
IMG = (
    ROOT / "docs" / "img"
    if os.environ.get("EVALBOOK_UPDATE_SCREENSHOTS") == "1"
    else Path(tempfile.mkdtemp(prefix="evalbook-screenshots-"))
)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RUN_ALL_TIMEOUT_S = 240


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    for module in ("playwright", "jupyterlab"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A headless JupyterLab serving a copy of notebooks/; yields its base URL with token."""
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run in CI: {missing}")
        pytest.skip(missing)
    home = tmp_path_factory.mktemp("lab")
    work = home / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "EVALBOOK_PROGRESS": "0",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    # No "get notified about Jupyter news?" toast over the screenshots.
    (home / "config" / "labconfig").mkdir(parents=True)
    (home / "config" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    log = (home / "lab.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={work}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (home / "lab.log").read_text())
                time.sleep(0.5)
        yield f"{base}|{token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(lab: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            user_data_dir=str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


def _wait_for_kernel(page: Any, base: str, token: str, notebook: str) -> None:
    """Accept a "Select Kernel" dialog if one shows; wait until the notebook's kernel is idle."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        accept = page.locator(".jp-Dialog .jp-mod-accept")
        if accept.count() and accept.first.is_visible():
            accept.first.click()
        with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
            sessions = json.load(r)
        states = [
            (s.get("kernel") or {}).get("execution_state")
            for s in sessions
            if str(s.get("path", "")).endswith(notebook)
        ]
        if "idle" in states:
            return
        time.sleep(0.5)
    pytest.fail(f"{notebook}: no idle kernel after 120 s")


def _run_all(context: Any, lab: str, notebook: str) -> Any:
    """Open `notebook` with `?reset`, run every cell, wait until each has run; return the page."""
    base, token = lab.split("|")
    page = context.new_page()
    page.goto(f"{base}/lab/tree/{notebook}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    _wait_for_kernel(page, base, token, notebook)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    script = """() => [...document.querySelectorAll(
        '.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim())"""
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
    prompts: list[str] = []
    while time.monotonic() < deadline:
        prompts = page.evaluate(script)
        if prompts and all(re.fullmatch(r"\[\d+\]:?", p) for p in prompts):
            break
        time.sleep(1)
    else:
        shot = Path(tempfile.gettempdir()) / f"evalbook-failed-{notebook}.png"
        page.screenshot(path=str(shot), full_page=True)
        pytest.fail(f"{notebook}: not every cell ran in {RUN_ALL_TIMEOUT_S} s: {prompts} ({shot})")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, tracebacks
    return page


def test_quickstart_shows_the_headline_card(browser: Any, lab: str) -> None:
    page = _run_all(browser, lab, "quickstart.ipynb")
    card = page.locator("[data-evalbook='run']").first
    card.scroll_into_view_if_needed()
    headline = card.locator("[data-evalbook='headline']")
    # JupyterLab renders an output once it is scrolled into view (its notebook windowing): wait
    # for the card's text rather than read it at once
    page.wait_for_function(
        "() => { const h = document.querySelector(\"[data-evalbook='run'] "
        "[data-evalbook='headline']\"); return h !== null && h.innerText.includes('completed'); }",
        timeout=30_000,
    )
    assert headline.is_visible()
    text = headline.inner_text()
    assert "Headline · answer.pass" in text and "Pass" in text and "completed" in text
    assert "errored 1" in text
    IMG.mkdir(parents=True, exist_ok=True)
    card.screenshot(path=str(IMG / "headline-card.png"))
    # The interactive view rendered as a live widget (tabs), not only as static HTML.
    tabs = page.locator(".jp-OutputArea-output .lm-TabBar-tab, .jp-OutputArea-output .p-TabBar-tab")
    tabs.first.wait_for(timeout=30_000)
    assert "Unscored reasons" in " ".join(tabs.all_inner_texts())
    # The case explorer works in the browser: filter to the errored case and read it.
    widget = page.locator(".jp-OutputArea-output", has=page.locator(".lm-TabBar-tab")).first
    widget.locator(".lm-TabBar-tab", has_text="Cases").click()
    # the visible one: the hidden Scores tab holds dropdowns ("Slice by") earlier in the page
    widget.locator(".widget-dropdown select:visible").first.select_option("errored")
    detail = widget.locator("[data-evalbook='case']")
    detail.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-evalbook=\"case\"]')]"
        ".some(e => e.innerText.includes('ZeroDivisionError'))",
        timeout=30_000,
    )
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(IMG / "case-explorer.png"))
    page.close()


def test_comparing_runs_shows_the_comparison(browser: Any, lab: str) -> None:
    page = _run_all(browser, lab, "comparing-runs.ipynb")
    view = page.locator("[data-evalbook='comparison']").first
    view.scroll_into_view_if_needed()
    text = view.inner_text()
    assert "baseline → candidate" in text and "regressed" in text
    IMG.mkdir(parents=True, exist_ok=True)
    view.screenshot(path=str(IMG / "comparison.png"))
    page.close()
