"""`run.summary(by=)`: one row per (slice, score), each slice by the whole run's rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import wilson

ConfigurationError = eb.ConfigurationError


def _run(values: dict[str, list[float | None]], data: pd.DataFrame, epochs: int = 1) -> eb.Run:
    def make(name: str) -> eb.Scorer:
        def fn(i: int, epoch: int) -> object:
            v = values[name][(i * epochs + epoch - 1) % len(values[name])]
            return eb.Unscored("none") if v is None else v

        return eb.scorer(name)(fn)

    frame = data.assign(i=range(len(data)))
    return eb.run(
        frame,
        task=lambda i: "out",
        scorers=[make(n) for n in values],
        epochs=epochs,
        store=None,
        progress=False,
    )


def _alone(values: list[float]) -> pd.Series:
    """The summary row of a run whose cases' values are `values`: the whole run's rule."""
    data = pd.DataFrame({"v": values})
    run = eb.run(
        data,
        scorers=[eb.scorer("s")(lambda v: v)],
        output_column="v",
        store=None,
        progress=False,
    )
    return run.summary().iloc[0]


def test_slices_match_a_pandas_groupby_of_reduced_and_scores() -> None:
    rng = np.random.default_rng(3)
    n = 60
    data = pd.DataFrame({"topic": rng.choice(["b", "a", "c"], n), "lvl": rng.integers(0, 2, n)})
    vals = {"x": list(rng.random(n * 2).round(2)), "y": list((rng.random(n * 2) < 0.4) * 1.0)}
    run = _run(vals, data, epochs=2)
    got = run.summary(by=["topic", "lvl"])
    assert list(got.columns[:3]) == ["topic", "lvl", "score"]
    order = data[["topic", "lvl"]].drop_duplicates()
    assert [tuple(r) for r in got[["topic", "lvl"]].drop_duplicates().to_numpy()] == [
        tuple(r) for r in order.to_numpy()
    ]
    red = run.reduced().merge(data.assign(case_id=run.data.index.astype(str)), on="case_id")
    scores = run.scores.merge(data.assign(case_id=run.data.index.astype(str)), on="case_id")
    for row in got.itertuples():
        these = red[(red.topic == row.topic) & (red.lvl == row.lvl) & (red.score == row.score)]
        # the slice's interval: a run whose cases are that slice's case values, alone
        alone = _alone(these.loc[these.status == "scored", "value"].tolist())
        assert row.mean == pytest.approx(alone["mean"]) and row.ci_low == pytest.approx(
            alone["ci_low"]
        )
        assert row.ci_high == pytest.approx(alone["ci_high"])
        samples = scores[
            (scores.topic == row.topic) & (scores.lvl == row.lvl) & (scores.score == row.score)
        ]
        assert row.counted == samples["counted"].notna().sum()
        assert row.n_cases == len(these)
        assert row.n_clusters == (these.status == "scored").sum()
        assert not math.isnan(row.var_between) or (these.status == "scored").sum() < 2


def test_missing_slice_values_are_a_slice_of_their_own() -> None:
    data = pd.DataFrame({"t": ["a", None, "a", None]})
    got = _run({"s": [1.0, 0.0, 0.0, 0.0]}, data).summary(by="t")
    assert len(got) == 2 and got["t"].iloc[0] == "a" and pd.isna(got["t"].iloc[1])
    assert got["mean"].tolist() == [0.5, 0.0]


def test_unknown_column_and_a_run_without_data_are_configuration_errors() -> None:
    run = _run({"s": [1.0]}, pd.DataFrame({"t": ["a", "b"]}))
    with pytest.raises(ConfigurationError, match=r"'nope'.*columns are: 't', 'i'"):
        run.summary(by="nope")
    with pytest.raises(ConfigurationError, match="names a column twice"):
        run.summary(by=["t", "t"])
    bare = eb.run(
        pd.DataFrame({"score": [1]}),
        task=lambda: 1,
        scorers=[lambda: 1.0],
        store=None,
        progress=False,
    )
    with pytest.raises(ConfigurationError, match="summary has a column"):
        bare.summary(by="score")
    run.data = pd.DataFrame(index=run.data.index)  # as a run loaded without data.parquet
    with pytest.raises(ConfigurationError, match="no input data columns"):
        run.summary(by="t")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.floats(0, 1))),
        min_size=1,
        max_size=30,
    ),
)
def test_slice_means_stay_in_range_and_counts_add_up(rows: list[tuple[str, float | None]]) -> None:
    data = pd.DataFrame({"t": [t for t, _ in rows]})
    run = _run({"s": [v for _, v in rows]}, data)
    got, whole = run.summary(by="t"), run.summary()
    means = got["mean"].dropna()
    assert ((means >= 0) & (means <= 1)).all()
    assert ((got["ci_low"].dropna() >= 0) & (got["ci_high"].dropna() <= 1)).all()
    for col in ("n_cases", "counted", "zeroed", "excluded", "unscored", "errors", "n_clusters"):
        assert got[col].sum() == whole[col].iloc[0]


def test_slice_means_and_counts_are_a_pandas_groupby() -> None:
    rng = np.random.default_rng(9)
    n = 80
    data = pd.DataFrame({"topic": rng.choice(["q", "p", "r", "s"], n)})
    vals = {"a": list(rng.random(n).round(1)), "b": [None if v < 0.2 else v for v in rng.random(n)]}
    run = _run(vals, data)
    got = run.summary(by="topic").set_index(["topic", "score"])
    topic = data["topic"].to_numpy()
    red = run.reduced().assign(topic=np.repeat(topic, 2))
    want = red.groupby(["topic", "score"], observed=True)["value"].agg(["mean", "count"])
    long = run.scores.assign(topic=np.repeat(topic, 2))
    counted = long.groupby(["topic", "score"], observed=True)["counted"].count()
    unscored = (long["status"] == "unscored").groupby([long.topic, long.score], observed=True).sum()
    for key, row in want.iterrows():
        assert got.loc[key, "mean"] == pytest.approx(row["mean"])
        assert got.loc[key, "n_clusters"] == row["count"]
        assert got.loc[key, "counted"] == counted[key]
        assert got.loc[key, "unscored"] == unscored[key]


def test_slices_with_cluster_count_each_slices_clusters() -> None:
    data = pd.DataFrame({"t": ["a", "a", "a", "b", "b", "b"], "p": ["x", "x", "y", "z", "z", "z"]})
    got = _run({"s": [1.0, 0.0, 0.5, 1.0, 1.0, 0.0]}, data).summary(by="t", cluster="p")
    assert got["n_clusters"].tolist() == [2, 1]
    # slice b is one cluster: the degenerate rule, Wilson of its mean over one trial, which
    # is the interval of a run of one case of that value
    b = got.iloc[1]
    one = _alone([b["mean"]])
    assert (b["ci_low"], b["ci_high"]) == pytest.approx((one["ci_low"], one["ci_high"]))
    assert (b["ci_low"], b["ci_high"]) == pytest.approx(wilson(b["mean"], 1))
