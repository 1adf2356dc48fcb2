"""Provider failures (docs/origin.md): a model API call through `eb.wrap_openai` or a judge client
that failed with a 429, a 5xx or a lost connection is `origin="provider"`, also when the
user's task let it propagate, caught it and raised another error from it, or raised another
one while handling it. Against the loopback server (tests/_openai_server.py): no network."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _openai_server import Server, scored, server, text_message

openai = pytest.importorskip("openai")

__all__ = ["server"]  # the fixture


def sdk(server: Server) -> Any:
    return openai.OpenAI(base_url=server.url, api_key="test-key", max_retries=0, timeout=10)


def ask(client: Any, q: str) -> str:
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": q}])
    return str(reply.choices[0].message.content)


def _run(df: pd.DataFrame, task: Any, **options: Any) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return eb.run(
            df,
            task=task,
            scorers=[lambda output: 1.0],
            store=None,
            progress=False,
            concurrency=1,
            **options,
        )


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_wrapped_call_that_fails_raises_out_of_the_task_as_provider(
    server: Server, status: int
) -> None:
    client = eb.wrap_openai(sdk(server), max_retries=0)
    server.fail(1, status)
    run = _run(pd.DataFrame({"q": ["one", "two"]}), lambda q: ask(client, q))
    assert run.cases["outcome"].tolist() == ["errored", "passed"]
    assert run.cases["origin"].tolist()[0] == "provider"
    assert pd.isna(run.cases["origin"].iloc[1])
    assert run.scores["origin"].tolist()[0] == "provider"  # its record: case_errored
    assert "1 sample failed outside the model (provider 1)" in run.headline.text


def test_a_provider_error_wrapped_by_the_task_is_still_the_providers(server: Server) -> None:
    client = eb.wrap_openai(sdk(server), max_retries=0)

    def caused(q: str) -> str:
        try:
            return ask(client, q)
        except Exception as exc:
            raise RuntimeError("the agent could not go on") from exc

    def during(q: str) -> str:
        try:
            return ask(client, q)
        except Exception:
            raise ValueError("while handling") from None

    def context(q: str) -> str:
        try:
            return ask(client, q)
        except Exception:
            return {}["missing"]  # a KeyError raised while handling it: __context__

    for task in (caused, context):
        server.fail(1, 500)
        run = _run(pd.DataFrame({"q": ["one"]}), task)
        assert run.cases["origin"].tolist() == ["provider"], task.__name__
    server.fail(1, 500)
    run = _run(pd.DataFrame({"q": ["one"]}), during)  # `from None` hides it from the
    assert run.cases["origin"].tolist() == ["provider"]  # traceback; __context__ still holds it


def test_a_400_is_the_tasks_not_the_providers(server: Server) -> None:
    client = eb.wrap_openai(sdk(server), max_retries=0)
    server.fail(1, 400)  # a bad request is the caller's mistake
    run = _run(pd.DataFrame({"q": ["one"]}), lambda q: ask(client, q))
    assert run.cases["origin"].tolist() == ["task"]


def test_a_judge_whose_client_gets_a_500_is_a_provider_record(server: Server) -> None:
    definition = eb.define_score("quality")
    client = eb.openai_client(sdk(server), model="judge-1")
    judge = eb.judge(definition, "Rate {output}", client=client, retries=0)
    server.answer(scored(80))
    server.fail(1, 500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run = eb.run(
            pd.DataFrame({"q": ["a", "b"]}),
            task=lambda q: q,
            scorers=[judge],
            store=None,
            progress=False,
            concurrency=1,
        )
    assert run.scores["reason"].tolist()[0] == "judge_raised"
    assert run.scores["origin"].tolist()[0] == "provider"
    assert pd.isna(run.scores["origin"].iloc[1])
    assert run.cases["outcome"].tolist() == ["passed", "passed"]  # the samples did not fail


def test_a_judge_that_returns_nonsense_is_the_graders(server: Server) -> None:
    definition = eb.define_score("quality")
    client = eb.openai_client(sdk(server), model="judge-1")
    judge = eb.judge(definition, "Rate {output}", client=client, retries=0)
    server.answer(text_message("no tool call"))
    run = eb.run(
        pd.DataFrame({"q": ["a"]}), task=lambda q: q, scorers=[judge], store=None, progress=False
    )
    assert run.scores["status"].tolist() == ["error"]
    assert run.scores["origin"].tolist() == ["grader"]
