"""Static HTML of a comparison, from its documented attributes only (docs/comparing.md).

`Comparison.summary`: `score, label, mean_a, mean_b, delta, ci_low, ci_high, p_value,
p_adjusted, n_paired, improved, regressed, same, test` and, when present, `mde` (shown as
"could detect ±X pp"), `n_clusters`, `small`, and slice columns before `score` (with `by=`);
`Comparison.cases`: `case_id, score, a, b, delta, change`; `Comparison.warnings`: `list[str]`;
`Comparison.usage` (docs/cost.md): the cost and latency deltas, shown when a case has a cost
known in both runs.
The two runs' names are read from `.a` and `.b` when the object has them.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .._util._fmt import format_num, format_p, format_p_phrase, format_pct, format_pp, format_pp_ci
from .._util._small import SMALL
from .._util._text import visible
from ._cost import usage_deltas_html, usage_deltas_lines
from ._protocols import ComparisonLike
from ._style import BORDER, MUTED, STATUS_COLORS, badge, box, esc, is_missing, root

__all__ = [
    "comparison_html",
    "comparison_names",
    "comparison_text",
    "power_text",
    "slice_columns",
    "underpowered",
    "usage_deltas_lines",
    "warnings_html",
]


def slice_columns(summary: pd.DataFrame) -> list[Any]:
    """The slice columns of a comparison's summary (`compare(by=...)`): those before `score`,
    as they are labelled (a data column may be named by a number)."""
    columns = list(summary.columns)
    names = [str(c) for c in columns]
    return columns[: names.index("score")] if "score" in names else []


def underpowered(row: Any) -> bool:
    """Whether a summary row's CI straddles zero while its mde exceeds the observed |delta|:
    "no difference seen" here says little, the comparison could not have seen one this size."""
    if "mde" not in row:
        return False
    lo, hi, delta, mde = (row[k] for k in ("ci_low", "ci_high", "delta", "mde"))
    if any(is_missing(v) for v in (lo, hi, delta, mde)):
        return False
    return float(lo) < 0 < float(hi) and float(mde) > abs(float(delta))


def power_text(row: Any) -> str:
    """`could detect ±6.1 pp` from a summary row's mde ("" when it has none)."""
    if "mde" not in row or is_missing(row["mde"]):
        return ""
    if math.isinf(float(row["mde"])):  # the test cannot reject on so few cases
        return "could detect no change (too few cases)"
    return f"could detect ±{format_pp(row['mde'], signed=False)}"


def comparison_names(comp: ComparisonLike) -> tuple[str, str]:
    """The names of runs A and B (`"A"`/`"B"` when the comparison does not carry its runs)."""
    names = []
    for side, fallback in (("a", "A"), ("b", "B")):
        run = getattr(comp, side, None)
        name = getattr(run, "name", None)
        names.append(str(name) if name else fallback)
    return names[0], names[1]


def warnings_html(warnings: list[str]) -> str:
    """The comparison's warnings, shown prominently (amber box, one line each)."""
    if not warnings:
        return ""
    color = STATUS_COLORS["warning"]
    items = "".join(f'<div style="margin: 2px 0">⚠ {esc(w)}</div>' for w in warnings)
    return (
        f'<div data-evalbook="warnings" style="border: 1px solid {color}; border-left: 5px solid '
        f"{color}; border-radius: 6px; padding: 8px 12px; margin-bottom: 10px; "
        f'background: rgba(217, 119, 6, 0.10)"><div style="font-weight: 650; color: {color}">'
        f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}</div>{items}</div>"
    )


def _delta_color(row: Any) -> str:
    delta, lo, hi = row["delta"], row["ci_low"], row["ci_high"]
    if is_missing(delta) or is_missing(lo) or is_missing(hi):
        return "inherit"
    if float(lo) > 0:
        return STATUS_COLORS["improved"]
    if float(hi) < 0:
        return STATUS_COLORS["regressed"]
    return "inherit"


def _slice_title(row: Any, by: list[Any]) -> str:
    """`topic = math · level = 2` before a sliced row's label (escaped), or ""."""
    if not by:
        return ""
    parts = " · ".join(f"{esc(c)} = {'—' if is_missing(row[c]) else esc(row[c])}" for c in by)
    return f'<span style="{MUTED}; font-weight: 400">{parts} ·</span> '


def _score_row(row: Any, name_a: str, name_b: str, by: list[Any] | None = None) -> str:
    label, name = str(row["label"]), str(row["score"])
    sub = f' <span style="{MUTED}; font-size: 11px">{esc(name)}</span>' if label != name else ""
    p = format_p_phrase(row["p_value"])
    if "p_adjusted" in row and not is_missing(row["p_adjusted"]):
        p += f" (Holm {format_p(row['p_adjusted'])})"
    test = f" · {row['test']}" if "test" in row and not is_missing(row["test"]) else ""
    counts = (
        badge(f"▲ improved {int(row['improved'])}", "improved")
        + badge(f"▼ regressed {int(row['regressed'])}", "regressed")
        + badge(f"= same {int(row['same'])}", "same")
    )
    ci = format_pp_ci(row["ci_low"], row["ci_high"])
    ci_text = f"95% CI {ci}" if ci else ""
    power = power_text(row)
    power_html = f'<span data-evalbook="mde" style="{MUTED}">{esc(power)}</span>' if power else ""
    flags = ""
    if underpowered(row):
        flags += badge(
            "underpowered",
            "warning",
            title="the CI includes 0 and the smallest detectable change exceeds the observed "
            "one: more paired cases are needed to tell",
        )
    if "small" in row and not is_missing(row["small"]) and bool(row["small"]):
        clustered = "test" in row and row["test"] == "clustered t"
        what = "clusters" if clustered else "paired cases"
        flags += badge("small slice", "warning", title=f"fewer than {SMALL} {what}")
    inner = (
        f'<div style="font-weight: 600">{_slice_title(row, by or [])}{esc(label)}{sub}'
        f"{' ' + flags if flags else ''}</div>"
        f'<div style="display: flex; gap: 14px; align-items: baseline; flex-wrap: wrap; '
        f'overflow-wrap: anywhere">'
        f'<span>{esc(format_pct(row["mean_a"]))} <span style="{MUTED}">({esc(name_a)})</span> → '
        f'{esc(format_pct(row["mean_b"]))} <span style="{MUTED}">({esc(name_b)})</span></span>'
        f'<span style="font-size: 18px; font-weight: 650; color: {_delta_color(row)}">'
        f"{esc(format_pp(row['delta']))}</span>"
        f'<span style="{MUTED}">{esc(ci_text)}</span>{power_html}</div>'
        f'<div style="{MUTED}; font-size: 12px">{esc(p)} · {format_num(row["n_paired"])} paired'
        f"{esc(test)}</div><div>{counts}</div>"
    )
    return box(inner, kind="comparison-score", extra="margin-bottom: 8px")


def _change_counts(cases: pd.DataFrame) -> str:
    if cases.empty or "change" not in cases:
        return ""
    counts = cases.groupby(cases["change"].astype(str), sort=False).size()
    parts = "".join(
        badge(f"{str(k).replace('_', ' ')} {int(v)}", str(k)) for k, v in counts.items()
    )
    return f'<div style="margin: 4px 0 8px 0">{parts}</div>'


def regressions_html(cases: pd.DataFrame, limit: int = 20) -> str:
    """The first regressed (case, score) pairs, with both values."""
    if cases.empty:
        return ""
    worst = cases[cases["change"].astype(str) == "regressed"]
    if worst.empty:
        return f'<div style="{MUTED}">No regressions.</div>'
    total = len(worst)
    worst = worst.sort_values("delta", kind="stable").head(limit)
    note = (
        f'<div data-evalbook="regressions-shown" style="{MUTED}; font-size: 12px">the worst '
        f"{len(worst):,} of {total:,} regressed pairs; comparison.cases lists them all</div>"
        if total > len(worst)
        else ""
    )
    rows = note + "".join(
        f'<div style="display: flex; gap: 10px; border-bottom: {BORDER}; padding: 2px 0">'
        f'<span style="flex: 0 1 200px; overflow-wrap: anywhere">{esc(r["case_id"])}</span>'
        f'<span style="flex: 0 1 180px; overflow-wrap: anywhere; {MUTED}">{esc(r["score"])}</span>'
        f'<span style="flex: 0 0 120px">{format_num(r["a"])} → {format_num(r["b"])}</span>'
        f'<span style="flex: 0 0 80px; color: {STATUS_COLORS["regressed"]}">'
        f"{esc(format_pp(r['delta']))}</span></div>"
        for _, r in worst.iterrows()
    )
    return rows


def comparison_html(comp: ComparisonLike) -> str:
    """Warnings first, then per score: means, delta with CI and p-value, changed cases."""
    name_a, name_b = comparison_names(comp)
    summary: pd.DataFrame = comp.summary
    cases: pd.DataFrame = comp.cases
    by = slice_columns(summary)
    head = (
        f'<div style="margin-bottom: 8px; overflow-wrap: anywhere">'
        f'<span style="font-weight: 650; font-size: 15px">'
        f"{esc(name_a)} → {esc(name_b)}</span> "
        f'<span style="{MUTED}">· comparison of {len(summary)} '
        f"{'(slice, score) row' if by else 'score'}{'s' if len(summary) != 1 else ''}"
        f"{' by ' + esc(', '.join(map(str, by))) if by else ''}</span></div>"
    )
    rows = "".join(_score_row(r, name_a, name_b, by) for _, r in summary.iterrows())
    if not rows:
        rows = f'<div style="{MUTED}">No score in common.</div>'
    regressions = regressions_html(cases)
    tail = ""
    if regressions:
        tail = (
            f'<div style="margin-top: 10px; font-weight: 600">Cases by change</div>'
            f"{_change_counts(cases)}<div style='font-weight: 600'>Regressions</div>{regressions}"
        )
    usage = usage_deltas_html(comp)  # "" unless a case has a known cost in both runs
    return root(head + warnings_html(list(comp.warnings)) + rows + usage + tail, "comparison")


def comparison_text(comp: ComparisonLike) -> str:
    """The one text form of a comparison: `repr(comparison)`, the widget's `text/plain` and
    `evalbook compare` all print this.

    A head line (the runs, shared cases, scores, slices), one line per summary row (means,
    delta with its CI, p-value with the Holm-adjusted one and the test, the paired counts,
    the clusters when fewer than the cases, the mde as "could detect ±X pp", and
    `underpowered` / `small slice` flags), the cost and
    latency deltas when known in both runs, then each warning after `!`.
    """
    name_a, name_b = comparison_names(comp)
    summary = comp.summary
    by = slice_columns(summary)
    n_scores = summary["score"].astype(str).nunique() if len(summary) else 0
    head = f"<Comparison {name_a!r} → {name_b!r}"
    shared = getattr(comp, "shared_cases", None)
    if shared is not None:
        head += f" · {int(shared)} shared cases"
    head += f" · {n_scores} score{'s' if n_scores != 1 else ''}"
    if by:
        n = len(summary) // max(1, n_scores)
        head += f" × {n} slice{'s' if n != 1 else ''} of {', '.join(map(str, by))}"
    lines = [head + ">"]
    for _, r in summary.iterrows():
        where = "".join(f"{c}={'—' if is_missing(r[c]) else r[c]} · " for c in by)
        lines.append(f"  {where}{r['score']}: {_row_text(r, sliced=bool(by))}")
    lines += [f"  {line}" for line in usage_deltas_lines(comp)]
    lines += [f"  ! {w}" for w in comp.warnings]
    return "\n".join(visible(line) for line in lines)  # names, labels, warnings: any text


def _row_text(row: Any, *, sliced: bool) -> str:
    """One summary row as text (see `comparison_text`); `small slice` only when `sliced`."""
    if row["n_paired"] == 0:
        return "no case counted in both runs"
    test = f", {row['test']}" if "test" in row and not is_missing(row["test"]) else ""
    text = (
        f"{format_pct(row['mean_a'])} → {format_pct(row['mean_b'])} ({format_pp(row['delta'])},"
        f" 95% CI {format_pp_ci(row['ci_low'], row['ci_high'])})"
        f" · {format_p_phrase(row['p_value'])}"
        f" (Holm {format_p(row['p_adjusted'])}{test}) · {int(row['n_paired'])} paired:"
        f" {int(row['improved'])} improved, {int(row['regressed'])} regressed,"
        f" {int(row['same'])} same"
    )
    clusters = row.get("n_clusters")
    if not is_missing(clusters) and int(clusters) != int(row["n_paired"]):
        text += f" · {int(clusters)} clusters"  # only `cluster=` groups cases into fewer
    power = power_text(row)
    if power and float(row["mde"]) > 0:  # 0: every delta equal, nothing to plan from
        text += f" · {power}"
    if underpowered(row):
        text += " · underpowered"
    if sliced and "small" in row and not is_missing(row["small"]) and bool(row["small"]):
        text += " · small slice"
    return text
