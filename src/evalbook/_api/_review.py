"""`eb.review`: label a run's samples in the notebook, blind, one click each (docs/judges.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._compare._agreement import raw_scale
from .._errors import ConfigurationError
from .._model._label_pick import SELECTIONS, label_strata, pick_samples
from .._model._run_data import RunData
from .._util._text import safe_str

__all__ = ["review"]


def review(
    run: RunData,
    *,
    score: str,
    n: int = 50,
    select: str = "random",
    seed: int = 0,
    blind: bool = True,
    labeler: str | None = None,
) -> Any:
    """A widget that shows `n` of the run's samples one at a time and takes a label for each.

    The labels are on the score's raw scale (a judge's declared scale, e.g. 1-5, else [0, 1])
    and are kept the moment they are given: a stored run appends them to `labels.jsonl`, so a
    kernel restart loses none and `eb.review` on the same run (same `seed`, `n`, `select`,
    `labeler`) goes on where it stopped. `blind=True` hides the judge's value and rationale.
    `select="stratified"` draws across the judge's values in proportion to their counts, where
    `"random"` draws uniformly. Only samples the score scored are drawn. Each label keeps its
    draw (`select, seed, n, candidates`, and a stratified sample's `stratum, stratum_size`), so
    `eb.agreement(run, labels=run.labels(), score=score)` computes the corrected mean's
    interval for the draw that was made: stratified, for the labels of one stratified draw.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": ["a", "b"]}), task=lambda x: x, store=None,
        ...              scorers=[lambda output: 1.0], progress=False)
        >>> view = eb.review(run, score="lambda", n=1)
        >>> view.progress
        '0 of 1 labelled'
    """
    names = [d.name for d in run.definitions]
    if score not in names:
        raise ConfigurationError(f"review(score={score!r}): the run's scores are {names}")
    if select not in SELECTIONS:
        raise ConfigurationError(
            f"review(select={safe_str(select)!r}): select is 'random' or 'stratified'"
        )
    for arg, value in (("n", n), ("seed", seed)):
        if (
            not isinstance(value, int | np.integer)
            or isinstance(value, bool)
            or value < (arg == "n")
        ):
            raise ConfigurationError(
                f"review({arg}={safe_str(value)!r}): {arg} is an integer >= {int(arg == 'n')}"
            )
    if labeler is not None and not isinstance(labeler, str):
        raise ConfigurationError(f"review(labeler=...): a name (str), not {type(labeler).__name__}")
    rows = run.scores[run.scores["score"].astype(str) == score].reset_index(drop=True)
    scale, raw = raw_scale(score, rows)
    scored = np.flatnonzero(~np.isnan(raw))
    if not len(scored):
        raise ConfigurationError(
            f"review(score={score!r}): no sample has a scored record of {score!r} to label"
        )
    at = pick_samples(raw[scored], int(n), select, int(seed))
    picked = scored[at]
    # what the labels keep of the draw: enough for eb.agreement's stratified interval
    draw = {"select": select, "seed": int(seed), "n": int(n), "candidates": len(scored)}
    if select == "stratified":
        strata = label_strata(raw[scored])
        sizes = dict(zip(*np.unique(strata, return_counts=True), strict=True))
        draws = [
            {**draw, "stratum": int(strata[i]), "stratum_size": int(sizes[strata[i]])} for i in at
        ]
    else:
        draws = [draw for _ in at]
    from ..display._review_widget import ReviewView  # anywidget: only when a review is asked

    return ReviewView(
        run,
        score=score,
        rows=picked.tolist(),  # the score's rows are one per sample, in the cases' order
        raw=[float(raw[i]) for i in picked],
        draws=draws,
        scale=scale,
        blind=blind,
        labeler=labeler,
    )
