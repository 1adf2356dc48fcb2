"""A judge client that raises GeneratorExit (or another BaseException) is `judge_raised`.

Sync and async clients say it in the same words, naming the client's exception (a sync
client's GeneratorExit once read `_Carried: `, the name of evalbook's own wrapper; an async
client's was `scorer_raised`). Ctrl-C and SystemExit from a client still stop the run.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DF = pd.DataFrame({"id": ["a", "b"], "x": ["a", "b"]})


class Custom(BaseException):
    """A user's own BaseException (not KeyboardInterrupt or SystemExit)."""


def _clients(exc: BaseException) -> dict[str, Any]:
    def sync_client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        if "rate a" in messages[-1]["content"]:
            raise exc
        return {"score": 80, "justification": "fine"}

    async def async_client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        return sync_client(messages, tool)

    return {"sync": sync_client, "async": async_client}


@pytest.mark.parametrize("kind", [GeneratorExit, Custom])
@pytest.mark.parametrize(
    "deadlines",
    [{}, {"timeout": 30}, {"scorer_timeout": 30}],
    ids=["no-deadline", "judge-timeout", "scorer-timeout"],
)
@pytest.mark.parametrize("votes", [1, 2])
def test_sync_and_async_clients_raising_a_base_exception_say_so_alike(
    kind: type[BaseException], deadlines: dict[str, float], votes: int
) -> None:
    messages: dict[str, str] = {}
    for name, client in _clients(kind("boom")).items():
        judge = eb.judge(
            "q",
            "rate {output}",
            client=client,
            votes=votes,
            backoff=0,
            timeout=deadlines.get("timeout"),
        )
        run = eb.run(
            DF,
            output_column="x",
            scorers=[judge],
            scorer_timeout=deadlines.get("scorer_timeout"),
            store=None,
            progress=False,
        )
        by = run.scores.set_index("case_id")
        assert by.loc["a", "reason"] == "judge_raised", (name, by.loc["a", "message"])
        assert by.loc["b", "status"] == "scored" and by.loc["b", "value"] == 0.8
        messages[name] = by.loc["a", "message"]
    assert messages["sync"] == messages["async"]  # the same words from either kind of client
    assert f"{kind.__name__}: boom" in messages["sync"]
    assert "_Carried" not in messages["sync"]


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("client_kind", ["sync", "async"])
def test_ctrl_c_or_exit_from_a_judge_client_still_stops_the_run(
    kind: type[BaseException], client_kind: str
) -> None:
    judge = eb.judge("q", "rate {output}", client=_clients(kind())[client_kind], backoff=0)
    with pytest.raises(kind):
        eb.run(DF, output_column="x", scorers=[judge], store=None, progress=False)
