"""What a run's calls cost, in the views: the headline card's cost line, usage by source,
one sample's usage in the case explorer (docs/cost.md).

Every number is spelled by `evalbook._util._fmt` (`usage_line`, `format_money`, ...), so
the card, `repr(run)` and `evalbook show` read the same. A cost no call reported is shown as
unknown, never `$0.00`. Source names and refusal messages come from stored files and are
escaped like any other text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._util._fmt import (
    format_money,
    format_tokens,
    number,
    refused_note,
    usage_delta_lines,
    usage_delta_parts,
    usage_line,
)
from ._protocols import RunLike
from ._style import BORDER, MUTED, STATUS_COLORS, box, esc

__all__ = [
    "MAX_SOURCES",
    "SOURCE_COLUMNS",
    "amounts",
    "by_source",
    "case_usage_labels",
    "cost_html",
    "has_usage",
    "run_usage_line",
    "run_usage_note",
    "sample_usage_html",
    "source_cells",
    "usage_deltas_html",
    "usage_deltas_lines",
]

SOURCE_COLUMNS = ["source", "calls", "cached", "tokens in", "tokens out", "cost"]
# Sources one view lists (the rest are counted in one line): a stored run's usage may hold
# any number of them, and each is a row of markup.
MAX_SOURCES = 20


# A notebook typesets the text between two `$` as TeX (JupyterLab's MathJax, nbconvert's
# pages): "$0.07 · $0.006 per case" lost its dollars and became italic math. MathJax skips
# `<code>`, so escaped text holding money is put in one, styled as the text around it.
_PLAIN_CODE = (
    "font: inherit; color: inherit; background: none; padding: 0; margin: 0; border: 0; "
    "white-space: normal"
)


def amounts(escaped: str) -> str:
    """Already-escaped text that may hold `$` amounts, kept out of the notebook's TeX."""
    return f'<code style="{_PLAIN_CODE}">{escaped}</code>' if "$" in escaped else escaped


def run_usage_line(run: RunLike) -> str:
    """The run's cost line (`usage_line`), "" when no call was recorded."""
    h = run.headline
    row = {str(k): v for k, v in run.usage_summary().iloc[0].items()}
    ran = sum(h.counts.values())  # samples with a final outcome (not the ones never run)
    return usage_line(row, ran=ran, unit="sample" if h.epochs > 1 else "case")


def run_usage_note(run: RunLike) -> str:
    """The note on refused usage records (`refused_note`), "" when none was."""
    return refused_note(run.usage()["invalid"].tolist())


def by_source(table: pd.DataFrame) -> pd.DataFrame:
    """`run.usage()` added up per source, in the order sources first appear; amounts are
    NaN where no sample of that source reported them (never 0)."""
    if table.empty:
        return pd.DataFrame(columns=["source", *table.columns[3:]])
    grouped = table.groupby(table["source"].astype(str), sort=False)
    counts = grouped[["calls", "cached_calls", "retries"]].sum()
    known = grouped[["input_tokens", "output_tokens", "cost"]].sum(min_count=1)
    invalid = grouped["invalid"].agg(_first_message)
    out = pd.concat([counts, known, invalid], axis=1).reset_index()
    return out.rename(columns={out.columns[0]: "source"})


def _first_message(messages: pd.Series) -> object:
    """A source's first refusal message over its samples (None when there is none)."""
    return next((m for m in messages if isinstance(m, str)), None)


def source_cells(r: Any) -> list[str]:
    """One source's row as raw text cells (`SOURCE_COLUMNS`); each view escapes them."""
    cached = int(r["cached_calls"])
    return [
        str(r["source"]),
        str(int(r["calls"])),
        str(cached) if cached else "",
        format_tokens(r["input_tokens"]),
        format_tokens(r["output_tokens"]),
        "unknown" if pd.isna(r["cost"]) else format_money(r["cost"]),
    ]


def _grid(rows: pd.DataFrame) -> str:
    """Usage rows (one per source) as a grid of `<div>`s, with the first refusal of each."""
    cell = "padding: 1px 6px"
    cols = "minmax(90px, 2fr) repeat(5, minmax(48px, 1fr))"
    out = [f'<div style="{cell}; {MUTED}; font-size: 11px">{h}</div>' for h in SOURCE_COLUMNS]
    notes = []
    for _, r in rows.head(MAX_SOURCES).iterrows():
        cells = source_cells(r)
        out.append(f'<div style="{cell}; overflow-wrap: anywhere">{amounts(esc(cells[0]))}</div>')
        out.extend(
            f'<div style="{cell}; text-align: right">{amounts(esc(c))}</div>' for c in cells[1:]
        )
        if isinstance(r["invalid"], str):
            notes.append(
                f'<div style="font-size: 12px; color: {STATUS_COLORS["warning"]}">'
                f"{amounts(esc(r['source']))}: usage refused (amounts unknown): "
                f"{amounts(esc(r['invalid']))}</div>"
            )
    more = ""
    if len(rows) > MAX_SOURCES:
        more = (
            f'<div style="{MUTED}; font-size: 12px">… {len(rows) - MAX_SOURCES} more sources: '
            "see run.usage()</div>"
        )
    return (
        f'<div data-evalbook="usage" style="display: grid; grid-template-columns: {cols}; '
        f'font-size: 12px; max-width: 560px">{"".join(out)}</div>{"".join(notes)}{more}'
    )


def cost_html(run: RunLike) -> str:
    """The headline card's cost line, the refusal note and, with more than one source, the
    usage by source; "" for a run that recorded no call (its card is unchanged)."""
    line = run_usage_line(run)
    if not line:
        return ""
    table = run.usage()
    note = refused_note(table["invalid"].tolist())
    colour = STATUS_COLORS["warning"]
    warn = (
        f'<div style="font-size: 12px; color: {colour}">{amounts(esc(note))}</div>' if note else ""
    )
    sources = by_source(table)
    detail = ""
    if len(sources) > 1:
        detail = (
            f'<details style="margin-top: 2px"><summary style="{MUTED}; font-size: 12px; '
            f'cursor: pointer">usage by source ({len(sources)})</summary>{_grid(sources)}'
            "</details>"
        )
    return (
        f'<div data-evalbook="cost" style="margin-top: 4px; padding-top: 4px; '
        f'border-top: {BORDER}">{amounts(esc(line))}{warn}{detail}</div>'
    )


def sample_usage_html(table: pd.DataFrame, case_id: Any, epoch: int) -> str:
    """One sample's usage by source for the case explorer; "" when it recorded nothing."""
    ids = table["case_id"].astype(str).to_numpy()
    rows = table[(ids == str(case_id)) & (table["epoch"].to_numpy() == epoch)]
    if rows.empty:
        return ""
    return f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">usage</div>' + _grid(rows)


def has_usage(run: RunLike) -> bool:
    """Whether any sample of the run recorded a call (the views show usage only then)."""
    return (number(run.usage_summary()["calls"].iloc[0]) or 0) > 0


def _case_amount(values: np.ndarray) -> float:
    """A case's amount over its epochs: known only when every epoch's is (a sum over some
    epochs would read as the case's whole cost)."""
    return float(values.sum()) if not np.isnan(values).any() else float("nan")


def case_usage_labels(run: RunLike, positions: Any) -> list[str]:
    """Per case at `positions`: ` · 1.2k/300 tokens · $0.0123` for the explorer's list (over
    the case's epochs; `cost unknown` when not every epoch's is known); [""] * n without usage.
    """
    if not has_usage(run):
        return [""] * len(positions)
    k = max(run.headline.epochs, 1)
    cases = run.cases
    columns = [
        cases[c].to_numpy(dtype=float).reshape(-1, k)
        for c in ("input_tokens", "output_tokens", "cost")
    ]
    labels = []
    for pos in positions:
        tin, tout, cost = (_case_amount(a[int(pos)]) for a in columns)
        money = "cost unknown" if cost != cost else format_money(cost)
        labels.append(f" · {format_tokens(tin)}/{format_tokens(tout)} tokens · {money}")
    return labels


def usage_deltas_lines(comp: Any) -> list[str]:
    """A comparison's `usage` as text lines (`usage_delta_lines`): [] when it has none or no
    case has a cost known in both runs."""
    table = getattr(comp, "usage", None)
    if not isinstance(table, pd.DataFrame):  # a comparison-like object without usage
        return []
    return usage_delta_lines([{str(k): v for k, v in r.items()} for r in table.to_dict("records")])


def _delta_colour(row: Any) -> str:
    """More cost or time, surely (the interval above 0): the regressed colour; less: the
    improved one; else the text's colour."""
    lo, hi = number(row["ci_low"]), number(row["ci_high"])
    if lo is not None and lo > 0:
        return STATUS_COLORS["regressed"]
    if hi is not None and hi < 0:
        return STATUS_COLORS["improved"]
    return "inherit"


def usage_deltas_html(comp: Any) -> str:
    """The comparison card's cost and latency deltas (B − A, paired by case), one line per
    measure as `usage_deltas_lines` words it; "" when no case has a known cost in both runs.
    """
    lines = usage_deltas_lines(comp)
    if not lines:
        return ""
    rows = []
    for r in comp.usage.to_dict("records"):
        head, delta, tail = usage_delta_parts({str(k): v for k, v in r.items()})
        if not delta:  # nothing paired for this measure: the sentence as it is
            rows.append(f'<div style="{MUTED}">{amounts(esc(head))}</div>')
            continue
        rows.append(
            f'<div style="display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap">'
            f"<span>{amounts(esc(head))}</span>"
            f'<span style="font-size: 16px; font-weight: 650; color: {_delta_colour(r)}">'
            f"{amounts(esc(delta))}</span>"
            f'<span style="{MUTED}">{amounts(esc(tail))}</span></div>'
        )
    inner = (
        f'<div style="font-weight: 600">Cost and latency '
        f'<span style="{MUTED}; font-weight: 400; font-size: 12px">B − A, paired by case</span>'
        f"</div>{''.join(rows)}"
    )
    return box(inner, kind="comparison-usage", extra="margin-bottom: 8px")
