"""`eb.compare(by=)`: one row per (slice, score), Holm across all of them, small slices
flagged, slice columns on the cases; and the warning about cases lost to errors."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pandas as pd
import pytest

import evalbook as eb
from _public import COMPARISON_COLUMNS

N = 60


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(N)],
            "topic": rng.choice(["math", "code", "chat"], N),
            "level": rng.choice([1, 2], N),
            "x": rng.random(N),
            "y": rng.random(N),
        }
    )


def _run(df: pd.DataFrame, shift: float, name: str) -> eb.Run:
    return eb.run(
        df,
        task=lambda x: x,
        scorers=[
            eb.scorer("hit")(lambda output, y: float(output + shift > y)),
            eb.scorer("near")(lambda output, y: float(min(1.0, abs(output + shift - y)))),
        ],
        name=name,
        store=None,
        progress=False,
    )


@pytest.fixture(scope="module")
def pair() -> tuple[pd.DataFrame, eb.Run, eb.Run]:
    df = _data()
    return df, _run(df, 0.0, "old"), _run(df, 0.2, "new")


def test_one_row_per_slice_and_score_slice_columns_first(pair: tuple) -> None:
    df, old, new = pair
    cmp = eb.compare(old, new, by="topic", score=["hit", "near"])
    s = cmp.summary
    assert list(s.columns) == ["topic", *COMPARISON_COLUMNS]
    topics = list(dict.fromkeys(df["topic"]))  # order of first appearance
    assert s["topic"].tolist() == [t for t in topics for _ in range(2)]
    assert s["score"].astype(str).tolist() == ["hit", "near"] * len(topics)
    assert cmp.by == ["topic"] and cmp.scores == ["hit", "near"]
    # every row is the comparison of two runs over that slice's cases alone
    for topic in topics:
        only = df[df["topic"] == topic]
        alone = eb.compare(_run(only, 0.0, "old"), _run(only, 0.2, "new"), score=["hit", "near"])
        for row, r in zip(
            s[s["topic"] == topic].to_dict("records"), alone.summary.to_dict("records"), strict=True
        ):
            assert row["score"] == r["score"]
            assert (row["n_paired"], row["delta"], row["p_value"]) == (
                r["n_paired"],
                pytest.approx(r["delta"]),
                pytest.approx(r["p_value"]),
            )
            assert row["mde"] == pytest.approx(r["mde"]) and row["test"] == r["test"]
            assert row["small"] == r["small"] == (r["n_paired"] < 10)


def test_holm_by_hand_over_every_slice_score_row(pair: tuple) -> None:
    _, old, new = pair
    s = eb.compare(old, new, by=["topic", "level"], score=["hit", "near"]).summary
    assert list(s.columns[:2]) == ["topic", "level"]
    p = s["p_value"].to_numpy()
    m = len(p)
    assert m == 2 * len(s[["topic", "level"]].drop_duplicates())
    order = np.argsort(p, kind="stable")
    expected = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        expected[i] = running
    np.testing.assert_allclose(s["p_adjusted"].to_numpy(), expected, rtol=1e-12)


def test_cases_gain_the_slice_columns_and_keep_theirs(pair: tuple) -> None:
    df, old, new = pair
    cmp = eb.compare(old, new, by="topic", score="hit")
    assert list(cmp.cases.columns) == ["case_id", "score", "a", "b", "delta", "change", "topic"]
    by_id = dict(zip(df["id"], df["topic"], strict=True))
    assert cmp.cases["topic"].tolist() == [by_id[c] for c in cmp.cases["case_id"]]
    plain = eb.compare(old, new, score="hit")
    pd.testing.assert_frame_equal(cmp.cases.drop(columns="topic"), plain.cases)
    # planning from the sliced comparison reads every paired case, the slices pooled: the
    # sd of the whole comparison's deltas, whose mde its summary row states
    whole = plain.summary.iloc[0]
    assert eb.mde(int(whole["n_paired"]), like=cmp) == pytest.approx(whole["mde"], rel=1e-12)
    assert eb.sample_size(0.05, like=cmp) == eb.sample_size(0.05, like=plain)
    assert "topic=" in repr(cmp)


def test_a_case_only_in_b_takes_its_slice_from_b() -> None:
    df = _data()
    old = _run(df.iloc[:50], 0.0, "old")
    new = _run(df.assign(topic=df["topic"].where(df.index < 50, "late")), 0.2, "new")
    cmp = eb.compare(old, new, by="topic", score="hit")
    late = cmp.cases[cmp.cases["topic"] == "late"]
    assert len(late) == 10 and set(late["change"]) == {"only_b"}
    row = cmp.summary[cmp.summary["topic"] == "late"].iloc[0]
    assert row["n_paired"] == 0 and math.isnan(row["p_value"]) and bool(row["small"])


def test_missing_slice_values_are_a_slice_of_their_own() -> None:
    df = _data()
    df["topic"] = df["topic"].where(df.index % 5 != 0, None)
    cmp = eb.compare(_run(df, 0.0, "o"), _run(df, 0.1, "n"), by="topic", score="hit")
    missing = cmp.summary[cmp.summary["topic"].isna()]
    assert len(missing) == 1 and missing["n_paired"].iloc[0] == 12
    assert cmp.summary["n_paired"].sum() == N


def test_bad_by_columns_are_configuration_errors(pair: tuple) -> None:
    _, old, new = pair
    with pytest.raises(eb.ConfigurationError, match="'nope' is not a column"):
        eb.compare(old, new, by="nope")
    df = _data().rename(columns={"topic": "score"})
    with pytest.raises(eb.ConfigurationError, match="by='score'"):
        eb.compare(_run(df, 0, "o"), _run(df, 0, "n"), by="score")


def test_cases_lost_to_errors_are_one_sentence_per_side() -> None:
    df = pd.DataFrame({"q": range(12)})

    def flaky(q: int) -> int:
        if q < 3:
            raise RuntimeError("boom")
        return q

    ok = eb.scorer("ok")(lambda output: float(output % 2))
    good = eb.run(df, task=lambda q: q, scorers=[ok], name="good", store=None, progress=False)
    bad = eb.run(df, task=flaky, scorers=[ok], name="bad", store=None, progress=False)
    cmp = eb.compare(good, bad)
    assert "3 cases errored in b ('bad') and are counted only in a (only_a), not paired." in (
        cmp.warnings
    )
    back = eb.compare(bad, good)
    assert "3 cases errored in a ('bad') and are counted only in b (only_b), not paired." in (
        back.warnings
    )
    assert not [w for w in eb.compare(good, good).warnings if "errored" in w]


def test_cases_lost_to_timeouts_are_counted_with_the_errors() -> None:
    df = pd.DataFrame({"q": range(8)})

    # Async, and only q = 1, 2 ever wait (for an event nobody sets): every other call ends in
    # the first step of its call, which the event loop runs before the deadline's timer however
    # late that fires, so the short timeout= cuts exactly those two on a loaded machine too.
    async def slow(q: int) -> int:
        if q == 0:
            raise RuntimeError("boom")
        if q in (1, 2):
            await asyncio.Event().wait()
        return q

    ok = eb.scorer("ok")(lambda output: float(output % 2))
    kw = {"scorers": [ok], "store": None, "progress": False}
    good = eb.run(df, task=lambda q: q, name="good", **kw)
    bad = eb.run(df, task=slow, name="bad", timeout=0.2, **kw)
    warning = (
        "3 cases errored or timed out in b ('bad') (1 errored, 2 timed out) and are counted "
        "only in a (only_a), not paired."
    )
    assert warning in eb.compare(good, bad).warnings


def test_run_cluster_option_is_the_comparisons_default() -> None:
    df = _data().assign(passage=np.repeat(np.arange(12), 5))
    kw = {"task": lambda x: x, "store": None, "progress": False, "cluster": "passage"}
    old = eb.run(df, scorers=[eb.scorer("hit")(lambda output, y: float(output > y))], **kw)
    new = eb.run(df, scorers=[eb.scorer("hit")(lambda output, y: float(output + 0.2 > y))], **kw)
    cmp = eb.compare(old, new, by="topic")
    assert cmp.cluster == "passage" and set(cmp.summary["test"]) == {"clustered t"}
    assert cmp.summary["n_clusters"].max() <= 12


def test_a_column_name_that_is_not_a_string() -> None:
    df = pd.DataFrame({"q": range(6), 7: list("aabbcc")})
    ok = eb.scorer("ok")(lambda output: float(output % 2))
    run = eb.run(df, task=lambda q: q, scorers=[ok], store=None, progress=False)
    cmp = eb.compare(run, run, by=7)
    assert cmp.by == [7] and cmp.summary[7].tolist() == ["a", "b", "c"]
    assert "7=a · ok" in repr(cmp)
