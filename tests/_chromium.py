"""Debian's Chromium for the browser tests: where it is, how it is started, and what a test does
when it or a Python module it needs is missing (skip on a contributor's machine, fail under CI:
`.ci/run` installs it, so a missing browser there is a broken set-up, never a green run).

Nothing is downloaded (never `playwright install`), and the flags keep the browser off the
network beyond 127.0.0.1 (no background updates, sync or QUIC).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


def missing(*modules: str) -> str | None:
    """Why a browser test cannot run here (None: it can): Chromium, playwright or `modules`."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    for module in ("playwright", *modules):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[test]')"
    return None


def require(*modules: str) -> None:
    """Skip the test when `missing(*modules)`; under CI fail it instead."""
    reason = missing(*modules)
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser test cannot run in CI: {reason}")
        pytest.skip(reason)


@contextlib.contextmanager
def chromium(*modules: str) -> Iterator[Any]:
    """A headless Chromium (playwright `Browser`), closed on exit; `require`s it first."""
    require(*modules)
    from playwright.sync_api import sync_playwright  # optional: the [test] extra

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def persistent(profile: Path, *modules: str, **options: Any) -> Iterator[Any]:
    """A headless Chromium with its profile in `profile` (a playwright `BrowserContext`, which
    keeps one set of pages, cookies and storage across them), closed on exit; `require`s it."""
    require(*modules)
    from playwright.sync_api import sync_playwright  # optional: the [test] extra

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            user_data_dir=str(profile), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, **options,
        )  # fmt: skip
        try:
            yield context
        finally:
            context.close()


def screenshots(prefix: str) -> Path:
    """Where a browser test saves its screenshots: `docs/img/` with
    EVALBOOK_UPDATE_SCREENSHOTS=1 (they are regenerated), else a new temporary folder."""
    if os.environ.get("EVALBOOK_UPDATE_SCREENSHOTS") == "1":
        return Path(__file__).resolve().parents[1] / "docs" / "img"
    return Path(tempfile.mkdtemp(prefix=prefix))


@contextlib.contextmanager
def profile_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A `persistent` Chromium context (1280 × 1000) in a fresh profile folder of the test run."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    with persistent(profile, viewport={"width": 1280, "height": 1000}) as context:
        yield context
