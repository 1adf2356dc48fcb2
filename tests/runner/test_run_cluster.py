"""`eb.run(cluster=)`: checked before any case runs, stored, the run's summary default."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import evalbook as eb


def _data() -> pd.DataFrame:
    return pd.DataFrame({"passage": ["a", "a", "b", "b", "c", "c"], "i": range(6)})


def _scorer() -> eb.Scorer:
    return eb.scorer("s")(lambda i: [1.0, 1.0, 0.0, 0.5, 1.0, 0.0][i])


def test_an_unknown_cluster_column_fails_before_any_case_runs() -> None:
    ran: list[int] = []
    with pytest.raises(eb.ConfigurationError, match=r"cluster='nope' is not a column.*passage"):
        eb.run(
            _data(),
            task=lambda i: ran.append(i),
            scorers=[_scorer()],
            cluster="nope",
            store=None,
            progress=False,
        )
    assert ran == []
    with pytest.raises(eb.ConfigurationError, match="cluster= takes the name of a column"):
        eb.run(
            _data(),
            task=lambda i: i,
            scorers=[_scorer()],
            cluster=3,  # type: ignore[arg-type]
            store=None,
            progress=False,
        )
    with pytest.raises(eb.ConfigurationError, match="cluster= takes"):
        eb.Eval(_data(), task=lambda i: i, scorers=[_scorer()], cluster=["passage"])


def test_the_run_clusters_its_summary_by_default_stored_and_loaded(tmp_path) -> None:
    run = eb.run(
        _data(),
        task=lambda i: i,
        scorers=[_scorer()],
        cluster="passage",
        store=tmp_path,
        progress=False,
    )
    assert run.options["cluster"] == "passage"
    clustered = run.summary(cluster="passage")
    pd.testing.assert_frame_equal(run.summary(), clustered)
    assert run.summary()["n_clusters"].iloc[0] == 3
    off = run.summary(cluster=False)
    assert off["n_clusters"].iloc[0] == 6 and off["ci_low"].iloc[0] != clustered["ci_low"].iloc[0]
    assert run.headline.ci == (clustered["ci_low"].iloc[0], clustered["ci_high"].iloc[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = eb.load_run(run.path)
        pd.testing.assert_frame_equal(loaded.summary(), clustered)
    plain = eb.run(_data(), task=lambda i: i, scorers=[_scorer()], store=None, progress=False)
    assert "cluster" not in plain.options and plain.summary()["n_clusters"].iloc[0] == 6


def test_eval_and_arun_take_cluster() -> None:
    ev = eb.Eval(_data(), task=lambda i: i, scorers=[_scorer()], cluster="passage")
    assert ev.run(store=None, progress=False).options["cluster"] == "passage"


def test_a_clustered_run_without_its_column_warns_and_is_not_clustered() -> None:
    run = eb.run(
        _data(),
        task=lambda i: i,
        scorers=[_scorer()],
        cluster="passage",
        store=None,
        progress=False,
    )
    run.data = pd.DataFrame(index=run.data.index)  # as a run loaded without data.parquet
    run.__dict__.pop("_summary", None)
    with pytest.warns(RuntimeWarning, match="clustered by 'passage'.*not clustered"):
        assert run.summary()["n_clusters"].iloc[0] == 6


def test_a_rescore_keeps_the_source_runs_cluster() -> None:
    run = eb.run(
        _data(),
        task=lambda i: i,
        scorers=[_scorer()],
        cluster="passage",
        store=None,
        progress=False,
    )
    again = run.rescore(scorers=[eb.scorer("t")(lambda output: 1.0)])
    assert again.options["cluster"] == "passage"
    assert again.summary()["n_clusters"].tolist() == [3, 3]
