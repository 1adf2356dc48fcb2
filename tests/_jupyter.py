"""A Jupyter server for the browser tests and benchmarks: JupyterLab or Notebook 7, headless on
127.0.0.1, with a token, its own config, runtime, settings and workspace folders (nothing of the
user's is read or written), no news, no update check and no announcements toast.

    with jupyter_server("jupyterlab", root, home) as server:
        page.goto(server.url("lab/tree/quickstart.ipynb"))

The caller checks first that the app is installed (`_chromium.missing("jupyterlab")`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 90
# the command-line options of each app that keep it off the network
_QUIET = {
    "jupyterlab": [
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ],
    "notebook": [],
}


@dataclass(frozen=True)
class Server:
    """A running server: `base` (http://127.0.0.1:PORT), its `token`, its `log` file and its
    process id."""

    base: str
    token: str
    log: Path
    pid: int

    def url(self, path: str) -> str:
        """`path` on the server, with the token (`path` may hold a query already)."""
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str) -> Any:
        """The JSON of a GET of `api/<path>`."""
        with urllib.request.urlopen(self.url(f"api/{path}"), timeout=10) as r:
            return json.load(r)

    def put_notebook(self, name: str, cells: list[str]) -> None:
        """Write a notebook of code `cells` (no outputs) into the served folder."""
        nb = {
            "cells": [
                {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                 "outputs": [], "source": src}
                for i, src in enumerate(cells)
            ],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }  # fmt: skip
        body = json.dumps({"type": "notebook", "format": "json", "content": nb}).encode()
        request = urllib.request.Request(
            self.url(f"api/contents/{name}"), data=body, method="PUT",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30):
            pass

    def kernel_states(self, notebook: str) -> list[str | None]:
        """The execution state of each kernel whose session is `notebook`'s."""
        return [
            (s.get("kernel") or {}).get("execution_state")
            for s in self.api("sessions")
            if str(s.get("path", "")).endswith(notebook)
        ]


def wait_for_kernel(page: Any, server: Server, notebook: str, timeout_s: float = 120) -> None:
    """Accept a "Select Kernel" dialog if one shows on `page`; wait until `notebook`'s kernel
    is idle.

    Raises:
        TimeoutError: When it is not idle within `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        accept = page.locator(".jp-Dialog .jp-mod-accept")
        if accept.count() and accept.first.is_visible():
            accept.first.click()
        if "idle" in server.kernel_states(notebook):
            return
        time.sleep(0.5)
    raise TimeoutError(f"{notebook}: no idle kernel after {timeout_s:.0f} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _configure(home: Path) -> dict[str, str]:
    """The environment of a server whose config lives under `home`; written there."""
    env = {
        **os.environ,
        "EVALBOOK_PROGRESS": "0",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    # Every cell rendered at once (no notebook windowing), so that every output can be checked.
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    labconfig = home / "config" / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(
        json.dumps(
            {
                # no "get notified about Jupyter news?" toast over the screenshots
                "disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True},
                # window.jupyterapp, to run commands (theme, run a cell) without menu clicks
                "exposeAppInBrowser": True,
            }
        )
    )
    return env


@contextlib.contextmanager
def jupyter_server(app: str, root: Path, home: Path) -> Iterator[Server]:
    """Serve `root` with `app` ("jupyterlab" or "notebook"); stopped on exit.

    Raises:
        RuntimeError: When the server does not answer within START_TIMEOUT_S (its log in it).
    """
    env = _configure(home)
    port, token = free_port(), secrets.token_hex(16)
    log_path = home / f"{app}.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", app, "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", *_QUIET[app]],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            found = Server(f"http://127.0.0.1:{port}", token, log_path, server.pid)
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                try:
                    found.api("status")
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        log.flush()
                        why = f"{app} did not start:\n" + log_path.read_text()
                        raise RuntimeError(why) from None
                    time.sleep(0.5)
            yield found
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
