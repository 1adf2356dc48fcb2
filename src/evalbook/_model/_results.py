"""Column-wise storage of a run's results: one slot per sample, one per (sample, score).

A sample is one run of a case, the pair (case, epoch); with `epochs=1` a sample is a case.

`Results` is where a run's results enter evalbook: every finished case goes through
`Results.set_case` (the local engine, Dask, resume and the log replay all call it), so that is
where their text is cleaned (`evalbook._util._text`): a lone surrogate in an output, an error,
a record's reason, message, rationale or metadata is replaced by its escape, with one warning
per run. Past this point a run's text is valid Unicode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._util._text import TextGate
from ._contract import Rec
from ._definitions import Grader
from ._tally import Tally
from ._transcript import Transcript, cleaned, counts_of

__all__ = ["OUTCOMES", "Attempt", "Finished", "Results", "TranscriptRef"]

# Final outcomes, by code. PENDING marks a case without a final outcome (not run yet).
PASSED, FAILED, ERRORED, TIMED_OUT = 0, 1, 2, 3
PENDING = -1
OUTCOMES = ("passed", "failed", "errored", "timed_out")
# Record columns that are mostly None; `Results.touched` tracks where they are not.
SPARSE = ("reason", "message", "rationale", "metadata", "grader")


class Attempt(NamedTuple):
    """One attempt of a sample: one call of its task (see `Finished.tries`).

    `outcome` is a code of `OUTCOMES`, or `PENDING` where the source does not say (a log
    written before attempts were logged); times are Unix seconds and seconds, in whole
    microseconds (NaN: not known). `duration_s` is the task call's own time.
    """

    outcome: int
    error_type: str | None
    error_message: str | None
    started_at: float
    duration_s: float


class TranscriptRef(NamedTuple):
    """Where a stored sample's transcript is, without it: its counts and the store's tie.

    `counts` is `(n_steps, n_tool_calls, n_tool_errors)`; `tie` names the stored line that
    holds the transcript (the run store's business: the line's checksum).
    """

    counts: tuple[int, int, int]
    tie: str


class Finished(NamedTuple):
    """A finished case: what the engine hands to `Results`, the run store and Dask.

    Times are Unix seconds and seconds, taken in whole microseconds; `records` holds one
    record per score, in definition order; `usage` what its model calls used, by source
    (None: nothing recorded). `tries` holds every attempt of a sample that had more than
    one, in order, the last one the final (its outcome and error are the sample's); None
    for a sample with one attempt (that attempt is the sample) or where no source kept them.
    `transcript` is what the sample's task did, step by step (None: no transcript);
    a run store reading a sample back gives `stored_transcript` instead, which says where
    its transcript is without reading it.
    """

    outcome: int
    attempts: int
    output: Any
    error_type: str | None
    error_message: str | None
    started_at: float
    duration_s: float
    records: Sequence[Rec]
    usage: Mapping[str, Tally] | None = None
    tries: tuple[Attempt, ...] | None = None
    transcript: Transcript | None = None
    stored_transcript: TranscriptRef | None = None
    # where an errored or timed-out sample's failure came from (`_origin.ORIGINS`); None
    # for a sample that passed or failed, and where the source does not say (an old log)
    origin: str | None = None


class Results:
    """Preallocated columns; samples finishing in any order write to their own slots.

    Sample `i` is case `i // epochs`, epoch `i % epochs + 1` (input order, then epoch);
    record `i * n_scores + j` is sample `i`, score `j`, then definition order.
    `touched` lists the records whose sparse columns (`SPARSE`) hold anything, so tables are
    built without scanning a million Nones; replacing a sparse column wholesale (as a loader
    does) sets it to None, meaning "scan everything" (and whoever does so cleans the text).
    `text` is the run's text boundary, shared with the plan that cleaned the input data so the
    run warns once; case ids are cleaned here too (a no-op for ids the plan cleaned).
    """

    touched: list[int] | None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in SPARSE:
            object.__setattr__(self, "touched", None)
        object.__setattr__(self, name, value)

    def __init__(
        self,
        case_ids: Sequence[str],
        n_scores: int,
        text: TextGate | None = None,
        epochs: int = 1,
    ) -> None:
        n = len(case_ids) * epochs
        size = n * n_scores
        self.text = TextGate() if text is None else text
        ids = list(case_ids)
        if not "".join(ids).isascii():  # one C-level look for the common case
            ids = [self.text(c, "a case id") for c in ids]
        self.case_ids = ids
        self.epochs = epochs
        self.n_scores = n_scores
        self.outcome = np.full(n, PENDING, dtype=np.int8)
        self.attempts = np.zeros(n, dtype=np.int32)
        self.output: list[Any] = [None] * n
        self.error_type: list[str | None] = [None] * n
        self.error_message: list[str | None] = [None] * n
        self.started_at = np.full(n, math.nan)
        self.duration_s = np.full(n, math.nan)
        self.usage: list[Mapping[str, Tally] | None] = [None] * n
        self.tries: list[tuple[Attempt, ...] | None] = [None] * n  # see `Finished.tries`
        self.origin: list[str | None] = [None] * n  # see `Finished.origin`
        self.status = np.zeros(size, dtype=np.int8)
        self.value = np.full(size, math.nan)
        self.reason: list[str | None] = [None] * size
        self.message: list[str | None] = [None] * size
        self.rationale: list[str | None] = [None] * size
        self.metadata: list[dict[str, Any] | None] = [None] * size
        self.grader: list[Grader | None] = [None] * size
        # an error record's origin (None elsewhere; only error records have one)
        self.rec_origin: list[str | None] = [None] * size
        self.steps = np.full((n, 3), -1, dtype=np.int32)  # see the class docstring
        self.transcripts: list[Transcript | None] | None = [None] * n
        self.transcript_source: Callable[[], list[Transcript | None]] | None = None
        # one sample's transcript without reading them all (a stored run's case view)
        self.transcript_one: Callable[[int], Transcript | None] | None = None
        self.ties: list[str | None] = [None] * n
        # a stored run's final steps table, when it has a sound one: run.steps() reads it
        # instead of building the table from the transcripts (None: build it)
        self.steps_file: Callable[[], Any] | None = None
        self.touched = []  # after the sparse columns: assigning them resets it

    @property
    def n_cases(self) -> int:
        """Cases (each run `epochs` times)."""
        return len(self.case_ids)

    @property
    def n_samples(self) -> int:
        """Samples: slots of the per-sample columns (`n_cases * epochs`)."""
        return len(self.case_ids) * self.epochs

    def case_id_of(self, pos: int) -> str:
        """The case id of sample `pos`."""
        return self.case_ids[pos // self.epochs]

    def epoch_of(self, pos: int) -> int:
        """The epoch (1..epochs) of sample `pos`."""
        return pos % self.epochs + 1

    @property
    def has_transcripts(self) -> bool:
        """Whether any sample has a transcript (read from `steps`, never from the transcripts)."""
        return bool(len(self.steps)) and bool((self.steps[:, 0] >= 0).any())

    def read_transcripts(self) -> list[Transcript | None]:
        """Every sample's transcript, in slot order (None: none); fetched on first use."""
        if self.transcripts is None:
            source = self.transcript_source
            found = [None] * self.n_samples if source is None else source()
            # a sample run again since (a retry) may have none now: its old one is not its own
            self.transcripts = [t if self.steps[i, 0] >= 0 else None for i, t in enumerate(found)]
        return self.transcripts

    def transcript_of(self, pos: int) -> Transcript | None:
        """The transcript of sample `pos` (None: none), fetched on first use."""
        if self.steps[pos, 0] < 0:
            return None
        if self.transcripts is None and self.transcript_one is not None:
            return self.transcript_one(pos)  # one line read, not the whole file
        return self.read_transcripts()[pos]

    def sample_case_ids(self) -> list[str]:
        """The case id of every sample, in slot order (each id `epochs` times)."""
        k = self.epochs
        return self.case_ids if k == 1 else [c for c in self.case_ids for _ in range(k)]

    def sample_epochs(self) -> np.ndarray:
        """The epoch of every sample, in slot order."""
        return np.tile(np.arange(1, self.epochs + 1, dtype=np.int32), len(self.case_ids))

    def set_case(self, pos: int, case: Finished) -> Finished:
        """Store one finished sample and its records (one per score, in definition order).

        Returns the case as stored: its text cleaned (the very object given when nothing
        needed it), which is what a run store should log.
        """
        case = self._cleaned(pos, case)
        outcome, attempts, output, error_type, error_message, started_at, duration_s, records = (
            case[:8]
        )
        self.usage[pos] = case.usage
        self.tries[pos] = case.tries
        self.origin[pos] = case.origin
        transcript, ref = case.transcript, case.stored_transcript
        if transcript is not None:
            self.steps[pos] = counts_of(transcript.messages)
            self.ties[pos] = None if ref is None else ref.tie
        elif ref is not None:
            self.steps[pos] = ref.counts
            self.ties[pos] = ref.tie
        else:
            self.steps[pos] = -1
            self.ties[pos] = None
        if transcript is not None and self.transcripts is None:
            self.read_transcripts()  # those of the other samples, before this one joins them
        if self.transcripts is not None:
            self.transcripts[pos] = transcript
        self.outcome[pos] = outcome
        self.attempts[pos] = attempts
        self.output[pos] = output
        self.error_type[pos] = error_type
        self.error_message[pos] = error_message
        self.started_at[pos] = started_at
        self.duration_s[pos] = duration_s
        base = pos * self.n_scores
        for j, rec in enumerate(records):
            i = base + j
            status, value, reason, message, rationale, metadata, grader, origin = rec
            self.rec_origin[i] = origin
            self.status[i] = status
            self.value[i] = value
            if self.touched is not None and (
                reason is not None
                or message is not None
                or rationale is not None
                or metadata is not None
                or grader is not None
            ):
                self.touched.append(i)
            if reason is not None:
                self.reason[i] = reason
            if message is not None:
                self.message[i] = message
            if rationale is not None:
                self.rationale[i] = rationale
            if metadata is not None:
                self.metadata[i] = metadata
            if grader is not None:
                self.grader[i] = grader
        return case

    def _cleaned(self, pos: int, case: Finished) -> Finished:
        """`case` with its text cleaned; the same object when there was nothing to clean.

        ASCII text and None pass with an inline look; anything else goes through the
        run's `TextGate`, and only a record that changed is rebuilt. Graders are
        pydantic models that clean their own text when built (`Grader`).
        """
        text, cid = self.text, self.case_id_of(pos)
        _, _, output, etype, emsg, _, _, records = case[:8]
        if not (output is None or (type(output) is str and output.isascii())):
            output = text(output, "output", cid)
        if not (etype is None or (type(etype) is str and etype.isascii())):
            etype = text(etype, "error type", cid)
        if not (emsg is None or (type(emsg) is str and emsg.isascii())):
            emsg = text(emsg, "error message", cid)
        changed: list[Rec] | None = None
        for j, rec in enumerate(records):
            _, _, reason, message, rationale, metadata, _, _ = rec
            if not (reason is None or (type(reason) is str and reason.isascii())):
                reason = text(reason, "a record's reason", cid)
            if not (message is None or (type(message) is str and message.isascii())):
                message = text(message, "a record's message", cid)
            if not (rationale is None or (type(rationale) is str and rationale.isascii())):
                rationale = text(rationale, "a record's rationale", cid)
            if metadata is not None:
                metadata = text(metadata, "a record's metadata", cid)
            if (
                reason is not rec[2]
                or message is not rec[3]
                or rationale is not rec[4]
                or metadata is not rec[5]
            ):
                changed = list(records) if changed is None else changed
                changed[j] = rec._replace(
                    reason=reason, message=message, rationale=rationale, metadata=metadata
                )
        transcript = case.transcript
        if transcript is not None:
            transcript = cleaned(transcript, text, cid)
        tries = case.tries
        if tries is not None and not all(
            _plain(t.error_type) and _plain(t.error_message) for t in tries
        ):
            tries = tuple(
                t._replace(
                    error_type=None
                    if t.error_type is None
                    else text(t.error_type, "error type", cid),
                    error_message=None
                    if t.error_message is None
                    else text(t.error_message, "error message", cid),
                )
                for t in tries
            )
        if (
            output is case[2]
            and etype is case[3]
            and emsg is case[4]
            and changed is None
            and tries is case.tries
            and transcript is case.transcript
        ):
            return case
        return case._replace(
            output=output,
            error_type=etype,
            error_message=emsg,
            records=records if changed is None else changed,
            tries=tries,
            transcript=transcript,
        )

    def finished(self, pos: int) -> Finished:
        """A stored case as the engine handed it over (for resume, rescore and the log).

        A transcript not read yet stays unread: the case says where it is (`TranscriptRef`).
        """
        ref = None
        if self.steps[pos, 0] >= 0:
            tie = self.ties[pos]
            ref = None if tie is None else TranscriptRef(_counts(self.steps[pos]), tie)
        transcript = None
        if self.transcripts is not None or ref is None:
            transcript = self.transcript_of(pos)
        return Finished(
            int(self.outcome[pos]),
            int(self.attempts[pos]),
            self.output[pos],
            self.error_type[pos],
            self.error_message[pos],
            float(self.started_at[pos]),
            float(self.duration_s[pos]),
            self.records_of(pos),
            self.usage[pos],
            self.tries[pos],
            transcript,
            ref,
            self.origin[pos],
        )

    def records_of(self, pos: int) -> list[Rec]:
        """The records of one case, rebuilt (used by the store and by resume)."""
        base = pos * self.n_scores
        return [
            Rec(
                int(self.status[i]),
                float(self.value[i]),
                self.reason[i],
                self.message[i],
                self.rationale[i],
                self.metadata[i],
                self.grader[i],
                self.rec_origin[i],
            )
            for i in range(base, base + self.n_scores)
        ]


def _counts(row: np.ndarray) -> tuple[int, int, int]:
    return int(row[0]), int(row[1]), int(row[2])


def _plain(value: str | None) -> bool:
    """None or ASCII text: nothing for the text gate to clean."""
    return value is None or (type(value) is str and value.isascii())
