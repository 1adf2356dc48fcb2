"""A sample's transcript from the task: ctx.step, a returned eb.Transcript, attempts."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb

SCORE = eb.define_score("got", primary=True)


@eb.scorer(SCORE)
def got(output: Any) -> float:
    return float(output == "answer")


def data(n: int = 2) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"c{i}" for i in range(n)], "question": ["q"] * n})


def go(task: Any, **kw: Any) -> eb.Run:
    return eb.run(data(), task=task, scores=[SCORE], scorers=[got], progress=False, **kw)


def test_a_returned_transcript_wins_over_steps_and_gives_the_output() -> None:
    def task(question: str, ctx: Any) -> Any:
        ctx.step(role="user", content="from ctx")
        return eb.Transcript([{"role": "user", "content": question},
                              {"role": "assistant", "content": "answer"}])  # fmt: skip

    run = go(task)
    assert list(run.cases["output"]) == ["answer", "answer"]
    assert list(run.summary()["mean"]) == [1.0]
    assert "from ctx" not in set(run.steps()["content"])
    assert run.transcript("c0").messages[0].content == "q"


def test_a_transcript_changed_after_it_was_built_is_an_invalid_transcript_record() -> None:
    def task(question: str) -> Any:
        t = eb.Transcript([{"role": "user", "content": question}], output="answer")
        t.messages.append({"role": "tool", "tool_call_id": "nobody"})  # type: ignore[arg-type]
        return t

    run = go(task)
    assert set(run.scores["reason"]) == {"invalid_transcript"}
    assert set(run.scores["status"]) == {"error"}
    assert run.cases["outcome"].tolist() == ["errored", "errored"]
    assert "n_steps" not in run.cases.columns  # never an invented or half transcript


def test_a_bad_step_raises_where_it_was_made() -> None:
    def task(question: str, ctx: Any) -> str:
        ctx.step(role="narrator", content=question)
        return "answer"

    run = go(task)
    assert run.cases["error_type"].tolist() == ["ConfigurationError"] * 2
    assert "narrator" in run.cases["error_message"].iloc[0]


def test_a_retried_sample_has_its_final_attempts_steps_only() -> None:
    def task(question: str, ctx: Any) -> str:
        ctx.step(role="user", content=f"attempt {ctx.attempt}")
        if ctx.attempt == 1:
            raise RuntimeError("flaky")
        return "answer"

    run = go(task, attempts=2)
    assert list(run.steps()["content"]) == ["attempt 2", "attempt 2"]
    assert run.cases["attempts"].tolist() == [2, 2]


def test_a_sample_without_steps_has_no_rows_and_na_counts() -> None:
    def task(question: str, ctx: Any, case_id: str) -> str:
        if case_id == "c1":
            ctx.step(role="assistant", content="answer")
        return "answer"

    run = go(task)
    assert list(run.steps()["case_id"].astype(str)) == ["c1"]
    assert pd.isna(run.cases["n_steps"].iloc[0]) and run.cases["n_steps"].iloc[1] == 1
    with pytest.raises(KeyError, match="no case 'zz'"):
        run.transcript("zz")
    assert run.transcript("c0") is None


def test_a_lone_surrogate_in_a_step_is_replaced_once_where_it_enters(tmp_path: Any) -> None:
    def task(question: str, ctx: Any) -> str:
        ctx.step(role="user", content="caf\u00e9 \ud800 <script>")
        return "answer"

    with pytest.warns(UnicodeWarning, match="a transcript held a lone surrogate") as caught:
        run = eb.run(data(), task=task, scores=[SCORE], scorers=[got], store=tmp_path,
                     progress=False)  # fmt: skip
    assert len([w for w in caught if issubclass(w.category, UnicodeWarning)]) == 1
    assert list(run.steps()["content"]) == ["caf\u00e9 \\ud800 <script>"] * 2
    assert run.path is not None
    assert list(eb.load_run(run.path).steps()["content"]) == ["caf\u00e9 \\ud800 <script>"] * 2
    (run.path / "summary.json").unlink()  # the steps then come from transcripts.jsonl
    assert list(eb.load_run(run.path).steps()["content"]) == ["caf\u00e9 \\ud800 <script>"] * 2
