"""GitHub-flavoured Markdown of a run or a comparison, for a pull request's comment.

`evalbook show RUN --format markdown` and `evalbook compare A B --format markdown` print it
(docs/cli.md). GitHub refuses a comment over 65,536 characters, so the text is never longer
than `MAX_CHARS` whatever the run: every list is cut and says so (`showing 20 of 1,148`),
every cell is shortened, and a section that no longer fits is left out with a line saying
so. Untrusted text (names, labels, case ids, reasons, outputs, warnings) is escaped for
Markdown and HTML: `|`, `<`, `>`, `&`, backticks, `*`, `_`, `[`, `]`, `~`, `\\`, `@` (no
mention pings anyone) and newlines (a cell is one line); control characters are shown as
escapes (`visible`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, Protocol

import pandas as pd

from .._util._fmt import (
    format_count,
    format_p,
    format_pct,
    format_pct_ci,
    format_pp,
    format_pp_ci,
)
from .._util._text import safe_str, visible
from ._compare_html import comparison_names, power_text, slice_columns, underpowered
from ._protocols import ComparisonLike, RunLike
from ._style import is_missing, shorten

__all__ = [
    "CELL_LIMIT",
    "MAX_CHARS",
    "MAX_ROWS",
    "VerdictLike",
    "comparison_markdown",
    "md",
    "run_markdown",
]

# GitHub's limit on a comment is 65,536 characters; the summary stays well under it
MAX_CHARS = 60_000
# rows of one table (summary rows, reasons, regressions): the rest are counted
MAX_ROWS = 30
# characters of untrusted text in one cell (before escaping)
CELL_LIMIT = 120
_CLOSE = "\n</details>\n\n"
_CUT_NOTE = "\n\n… the rest is left out: a PR comment holds at most {limit:,} characters.\n"


class VerdictLike(Protocol):
    """The check's result (`eb.Check`, `_compare/_gate.py`): passed, and its report's lines."""

    @property
    def passed(self) -> bool: ...
    @property
    def lines(self) -> list[str]: ...


_MD_SPECIAL = {c: "\\" + c for c in "\\*_[]~|#"}
_MD_SPECIAL.update({"`": "&#96;", "@": "&#64;"})


def md(x: Any, limit: int = CELL_LIMIT) -> str:
    """Untrusted text as one line of Markdown: shortened to `limit`, controls and newlines
    shown as escapes, HTML and Markdown characters escaped (a table cell stays one cell).

    Example:
        >>> print(md("a|b <script>`x` @me"))
        a\\|b &lt;script&gt;&#96;x&#96; &#64;me
    """
    if is_missing(x):
        return ""
    text = visible(shorten(safe_str(x), limit))  # newlines too: "\\n"
    text = html.escape(text, quote=False)
    return "".join(_MD_SPECIAL.get(c, c) for c in text)


class _Doc:
    """Markdown assembled under a hard character limit (what does not fit is left out)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.full = False
        self.open = 0  # <details> opened and not closed yet
        # room kept for the note saying the rest was left out, and for closing two <details>
        self.reserve = len(_CUT_NOTE.format(limit=limit)) + 2 * len(_CLOSE)

    def fits(self, text: str) -> bool:
        return not self.full and self.size + len(text) + self.reserve <= self.limit

    def add(self, text: str) -> bool:
        """Append `text` whole, or mark the document full (nothing more is added)."""
        if not self.fits(text):
            self.full = True
            return False
        self.parts.append(text)
        self.size += len(text)
        return True

    def table(
        self, headers: Sequence[str], rows: Sequence[Sequence[str]], total: int, what: str
    ) -> None:
        """A table of `rows` (already escaped), then `showing k of total what` when cut."""
        head = "| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
        if not self.add(head):
            return
        shown = 0
        for row in rows:
            line = "| " + " | ".join(row) + " |\n"
            count = f"\n_showing {shown + 1:,} of {total:,} {what}_\n"
            if not self.fits(line + count):
                break
            self.add(line)
            shown += 1
        if shown < total:
            self.add(f"\n_showing {shown:,} of {total:,} {what}_\n")
        self.add("\n")

    def details(self, summary: str) -> bool:
        """Open a collapsed `<details>` block headed by `summary` (already escaped)."""
        if self.add(f"<details><summary>{summary}</summary>\n\n"):
            self.open += 1
            return True
        return False

    def close(self) -> None:
        """Close the innermost `<details>` block (room for it is kept in `reserve`)."""
        if self.open:
            self.parts.append(_CLOSE)
            self.size += len(_CLOSE)
            self.open -= 1

    def text(self) -> str:
        out = "".join(self.parts)
        if self.full:
            out += _CLOSE * self.open + _CUT_NOTE.format(limit=self.limit)
        return out


def _verdict_md(doc: _Doc, verdict: VerdictLike | None) -> None:
    if verdict is None:
        return
    lines = list(verdict.lines)
    if not doc.details(f"check: {'passed' if verdict.passed else 'FAILED'}"):
        return
    for line in lines[:MAX_ROWS]:
        if not doc.add(f"- {md(line.strip(), 300)}\n"):
            break
    if len(lines) > MAX_ROWS:
        doc.add(f"- … {len(lines) - MAX_ROWS} more lines\n")
    doc.close()


def _title(verdict: VerdictLike | None) -> str:
    if verdict is None:
        return ""
    return " · ✅ check passed" if verdict.passed else " · ❌ check failed"


def _mean_ci(r: Any) -> list[str]:
    mean, ci = format_pct_ci(r["mean"], r["ci_low"], r["ci_high"])
    return [mean, ci or "—"]


def _summary_rows(summary: pd.DataFrame) -> list[list[str]]:
    rows = []
    for r in summary.head(MAX_ROWS).to_dict("records"):
        rows.append(
            [
                md(r["label"]) + ("" if r["label"] == r["score"] else f" ({md(r['score'])})"),
                *_mean_ci(r),
                *(format_count(r[k]) for k in ("n_cases", "counted", "unscored", "errors")),
            ]
        )
    return rows


def run_markdown(
    run: RunLike, verdict: VerdictLike | None = None, *, limit: int = MAX_CHARS
) -> str:
    """A run as Markdown: its headline, the summary table, the unscored reasons and errors,
    and the check's verdict (when given), in at most `limit` characters.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1, 2]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False, name="r")
        >>> print(run_markdown(run).splitlines()[0])
        ### evalbook · r
    """
    doc = _Doc(limit)
    h = run.headline
    doc.add(f"### evalbook · {md(run.name)}{_title(verdict)}\n\n")
    doc.add(f"**{md(h.text, 400)}**\n\n")
    doc.add(f"run `{md(run.id, 60)}` · {format_count(h.n_cases)} cases")
    doc.add(f" × {h.epochs} epochs\n\n" if h.epochs > 1 else "\n\n")
    _verdict_md(doc, verdict)
    summary = run.summary()
    headers = ["score", "mean", "95% CI", "cases", "counted", "unscored", "errors"]
    doc.table(headers, _summary_rows(summary), len(summary), "scores")
    _unscored_md(doc, run.unscored())
    return doc.text()


def _unscored_md(doc: _Doc, unscored: pd.DataFrame) -> None:
    if unscored.empty:
        doc.add("Every record was scored: no unscored reasons, no errors.\n")
        return
    total = int(unscored["n"].sum())
    if not doc.details(f"unscored reasons and errors ({format_count(total)} records)"):
        return
    rows = [
        [md(r["score"]), md(r["status"]), md(r["reason"]), format_count(r["n"])]
        for r in unscored.head(MAX_ROWS).to_dict("records")
    ]
    doc.table(["score", "status", "reason", "records"], rows, len(unscored), "reasons")
    doc.close()


def _comparison_rows(summary: pd.DataFrame, by: list[Any]) -> list[list[str]]:
    rows = []
    for r in summary.head(MAX_ROWS).to_dict("records"):
        flags = " ⚠ underpowered" if underpowered(r) else ""
        power = power_text(r)
        rows.append(
            [
                *(md(r[c]) if not is_missing(r[c]) else "—" for c in by),
                md(r["label"]) + ("" if r["label"] == r["score"] else f" ({md(r['score'])})"),
                format_pct(r["mean_a"]),
                format_pct(r["mean_b"]),
                f"**{format_pp(r['delta'])}**{flags}",
                format_pp_ci(r["ci_low"], r["ci_high"]) or "—",
                md(format_p(r["p_value"])),
                format_count(r["n_paired"]),
                f"{format_count(r['improved'])} / {format_count(r['regressed'])}",
                md(power),
            ]
        )
    return rows


def comparison_markdown(
    comp: ComparisonLike,
    verdict: VerdictLike | None = None,
    *,
    regressions: pd.DataFrame | None = None,
    limit: int = MAX_CHARS,
) -> str:
    """A comparison as Markdown: both headlines, one row per score (slice) with the delta,
    its CI, the p-value and the paired counts, the warnings, the verdict (when given) and
    the worst regressions (`regressions`: `Comparison.regressions()`, worst first; else the
    regressed rows of `comp.cases`), in at most `limit` characters.
    """
    doc = _Doc(limit)
    name_a, name_b = comparison_names(comp)
    doc.add(f"### evalbook · {md(name_a)} → {md(name_b)}{_title(verdict)}\n\n")
    for side, name in (("a", name_a), ("b", name_b)):
        run = getattr(comp, side, None)
        headline = getattr(getattr(run, "headline", None), "text", None)
        if headline is not None:
            doc.add(f"- {side.upper()} **{md(name)}**: {md(headline, 300)}\n")
    doc.add("\n")
    warnings = list(comp.warnings)
    if warnings:
        doc.add(f"> [!WARNING]\n> {len(warnings)} warning{'s' if len(warnings) != 1 else ''}\n")
        for w in warnings[:MAX_ROWS]:
            if not doc.add(f"> - {md(w, 400)}\n"):
                break
        if len(warnings) > MAX_ROWS:
            doc.add(f"> - … {len(warnings) - MAX_ROWS} more warnings\n")
        doc.add("\n")
    _verdict_md(doc, verdict)
    summary = comp.summary
    by = slice_columns(summary)
    headers = [*(md(c) for c in by), "score", "A", "B", "Δ B − A", "95% CI", "p", "paired"]
    headers += ["improved / regressed", "power"]
    doc.table(headers, _comparison_rows(summary, by), len(summary), "rows")
    _regressions_md(doc, comp, regressions)
    return doc.text()


def _regressions_md(doc: _Doc, comp: ComparisonLike, table: pd.DataFrame | None) -> None:
    if table is None:
        cases = comp.cases
        table = cases[cases["change"].astype(str) == "regressed"]
        table = table.sort_values("delta", kind="stable")
    if table.empty:
        doc.add("No case regressed.\n")
        return
    n = len(table)
    if not doc.details(f"regressions ({format_count(n)})"):
        return
    has_outputs = "output_a" in table.columns and "output_b" in table.columns
    rows = []
    for r in table.head(MAX_ROWS).to_dict("records"):
        row = [md(r["case_id"], 60), md(r["score"], 60)]
        row += [format_pct(r["a"]), format_pct(r["b"]), format_pp(r["delta"])]
        if has_outputs:
            row += [md(r["output_a"], 80), md(r["output_b"], 80)]
        rows.append(row)
    headers = ["case", "score", "A", "B", "Δ"] + (["output A", "output B"] if has_outputs else [])
    doc.table(headers, rows, n, "regressions")
    doc.close()
