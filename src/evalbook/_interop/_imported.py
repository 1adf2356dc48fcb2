"""What an importer reads from another harness's results, and the run made of it.

Every importer (`_interop/_inspect.py`, `_lm_eval.py`, ...) turns a file or folder into an
`Imported` value: samples with their outcome, output and raw score values, exactly as the
harness wrote them. `to_run_data` makes a run of it, and only here do values become records:
each goes through the score contract (`record_of`), so a harness's `1.5`, `True` or `"high"` is an
`invalid_score` record, never a number (docs/interop.md).
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from .._errors import ConfigurationError
from .._model._contract import ERROR, UNSCORED, Rec, error_rec, record_of
from .._model._definitions import ScoreDefinition, define_score
from .._model._origin import record_origin
from .._model._results import (
    ERRORED,
    FAILED,
    OUTCOMES,
    PASSED,
    TIMED_OUT,
    Attempt,
    Finished,
    Results,
)
from .._model._run_data import RunData
from .._model._step_tables import StepBlock, blocks_frame, step_rows
from .._model._tally import Tally
from .._model._transcript import Transcript
from .._store._layout import check_run_name
from .._util._gc import paused_gc
from .._util._text import TextGate, safe_str
from .._util._warn import warn
from ._kept import KeptTranscript

__all__ = [
    "FormatError",
    "Imported",
    "ImportedAttempt",
    "ImportedSample",
    "ImportedScore",
    "KeptTranscript",
    "json_safe",
    "run_name_of",
    "score_name_of",
    "to_run_data",
]

_OUTCOME_CODES = dict(zip(OUTCOMES, (PASSED, FAILED, ERRORED, TIMED_OUT), strict=True))
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
_NOT_RUN_NAME = re.compile(r"[^\w.+-]+")
# the run store's limit on a run name (its folder name holds it)
_MAX_RUN_NAME = 100
# how many skipped parts a warning quotes; the rest are counted
_QUOTED = 3


class FormatError(ConfigurationError):
    """The file is not of the named format: the message names the format and what was expected."""


@dataclass(frozen=True)
class ImportedScore:
    """A score the harness reported, under the harness's own name."""

    name: str
    primary: bool = False
    description: str | None = None


# A model API's errors, as the openai SDK and litellm name them: an imported sample that raised
# one failed at the provider (a harness that wrote only the type's name cannot say more).
PROVIDER_KINDS = frozenset(
    {
        "RateLimitError",
        "ApiRateLimitError",  # Harbor's own
        "APIConnectionError",
        "APITimeoutError",
        "InternalServerError",
        "ServiceUnavailableError",
    }
)


def exception_origin(kind: str) -> str:
    """The origin of an imported sample's exception by its type's name: provider or task.

    Example:
        >>> exception_origin("RateLimitError"), exception_origin("KeyError")
        ('provider', 'task')
    """
    return "provider" if kind in PROVIDER_KINDS else "task"


@dataclass(frozen=True)
class ImportedAttempt:
    """One attempt of a sample the harness retried, as it wrote it (times NaN: not known)."""

    outcome: str
    error_type: str | None = None
    error_message: str | None = None
    started_at: float = math.nan
    duration_s: float = math.nan


@dataclass
class ImportedSample:
    """One sample (case, epoch) as the harness wrote it; `scores` holds raw values by name."""

    case_id: str
    epoch: int = 1
    input: Mapping[str, Any] = field(default_factory=dict)
    output: Any = None
    outcome: str = "passed"
    error_type: str | None = None
    error_message: str | None = None
    scores: Mapping[str, object] = field(default_factory=dict)
    started_at: float = math.nan
    duration_s: float = math.nan
    attempts: int = 1
    usage: Mapping[str, Tally] | None = None
    # every attempt, oldest first, the last the sample's own, where the harness kept them
    tries: Sequence[ImportedAttempt] | None = None
    # what the sample did, step by step, where the harness kept it (never flattened)
    transcript: Transcript | KeptTranscript | None = None
    # where an errored or timed-out sample's failure came from, as the importer maps the
    # harness's own error kinds (`_model._origin.ORIGINS`); None: the harness does not say
    origin: str | None = None


@dataclass
class Imported:
    """What one importer read: samples, the scores they carry, what it had to skip."""

    format: str
    path: Path
    name: str
    scores: list[ImportedScore]
    samples: list[ImportedSample]
    skipped: list[str] = field(default_factory=list)
    # the harness's metadata; `created`, where it says when the eval ran (an ISO time), is the
    # stored run's start when no sample has a time of its own
    source: dict[str, Any] = field(default_factory=dict)
    # what the harness was asked to run, where its file says: every case id (in its order) and
    # the epochs of each. A sample of these the file does not hold is "not run", never dropped.
    planned_cases: list[str] | None = None
    planned_epochs: int | None = None


def score_name_of(raw: str, taken: set[str]) -> str:
    """A valid score name for a harness's `raw` name, unique among `taken` (which it joins).

    Example:
        >>> taken: set[str] = set()
        >>> score_name_of("exact_match,strict-match", taken), score_name_of("exact match", taken)
        ('exact_match_strict-match', 'exact_match')
        >>> score_name_of("exact_match", taken)
        'exact_match_2'
    """
    base = _NOT_NAME.sub("_", str(raw)).strip("_") or "score"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def json_safe(value: object) -> Any:
    """A harness's metadata as JSON values (for `options["imported"]`): non-finite numbers and
    other objects as text.

    Example:
        >>> json_safe({"n": 3, "ppl": float("inf"), "tags": ("a", 1)})
        {'n': 3, 'ppl': 'inf', 'tags': ['a', 1]}
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)


def run_name_of(raw: str) -> str:
    """A run name the store accepts, made of a harness's task or eval name.

    Example:
        >>> run_name_of("mmlu: abstract algebra / 5-shot")
        'mmlu-abstract-algebra-5-shot'
    """
    name = _NOT_RUN_NAME.sub("-", str(raw)).replace("..", ".").strip(".-+")[:_MAX_RUN_NAME]
    return name.rstrip(".") or "imported"


def _definitions(imported: Imported) -> tuple[list[ScoreDefinition], dict[str, int]]:
    """The run's score definitions and each raw name's position; one primary at most."""
    primaries = [s.name for s in imported.scores if s.primary]
    if len(primaries) > 1:
        raise ConfigurationError(
            f"the {imported.format} importer marked several primary scores ({', '.join(primaries)})"
        )
    taken: set[str] = set()
    definitions: list[ScoreDefinition] = []
    where: dict[str, int] = {}
    for score in imported.scores:
        if score.name in where:
            raise ConfigurationError(
                f"the {imported.format} importer listed score {score.name!r} twice"
            )
        name = score_name_of(score.name, taken)
        definitions.append(
            define_score(
                name,
                label=None if name == score.name else score.name,
                description=score.description,
                primary=score.primary,
            )
        )
        where[score.name] = len(definitions) - 1
    return definitions, where


def _records(sample: ImportedSample, code: int, where: Mapping[str, int], fmt: str) -> list[Rec]:
    """One record per score: the contract on a passed sample's values, else the outcome's;
    each error record with its origin (`record_origin`: a missing or invalid value is the
    grader's, a sample's error is the sample's)."""
    recs = _plain_records(sample, code, where, fmt)
    origin = sample.origin if code in (ERRORED, TIMED_OUT) else None
    return [
        r._replace(origin=record_origin(r.reason, origin)) if r.status == ERROR else r for r in recs
    ]


def _plain_records(
    sample: ImportedSample, code: int, where: Mapping[str, int], fmt: str
) -> list[Rec]:
    n = len(where)
    if code == PASSED:
        recs: list[Rec] = []
        for raw in where:
            if raw in sample.scores:
                recs.append(record_of(sample.scores[raw]))
            else:
                recs.append(
                    error_rec("missing_score", f"the {fmt} result has no value for {raw!r}")
                )
        return recs
    if code == FAILED:
        return [Rec(UNSCORED, reason="case_failed", message=sample.error_message)] * n
    why = f"{sample.error_type}: {sample.error_message}"
    return [error_rec("case_errored" if code == ERRORED else "case_timed_out", why)] * n


def _seconds(value: object) -> float:
    """A time as a float, NaN when the harness gave none (or none that is a finite number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value) if math.isfinite(value) else math.nan


def _attempts(tries: Sequence[ImportedAttempt] | None) -> tuple[Attempt, ...] | None:
    """A retried sample's attempts as the run keeps them; None for one attempt."""
    if not tries or len(tries) < 2:
        return None
    return tuple(
        Attempt(
            _OUTCOME_CODES[t.outcome],
            None if t.error_type is None else safe_str(t.error_type),
            None if t.error_message is None else safe_str(t.error_message),
            _seconds(t.started_at),
            _seconds(t.duration_s),
        )
        for t in tries
    )


def _warn_skipped(imported: Imported, skipped: list[str], kept: int) -> None:
    if not skipped:
        return
    quoted = "; ".join(skipped[:_QUOTED])
    more = f"; and {len(skipped) - _QUOTED} more" if len(skipped) > _QUOTED else ""
    warn(
        f"{imported.path}: imported {kept} samples as {imported.format}, skipped "
        f"{len(skipped)} part(s) that could not be read: {quoted}{more}",
        RuntimeWarning,
    )


class _CompactSteps:
    """A run's steps table made of its kept transcripts' rows (and its other transcripts'),
    once; the rows are let go then (each kept transcript's are in the table)."""

    def __init__(
        self, results: Results, kept: dict[int, KeptTranscript], full: list[Transcript | None]
    ) -> None:
        self.results, self.kept, self.full = results, kept, full
        self.frame: pd.DataFrame | None = None

    def __call__(self) -> pd.DataFrame:
        if self.frame is None:
            # millions of rows are made and kept: no collection walks them (and the run's
            # samples) again and again while they are
            with paused_gc():
                self.frame = self._made()
        return self.frame

    def _made(self) -> pd.DataFrame:
        r, kept, full = self.results, self.kept, self.full
        # each sample's rows where they are: in a kept transcript's block, else (its rows
        # kept loose, a transcript kept whole) in one block made of them here
        samples: list[tuple[str, int, StepBlock | None, int]] = []
        loose: list[list[tuple[Any, ...]]] = []
        present = (r.steps[:, 0] >= 0).tolist()  # once, not a numpy look-up a sample
        for pos in range(r.n_samples):
            if not present[pos]:
                continue
            k = kept.get(pos)
            if k is not None and k.block is not None:
                samples.append((r.case_id_of(pos), r.epoch_of(pos), k.block, k.at))
                continue
            if k is not None:
                rows = k.steps()
            elif (t := full[pos]) is not None:
                rows = step_rows(t.messages)
            else:
                continue
            samples.append((r.case_id_of(pos), r.epoch_of(pos), None, len(loose)))
            loose.append(rows)
        block = StepBlock(loose)
        frame = blocks_frame(
            (cid, epoch, block if b is None else b, i) for cid, epoch, b, i in samples
        )
        for k in kept.values():  # the rows are in the table now: the blocks are let go
            k.block = None
        return frame


def _keep_compact(results: Results, kept: dict[int, KeptTranscript]) -> None:
    """The run's transcripts made on first use, its steps table from the kept rows."""
    full = results.read_transcripts()
    results.transcripts = None
    results.transcript_source = partial(_transcripts_of, kept, full)
    results.steps_file = _CompactSteps(results, kept, full)


def _transcripts_of(
    kept: Mapping[int, KeptTranscript], full: list[Transcript | None]
) -> list[Transcript | None]:
    return [kept[pos].transcript() if pos in kept else t for pos, t in enumerate(full)]


def to_run_data(imported: Imported, name: str | None = None) -> RunData:
    """The run made of what an importer read; warns once when parts were skipped.

    Cases are the planned ones (`Imported.planned_cases`), then any other in the order its
    first sample appears; a case's epochs are 1..K, where K is the planned epochs or the highest
    epoch read, whichever is more. A sample that is missing leaves its slot without a final
    outcome: the run reads as incomplete ("not run"), never filled in. A second sample of the
    same (case, epoch) is skipped and counted.

    Raises:
        FormatError: nothing could be read (no sample at all).
        ConfigurationError: `name` cannot name a run folder.
    """
    definitions, where = _definitions(imported)
    skipped = list(imported.skipped)
    samples: dict[tuple[str, int], ImportedSample] = {}
    for sample in imported.samples:
        key = (safe_str(sample.case_id), sample.epoch)
        if isinstance(sample.epoch, bool) or not isinstance(sample.epoch, int) or sample.epoch < 1:
            skipped.append(f"sample {key[0]!r}: epoch {sample.epoch!r} is not a whole number >= 1")
        elif sample.outcome not in _OUTCOME_CODES or any(
            t.outcome not in _OUTCOME_CODES for t in sample.tries or ()
        ):
            skipped.append(f"sample {key[0]!r}: unknown outcome {sample.outcome!r}")
        elif key in samples:
            skipped.append(f"sample {key[0]!r} epoch {key[1]}: a second result (the first is kept)")
        else:
            samples[key] = sample
    if not samples:
        why = f" ({'; '.join(skipped[:_QUOTED])})" if skipped else ""
        raise FormatError(
            f"{imported.path}: no {imported.format} sample could be read{why}; pass a file "
            f"that holds results"
        )
    planned = [safe_str(cid) for cid in imported.planned_cases or ()]
    case_ids = list(dict.fromkeys([*planned, *(cid for cid, _ in samples)]))
    epochs = max(imported.planned_epochs or 1, *(epoch for _, epoch in samples))
    text = TextGate()
    results = Results(case_ids, len(definitions), text, epochs=epochs)
    index = {cid: i for i, cid in enumerate(case_ids)}
    inputs: dict[str, Mapping[str, Any]] = {}
    kept: dict[int, KeptTranscript] = {}
    for (cid, epoch), sample in samples.items():
        code = _OUTCOME_CODES[sample.outcome]
        inputs.setdefault(cid, sample.input)
        pos = index[cid] * epochs + epoch - 1
        transcript = sample.transcript
        if isinstance(transcript, KeptTranscript):
            if transcript.ascii:  # nothing to clean: kept compact, its counts are the run's
                kept[pos] = transcript
                transcript = None
            else:  # the run cleans its text, as any transcript's
                transcript = transcript.transcript()
        results.set_case(
            pos,
            Finished(
                code,
                len(sample.tries) if sample.tries else sample.attempts,
                sample.output,
                None if sample.error_type is None else safe_str(sample.error_type),
                None if sample.error_message is None else safe_str(sample.error_message),
                _seconds(sample.started_at),
                _seconds(sample.duration_s),
                _records(sample, code, where, imported.format),
                dict(sample.usage) if sample.usage else None,
                _attempts(sample.tries),
                transcript,
                None,
                sample.origin if code in (ERRORED, TIMED_OUT) else None,
            ),
        )
        if pos in kept:
            results.steps[pos] = kept[pos].counts
    if kept:
        _keep_compact(results, kept)
    # cleaned before pandas sees it: its arrow-backed `str` columns cannot hold a lone surrogate
    # a planned case the file holds no sample of has no inputs: its row is empty
    data = pd.DataFrame([text(dict(inputs.get(cid, {})), "input", cid) for cid in case_ids])
    _warn_skipped(imported, skipped, len(samples))
    options: dict[str, Any] = {
        "imported": {
            "format": imported.format,
            "path": str(imported.path),
            "skipped": len(skipped),
            **json_safe(imported.source),
        }
    }
    if epochs > 1:
        options["epochs"] = epochs
    return RunData(
        name=run_name_of(imported.name) if name is None else check_run_name(name),
        id=uuid.uuid4().hex[:12],
        definitions=definitions,
        data=data,
        results=results,
        options=options,
    )
