"""What tests read through the public API only (imported as `_public`; not a test module).

- The documented columns of every table, written out here rather than imported from the
  module that builds the table, so a test pins the columns docs/concepts.md,
  docs/comparing.md, docs/repeats.md, docs/interop.md and docs/judges.md name.
- `scores_of`: the `run.scores` rows of an in-memory run whose one scorer returns given values.
- `case_pages`: the case explorer's page of every case (`eb.show(run)`), the HTML a reader of
  one case sees.
- `raw_controls`: the characters a view must never show raw.
- `wilson`: the Wilson score interval written out, to check the intervals evalbook gives.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import pandas as pd

import evalbook as eb

CASE_COLUMNS = [
    "case_id",
    "epoch",
    "outcome",
    "attempts",
    "output",
    "error_type",
    "error_message",
    "origin",
    "started_at",
    "duration_s",
    "input_tokens",
    "output_tokens",
    "cost",
]
# after CASE_COLUMNS in run.cases when any sample has a transcript (docs/transcripts.md)
STEP_COUNT_COLUMNS = ["n_steps", "n_tool_calls", "n_tool_errors"]
STEP_COLUMNS = [
    "case_id",
    "epoch",
    "step",
    "role",
    "content",
    "tool_name",
    "tool_call_id",
    "tool_args",
    "error",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_s",
]
TOOL_CALL_COLUMNS = [
    "case_id",
    "epoch",
    "step",
    "call_id",
    "tool_name",
    "tool_args",
    "result_step",
    "ok",
    "error",
    "latency_s",
]
SCORE_COLUMNS = [
    "case_id",
    "epoch",
    "score",
    "status",
    "value",
    "counted",
    "reason",
    "message",
    "origin",
    "rationale",
    "grader_kind",
    "grader_id",
    "grader_model",
    "derived",
    "metadata",
]
SUMMARY_COLUMNS = [
    "score",
    "label",
    "primary",
    "derived",
    "mean",
    "ci_low",
    "ci_high",
    "n_cases",
    "cases_counted",
    "cases_dropped",
    "dropped_reasons",
    "counted",
    "zeroed",
    "excluded",
    "unscored",
    "errors",
    "reducer",
    "epochs",
    "n_clusters",
    "var_between",
    "var_within",
]
ATTEMPT_COLUMNS = [
    "case_id",
    "epoch",
    "attempt",
    "outcome",
    "error_type",
    "error_message",
    "started_at",
    "duration_s",
]
REDUCED_COLUMNS = ["case_id", "score", "epochs", "counted", "value", "sd", "status", "reason"]
COMPARISON_COLUMNS = [
    "score",
    "label",
    "mean_a",
    "mean_b",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "n_paired",
    "improved",
    "regressed",
    "same",
    "test",
    "rho",
    "mde",
    "n_clusters",
    "small",
]
PAIR_COLUMNS = ["case_id", "score", "a", "b", "delta", "change"]
CHANGES = ["improved", "regressed", "same", "only_a", "only_b"]
LEADERBOARD_COLUMNS = [
    "rank",
    "rank_low",
    "rank_high",
    "tier",
    "name",
    "score",
    "label",
    "mean",
    "ci_low",
    "ci_high",
    "completion",
    "passed_rate",
]
POOL_COLUMNS = ["score", "label", "mean", "ci_low", "ci_high", "counted", "n_runs"]
USAGE_DELTA_COLUMNS = ["measure", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "n_paired"]
AGREEMENT_COLUMNS = [
    "n",
    "exact_agreement",
    "exact_agreement_ci_low",
    "exact_agreement_ci_high",
    "cohen_kappa",
    "cohen_kappa_ci_low",
    "cohen_kappa_ci_high",
    "krippendorff_alpha",
    "krippendorff_alpha_ci_low",
    "krippendorff_alpha_ci_high",
    "spearman",
    "spearman_ci_low",
    "spearman_ci_high",
    "n_cases",
    "n_error",
    "n_unscored",
    "n_unlabelled",
    "offset",
    "offset_ci_low",
    "offset_ci_high",
    "score",
    "kind",
]


def scores_of(
    results: Sequence[Any], *definitions: eb.ScoreDefinition | str, **options: Any
) -> pd.DataFrame:
    """`run.scores` of an in-memory run of `len(results)` cases whose one scorer, bound to
    `definitions` (one score named `s` if none), returns `results[k]` for case k."""
    bound = definitions or ("s",)
    picked = list(results)

    def scorer(k: int) -> Any:
        return picked[k]

    run = eb.run(
        pd.DataFrame({"k": range(len(picked))}),
        task=lambda k: k,
        scorers=[eb.scorer(*bound)(scorer)],
        store=None,
        progress=False,
        **options,
    )
    return run.scores


def case_pages(run: eb.Run) -> list[str]:
    """The case explorer's page (`eb.show(run)`, tab Cases) of each case, in input order."""
    explorer = eb.show(run).explorer
    pages = []
    for pos in range(len(dict.fromkeys(run.cases["case_id"]))):
        explorer.cases.index = None  # so that choosing the case shows it even if it was chosen
        explorer.cases.value = pos
        pages.append(str(explorer.detail.value))
    return pages


# controls, format characters (bidi controls, zero widths), line and paragraph separators and
# lone surrogates: what the views show by their escape (docs/concepts.md), and a little more
# (the views keep a zero-width joiner inside an emoji; a repr() escapes it too)
_UNSEEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def raw_controls(text: str) -> list[str]:
    """The characters of plain text (not HTML, which keeps its newlines) that no message may
    hold raw."""
    return [ch for ch in text if unicodedata.category(ch) in _UNSEEN]


def wilson(successes: float, n: float) -> tuple[float, float]:
    """The 95 % Wilson score interval of `successes` in `n` trials, in its textbook form
    (docs/statistics.md; `successes` may be a fraction, as the degenerate rule uses it)."""
    z = NormalDist().inv_cdf(0.975)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half
