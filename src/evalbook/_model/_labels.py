"""A human label of one sample's score, as given (`eb.review`; stored in `labels.jsonl`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DRAW_KEYS", "LABEL_KEYS", "Label"]

# How the labelled sample was drawn: eb.review's `select`, `seed` and `n`, the number of
# samples drawn from (`candidates`), and for a stratified draw the sample's stratum
# (`label_strata`) and that stratum's size among the candidates. All None: not known (a label
# written before draws were recorded), read as a uniform draw.
DRAW_KEYS = ("select", "seed", "n", "candidates", "stratum", "stratum_size")
LABEL_KEYS = (
    "case_id", "epoch", "score", "label", "labeler", "labeled_at", "note", "skipped", *DRAW_KEYS,
)  # fmt: skip


@dataclass(frozen=True)
class Label:
    """One label: a number on the score's raw scale, or a skip (`label` None, `skipped`),
    with the draw that picked its sample (`DRAW_KEYS`; None when not known).

    Example:
        >>> Label("q1", 1, "helpful", 4.0, labeler="ana").skipped
        False
    """

    case_id: str
    epoch: int
    score: str
    label: float | None
    labeler: str | None = None
    note: str | None = None
    skipped: bool = False
    labeled_at: float = 0.0  # Unix seconds, set when it is written
    select: str | None = None
    seed: int | None = None
    n: int | None = None
    candidates: int | None = None
    stratum: int | None = None
    stratum_size: int | None = None
