"""`eb.sample` (docs/spend-less.md): deterministic by (seed, case_id), whatever the row order and
whichever other cases exist; `by=` proportional per stratum; the spec recorded on the frame
and in the run; `eb.compare` warns on different specs."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._model._sampling import allocate, case_keys

_IDS = st.lists(st.text(min_size=1, max_size=8), min_size=0, max_size=40, unique=True)


def _frame(ids: list[str], topics: list[str] | None = None) -> pd.DataFrame:
    data = {"id": ids, "x": range(len(ids))}
    if topics is not None:
        data["topic"] = topics
    return pd.DataFrame(data)


@settings(max_examples=60, deadline=None)
@given(_IDS, st.randoms(use_true_random=False), st.integers(0, 3), st.floats(0, 1))
def test_the_same_cases_whatever_the_row_order(
    ids: list[str], rnd: object, seed: int, frac: float
) -> None:
    shuffled = list(ids)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    for kwargs in ({"frac": frac}, {"n": len(ids) // 3}):
        a = set(eb.sample(_frame(ids), seed=seed, **kwargs)["id"])  # type: ignore[arg-type]
        b = set(eb.sample(_frame(shuffled), seed=seed, **kwargs)["id"])  # type: ignore[arg-type]
        assert a == b


@settings(max_examples=60, deadline=None)
@given(_IDS, _IDS, st.integers(0, 3), st.floats(0, 1))
def test_adding_cases_never_drops_a_kept_one_with_frac(
    ids: list[str], more: list[str], seed: int, frac: float
) -> None:
    grown = ids + [m for m in more if m not in set(ids)]
    before = set(eb.sample(_frame(ids), frac=frac, seed=seed)["id"])
    after = set(eb.sample(_frame(grown), frac=frac, seed=seed)["id"])
    assert before <= after
    assert before == after & set(ids)  # and a case of the old set is kept iff it was


@settings(max_examples=60, deadline=None)
@given(_IDS, st.integers(0, 50), st.integers(0, 3))
def test_n_keeps_the_n_smallest_hashes(ids: list[str], n: int, seed: int) -> None:
    got = eb.sample(_frame(ids), n, seed=seed)
    assert len(got) == min(n, len(ids))
    keys = dict(zip(ids, case_keys(ids, seed), strict=True))
    kept = set(got["id"])
    if kept and len(kept) < len(ids):
        assert max(keys[i] for i in kept) < min(keys[i] for i in ids if i not in kept)
    assert got["id"].tolist() == [i for i in ids if i in kept]  # rows keep their order


def test_the_hash_is_sha256_of_seed_and_id_not_pythons_hash() -> None:
    digest = hashlib.sha256(b"evalbook.sample\x007\x00case-1").digest()
    assert case_keys(["case-1"], 7)[0] == int.from_bytes(digest[:8], "big") / 2**64
    assert case_keys(["case-1"], 7)[0] != case_keys(["case-1"], 8)[0]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=6), st.integers(0, 120))
def test_allocation_is_proportional_by_the_largest_remainder(sizes: list[int], total: int) -> None:
    counts = allocate(total, sizes)
    assert sum(counts) == min(total, sum(sizes))
    assert all(0 <= c <= s for c, s in zip(counts, sizes, strict=True))
    whole = sum(sizes)
    if whole and total <= whole:
        for c, s in zip(counts, sizes, strict=True):  # within one of the exact quota
            assert abs(c - total * s / whole) < 1 + 1e-9 or c == s


def test_by_splits_the_count_per_stratum() -> None:
    ids = [f"c{i}" for i in range(100)]
    topics = ["a"] * 60 + ["b"] * 30 + ["c"] * 10
    got = eb.sample(_frame(ids, topics), 20, by="topic", seed=1)
    assert got["topic"].value_counts().to_dict() == {"a": 12, "b": 6, "c": 2}
    third = eb.sample(_frame(ids, topics), frac=0.25, by="topic")
    assert third["topic"].value_counts().to_dict() == {"a": 15, "b": 8, "c": 2}  # 7.5 > 2.5


def test_the_spec_is_on_the_frame_and_in_the_run(tmp_path: object) -> None:
    df = _frame([f"c{i}" for i in range(30)])
    df.attrs["source"] = "mine"
    small = eb.sample(df, 5, seed=3)
    spec = {"n": 5, "frac": None, "by": None, "seed": 3, "of": 30}
    assert small.attrs == {"source": "mine", "evalbook.sample": spec}
    run = eb.run(small, task=lambda x: x, scorers=[lambda output: 1.0], store=str(tmp_path))
    assert run.options["sample"] == spec
    assert eb.load_run(run.path).options["sample"] == spec  # stored too
    full = eb.run(df, task=lambda x: x, scorers=[lambda output: 1.0], store=None)
    assert "sample" not in full.options


def test_compare_warns_when_the_runs_were_drawn_differently() -> None:
    df = _frame([f"c{i}" for i in range(40)])

    def go(data: pd.DataFrame, name: str) -> eb.Run:
        return eb.run(data, task=lambda x: x, scorers=[lambda output: 1.0], store=None, name=name)

    a = go(eb.sample(df, 20, seed=0), "a")
    same = go(eb.sample(df, 20, seed=0), "same")
    other = go(eb.sample(df, 20, seed=1), "other")
    whole = go(df, "whole")
    assert not [w for w in eb.compare(a, same).warnings if "sample" in w]
    (w,) = [w for w in eb.compare(a, other).warnings if "different samples" in w]
    assert "seed=0" in w and "seed=1" in w
    (w,) = [w for w in eb.compare(a, whole).warnings if "different samples" in w]
    assert "no eb.sample" in w


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of n="),
        ({"n": 2, "frac": 0.5}, "exactly one of n="),
        ({"n": -1}, "n= must be"),
        ({"n": 1.5}, "n= must be"),
        ({"frac": 1.5}, "frac= must be"),
        ({"n": 2, "by": "nope"}, "by= takes a column"),
        ({"n": 2, "seed": "x"}, "seed= must be"),
    ],
)
def test_bad_arguments_say_how_to_fix_them(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(eb.ConfigurationError, match=match):
        eb.sample(_frame(["a", "b", "c"]), **kwargs)  # type: ignore[arg-type]
