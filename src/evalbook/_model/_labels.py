"""A human label of one sample's score, as given (`eb.review`; stored in `labels.jsonl`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LABEL_KEYS", "Label"]

LABEL_KEYS = ("case_id", "epoch", "score", "label", "labeler", "labeled_at", "note", "skipped")


@dataclass(frozen=True)
class Label:
    """One label: a number on the score's raw scale, or a skip (`label` None, `skipped`).

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
