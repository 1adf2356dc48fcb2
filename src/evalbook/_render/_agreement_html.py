"""Static HTML of a judge's agreement with human labels, from its documented attributes only
(docs/judges.md, "Validating a judge").

`Agreement.summary` (one row: `n`, the four statistics with `_ci_low/_ci_high`, `n_cases,
n_error, n_unscored, n_unlabelled, offset` with its CI), `.confusion` (labels x judge values),
`.corrected_mean` with `.draw_note` (which interval it is), `.judge_mean`, `.scale`, `.score`,
`.label`, `.kind`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._util._fmt import MINUS, format_num, format_pct
from ._style import BORDER, MUTED, STATUS_COLORS, box, esc, is_missing, root

__all__ = ["MAX_CELLS", "agreement_html", "offset_text"]

# Widest confusion matrix drawn (per side): an interval judge with many distinct raw values
# has a table too large to read as a heat map; the DataFrame keeps all of it.
MAX_CELLS = 15
_HEAT = "37, 99, 235"  # one mid-tone blue; its opacity carries the count (light and dark themes)
_STATS = (
    ("exact_agreement", "exact agreement"),
    ("cohen_kappa", "Cohen's κ"),
    ("krippendorff_alpha", "Krippendorff's α"),
    ("spearman", "Spearman ρ"),
)


def _signed(x: float) -> str:
    """`+0.40`, `−0.25` (U+2212), `0.00`: raw-scale points, two decimals (a mean and its CI
    read alike)."""
    text = f"{abs(x):.2f}"
    return text if text == "0.00" else ("+" if x > 0 else MINUS) + text


def _num(x: Any) -> str:
    return format_num(x, digits=3).replace("-", MINUS)


def _ci(low: Any, high: Any, fmt: Any = _num) -> str:
    if is_missing(low) or is_missing(high):
        return ""
    return f"95% CI [{fmt(low)}, {fmt(high)}]"


def _kappa_name(kind: str) -> str:
    return {"ordinal": "quadratic-weighted", "interval": "quadratic-weighted"}.get(kind, "")


def offset_text(row: Any, scale: tuple[float, float]) -> str:
    """The reading of the judge's mean offset: systematic only when its CI excludes 0."""
    offset, low, high = row["offset"], row["offset_ci_low"], row["offset_ci_high"]
    if any(is_missing(v) for v in (offset, low, high)):
        return "offset not estimated (too few compared labels)"
    span = f"{format_num(scale[0])}–{format_num(scale[1])}"
    if float(low) > 0 or float(high) < 0:
        side = "high" if float(offset) > 0 else "low"
        return (
            f"the judge is systematically {_signed(float(offset))} points {side} on its "
            f"{span} scale ({_ci(low, high, lambda v: _signed(float(v)))})"
        )
    return (
        f"no systematic offset detected (mean judge − label {_signed(float(offset))} points, "
        f"{_ci(low, high, lambda v: _signed(float(v)))})"
    )


def _stat_row(row: Any, key: str, name: str, kind: str) -> str:
    value = row[key]
    shown = format_pct(value) if key == "exact_agreement" else _num(value)
    note = _kappa_name(kind) if key == "cohen_kappa" else ""
    note_html = f' <span style="{MUTED}; font-size: 11px">{esc(note)}</span>' if note else ""
    ci = row[f"{key}_ci_low"], row[f"{key}_ci_high"]
    ci_text = _ci(*ci, fmt=format_pct) if key == "exact_agreement" else _ci(*ci)
    return (
        f'<div data-evalbook="agreement-stat" style="display: flex; gap: 12px; '
        f'align-items: baseline"><span style="min-width: 200px">{esc(name)}{note_html}</span>'
        f'<span style="font-weight: 650; min-width: 56px">{esc(shown)}</span>'
        f'<span style="{MUTED}">{esc(ci_text)}</span></div>'
    )


def _cell(text: str, style: str = "") -> str:
    return (
        f'<div style="flex: 0 0 44px; padding: 3px 4px; text-align: center; '
        f'box-sizing: border-box; overflow: hidden; {style}">{text}</div>'
    )


def _heat_map(confusion: pd.DataFrame) -> str:
    """The confusion matrix as rows of `<div>` cells, the count's share of the largest as the
    cell's opacity; cells where label and judge agree are outlined."""
    rows, cols = confusion.shape
    if rows == 0 or cols == 0:
        return f'<div style="{MUTED}">no compared labels</div>'
    if rows > MAX_CELLS or cols > MAX_CELLS:
        return (
            f'<div style="{MUTED}">{rows} label values × {cols} judge values: too many to '
            "draw; the counts are in <code>.confusion</code></div>"
        )
    top = max(int(confusion.to_numpy().max()), 1)
    head = _cell(
        f'<span style="{MUTED}">label ↓ judge →</span>', "flex: 0 0 120px; text-align: left"
    )
    head += "".join(_cell(esc(format_num(c)), "font-weight: 600") for c in confusion.columns)
    lines = [f'<div style="display: flex">{head}</div>']
    for label, counts in confusion.iterrows():
        cells = _cell(esc(format_num(label)), "flex: 0 0 120px; text-align: left; font-weight: 600")
        for judge, count in counts.items():
            share = int(count) / top
            edge = f"outline: {BORDER}; outline-offset: -1px; " if judge == label else ""
            cells += _cell(
                esc(int(count)) if count else f'<span style="{MUTED}">·</span>',
                f"{edge}background: rgba({_HEAT}, {0.08 + 0.72 * share:.3f})" if count else edge,
            )
        lines.append(f'<div data-evalbook="confusion-row" style="display: flex">{cells}</div>')
    return f'<div data-evalbook="confusion" style="margin-top: 6px">{"".join(lines)}</div>'


def _counts_line(row: Any) -> str:
    parts = [f"{int(row['n'])} compared samples of {int(row['n_cases'])} cases"]
    errors, unscored, unlabelled = (int(row[k]) for k in ("n_error", "n_unscored", "n_unlabelled"))
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if unscored:
        parts.append(f"{unscored} unscored")
    if unlabelled:
        parts.append(f"{unlabelled} judged without a label")
    text = " · ".join(parts)
    if errors or unscored:
        text += " (errors and unscored records are left out, not counted as disagreement)"
    return text


def agreement_html(agreement: Any) -> str:
    """The agreement card: statistics with CIs, the offset's reading, the corrected mean and
    the confusion heat map."""
    row = agreement.summary.iloc[0]
    label, name = str(agreement.label), str(agreement.score)
    sub = f' <span style="{MUTED}; font-size: 11px">{esc(name)}</span>' if label != name else ""
    scale = agreement.scale
    stats = "".join(_stat_row(row, key, text, agreement.kind) for key, text in _STATS)
    offset = offset_text(row, scale)
    systematic = offset.startswith("the judge is systematically")
    color = STATUS_COLORS["warning"] if systematic else "inherit"
    cm = agreement.corrected_mean
    corrected = (
        f"judge mean {format_pct(agreement.judge_mean)} → corrected to the human scale "
        f"{format_pct(cm.value)} ({_ci(cm.ci_low, cm.ci_high, format_pct)})"
        if not is_missing(cm.value)
        else "corrected mean not estimated (no labelled case with a judge value)"
    )
    note = getattr(agreement, "draw_note", None)
    if note is not None and not is_missing(cm.value):
        corrected += f"; {note}"  # which interval: the stratified one, or why not
    inner = (
        f'<div style="font-weight: 600">Judge agreement: {esc(label)}{sub}</div>'
        f'<div style="{MUTED}; font-size: 12px">{esc(agreement.kind)} · raw scale '
        f"{esc(format_num(scale[0]))}–{esc(format_num(scale[1]))} · {esc(_counts_line(row))}</div>"
        f'<div style="margin-top: 6px">{stats}</div>'
        f'<div data-evalbook="agreement-offset" style="margin-top: 6px; color: {color}">'
        f"{esc(offset)}</div>"
        f'<div data-evalbook="agreement-corrected">{esc(corrected)}</div>'
        f"{_heat_map(agreement.confusion)}"
    )
    return root(box(inner, kind="agreement-card"), "agreement")
