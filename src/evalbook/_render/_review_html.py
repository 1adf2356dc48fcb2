"""What a labeller sees of one sample (`eb.review`): its input, output and transcript, and,
unless the review is blind, the judge's value and rationale.

Bounded and escaped as a case view (`TextBudget`, `CASE_TEXT_LIMIT`); the transcript has its
own budget (`_transcript_html`).
"""

from __future__ import annotations

from .._util._fmt import format_num
from ._budget import TextBudget
from ._cases import input_html, pre_html, text_of
from ._protocols import RunLike
from ._style import MUTED, badge, box, esc, is_missing, root
from ._transcript_html import sample_transcript, transcript_html

__all__ = ["review_sample_html"]


def review_sample_html(
    run: RunLike,
    row: int,
    *,
    score: str,
    raw: float | None,
    blind: bool,
    progress: str,
) -> str:
    """Sample `row` (a row of `run.cases`) for labelling `score`; `raw` is the judge's raw
    value (shown only when not `blind`), `progress` the line above ("23 of 50 labelled")."""
    c = run.cases.iloc[row]
    k = max(run.headline.epochs, 1)
    budget = TextBudget()
    output = text_of(c["output"])
    body = [
        f'<div style="{MUTED}; font-size: 12px">{esc(progress)}</div>',
        f'<div style="font-weight: 650; font-size: 14px">{esc(c["case_id"])}'
        + (
            f' <span style="{MUTED}; font-size: 12px">epoch {int(c["epoch"])}</span>'
            if k > 1
            else ""
        )
        + "</div>",
        f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">input</div>',
        input_html(run, row // k, budget),
        f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">output</div>',
        pre_html(output, budget) if output else f'<div style="{MUTED}">(no output)</div>',
    ]
    transcript = sample_transcript(run, str(c["case_id"]), int(c["epoch"]))
    if transcript is not None:
        body.append(transcript_html(transcript))
    names = [d.name for d in run.definitions]
    record = run.scores.iloc[row * len(names) + names.index(score)]
    if blind:
        body.append(
            f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">the judge\'s value of '
            f"{esc(score)} is hidden while you label (blind=True)</div>"
        )
    else:
        value = "—" if raw is None else format_num(raw)
        rationale = record["rationale"]
        body.append(
            f'<div style="margin-top: 6px">{esc(score)}: {badge(f"judge {value}", "same")}</div>'
            + (
                ""
                if is_missing(rationale) or not str(rationale)
                else f'<div style="font-size: 12px; white-space: pre-wrap">'
                f"{budget.esc(str(rationale))}</div>"
            )
        )
    return root(box("".join(body), kind="review-sample"), "review")
