"""A clustered comparison flags small slices by clusters, as `summary(by=)` and `show --by` do
(issue 30, item 3): 40 paired cases in 4 passages are a small slice for the clustered t."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from tests._cli_helpers import in_process

import evalbook as eb
from evalbook._render._compare_html import comparison_html


def _runs(store: Path | None) -> tuple[eb.Run, eb.Run]:
    n = 120  # topic "a": 40 cases in 4 passages; topic "b": 80 cases in 40 passages
    topic = ["a"] * 40 + ["b"] * 80
    passage = [f"a{i // 10}" for i in range(40)] + [f"b{i // 2}" for i in range(80)]
    df = pd.DataFrame({"id": [f"c{i}" for i in range(n)], "topic": topic, "passage": passage})
    ok = eb.define_score("ok", primary=True)
    out = []
    for name, shift in (("old", 0), ("new", 1)):
        scorer = eb.scorer(ok)(
            lambda case_id, shift=shift: float((int(case_id[1:]) + shift) % 3 > 0)
        )
        out.append(eb.run(df, task=lambda: 1, scorers=[scorer], name=name, store=store,
                          progress=False))  # fmt: skip
    return out[0], out[1]


def test_compare_flags_slices_with_few_clusters() -> None:
    old, new = _runs(None)
    plain = eb.compare(old, new, by="topic").summary
    assert not plain["small"].any()  # 40 and 80 paired cases
    clustered = eb.compare(old, new, by="topic", cluster="passage").summary
    assert clustered["n_clusters"].tolist() == [4, 40]
    assert clustered["small"].tolist() == [True, False]  # was [False, False]
    html = comparison_html(eb.compare(old, new, by="topic", cluster="passage"))
    assert "fewer than 10 clusters" in html


def test_the_cli_says_clusters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _runs(tmp_path / "runs")
    code, out, err = in_process(
        capsys, "compare", "old", "new", "--by", "topic", "--cluster", "passage",
        "--store", str(tmp_path / "runs"),
    )  # fmt: skip
    assert code == 0, err
    assert "small: fewer than 10 clusters in the slice" in out
    line = next(x for x in out.splitlines() if "topic=a" in x)
    assert "small slice" in line
    assert "small slice" not in next(x for x in out.splitlines() if "topic=b" in x)
