"""`eb.show(run)` end to end in Chromium: from the reader's action to the DOM showing the answer.

A stored run (`--run PATH`, or the run of `--cases` samples that `bench_case_table.py` builds
and keeps under `--store`: an instant task, 3 scores) is opened in a notebook in a headless
JupyterLab on 127.0.0.1 (tests/_jupyter.py, as the browser tests start it) and read by Debian's
Chromium through Playwright (tests/_chromium.py: its path and flags; nothing is downloaded).
Timed in the page, with `performance.now()`:

- the open, each of `--opens` times in a fresh kernel (restarted, outputs cleared; evalbook
  imported by a cell before): the cell `run = eb.load_run(PATH)` from its execution to its
  reply; the cell `eb.show(run)` from its execution to the view drawn (its tab bar, after the
  front end's "hello" is answered); and, in another fresh kernel, `eb.show(eb.load_run(PATH))`
  as one cell. Each cell also prints its time in the kernel (wall and CPU), to tell the
  kernel's part from the rest (messages, the widget's front end, the DOM).
- each action, `--repeats` rounds on the drawn view: the Case table tab, a header sort
  (ascending, descending, off), the outcome filter (errored, then all), a search (its text
  typed, then Enter), the next page, the last page, the first page, a row's "open". The action
  is the event the front end listens to, dispatched in the page on the control (a `click()`,
  a `change`, the search's `input` then `change` as Enter sends it); the answer is the view's
  redraw (the front end replaces the view's HTML with the kernel's answer), then the next
  animation frame (the frame that paints it). The kernel's HTML message is read off the
  kernel's websocket (its size in bytes, with the message's JSON envelope).

CPU seconds of the kernel, the Jupyter server and Chromium (with its child processes) are
read from /proc beside each wall time: the machine is shared, so a slow wall time with little
CPU is waiting, not work. Targets (issue 35, docs/performance.md): the view opens in ≤ 2 s and
each action answers in ≤ 0.5 s at 1,000,000 samples.

    python benchmarks/bench_view_browser.py [--run PATH | --cases 1000000 --store DIR]
        [--repeats 5] [--opens 3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the browser tests' Chromium and Jupyter

from bench_case_table import stored_run  # noqa: E402

from _chromium import missing, persistent  # noqa: E402
from _jupyter import jupyter_server, wait_for_kernel  # noqa: E402

NOTEBOOK = "view-bench.ipynb"
TARGET_OPEN, TARGET_ACTION = 2.0, 0.5
LIVE = "[data-evalbook='live']"
TAB = "[data-eb-action='tab']"
SEARCH = "item 4242"
CELL_TIMEOUT_MS = 600_000

# the notebook's cells, by index (PATH is filled in)
_CELLS = [
    "import os, time\nimport evalbook as eb\nos.getpid()",
    # 1: load_run alone
    "_t, _c = time.perf_counter(), time.process_time()\nrun = eb.load_run({path!r})\n"
    'print(f"EBTIME {{time.perf_counter() - _t:.3f}} {{time.process_time() - _c:.3f}}")',
    # 2: eb.show alone (the view is the cell's last expression; its build timed before)
    "_t, _c = time.perf_counter(), time.process_time()\nview = eb.show(run)\n"
    'print(f"EBTIME {{time.perf_counter() - _t:.3f}} {{time.process_time() - _c:.3f}}")\nview',
    # 3: both in one cell
    "_t, _c = time.perf_counter(), time.process_time()\nview = eb.show(eb.load_run({path!r}))\n"
    'print(f"EBTIME {{time.perf_counter() - _t:.3f}} {{time.process_time() - _c:.3f}}")\nview',
]


def _evaluate(page: Any, js: str, arg: Any = None) -> Any:
    """`page.evaluate(js, arg)` that fails after `CELL_TIMEOUT_MS` (Playwright's evaluate has
    no limit of its own: one sitting once waited 17 minutes for a cell that never ran)."""
    wrapped = f"""async (arg) => {{
        const run = ({js});
        let timer;
        const limit = new Promise((_, reject) => {{
            timer = setTimeout(() => reject(new Error('no answer in {CELL_TIMEOUT_MS} ms')),
                               {CELL_TIMEOUT_MS});
        }});
        try {{ return await Promise.race([run(arg), limit]); }} finally {{ clearTimeout(timer); }}
    }}"""
    return page.evaluate(wrapped, arg)


# Run cell `index` (as Ctrl+Enter does: the command its key binding calls); resolve with the
# time to its reply and, if `view`, to `live` drawn in its output, then the next frame.
_RUN_CELL_JS = """async ([index, view, live]) => {
    const app = window.jupyterapp;
    const panel = app.shell.currentWidget;
    const nb = panel.content;
    nb.activeCellIndex = index;
    nb.deselectAll();
    const cell = nb.widgets[index];
    const drawn = !view ? null : new Promise((resolve) => {
        const seen = () => cell.node.querySelector(live) !== null;
        const obs = new MutationObserver(() => {
            if (seen()) { obs.disconnect(); resolve(performance.now()); }
        });
        obs.observe(cell.node, {childList: true, subtree: true});
    });
    const t0 = performance.now();
    await app.commands.execute('notebook:run-cell');
    const reply = performance.now() - t0;
    const shown = drawn ? (await drawn) - t0 : null;
    await new Promise((r) => requestAnimationFrame(() => r()));
    const text = [...cell.node.querySelectorAll('.jp-OutputArea-output')]
        .map((o) => o.innerText).join('\\n');
    return {reply, shown, frame: performance.now() - t0, text};
}"""

# Restart the kernel (no dialog) and clear every output; resolve when the kernel is idle.
_RESTART_JS = """async () => {
    const app = window.jupyterapp;
    const panel = app.shell.currentWidget;
    await app.commands.execute('notebook:clear-all-cell-outputs');
    const kernel = panel.sessionContext.session.kernel;
    await kernel.restart();
    while (kernel.status !== 'idle') await new Promise((r) => setTimeout(r, 50));
}"""

# Do one action on the view's control `selector` (the `nth` match); resolve with the time to
# the view's redraw and to the next frame, and what the view then shows.
_ACT_JS = """async ([live, selector, nth, kind, value]) => {
    const root = [...document.querySelectorAll(live)].find(
        (r) => r.querySelector("[data-eb-action='tab']") !== null);
    if (!root) return {missing: live};
    const el = root.querySelectorAll(selector)[nth];
    if (!el) return {missing: selector};
    const answered = new Promise((resolve) => {
        const obs = new MutationObserver(() => { obs.disconnect(); resolve(performance.now()); });
        obs.observe(root, {childList: true});
    });
    const t0 = performance.now();
    if (kind === 'click') {
        el.click();
    } else if (kind === 'select') {
        el.value = [...el.options].find((o) => o.text.trim() === value).value;
        el.dispatchEvent(new Event('change', {bubbles: true}));
    } else {  // a search: the text typed, then Enter (a text field's Enter sends `change`)
        el.focus();
        el.value = value;
        el.dispatchEvent(new Event('input', {bubbles: true}));
        el.dispatchEvent(new Event('change', {bubbles: true}));
    }
    const dom = (await answered) - t0;
    await new Promise((r) => requestAnimationFrame(() => r()));
    const frame = performance.now() - t0;
    const pager = root.querySelector("[data-evalbook='pager']");
    const heads = [...root.querySelectorAll("[data-evalbook='table-head'] button")];
    return {
        dom, frame,
        tab: (root.querySelector("[role='tab'][aria-selected='true']") || {}).innerText,
        pager: pager ? pager.innerText.replace(/\\s+/g, ' ') : '',
        sorted: heads.map((b) => b.innerText).filter((t) => /[▲▼]/.test(t)),
        case: root.querySelector("[data-evalbook='case-table-view'] [data-evalbook='case']")
            !== null,
        first: ((root.querySelector(
            "[data-evalbook='case-row'] > div:first-child") || {}).innerText || '').trim(),
    };
}"""


@dataclass
class Sample:
    """One timed thing: wall seconds (to the DOM, to the next frame), CPU seconds, bytes."""

    dom: list[float] = field(default_factory=list)
    frame: list[float] = field(default_factory=list)
    kernel: list[float] = field(default_factory=list)  # the kernel's own wall time (cells)
    cpu: list[tuple[float, float, float]] = field(default_factory=list)  # kernel, server, chromium
    sent: list[int] = field(default_factory=list)


class Cpu:
    """CPU seconds (user + system) used by the kernel, the server and Chromium's processes."""

    def __init__(self, server_pid: int, profile: Path) -> None:
        self.server = psutil.Process(server_pid)
        self.profile = str(profile)
        self.kernel: psutil.Process | None = None

    def _chromium(self) -> float:
        """The browser process (the one started with this profile) and all its children."""
        total = 0.0
        for p in psutil.process_iter(["cmdline"]):
            try:
                cmd = " ".join(p.info["cmdline"] or [])
                if self.profile not in cmd or "--type=" in cmd:
                    continue
                for q in [p, *p.children(recursive=True)]:
                    t = q.cpu_times()
                    total += t.user + t.system
            except psutil.Error:
                continue
        return total

    def now(self) -> tuple[float, float, float]:
        def of(p: psutil.Process | None) -> float:
            if p is None:
                return 0.0
            try:
                t = p.cpu_times()
            except psutil.Error:
                return 0.0
            return float(t.user + t.system)

        return of(self.kernel), of(self.server), self._chromium()


def _frames(page: Any) -> list[int]:
    """The sizes of the kernel's `{html}` messages as they arrive on the page's websockets."""
    sizes: list[int] = []

    def on_socket(ws: Any) -> None:
        def on_frame(payload: Any) -> None:
            data = payload if isinstance(payload, bytes) else str(payload).encode()
            if b'"html"' in data and b"comm_msg" in data:
                sizes.append(len(data))

        ws.on("framereceived", on_frame)

    page.on("websocket", on_socket)
    return sizes


def _kernel_time(text: str) -> float:
    found = re.search(r"EBTIME ([\d.]+) ([\d.]+)", text)
    if not found:
        raise RuntimeError(f"the cell printed no time: {text[:500]!r}")
    return float(found[1])


def _run_cell(page: Any, index: int, view: bool) -> dict[str, Any]:
    # drawn: the view's tab bar, which comes with the kernel's answer to the front end's hello
    out: dict[str, Any] = _evaluate(page, _RUN_CELL_JS, [index, view, f"{LIVE} {TAB}"])
    if re.search(r"Traceback|Error", out["text"]) and "EBTIME" not in out["text"]:
        raise RuntimeError(f"cell {index} failed: {out['text'][:2000]}")
    return out


def _opens(page: Any, cpu: Cpu, opens: int) -> dict[str, Sample]:
    """Each open `opens` times, each in a fresh kernel; the last leaves the view drawn."""
    found = {k: Sample() for k in ("load_run", "eb.show", "together")}

    def fresh() -> None:
        _evaluate(page, _RESTART_JS)
        out = _run_cell(page, 0, view=False)
        pid = int(re.findall(r"\d+", out["text"])[-1])
        cpu.kernel = psutil.Process(pid)

    def timed(name: str, index: int, view: bool) -> None:
        before = cpu.now()
        out = _run_cell(page, index, view)
        after = cpu.now()
        sample = found[name]
        sample.dom.append((out["shown"] if view else out["reply"]) / 1000)
        sample.frame.append(out["frame"] / 1000)
        sample.kernel.append(_kernel_time(out["text"]))
        sample.cpu.append(tuple(a - b for a, b in zip(after, before, strict=True)))  # type: ignore[arg-type]

    for _ in range(opens):
        fresh()
        timed("together", 3, view=True)
        fresh()
        timed("load_run", 1, view=False)
        timed("eb.show", 2, view=True)
    return found


@dataclass(frozen=True)
class Action:
    """A reader's action: the control (selector, which match), how it is used, what to check."""

    name: str
    selector: str
    kind: str = "click"
    value: str = ""
    nth: int | Callable[[int], int] = 0
    check: Callable[[dict[str, Any]], bool] = lambda out: True


def _head(label: str) -> str:
    return f"[data-evalbook='table-head'] button[title^='{label}:']"


def _pager(value: str) -> str:
    return f"button[data-eb-action='table.page'][data-eb-value='{value}']"


def _actions(n: int) -> list[Action]:
    rows = f"of {n:,}"
    return [
        Action("tab: Headline (away)", TAB, nth=0, check=lambda o: o["tab"] == "Headline"),
        Action("tab: Case table", TAB, nth=4,
               check=lambda o: o["tab"] == "Case table" and rows in o["pager"]),
        Action("header sort: output ascending", _head("output"),
               check=lambda o: o["sorted"] == ["output ▲"]),
        Action("header sort: output descending", _head("output"),
               check=lambda o: o["sorted"] == ["output ▼"]),
        Action("header sort: off (input order)", _head("output"),
               check=lambda o: o["sorted"] == []),
        Action("filter: outcome = errored", "select[data-eb-action='table.outcome']", "select",
               "errored", check=lambda o: rows not in o["pager"]),
        Action("filter: outcome = all", "select[data-eb-action='table.outcome']", "select",
               "all", check=lambda o: rows in o["pager"]),
        Action(f"search '{SEARCH}' + Enter", "input[data-eb-action='table.search']", "search",
               SEARCH, check=lambda o: rows not in o["pager"]),
        Action("search cleared + Enter", "input[data-eb-action='table.search']", "search", "",
               check=lambda o: rows in o["pager"]),
        Action("page: next", _pager("next"), check=lambda o: o["pager"].count("page 2 of") == 1),
        Action("page: last", _pager("last"), check=lambda o: f"–{n:,} {rows}" in o["pager"]),
        Action("page: first", _pager("first"), check=lambda o: "rows 1–25" in o["pager"]),
        Action("open a row", "button[data-eb-action='table.open']", nth=lambda i: i % 25,
               check=lambda o: o["case"]),
    ]  # fmt: skip


def _act(page: Any, cpu: Cpu, sizes: list[int], actions: list[Action], repeats: int
         ) -> dict[str, Sample]:  # fmt: skip
    found = {a.name: Sample() for a in actions}
    for i in range(repeats):
        for a in actions:
            nth = a.nth(i) if callable(a.nth) else a.nth
            before, sent = cpu.now(), len(sizes)
            out = _evaluate(page, _ACT_JS, [LIVE, a.selector, nth, a.kind, a.value])
            after = cpu.now()
            if "missing" in out:
                raise RuntimeError(f"{a.name}: no {out['missing']} in the view")
            if not a.check(out):
                raise RuntimeError(f"{a.name}: the view did not show the answer: {out}")
            page.wait_for_timeout(50)  # the message's websocket frame reaches the listener
            sample = found[a.name]
            sample.dom.append(out["dom"] / 1000)
            sample.frame.append(out["frame"] / 1000)
            sample.cpu.append(tuple(x - y for x, y in zip(after, before, strict=True)))  # type: ignore[arg-type]
            sample.sent += sizes[sent:]
    return found


def _row(name: str, s: Sample, target: float) -> str:
    med, top = statistics.median(s.dom), max(s.dom)
    frame = statistics.median(s.frame)
    kernel = f"{statistics.median(s.kernel):.3f}" if s.kernel else "—"
    k, srv, chrome = (statistics.median(c[j] for c in s.cpu) for j in range(3))
    sent = f"{statistics.median(s.sent) / 1024:,.0f}" if s.sent else "—"
    verdict = "yes" if top <= target else ("median only" if med <= target else "**no**")
    cpus = f"{k:.2f} / {srv:.2f} / {chrome:.2f}"
    return (f"| {name} | {s.dom[0]:.3f} | {med:.3f} | {top:.3f} | {frame:.3f} | {kernel} | "
            f"{cpus} | {sent} | {verdict} (≤ {target:g} s) |")  # fmt: skip


def _table(title: str, found: dict[str, Sample], target: float) -> list[str]:
    return [
        f"| {title} | first | median | max | next frame (median) | kernel's own (median) "
        "| CPU s: kernel / server / Chromium (median) | HTML message (KB) | within target |",
        "|---|---|---|---|---|---|---|---|---|",
        *(_row(name, s, target) for name, s in found.items() if s.dom),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, metavar="PATH", help="a stored run (else built)")
    parser.add_argument("--cases", type=int, default=1_000_000, help="samples of the built run")
    parser.add_argument(
        "--store",
        type=Path,
        default=Path(tempfile.gettempdir()) / "eb-case-table",
        help="where bench_case_table.py's run is kept (built the first time)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the actions")
    parser.add_argument("--opens", type=int, default=3, help="opens, each in a fresh kernel")
    args = parser.parse_args()
    why = missing("jupyterlab")
    if why:
        raise SystemExit(f"cannot run: {why}")
    path = args.run if args.run else stored_run(args.cases, args.store)
    with tempfile.TemporaryDirectory(prefix="eb-view-browser-") as tmp:
        home = Path(tmp)
        (home / "work").mkdir()
        with jupyter_server("jupyterlab", home / "work", home) as server:
            server.put_notebook(NOTEBOOK, [c.format(path=str(path)) for c in _CELLS])
            profile = home / "profile"
            with persistent(profile, viewport={"width": 1280, "height": 1000}) as context:
                page = context.new_page()
                sizes = _frames(page)
                page.goto(server.url(f"lab/tree/{NOTEBOOK}?reset"), wait_until="domcontentloaded")
                page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
                wait_for_kernel(page, server, NOTEBOOK)
                cpu = Cpu(server.pid, profile)
                page.set_default_timeout(CELL_TIMEOUT_MS)
                opened = _opens(page, cpu, args.opens)
                n, first = _samples(page, cpu, sizes)
                acted = {**first, **_act(page, cpu, sizes, _actions(n), args.repeats)}
    print(f"## eb.show(run) end to end in Chromium (JupyterLab), N = {n:,}")
    print()
    print("\n".join(_table(f"open ({args.opens} fresh kernels), s", opened, TARGET_OPEN)))
    print()
    print("\n".join(_table(f"action ({args.repeats} rounds), s", acted, TARGET_ACTION)))


def _samples(page: Any, cpu: Cpu, sizes: list[int]) -> tuple[int, dict[str, Sample]]:
    """The number of rows of the drawn view's case table, and the time its Case table tab took
    to open the first time (the view makes that tab then: its table of every sample)."""
    before, sent = cpu.now(), len(sizes)
    out = _evaluate(page, _ACT_JS, [LIVE, TAB, 4, "click", ""])
    after = cpu.now()
    found = re.search(r"rows [\d,]+–[\d,]+ of ([\d,]+)", out.get("pager", ""))
    if not found:
        raise RuntimeError(f"no case table pager in the view: {json.dumps(out)[:500]}")
    page.wait_for_timeout(50)  # the message's websocket frame reaches the listener
    first = Sample(dom=[out["dom"] / 1000], frame=[out["frame"] / 1000], sent=sizes[sent:])
    first.cpu.append(tuple(x - y for x, y in zip(after, before, strict=True)))  # type: ignore[arg-type]
    return int(found[1].replace(",", "")), {"tab: Case table, first opened (made then)": first}


if __name__ == "__main__":
    main()
