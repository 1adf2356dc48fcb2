"""Metadata that cannot be kept is an error for that (case, score) only, never an escaped one."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _public import scores_of

S = eb.define_score("s")


class RaisingMapping(Mapping[str, Any]):
    """A Mapping whose iteration raises."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("cannot iterate")

    def __len__(self) -> int:
        return 1


def _self_referential() -> dict[str, Any]:
    data: dict[str, Any] = {}
    data["me"] = data
    return data


BAD = {
    "a list": [1],
    "a string": "abc",
    "self-referential": _self_referential(),
    "a 4,300-digit int": {"n": 10**4300},
    "a mapping whose iteration raises": RaisingMapping(),
}


@pytest.mark.parametrize("metadata", BAD.values(), ids=BAD.keys())
def test_unkeepable_metadata_is_an_invalid_score_naming_why(metadata: Any) -> None:
    [row] = scores_of([eb.Score(0.5, rationale="r", metadata=metadata)], S).to_dict("records")
    assert (row["status"], row["reason"], row["rationale"]) == ("error", "invalid_score", "r")
    assert "metadata" in row["message"] and pd.isna(row["metadata"])


def test_metadata_is_a_plain_copy_and_keeps_lone_surrogates_apart() -> None:
    held = [1]
    score = eb.Score(0.5, metadata={"x": held, "pair": "\ud83d\ude00", 3: {1, 2}})

    def task(k: int) -> int:
        return k

    def scorer(k: int) -> eb.Score:
        return score

    with pytest.warns(UnicodeWarning, match="lone surrogate"):  # two, replaced by escapes
        run = eb.run(
            pd.DataFrame({"k": [0]}),
            task=task,
            scorers=[eb.scorer(S)(scorer)],
            store=None,
            progress=False,
        )
    held.append(2)  # the record does not share the user's objects
    metadata = json.loads(run.scores["metadata"][0])
    assert metadata == {"x": [1], "pair": "\\ud83d\\ude00", "3": "{1, 2}"}


def test_bad_metadata_in_a_run_errors_only_its_own_record() -> None:
    t = eb.define_score("t")
    df = pd.DataFrame({"k": range(len(BAD) + 1)})
    bad = list(BAD.values())

    @eb.scorer(S)
    def scorer(k: int) -> Any:
        return eb.Score(1.0, metadata=bad[k] if k < len(bad) else {"ok": k})

    def task(k: int, ctx: Any) -> int:
        ctx.record_score(t, 1.0, metadata=bad[k] if k < len(bad) else None)
        return k

    r = eb.run(df, task=task, scores=[t], scorers=[scorer], progress=False)
    by = r.scores.set_index(["case_id", "score"])["status"]
    assert len(by) == 2 * len(df)
    assert by.xs("s", level="score").tolist() == ["error"] * len(bad) + ["scored"]
    assert by.xs("t", level="score").tolist() == ["error"] * len(bad) + ["scored"]
    assert r.cases["outcome"].tolist() == ["passed"] * len(df)
    errors = r.scores[r.scores["status"] == "error"]
    assert (errors["reason"] == "invalid_score").all()
    assert errors["message"].str.contains("metadata").all()
    loaded = eb.load_run(r.path)  # the log held every record
    assert loaded.scores["status"].tolist() == r.scores["status"].tolist()
