"""A scorer's `transcript` parameter: the sample's eb.Transcript in a run, a rescore and a
stored run's rescore (read lazily from transcripts.jsonl); None for a sample without one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

STEPS = eb.define_score("steps")


def data(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"c{i}" for i in range(n)], "k": list(range(n))})


def agent(k: int, ctx: Any) -> str:
    """k tool calls, each answered; case c0 (k = 0) logs no step at all."""
    for i in range(k):
        ctx.step(
            role="assistant",
            tool_calls=[{"id": f"t{i}", "function": {"name": "f", "arguments": "{}"}}],
        )
        ctx.step(role="tool", tool_call_id=f"t{i}", content="ok")
    return "done"


@eb.scorer(STEPS)
def n_steps(transcript: eb.Transcript | None) -> Any:
    if transcript is None:
        return eb.Unscored("no_transcript")
    return 1 / (1 + len(transcript.messages))


def values(run: eb.Run) -> dict[str, Any]:
    s = run.scores.set_index("case_id")
    return {c: (s.loc[c, "status"], s.loc[c, "value"]) for c in s.index}


def expected() -> dict[str, Any]:
    return {
        "c0": ("unscored", pytest.approx(float("nan"), nan_ok=True)),
        "c1": ("scored", pytest.approx(1 / 3)),
        "c2": ("scored", pytest.approx(1 / 5)),
    }


def test_a_scorer_gets_the_samples_transcript_or_none() -> None:
    run = eb.run(data(), task=agent, scorers=[n_steps], store=None, progress=False)
    assert values(run) == expected()
    assert run.scores.set_index("case_id").loc["c0", "reason"] == "no_transcript"


def test_a_returned_transcript_is_what_the_scorer_sees() -> None:
    seen: list[Any] = []

    def task(k: int) -> eb.Transcript:
        return eb.Transcript([{"role": "user", "content": str(k)}], output=k)

    def check(transcript: eb.Transcript, output: int) -> float:
        seen.append((transcript.messages[0].content, output))
        return 1.0

    eb.run(data(2), task=task, scorers=[check], store=None, progress=False, concurrency=1)
    assert seen == [("0", 0), ("1", 1)]


def test_kwargs_receive_the_transcript_too() -> None:
    def check(**kw: Any) -> float:
        return float(kw["transcript"] is None)

    run = eb.run(data(2), task=agent, scorers=[check], store=None, progress=False)
    assert run.scores["value"].tolist() == [1.0, 0.0]  # c0 has no steps, c1 has two


def test_a_rescore_in_memory_sees_the_transcripts() -> None:
    run = eb.run(data(), task=lambda k: "x", store=None, progress=False, scorers=[])
    # the source had no transcripts: every sample's is None
    assert set(run.rescore(scorers=[n_steps], progress=False).scores["reason"]) == {"no_transcript"}
    source = eb.run(data(), task=agent, scorers=[], scores=[], store=None, progress=False)
    assert values(source.rescore(scorers=[n_steps], progress=False)) == expected()


def test_a_stored_runs_rescore_reads_the_transcripts_from_the_store(tmp_path: Path) -> None:
    source = eb.run(data(), task=agent, store=tmp_path, progress=False, scorers=[])
    assert source.path is not None
    loaded = eb.load_run(source.path)
    again = loaded.rescore(scorers=[n_steps], progress=False)
    assert values(again) == expected()


def test_a_column_named_transcript_and_a_transcript_parameter_clash() -> None:
    frame = data().assign(transcript="a column")
    with pytest.raises(eb.ConfigurationError, match="'transcript'") as info:
        eb.run(frame, task=agent, scorers=[n_steps], store=None, progress=False)
    assert "rename the column" in str(info.value)


def test_a_task_cannot_take_transcript() -> None:
    def task(transcript: Any) -> str:
        return "x"

    with pytest.raises(eb.ScorerSignatureError, match="transcript"):
        eb.run(data(), task=task, store=None, progress=False)


def test_the_transcripts_output_is_the_samples_in_a_run_and_a_rescore(tmp_path: Path) -> None:
    def output_of(transcript: eb.Transcript | None) -> float:
        assert transcript is not None
        return float(transcript.output == "done")

    source = eb.run(data(3).iloc[1:], task=agent, scorers=[output_of], store=tmp_path,
                    progress=False)  # fmt: skip
    assert source.scores["value"].tolist() == [1.0, 1.0]
    assert source.path is not None
    again = eb.load_run(source.path).rescore(scorers=[output_of], progress=False)
    assert again.scores["value"].tolist() == [1.0, 1.0]
