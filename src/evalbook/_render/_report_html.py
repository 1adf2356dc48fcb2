"""One self-contained HTML file of a run, or of a run against a baseline (`eb.report`).

The page reads with JavaScript off: the headline, the tables, the comparison, the
regressions and their diffs are plain HTML with inline `style=`; each chart is drawn by
plotly.js, embedded once in the page's head, and has a `<noscript>` table of the numbers
it draws. Nothing is fetched: the page's Content-Security-Policy allows no source outside
the file, and no element has an outside `src` or `href`.

Bounded: the page is at most `MAX_BYTES` (UTF-8) whatever the run. Every list is cut and
says so (`showing 50 of 1,148`); every output is diffed on its first `OUTPUT_LIMIT`
characters; the regressions, their diffs and transcripts stop when the page's budget is
spent, and say how many are left out. Every piece of untrusted text is escaped (`esc`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._util._fmt import format_count, format_num, format_pct, format_pp
from ._compare_html import comparison_html, comparison_names
from ._compare_plots import forest_figure
from ._diff import output_diff_html, score_changes_html
from ._figure import fallback_html, plotly_js, plotly_modules
from ._markdown import VerdictLike
from ._protocols import ComparisonLike, RunLike
from ._run_html import run_cards_html, run_header_html, unscored_html
from ._run_plots import unscored_figure
from ._run_slices import scores_tab_html
from ._style import BORDER, MUTED, STATUS_COLORS, box, esc, is_missing, root
from ._transcript_html import sample_transcript, transcript_pair_html

__all__ = ["MAX_BYTES", "MAX_REGRESSIONS", "OUTPUT_LIMIT", "report_html"]

# the page's size bound, plotly.js included (docs/cli.md: a 10,000-case run's report ≤ 8 MB)
MAX_BYTES = 8_000_000
# regressed cases shown with their diffs (the rest are counted)
MAX_REGRESSIONS = 50
# characters of each output diffed in the report (the run's tables keep the whole text)
OUTPUT_LIMIT = 2_000
# the matcher's work on one diff (pairs of equal tokens, `_diff.word_diff`): a report makes up
# to 50 diffs, and outputs that repeat a word on every other token took 9 s each at the
# default 200,000 pairs; beyond this the diff marks lines, then the differing middle whole
PAIR_LIMIT = 5_000
# turns of a transcript shown, and characters of its text, per side of a regression
MAX_STEPS = 30
STEP_TEXT = 6_000
# the longest numbers table under a chart (points per trace, traces)
MAX_POINTS = 60
MAX_TRACES = 20
# a chart whose data is larger than this is left out (its numbers table stays)
CHART_LIMIT = 500_000

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data:; font-src data:"
)
_PAGE = (
    "<!DOCTYPE html>\n"
    '<html lang="en"><head><meta charset="utf-8">'
    f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<title>{title}</title>{script}</head>"
    '<body style="margin: 24px auto; max-width: 1000px; padding: 0 16px; '
    'background: #ffffff; color: #1f2328">{body}</body></html>\n'
)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _section(title: str, inner: str, kind: str) -> str:
    return (
        f'<section data-evalbook="{kind}" style="margin-top: 22px">'
        f'<h2 style="font-size: 17px; margin: 0 0 8px 0; padding-bottom: 4px; '
        f'border-bottom: {BORDER}; overflow-wrap: anywhere">{esc(title)}</h2>{inner}</section>'
    )


def _verdict_html(verdict: VerdictLike | None) -> str:
    if verdict is None:
        return ""
    status = "passed" if verdict.passed else "failed"
    word = "check passed" if verdict.passed else "check FAILED"
    lines = "".join(
        f'<div style="font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; '
        f'white-space: pre-wrap; overflow-wrap: anywhere">{esc(line, 400)}</div>'
        for line in list(verdict.lines)[:40]
    )
    color = STATUS_COLORS[status]
    inner = f'<div style="font-weight: 650; color: {color}; font-size: 15px">{word}</div>{lines}'
    return box(inner, kind="verdict", extra=f"border-left: 5px solid {color}; margin: 10px 0")


# -- charts ------------------------------------------------------------------------------


def _numbers(values: Any) -> list[Any]:
    if values is None:
        return []
    return list(values)[:MAX_POINTS]


def _cell(x: Any) -> str:
    if isinstance(x, float | int | np.floating | np.integer) and not isinstance(x, bool):
        return esc(format_num(x))
    return esc(x, 200)


def figure_numbers_html(fig: Any) -> str:
    """The numbers a figure draws, as a plain table per trace (its fallback without JS)."""
    blocks = []
    traces = list(fig.data)
    for trace in traces[:MAX_TRACES]:
        xs, ys = _numbers(trace.x), _numbers(trace.y)
        n = max(len(xs), len(ys))
        rows = "".join(
            f"<tr><td style='padding: 1px 8px'>{_cell(xs[i]) if i < len(xs) else ''}</td>"
            f"<td style='padding: 1px 8px'>{_cell(ys[i]) if i < len(ys) else ''}</td></tr>"
            for i in range(n)
        )
        total = max(len(list(trace.x or [])), len(list(trace.y or [])))
        more = (
            f'<div style="{MUTED}; font-size: 12px">showing {n} of {format_count(total)}</div>'
            if total > n
            else ""
        )
        blocks.append(
            f'<div style="margin: 4px 0"><div style="font-weight: 600">{esc(trace.name or "")}'
            f"</div><table style='border-collapse: collapse; font-size: 12px'>{rows}</table>"
            f"{more}</div>"
        )
    if len(traces) > MAX_TRACES:
        blocks.append(
            f'<div style="{MUTED}; font-size: 12px">… {len(traces) - MAX_TRACES:,} more '
            "series</div>"
        )
    return "".join(blocks)


def _chart(fig: Any, key: str) -> str:
    """A figure drawn by the page's one plotly.js, and its numbers in `<noscript>`."""
    pio = plotly_modules()[1]
    spec = json.loads(pio.to_json(fig))
    # "<" only ever occurs inside JSON strings here: as \u003c no text closes the script
    data = json.dumps(spec.get("data", [])).replace("<", "\\u003c")
    layout = json.dumps(spec.get("layout", {})).replace("<", "\\u003c")
    numbers = fallback_html(fig) or figure_numbers_html(fig)
    if len(data) + len(layout) > CHART_LIMIT:  # thousands of reasons: a chart nobody reads
        return (
            f'<div data-evalbook="chart-numbers" style="font-size: 12px; margin: 8px 0">'
            f'<div style="{MUTED}">a chart with this much data is left out; its numbers:</div>'
            f"{numbers}</div>"
        )
    return (
        f'<div data-evalbook="chart" style="margin: 8px 0">'
        f'<div id="{key}" style="width: 100%; min-height: 200px"></div>'
        f"<script>Plotly.newPlot({json.dumps(key)}, {data}, {layout}, "
        '{"displaylogo": false, "responsive": true});</script>'
        f'<noscript><div data-evalbook="chart-numbers" style="font-size: 12px">'
        f'<div style="{MUTED}">the chart\'s numbers (its drawing needs JavaScript)</div>'
        f"{numbers}</div></noscript></div>"
    )


# -- regressions ----------------------------------------------------------------------------


def _cut(text: Any) -> str | None:
    if is_missing(text):
        return None
    s = str(text)
    return s if len(s) <= OUTPUT_LIMIT else s[:OUTPUT_LIMIT]


def _regression_html(
    comp: ComparisonLike,
    r: Mapping[Any, Any],
    names: tuple[str, str],
) -> str:
    case_id = str(r["case_id"])
    out_a, out_b = r.get("output_a"), r.get("output_b")
    longest = (
        max(len(str(o)) for o in (out_a, out_b) if not is_missing(o))
        if not (is_missing(out_a) and is_missing(out_b))
        else 0
    )
    cut = (
        f'<div style="{MUTED}; font-size: 12px">outputs shown up to {OUTPUT_LIMIT:,} '
        "characters; the whole text is in run.cases</div>"
        if longest > OUTPUT_LIMIT
        else ""
    )
    diff = output_diff_html(
        names[0],
        _cut(out_a),
        names[1],
        _cut(out_b),
        changes=score_changes_html(comp, case_id),
        title=f"case {case_id}",
        pair_limit=PAIR_LIMIT,
    )
    parts = [diff, cut]
    ta, tb = (sample_transcript(getattr(comp, side, None), case_id) for side in "ab")
    if ta is not None or tb is not None:  # first epochs, side by side from where they differ
        pair = transcript_pair_html(names[0], ta, names[1], tb, limit=STEP_TEXT, most=MAX_STEPS)
        parts.append(
            f'<details data-evalbook="transcript" style="margin: 2px 0 6px 0"><summary>'
            f"transcripts</summary>{pair}</details>"
        )
    head = (
        f'<div style="font-weight: 600">{esc(case_id, 200)} '
        f'<span style="{MUTED}; font-weight: 400">{esc(r["score"], 200)} · '
        f"{esc(format_pct(r['a']))} → {esc(format_pct(r['b']))} "
        f'<span style="color: {STATUS_COLORS["regressed"]}">{esc(format_pp(r["delta"]))}'
        "</span></span></div>"
    )
    return (
        f'<div data-evalbook="regression" style="margin-bottom: 12px">{head}{"".join(parts)}</div>'
    )


def regressions_section(comp: ComparisonLike, regressions: pd.DataFrame, budget: int) -> str:
    """The worst regressed cases (one per case, worst first), each with the output diff,
    its score changes and transcripts, until `MAX_REGRESSIONS` or `budget` bytes."""
    if regressions.empty:
        return f'<div style="{MUTED}">No case regressed.</div>'
    names = comparison_names(comp)
    cases = regressions.drop_duplicates("case_id", keep="first")
    n_cases = len(cases)
    shown: list[str] = []
    used = 0
    for r in cases.head(MAX_REGRESSIONS).to_dict("records"):
        piece = _regression_html(comp, r, names)
        size = _size(piece)
        if used + size > budget:
            break
        shown.append(piece)
        used += size
    rows = f" ({len(regressions):,} regressed (case, score) pairs)"
    head = (
        f'<div data-evalbook="shown" style="{MUTED}; margin-bottom: 8px">showing '
        f"{len(shown):,} of {n_cases:,} regressed cases{rows}, "
        "worst first: see comparison.regressions()</div>"
    )
    return head + "".join(shown)


# -- the page -------------------------------------------------------------------------------


def report_html(
    run: RunLike,
    *,
    comparison: ComparisonLike | None = None,
    regressions: pd.DataFrame | None = None,
    verdict: VerdictLike | None = None,
    by: Sequence[str] | None = None,
    charts: bool = True,
) -> str:
    """The whole page: header and verdict, headline and score cards, with `comparison`
    (baseline → `run`) its card, warnings and delta chart, then the summary (clustered as the
    run is; also sliced by each column of `by`), the unscored reasons and errors, and the
    regressions with their diffs and transcripts (`regressions`:
    `Comparison.regressions()`, worst first).

    With `charts=False` (or without plotly) the page has no script at all.
    """
    script = ""
    if charts:
        try:
            script = f"<script>{plotly_js()}</script>"
        except ImportError:
            charts = False
    title = f"evalbook report · {run.name}"
    parts = [
        f'<h1 style="font-size: 20px; margin: 0 0 6px 0; overflow-wrap: anywhere">'
        f"{esc(title)}</h1>",
        run_header_html(run),
        _verdict_html(verdict),
        run_cards_html(run),
    ]
    if comparison is not None:  # the question of a pull request first: what changed
        inner = comparison_html(comparison)
        if charts and len(comparison.summary):
            inner += _chart(forest_figure(comparison), "chart-deltas")
        name_a, _ = comparison_names(comparison)
        parts.append(_section(f"Against {name_a}", inner, "comparison"))
    # clustered as the run is (`eb.run(cluster=)`): the summary says by what, and how many
    parts.append(_section("Summary", scores_tab_html(run), "summary"))
    for column in by or ():  # one sliced summary per column (the Scores tab's view)
        sliced = scores_tab_html(run, by=column)
        parts.append(_section(f"Summary by {column}", sliced, "slices"))
    summary = run.summary()
    unscored = unscored_html(run.unscored(), summary)
    if charts and run.definitions and not run.unscored().empty:
        unscored += _chart(unscored_figure(run), "chart-unscored")
    parts.append(_section("Unscored reasons and errors", unscored, "unscored"))
    body_so_far = "".join(parts)
    if comparison is not None:
        if regressions is None:
            cases = comparison.cases
            regressions = cases[cases["change"].astype(str) == "regressed"].sort_values(
                "delta", kind="stable"
            )
        room = MAX_BYTES - _size(script) - _size(body_so_far) - 20_000  # page, headings
        section = regressions_section(comparison, regressions, max(0, room))
        parts.append(_section("Regressions", section, "regressions"))
    body = root("".join(parts), "report")
    return _PAGE.format(title=esc(title), script=script, body=body)
