"""Runs whose every field is hostile text, for the report and summary tests."""

from __future__ import annotations

import pandas as pd

import evalbook as eb

EVIL = "<script>alert('x')</script>"


def hostile_runs(n: int = 40, *, output_chars: int = 30) -> tuple[eb.Run, eb.Run]:
    """(baseline, new): `n` cases whose ids, labels, outputs, slice values, unscored reasons,
    error messages, transcripts and (through differing definitions) warnings carry `EVIL`;
    about a third of the cases regress in `new`."""
    frame = pd.DataFrame(
        {
            "id": [f"{EVIL}|`{i}`" for i in range(n)],
            "topic": [f"{EVIL}{i % 3}" for i in range(n)],
            "i": range(n),
        }
    )

    def runs(name: str, worse: bool, label: str) -> eb.Run:
        ok = eb.define_score("ok", label=label, primary=True)
        aux = eb.define_score("aux", label=f"{EVIL} aux")

        def task(i: int, ctx: eb.Run) -> str:  # type: ignore[type-arg]
            ctx.step(role="user", content=f"{EVIL} question {i}")  # type: ignore[attr-defined]
            ctx.step(role="assistant", content=f"{EVIL} answer {i}")  # type: ignore[attr-defined]
            if i == n - 1:
                raise RuntimeError(f"{EVIL} boom")
            word = "worse" if worse and i % 3 == 0 else "fine"
            return f"{EVIL} {word} " + "x" * output_chars + f" {i}"

        @eb.scorer(ok)
        def score_ok(output: str) -> float:
            return 0.0 if "worse" in output else 1.0

        @eb.scorer(aux)
        def score_aux(i: int) -> object:
            return eb.Unscored(f"{EVIL} reason") if i % 5 == 0 else 1.0

        return eb.run(
            frame,
            task=task,
            scorers=[score_ok, score_aux],
            name=name,
            store=None,
            progress=False,
            cluster="topic",
        )

    base = runs(f"base{EVIL}", False, f"{EVIL} ok")
    new = runs(f"new{EVIL}", True, f"{EVIL} ok, relabelled")  # a definition warning
    return base, new
