"""A judge's records against human labels (`eb.agreement`): agreement statistics with case
bootstrap CIs, a confusion matrix, and a prediction-powered corrected mean (docs/judges.md,
"Validating a judge").

Only the public Run API is read (`definitions`, `data`, `scores`, `cases`), so a loaded run
gives the same result as the run in memory. The statistics are in `_model/_agreement_stats.py`.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._agreement_stats import (
    KINDS,
    STATISTICS,
    CorrectedMean,
    agreement_statistics,
    case_draws,
    corrected_mean,
    percentile_ci,
    stratified_corrected_mean,
)
from .._model._contract import safe_repr
from .._model._definitions import ScoreDefinition
from .._model._label_pick import label_strata
from .._model._labels import DRAW_KEYS
from .._model._run_data import RunData
from .._model._stats import wilson
from .._render._agreement_html import agreement_html
from .._util._text import safe_str
from .._util._warn import warn
from ._pairing import case_ids

__all__ = [
    "AGREEMENT_COLUMNS",
    "PAIRS_COLUMNS",
    "Agreement",
    "CorrectedMean",
    "agreement",
    "raw_scale",
]

_PINNED = ["exact_agreement", "cohen_kappa", "krippendorff_alpha", "spearman"]
# The documented columns first (docs/judges.md, agreement), then the counts of what was not
# compared and the judge's offset.
AGREEMENT_COLUMNS = [
    "n",
    *[f"{s}{part}" for s in _PINNED for part in ("", "_ci_low", "_ci_high")],
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
PAIRS_COLUMNS = ["case_id", "epoch", "label", "judge", "status", "reason"]
_SHOWN = 5  # case ids named in one error message


class Agreement:
    """A judge's records compared with human labels. Build it with `eb.agreement(...)`.

    Attributes:
        score: The score's name.
        label: The score's display label.
        kind: "ordinal", "nominal" or "interval".
        scale: The judge's raw scale `(low, high)`; `(0, 1)` for a score whose records carry
            no raw value (then the value itself is the raw scale).
        summary: One row: `n` (compared samples), `exact_agreement, cohen_kappa,
            krippendorff_alpha, spearman`, each with `_ci_low/_ci_high` (95 % percentile
            bootstrap over cases, seeded), then `n_cases` (compared cases), `n_error`,
            `n_unscored` (labelled samples whose record is an error / unscored: never counted
            as disagreement), `n_unlabelled` (judged samples without a label), `offset` (mean
            judge - label on the raw scale) with its CI, `score`, `kind`.
        confusion: Counts of compared samples, labels (rows) x judge raw values (columns).
        corrected_mean: The prediction-powered estimate of the human-scale mean on [0, 1]:
            `(value, ci_low, ci_high)`.
        draw: The draw the corrected mean's interval is computed for: "stratified" when every
            label used comes from one `eb.review(select="stratified")` draw of this run (the
            stratified interval), else "random" (a uniform draw, as for labels given by hand).
        draw_note: For labels of a stratified draw, one sentence: the strata the interval used,
            or why it is the uniform one instead; None otherwise.
        judge_mean: The judge's own mean on [0, 1] over every judged case (what
            `corrected_mean` corrects).
        pairs: One row per labelled sample: `case_id, epoch, label, judge` (raw, NaN unless
            scored), `status`, `reason`.
    """

    def __init__(
        self,
        *,
        score: str,
        label: str,
        kind: str,
        scale: tuple[float, float],
        summary: pd.DataFrame,
        confusion: pd.DataFrame,
        corrected_mean: CorrectedMean,
        judge_mean: float,
        pairs: pd.DataFrame,
        draw: str = "random",
        draw_note: str | None = None,
    ) -> None:
        self.score = score
        self.label = label
        self.kind = kind
        self.scale = scale
        self.summary = summary
        self.confusion = confusion
        self.corrected_mean = corrected_mean
        self.judge_mean = judge_mean
        self.pairs = pairs
        self.draw = draw
        self.draw_note = draw_note

    def __repr__(self) -> str:
        row = self.summary.iloc[0]
        return (
            f"Agreement(score={self.score!r}, kind={self.kind!r}, n={int(row['n'])}, "
            f"cohen_kappa={row['cohen_kappa']:.3f}, corrected_mean={self.corrected_mean.value:.3f})"
        )

    def _repr_html_(self) -> str:
        return agreement_html(self)


def _definition(run: RunData, score: Any) -> ScoreDefinition:
    """The run's definition named by `score` (a name or a definition)."""
    name = score.name if isinstance(score, ScoreDefinition) else score
    if not isinstance(name, str):
        raise ConfigurationError(
            f"agreement(score=...) takes a score name or definition, not {safe_str(score)!r}"
        )
    for d in run.definitions:
        if d.name == name:
            return d
    known = ", ".join(repr(d.name) for d in run.definitions) or "none"
    raise ConfigurationError(
        f"agreement(): run {run.name!r} has no score {name!r}; its scores are {known}"
    )


def _missing(value: Any) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except Exception:  # a container, or a user's object whose checks raise anything
        return False


def _number(value: Any, where: str) -> float:
    """A label or raw value as a float: a finite real number (not bool, not text); NaN: missing."""
    if _missing(value):
        return float("nan")
    ok = isinstance(value, Real | Decimal) and not isinstance(value, bool | np.bool_)
    try:
        number = float(value) if ok else float("nan")
    except Exception:  # a user's number type whose __float__ raises anything
        number = float("nan")
    if not math.isfinite(number):
        raise ConfigurationError(
            f"{where} is {safe_repr(value)} ({type(value).__name__}); labels must be finite "
            "real numbers on the judge's raw scale (missing: None or NaN). Convert text "
            "labels with pd.to_numeric first"
        )
    return number


def _label_table(run: RunData, table: pd.DataFrame, score: str) -> pd.Series:
    """`run.labels()` (or a table like it) as one label per case of `score`; two different
    labels of one case (two labelers, two epochs) are a ConfigurationError: pick one first."""
    missing = [c for c in ("case_id", "score", "label") if c not in table.columns]
    if missing:
        raise ConfigurationError(
            f"agreement(labels=<table>): the table has no column {missing[0]!r}; pass "
            "run.labels() (columns case_id, epoch, score, label, labeler, ...), a column name "
            "of the run's data, or a Series indexed by case_id"
        )
    rows = table[(table["score"].astype(str) == score).to_numpy()]
    rows = rows[rows["label"].notna().to_numpy()]
    by_case = rows.groupby(rows["case_id"].astype(str), sort=False)["label"]
    differ = by_case.nunique()
    if (differ > 1).any():
        case = str(differ.index[int(np.argmax(differ.to_numpy() > 1))])
        raise ConfigurationError(
            f"agreement(labels=<table>): case {case!r} has {int(differ[case])} different labels "
            f"of {score!r} (several labelers or epochs); keep one per case first, e.g. "
            "labels[labels.labeler == 'ana']"
        )
    return by_case.first()


def _table_draw(table: pd.DataFrame, score: str) -> tuple[pd.DataFrame | None, str | None]:
    """The rows of `score`'s labels when they all come from one stratified draw (each row's
    `stratum, stratum_size, candidates`), else None with why not; `(None, None)` when there
    is no stratified draw to speak of (a table without the draw's columns, given by hand, or
    labels of random draws or of unknown ones: the uniform interval, as ever)."""
    if not set(DRAW_KEYS) <= set(table.columns):
        return None, None
    rows = table[(table["score"].astype(str) == score).to_numpy()]
    rows = rows[rows["label"].notna().to_numpy()]
    select = rows["select"].astype(object)
    if not (select == "stratified").any():
        return None, None
    identity = rows[["select", "seed", "n", "candidates"]].astype(object)
    unknown = identity.isna().any(axis=1)
    draws = len(identity[~unknown].drop_duplicates())
    if unknown.any() or draws > 1:
        parts = [f"{draws} draws" if draws > 1 else "one stratified draw"]
        if unknown.any():
            parts.append(f"{int(unknown.sum())} label(s) without a recorded draw")
        return None, (
            f"the labels mix {' and '.join(parts)}: the interval is the uniform one; for the "
            "stratified one pass the labels of one eb.review(select='stratified') draw, e.g. "
            "labels[labels.seed == 0]"
        )
    return rows, None


def _labels(run: RunData, labels: Any, ids: pd.Index) -> np.ndarray:
    """One label per case of `ids` (NaN: no label), checked to be real numbers."""
    if isinstance(labels, str):
        data = run.data
        if labels not in data.columns:
            shown = ", ".join(repr(str(c)) for c in list(data.columns)[:20])
            raise ConfigurationError(
                f"agreement(labels={labels!r}): run {run.name!r}'s data has no such column; "
                f"its columns are {shown}. Pass a column name or a Series indexed by case_id"
            )
        if len(data) != len(ids):
            raise ConfigurationError(
                f"agreement(labels={labels!r}): run {run.name!r}'s data has {len(data)} rows "
                f"for {len(ids)} cases; pass the labels as a Series indexed by case_id"
            )
        values = list(data[labels])
        where = [f"label column {labels!r}, case {cid!r}" for cid in ids]
    elif isinstance(labels, pd.Series):
        index = pd.Index([safe_str(i) for i in labels.index])  # case ids are text
        dup = index[index.duplicated()].unique()
        if len(dup):
            raise ConfigurationError(
                f"agreement(labels=...): case ids {list(dup[:_SHOWN])} appear more than once in "
                "the labels' index; give one label per case"
            )
        unknown = index[~index.isin(ids)]
        if len(unknown):
            raise ConfigurationError(
                f"agreement(labels=...): {len(unknown)} labelled case ids are not cases of run "
                f"{run.name!r} (e.g. {list(unknown[:_SHOWN])}); index the labels by case_id "
                "(run.cases.case_id), or drop those rows first"
            )
        by_id = dict(zip(index, labels.tolist(), strict=True))
        values = [by_id.get(cid) for cid in ids]
        where = [f"label of case {cid!r}" for cid in ids]
    else:
        raise ConfigurationError(
            "agreement(labels=...) takes a column name of the run's data or a pandas Series "
            f"indexed by case_id, not {type(labels).__name__}"
        )
    return np.array([_number(v, w) for v, w in zip(values, where, strict=True)], dtype=float)


def _metadata(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        meta = json.loads(text)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def raw_scale(name: str, rows: pd.DataFrame) -> tuple[tuple[float, float], np.ndarray]:
    """The judge's raw scale and each scored record's raw value (NaN for the others).

    A judge record keeps its raw value and scale in its metadata (`raw`, `scale`); a score
    whose records carry neither is on its own [0, 1] scale. Only scored records have a raw
    value; a scored record without one is mapped back from its value.
    """
    # Error records of a judge carry its scale too: a run whose every reply was invalid
    # still has its labels checked against the judge's own scale.
    metas = [_metadata(m) for m in rows["metadata"]]
    scales = {tuple(m["scale"]) for m in metas if isinstance(m.get("scale"), list)}
    if len(scales) > 1:
        raise ConfigurationError(
            f"agreement(): score {name!r} has records on different scales {sorted(scales)}; "
            "compare one judge's records at a time"
        )
    pair = next(iter(scales)) if scales else (0, 1)
    low, high = (_number(v, f"score {name!r}: the scale's bound") for v in pair)
    raw = np.full(len(rows), np.nan)
    for i, (meta, value, status) in enumerate(
        zip(metas, rows["value"], rows["status"], strict=True)
    ):
        if status != "scored":
            continue
        where = f"score {name!r}, case {rows['case_id'].iat[i]!r}: the raw value"
        raw[i] = _number(meta["raw"], where) if "raw" in meta else low + value * (high - low)
    return (low, high), raw


def _check_in_scale(
    name: str, label: np.ndarray, ids: pd.Index, scale: tuple[float, float]
) -> None:
    low, high = scale
    bad = np.flatnonzero((label < low) | (label > high))
    if len(bad):
        i = int(bad[0])
        many = f" ({len(bad)} labels are outside)" if len(bad) > 1 else ""
        raise ConfigurationError(
            f"agreement(): the label of case {ids[i]!r} is {label[i]:g}, outside the raw scale "
            f"[{low:g}, {high:g}] of score {name!r}{many}; labels are on the judge's raw "
            "scale: map them onto it first"
        )


def _settled(x: float) -> float:
    """`x` without its rounding noise at 0: a kappa of 1 - 1.0000000000000002 (or -0.0) is 0.0,
    so that it never prints as `-0.0` / `-0.000`."""
    return 0.0 if abs(x) < 1e-12 else x


def _summary(
    pairs: pd.DataFrame, kind: str, seed: int, n_boot: int, counts: dict[str, int], name: str
) -> pd.DataFrame:
    compared = pairs[pairs["status"] == "scored"]
    x = compared["label"].to_numpy(dtype=float)
    y = compared["judge"].to_numpy(dtype=float)
    cases, case_of = np.unique(compared["case_id"].astype(str).to_numpy(), return_inverse=True)
    point = agreement_statistics(np.ones((1, len(x))), x, y, kind)[0]
    # The case is the unit resampled: a case's epochs are drawn together (docs/judges.md).
    draws = case_draws(len(cases), n_boot, seed) if len(cases) else np.zeros((n_boot, 0))
    # A block of replicates at a time: the (replicates x samples) weights stay small.
    reps = np.vstack(
        [
            agreement_statistics(block[:, case_of.reshape(-1)].astype(float), x, y, kind)
            for block in np.array_split(draws, max(1, -(-n_boot // 256)))
        ]
    )
    row: dict[str, Any] = {"n": len(x)}
    for j, stat in enumerate(STATISTICS):
        low, high = percentile_ci(float(point[j]), reps[:, j])
        if stat == "exact_agreement" and len(cases) and not high > low:
            # every resample agrees alike (0 of 10, 10 of 10): the summary's degenerate rule,
            # the share as a proportion of the cases drawn (docs/statistics.md)
            low, high = wilson(float(point[j]) * len(cases), len(cases))
        row[stat] = _settled(float(point[j]))
        row[f"{stat}_ci_low"], row[f"{stat}_ci_high"] = _settled(low), _settled(high)
    row.update(n_cases=len(cases), **counts, score=name, kind=kind)
    return pd.DataFrame([row], columns=AGREEMENT_COLUMNS)


def _confusion(pairs: pd.DataFrame) -> pd.DataFrame:
    compared = pairs[pairs["status"] == "scored"]
    table = pd.crosstab(compared["label"], compared["judge"]).astype("int64")
    # Whole-point scales read as 1, 2, 3 (the judge stores such raw values as ints too).
    for axis in ("index", "columns"):
        levels = getattr(table, axis).to_numpy(dtype=float)
        if np.all(levels == np.round(levels)) and np.all(np.abs(levels) < 2**53):
            setattr(table, axis, pd.Index(levels.astype("int64")))
    table.index.name, table.columns.name = "label", "judge"
    return table


def _case_strata(
    scored: pd.DataFrame, raw: np.ndarray, draw: pd.DataFrame, epochs: int
) -> tuple[np.ndarray | None, str]:
    """Each judged case's stratum (as `eb.review` drew them), checked against what the labels
    recorded of the draw; None with why not when they do not match the run."""
    if epochs > 1:
        return None, (
            "the run has several epochs: the draw was of samples, the corrected mean is of "
            "cases, so its interval is the uniform one"
        )
    recorded = draw.groupby(draw["case_id"].astype(str), sort=False).first()
    candidates = int(recorded["candidates"].iloc[0])
    if candidates != len(scored):
        return None, (
            f"the draw was made among {candidates} judged samples, the run has {len(scored)}: "
            "the interval is the uniform one"
        )
    strata = label_strata(raw)
    sizes = pd.Series(strata).map(pd.Series(strata).value_counts()).to_numpy()
    at = pd.Series(np.arange(len(scored)), index=scored["case_id"].astype(str).to_numpy())
    where = at.reindex(recorded.index).to_numpy()
    same = ~np.isnan(where.astype(float))
    if same.all():
        i = where.astype(int)
        same = (strata[i] == recorded["stratum"].to_numpy(dtype=float)) & (
            sizes[i] == recorded["stratum_size"].to_numpy(dtype=float)
        )
    if not same.all():
        return None, (
            "the judge's values are not those the stratified draw was made on (rescored?): "
            "the interval is the uniform one"
        )
    return strata, ""


def _ppi(
    rows: pd.DataFrame,
    ids: pd.Index,
    label: np.ndarray,
    scale: tuple[float, float],
    raw: np.ndarray,
    draw: pd.DataFrame | None,
) -> tuple[CorrectedMean, float, str, str | None]:
    """The corrected mean, the judge's raw mean (per case: a case's epochs averaged), the
    draw its interval is for and, for labels of one stratified draw, what it used or why it
    is the uniform one (`Agreement.draw`, `Agreement.draw_note`)."""
    is_scored = (rows["status"] == "scored").to_numpy()
    scored = rows[is_scored]
    per_case = scored.groupby(scored["case_id"].astype(str), sort=False)["value"].mean()
    judged = per_case.to_numpy(dtype=float)
    human = pd.Series(label, index=[str(i) for i in ids]).reindex(per_case.index)
    low, high = scale
    scaled = (human.to_numpy(dtype=float) - low) / (high - low)  # NaN where unlabelled
    mean = float(judged.mean()) if len(judged) else float("nan")
    if draw is None:
        return corrected_mean(judged, scaled), mean, "random", None
    per_sample = rows.groupby(rows["case_id"].astype(str)).size()
    epochs = int(per_sample.max()) if len(per_sample) else 1
    strata, why = _case_strata(scored, raw[is_scored], draw, epochs)
    if strata is None:
        return corrected_mean(judged, scaled), mean, "random", why
    ppi, used = stratified_corrected_mean(judged, scaled, strata)
    merged = f", merged to {used} for the variance" if used < len(np.unique(strata)) else ""
    return (
        ppi,
        mean,
        "stratified",
        (
            f"stratified interval: the labels' draw over {len(np.unique(strata))} strata of the "
            f"judge's values{merged}"
        ),
    )


def agreement(
    run: RunData,
    labels: str | pd.Series | pd.DataFrame,
    *,
    score: str | ScoreDefinition,
    kind: str = "ordinal",
    seed: int = 0,
    n_boot: int = 2000,
) -> Agreement:
    """Compare a judge's records with human labels (docs/judges.md, "Validating a judge").

    Args:
        run: The judged run.
        labels: A column name of `run.data`, a Series indexed by case_id, or the table of
            `run.labels()` (its rows of `score`, one label per case); on the judge's raw
            scale (e.g. 1-5); missing labels (None, NaN) are skipped.
        score: The judged score (name or definition).
        kind: "ordinal" (quadratic-weighted kappa, ordinal alpha), "nominal" (plain kappa,
            nominal alpha) or "interval" (quadratic-weighted kappa, interval alpha).
        seed: Seed of the case bootstrap.
        n_boot: Bootstrap replicates.

    Returns:
        An `Agreement`. With epochs > 1 each sample is compared with its case's label and the
        bootstrap draws cases (all epochs of a case together); the corrected mean averages a
        case's epochs first. Error and unscored records are counted (`n_error`,
        `n_unscored`), never compared. Labels of one stratified `eb.review` draw get the
        stratified interval (`stratified_corrected_mean`; `Agreement.draw`); labels of several
        draws, or some without one, get the uniform interval with a warning saying why.
    """
    if kind not in KINDS:
        raise ConfigurationError(f"agreement(kind={kind!r}): kind is one of {', '.join(KINDS)}")
    for arg, value, least in (("seed", seed, 0), ("n_boot", n_boot, 1)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < least:
            raise ConfigurationError(
                f"agreement({arg}={safe_str(value)!r}): {arg} is an integer >= {least}"
            )
    definition = _definition(run, score)
    name = definition.name
    ids = case_ids(run)
    draw, why = None, None
    if isinstance(labels, pd.DataFrame):  # run.labels(): this score's labels, one per case
        draw, why = _table_draw(labels, name)
        labels = _label_table(run, labels, name)
    label = _labels(run, labels, ids)
    table = run.scores
    rows = table[table["score"] == name].reset_index(drop=True)
    scale, raw = raw_scale(name, rows)
    _check_in_scale(name, label, ids, scale)
    by_id = pd.Series(label, index=[str(i) for i in ids])
    sample_label = by_id.reindex(rows["case_id"].astype(str)).to_numpy()
    has = ~np.isnan(sample_label)
    status = rows["status"].astype(str).to_numpy()
    pairs = pd.DataFrame(
        {
            "case_id": rows["case_id"].astype(str).to_numpy()[has],
            "epoch": rows["epoch"].to_numpy()[has],
            "label": sample_label[has],
            "judge": raw[has],
            "status": status[has],
            "reason": rows["reason"].to_numpy()[has],
        },
        columns=PAIRS_COLUMNS,
    )
    counts = {
        "n_error": int((status[has] == "error").sum()),
        "n_unscored": int((status[has] == "unscored").sum()),
        "n_unlabelled": int(((status == "scored") & ~has).sum()),
    }
    ppi, judge_mean, used, note = _ppi(rows, ids, label, scale, raw, draw)
    note = note or why
    if note is not None and used != "stratified":
        warn(f"agreement(score={name!r}): {note}", UserWarning)
    return Agreement(
        score=name,
        label=definition.display_label(),
        kind=kind,
        scale=scale,
        summary=_summary(pairs, kind, int(seed), int(n_boot), counts, name),
        confusion=_confusion(pairs),
        corrected_mean=ppi,
        judge_mean=judge_mean,
        pairs=pairs,
        draw=used,
        draw_note=note,
    )
