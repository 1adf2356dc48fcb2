"""The tiny Inspect AI task the Inspect import tests run with `mockllm` (offline), and its log.

Five samples, two epochs, a `match()` scorer, a scorer giving 1.5 (out of range), one giving
True (and an unscored NaN), one giving a dict with a letter, a solver that raises for one
sample, a message limit for one and a time limit for another.

`python tests/interop/_inspect_task.py DIR` writes the same log to DIR/tiny.eval (the fixture in
tests/interop/fixtures/inspect/ was made so).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import inspect_ai
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import PARTIAL, Score, accuracy, match, mean, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import message_limit, time_limit

import evalbook as eb

FIXTURE = Path(__file__).parent / "fixtures" / "inspect" / "tiny.eval"
ANSWERS = {"Say the default": "Default output", "Name a fruit": "An apple"}


def _answer(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """mockllm's reply, by the question (with usage, so mockllm counts no tokens itself)."""
    text = messages[-1].text
    out = ModelOutput.from_content(model="mockllm", content=ANSWERS.get(text, "Not sure"))
    out.usage = ModelUsage(input_tokens=len(text.split()), output_tokens=2, total_tokens=5)
    return out


@solver
def _flaky() -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id == "boom":
            raise RuntimeError("the solver broke on purpose")
        if state.sample_id == "long":
            with message_limit(1):
                state = await generate(state)
        if state.sample_id == "slow":
            with time_limit(0.05):
                await asyncio.sleep(5)
        return await generate(state)

    return solve


@scorer(metrics=[mean()])
def too_big() -> Any:
    async def score(state: TaskState, target: Any) -> Score:
        big = state.sample_id == "a"
        return Score(value=1.5 if big else 0.25, explanation="1.5 for a")

    return score


@scorer(metrics=[accuracy()])
def boolean() -> Any:
    async def score(state: TaskState, target: Any) -> Score:
        if state.sample_id == "b":
            return Score.unscored(reason="refusal", explanation="nothing to grade")
        return Score(value=True, answer="yes")

    return score


@scorer(metrics={"fluency": [mean()], "grade": [accuracy()]})
def multi() -> Any:
    async def score(state: TaskState, target: Any) -> Score:
        return Score(value={"fluency": 0.5, "grade": PARTIAL if state.sample_id == "a" else "C"})

    return score


@task
def tiny() -> Task:
    return Task(
        dataset=[
            Sample(id="a", input="Say the default", target="Default output", metadata={"level": 1}),
            Sample(id="b", input="Name a fruit", target="banana", metadata={"level": 2}),
            Sample(id="boom", input="This one breaks", target="x"),
            Sample(id="long", input="Talk a lot", target="x"),
            Sample(id="slow", input="Take your time", target="x"),
        ],
        solver=_flaky(),
        scorer=[match(), too_big(), boolean(), multi()],
        epochs=2,
    )


def make_log(log_dir: Path, log_format: str) -> Path:
    """Run the tiny task with mockllm and return its log file."""
    logs = inspect_ai.eval(
        tiny(),
        model=get_model("mockllm/model", custom_outputs=_answer),
        log_dir=str(log_dir),
        log_format=log_format,
        display="none",
        fail_on_error=False,
    )
    return Path(logs[0].location)


def run_of(path: Path) -> eb.Run:
    """The log at `path` imported as format "inspect" (its warnings not silenced)."""
    return eb.import_results(path, format="inspect")


def cell(frame: Any, case: str, epoch: int, **where: str) -> Any:
    rows = frame[(frame.case_id == case) & (frame.epoch == epoch)]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1, (case, epoch, where)
    return rows.iloc[0]


def rows_of(run: Any) -> dict[Any, tuple[Any, ...]]:
    """Each sample's rows of cases and scores, and (under the key "scores") the definitions."""
    cases = run.cases
    out: dict[Any, tuple[Any, ...]] = {
        "scores": tuple((d.name, d.label, d.primary) for d in run.definitions)
    }
    for row in cases.itertuples(index=False):
        if row.outcome != row.outcome:  # a slot no sample filled
            continue
        scores = run.scores[(run.scores.case_id == row.case_id) & (run.scores.epoch == row.epoch)]
        out[(row.case_id, row.epoch)] = (
            repr(tuple(row)),
            repr(scores.to_dict("records")),
        )
    return out


if __name__ == "__main__":  # write the committed fixture: python <this file> DIR
    out = Path(sys.argv[1])
    log = make_log(out / "_tmp", "eval")
    log.replace(out / "tiny.eval")
    (out / "_tmp").rmdir()
    print(out / "tiny.eval")
