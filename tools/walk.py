"""Walk a public call through evalbook's modules and count how often it climbs back up.

Traces every Python call and return (`sys.setprofile`) while one public call runs and
follows the module execution is in (user code and libraries in between are passed through).
It prints the distinct modules entered; the distinct calls from one of evalbook's modules into
another, and those that climb back up (a call into a higher layer, in the order of pyproject's
import-linter contract with `__init__` and `__main__` on top: a lower layer calling back into
a higher one); the modules with round trips (execution returns up to the module and goes down
from it again: it hands work back and forth with layers below); and the re-entries (distinct
moves, by a call or a return, into a module execution had been in before). Module-level code
(imports) is not followed.

    python tools/walk.py run        # eb.run(data) on 4 cases, in memory
    python tools/walk.py eval       # eb.Eval(...).run() into a store
    python tools/walk.py load       # eb.load_run(folder)
    python tools/walk.py run -v     # and list the climbs
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

LAYERS = [
    ("__init__", "__main__"),
    ("_cli", "_magics"),
    ("_api",),
    ("display",),
    ("_judges", "_compare", "_interop"),
    ("_runner",),
    ("_store",),
    ("_model",),
    ("_render",),
    ("_util",),
    ("_errors", "_version"),
]


def layer_of(module: str) -> int:
    """The layer's height: 0 is the bottom."""
    top = module.split(".")[1] if "." in module else "__init__"
    for height, names in enumerate(reversed(LAYERS)):
        if top in names:
            return height
    raise ValueError(module)


def module_of(frame: FrameType, root: str) -> str | None:
    path = frame.f_code.co_filename
    if not path.startswith(root) or frame.f_code.co_name == "<module>":
        return None
    rel = Path(path[len(root) :]).with_suffix("")
    parts = [p for p in rel.parts if p not in ("/", "")]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["evalbook", *parts])


def walk(call: Callable[[], Any]) -> dict[str, Any]:
    """Trace `call()` and count its moves between evalbook's modules."""
    import evalbook

    root = str(Path(evalbook.__file__).parent) + "/"
    calls: set[tuple[str, str]] = set()  # (caller, callee) modules of every call between two
    path: list[str] = []  # the module execution is in, each time it changes (calls and returns)

    def evalbook_frame(frame: FrameType | None) -> str | None:
        while frame is not None and module_of(frame, root) is None:
            frame = frame.f_back  # through user code, the stdlib, pandas: to evalbook
        return None if frame is None else module_of(frame, root)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return") or module_of(frame, root) is None:
            return
        here = evalbook_frame(frame if event == "call" else frame.f_back)
        if event == "call":
            caller = evalbook_frame(frame.f_back)
            if caller is not None and here is not None and caller != here:
                calls.add((caller, here))
        if here is not None and (not path or path[-1] != here):
            path.append(here)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    climbs = sorted((a, b) for a, b in calls if layer_of(b) > layer_of(a))
    # round trips: execution returns up to a module and goes down from it again (a module
    # that hands work back and forth with the layers below it)
    trips = {
        path[i]
        for i in range(1, len(path) - 1)
        if layer_of(path[i - 1]) < layer_of(path[i]) > layer_of(path[i + 1])
    }
    seen: set[str] = set()
    reentries: set[tuple[str, str]] = set()
    for i, module in enumerate(path):
        if module in seen:
            reentries.add((path[i - 1], module))
        seen.add(module)
    return {
        "modules": len(seen),
        "calls": len(calls),
        "climbs": climbs,
        "trips": len(trips),
        "reentries": len(reentries),
    }


def _data() -> Any:
    import pandas as pd

    return pd.DataFrame(
        {"question": ["1+1", "2+2", "3+3", "1/0"], "expected": ["2", "4", "7", "0"]}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["run", "eval", "load"])
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    import evalbook as eb

    store = tempfile.mkdtemp()
    correct = eb.define_score("correct", primary=True)

    @eb.scorer(correct)
    def exact(output: str, expected: str) -> float:
        return float(output == expected)

    def task(question: str) -> str:
        return str(int(eval(question)))

    calls: dict[str, Callable[[], Any]] = {
        "run": lambda: eb.run(_data(), task=task, scorers=[exact], store=None, progress=False),
        "eval": lambda: eb.Eval(_data(), task=task, scorers=[exact], name="qa").run(
            store=store, progress=False
        ),
    }
    if args.what == "load":
        folder = eb.run(_data(), task=task, scorers=[exact], store=store, progress=False).path
        calls["load"] = lambda: eb.load_run(folder)
    found = walk(calls[args.what])
    print(
        f"{args.what}: {found['modules']} modules, {found['calls']} distinct calls between "
        f"modules, {len(found['climbs'])} of them climbing back up; "
        f"{found['trips']} modules with round trips, {found['reentries']} re-entries"
    )
    if args.verbose:
        for a, b in found["climbs"]:
            print(f"  climb {a} -> {b}")


if __name__ == "__main__":
    main()
