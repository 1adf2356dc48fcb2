"""The leaderboard's honest ranks (docs/comparing.md, "Leaderboards"): rank intervals and tiers
from Holm-adjusted paired tests, as properties, by a bounded form of
benchmarks/sim_rank_intervals.py, and through `eb.leaderboard`, `eb.show` and the CLI."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _cli_helpers import in_process
from evalbook._compare._ranks import rank_intervals

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_rank_intervals.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_rank_intervals", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


boards = st.integers(2, 7).flatmap(
    lambda runs: st.integers(1, 40).flatmap(
        lambda cases: st.tuples(
            st.lists(
                st.lists(st.sampled_from([0.0, 1.0]), min_size=cases, max_size=cases)
                | st.lists(st.floats(0, 1), min_size=cases, max_size=cases),
                min_size=runs,
                max_size=runs,
            ),
            st.lists(st.booleans(), min_size=runs, max_size=runs),
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(boards)
def test_rank_intervals_and_tiers_are_the_holm_verdicts(board: Any) -> None:
    rows, missing = board
    values = np.array(rows, dtype=float)
    means = values.mean(axis=1)
    means[np.array(missing)] = np.nan  # runs without a value: no interval, no tier
    r = rank_intervals(values, means)
    valued = np.flatnonzero(~np.isnan(means))
    n = valued.size
    sep = r.separable
    assert (sep == sep.T).all() and not sep.diagonal().any()
    assert not sep[np.isnan(means)].any()
    for i in range(means.size):
        if np.isnan(means[i]):
            assert r.rank_low[i] == r.rank_high[i] == r.tier[i] == 0
            continue
        better = sum(sep[i, j] and means[j] > means[i] for j in valued)
        worse = sum(sep[i, j] and means[j] < means[i] for j in valued)
        assert (r.rank_low[i], r.rank_high[i]) == (1 + better, n - worse)
        assert 1 <= r.rank_low[i] <= r.rank_high[i] <= n
        # the run's position among the valued, by mean, lies in its interval
        position = 1 + sum(means[j] > means[i] for j in valued)
        assert r.rank_low[i] <= position <= r.rank_high[i]
    # tiers: each starts at the best run left (the first, by mean, of the runs not in an
    # earlier tier); a member is not separable from its first run, and a run of a later tier
    # is separable from the first run of every earlier tier. Tiers need not rise with the
    # mean: a noisy run can stay with the leader below one that is separably worse than it
    tiers = r.tier[valued]
    order = valued[np.argsort(-means[valued], kind="stable")]
    assert sorted(set(tiers.tolist())) == list(range(1, len(set(tiers.tolist())) + 1))
    leaders = {int(t): int(next(k for k in order if r.tier[k] >= t)) for t in set(tiers.tolist())}
    assert all(r.tier[k] == t for t, k in leaders.items())
    for k in valued:
        t = int(r.tier[k])
        assert not sep[leaders[t], k]
        assert all(sep[leaders[s], k] for s in leaders if s < t)
    if values.shape[1] < 2:
        assert not sep.any()  # one case separates nothing


def test_a_noisy_run_shares_the_leaders_tier_below_a_separably_worse_one() -> None:
    """Tiers follow the verdicts, not the order of the means: B is 0.05 worse than A on every
    case (separable), C loses two cases of 30 to A (not separable, though its mean is lower
    than B's), so C is in A's tier and B starts the next; the board lists them by mean."""
    a, b, c = np.ones(30), np.full(30, 0.95), np.ones(30)
    c[:2] = 0.0
    values = np.vstack([a, b, c])
    r = rank_intervals(values, values.mean(axis=1))
    assert r.separable[0, 1] and not r.separable[0, 2] and not r.separable[1, 2]
    assert r.tier.tolist() == [1, 2, 1]
    assert r.rank_low.tolist() == [1, 2, 1] and r.rank_high.tolist() == [2, 3, 3]


def test_a_board_whose_tiers_do_not_rise_with_the_mean_says_why() -> None:
    """The board of the noisy-run case: listed by mean its tiers read 1, 2, 1, and its note
    says so; a board whose tiers rise with the mean has no such note."""
    scores = {"a": [1.0] * 30, "b": [0.95] * 30, "c": [0.0, 0.0] + [1.0] * 28}
    df = pd.DataFrame({"q": range(30)})
    runs = []
    for name, values in scores.items():
        scorer = eb.scorer(eb.define_score("ok", primary=True))(
            lambda output, v=values: float(v[output])
        )
        runs.append(
            eb.run(df, task=lambda q: q, scorers=[scorer], name=name, store=None, progress=False)
        )
    board = eb.leaderboard(runs)
    assert board["name"].tolist() == ["a", "b", "c"] and board["tier"].tolist() == [1, 2, 1]
    assert "not the order of the means" in board.attrs["note"]
    assert "not the order of the means" in eb.show(runs).card_html()
    even = eb.leaderboard(_runs({"a": 0.9, "b": 0.88, "c": 0.6, "d": 0.58}))
    assert even["tier"].tolist() == [1, 1, 2, 2]
    assert "not the order of the means" not in str(even.attrs.get("note"))


def test_two_cases_each_equally_worse_never_separate_two_runs() -> None:
    """Equal deltas make Student's t undefined (zero variance): the sign-flip test decides,
    and two equal deltas give p = 0.5 (never a certain verdict)."""
    a = np.array([0.50, 0.70])
    r = rank_intervals(np.vstack([a, a - 0.01]), np.array([0.6, 0.59]))
    assert not r.separable.any() and r.tier.tolist() == [1, 1]
    assert r.rank_low.tolist() == [1, 1] and r.rank_high.tolist() == [2, 2]
    many = np.linspace(0.2, 0.8, 30)  # 30 equal deltas: p = 2^-29, separated
    r = rank_intervals(np.vstack([many, many - 0.01]), np.array([0.5, 0.49]))
    assert r.separable[0, 1] and r.tier.tolist() == [1, 2]


def test_the_true_ranks_lie_in_the_intervals_and_equal_runs_are_rarely_separated(
    record_property: Any,
) -> None:
    sim = _script()
    lines = []
    for k, (runs, cases, spread, kind) in enumerate(sim.DESIGNS):
        got = sim.simulate(runs, cases, spread, kind, boards=120, seed=11 + k)
        lines.append(
            f"{runs} runs x {cases} {kind}, spread {spread}: true rank in interval "
            f"{got.per_run:.1%} of runs, {got.every_run:.1%} of boards; "
            f"false separation on {got.any_false:.1%} of boards"
        )
        assert got.per_run >= 0.95 and got.every_run >= 0.90
        # Holm's family-wise 5 %: 120 boards put the share within about 0 to 10 %
        assert got.any_false <= 0.10
    figure = "; ".join(lines)
    print(figure)
    record_property("rank_intervals", figure)


def test_without_holm_equal_runs_would_be_separated_far_more_often() -> None:
    """The band above can fail: the same null boards, judged pair by pair at 5 % without
    Holm's adjustment, separate two equal runs on far more than 10 % of the boards."""
    rng = np.random.default_rng(3)
    from evalbook._model._paired import mcnemar_p

    unadjusted = 0
    for _ in range(120):
        x = (rng.random((8, 300)) < 0.5).astype(float)
        i, j = np.triu_indices(8, k=1)
        up = ((1 - x) @ x.T)[i, j].astype(np.int64)
        down = (x @ (1 - x).T)[i, j].astype(np.int64)
        unadjusted += bool((mcnemar_p(up, down) < 0.05).any())
    assert unadjusted / 120 > 0.25  # 28 pairs at 5 % each: about 40 % of boards


def _runs(rates: dict[str, float], n: int = 200, seed: int = 0) -> list[eb.Run]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"q": range(n)})
    out = []
    for name, rate in rates.items():
        values = (rng.random(n) < rate).astype(float)
        scorer = eb.scorer(eb.define_score("ok", primary=True))(
            lambda output, v=values: float(v[output])
        )
        out.append(
            eb.run(df, task=lambda q: q, scorers=[scorer], name=name, store=None, progress=False)
        )
    return out


def test_the_board_the_card_and_the_cli_show_tiers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _runs({"a": 0.9, "b": 0.88, "c": 0.6, "d": 0.58})
    board = eb.leaderboard(runs)
    assert set(board["name"][:2]) == {"a", "b"} and set(board["name"][2:]) == {"c", "d"}
    assert board["tier"].tolist() == [1, 1, 2, 2]
    assert board["rank_low"].tolist() == [1, 1, 3, 3]
    assert board["rank_high"].tolist() == [2, 2, 4, 4]
    card = eb.show(runs).card_html()
    assert "Tier: runs not separable" in card and "1–2" in card and "3–4" in card
    text = eb.show(runs).text()
    assert "tier 1 · ranks 1–2 · " in text and "tier 2 · ranks 3–4 · " in text
    store = tmp_path / "store"
    for run in runs:
        run.save(store)
    code, out, err = in_process(capsys, "compare", "a", "b", "c", "d", "--store", str(store))
    assert code == 0, err
    assert out.count("tier 1 · ranks 1–2 · ") == 2 and out.count("tier 2 · ranks 3–4 · ") == 2
    code, _, err = in_process(capsys, "compare", "a", "b", "c", "--by", "q", "--store", str(store))
    assert code == 2 and "--by compare two runs" in err


def test_runs_sharing_only_some_cases_are_ranked_on_those_and_the_board_says_so() -> None:
    full = _runs({"a": 0.9, "b": 0.5}, n=100, seed=1)
    part = eb.run(
        pd.DataFrame({"q": range(40)}),
        task=lambda q: q,
        scorers=[eb.scorer(eb.define_score("ok", primary=True))(lambda output: 1.0)],
        name="part",
        store=None,
        progress=False,
    )
    board = eb.leaderboard([*full, part])
    assert "on the 40 cases they all have a value for (of up to 100)" in board.attrs["note"]
    assert board["tier"].notna().all()
