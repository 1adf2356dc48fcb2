"""The run widget's Scores tab sliced: "Slice by" / "Cluster by" over the run's data columns."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED, demo_run

# the summary table's renderer: each slice's block must be exactly that table of its row
from evalbook._render._run_html import summary_html

SMALL = 10  # a slice with fewer counted cases (or clusters) is flagged small
MAX_SLICES = 50  # a column with more values is not offered to slice by

CONTROL = "x\x1b[31m\u202e"  # an ANSI escape and a bidi override in a slice value

BLOCK = re.compile(r'<div data-evalbook="slice".*?(?=<div data-evalbook="slice"|$)', re.S)


def _sliced_run() -> eb.Run:
    """12 cases in topic "a" (not small), 3 in EVIL and 2 in CONTROL (small); passages of 2."""
    topics = ["a"] * 12 + [EVIL] * 3 + [CONTROL] * 2
    n = len(topics)
    data = pd.DataFrame(
        {
            "q": [f"q{i}" for i in range(n)],  # n distinct values: still offered (n <= 50)
            "topic": topics,
            "passage": [f"p{i // 2}" for i in range(n)],
            EVIL: ["k", "l"] * (n // 2) + ["k"],  # a hostile column name
            "many": [f"m{i}" for i in range(n)],
        }
    )
    return eb.run(
        data,
        task=lambda q: q,
        scorers=[lambda output: float(int(output[1:]) % 2)],
        store=None,
        progress=False,
        concurrency=1,
    )


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return _sliced_run()


def _blocks(html: str) -> list[str]:
    return BLOCK.findall(html)


def test_the_dropdowns_list_the_data_columns_with_none_first(run: eb.Run) -> None:
    tab = eb.show(run).scores
    assert [v for _, v in tab.by.options] == [None, "q", "topic", "passage", EVIL, "many"]
    assert tab.by.options[0][0] == "(none)" and tab.by.value is None
    assert [v for _, v in tab.cluster.options][1:] == ["q", "topic", "passage", EVIL, "many"]
    assert tab.controls == (tab.by, tab.cluster)  # the controls, above the table
    assert tab.html().index('data-eb-action="scores.by"') < tab.html().index("run-summary")


def test_none_is_the_unsliced_summary(run: eb.Run) -> None:
    tab = eb.show(run).scores
    assert 'data-evalbook="slice"' not in tab.value
    assert summary_html(run.summary()) in tab.value
    tab.by.value = "topic"
    tab.by.value = None
    assert summary_html(run.summary()) in tab.value and not _blocks(tab.value)


def test_slice_by_renders_one_block_per_slice_with_counts_and_badge(run: eb.Run) -> None:
    view = eb.show(run)
    view.scores.by.value = "topic"
    blocks = _blocks(view.scores.value)
    assert len(blocks) == 3  # a, EVIL, CONTROL: in order of first appearance
    assert "topic = a " in blocks[0]
    assert f"topic = {EVIL_ESCAPED} " in blocks[1]
    assert "· 12 counted cases" in blocks[0]
    assert "· 3 counted cases" in blocks[1]
    assert "· 2 counted cases" in blocks[2]
    assert ["small slice" in b for b in blocks] == [False, True, True]
    assert f"fewer than {SMALL} counted cases" in blocks[1]
    # each block's table is the slice's rows of `run.summary(by=)`: its mean, its counts
    summary = run.summary(by="topic")
    for block, (_, row) in zip(blocks, summary.iterrows(), strict=True):
        one = summary_html(pd.DataFrame([row]).reset_index(drop=True))
        assert one in block
    assert summary["n_clusters"].tolist() == [12, 3, 2]


def test_hostile_slice_values_and_column_names_are_escaped(run: eb.Run) -> None:
    tab = eb.show(run).scores
    tab.by.value = "topic"
    html = tab.value
    assert EVIL not in html and EVIL_ESCAPED in html
    assert "\x1b" not in html and "\u202e" not in html
    assert "x\\x1b[31m\\u202e" in html  # shown as escapes (`visible`), not dropped
    tab.by.value = EVIL
    html = tab.value
    assert EVIL not in html
    assert f"{EVIL_ESCAPED} = k " in html and f"{EVIL_ESCAPED} = l " in html
    labels = [label for label, _ in tab.by.options]
    assert all("\x1b" not in label for label in labels)


def test_cluster_by_counts_clusters_and_flags_by_them(run: eb.Run) -> None:
    tab = eb.show(run).scores
    tab.by.value = "topic"
    tab.cluster.value = "passage"
    blocks = _blocks(tab.value)
    # passages of 2 cases: topic a is q0..q11 in p0..p5 (6 clusters), EVIL q12..q14 in p6, p7,
    # CONTROL q15, q16 in p7, p8 (a passage split across slices counts in each)
    expected = run.summary(by="topic", cluster="passage")["n_clusters"].tolist()
    assert expected == [6, 2, 2]
    for block, n in zip(blocks, expected, strict=True):
        assert f"· {n} clusters" in block
    assert all("small slice" in b for b in blocks)  # 6 clusters < SMALL: small by clusters
    assert "fewer than 10 clusters" in blocks[0]
    tab.by.value = None
    assert "CIs clustered by passage: 9 clusters" in tab.value


def test_a_column_the_summary_refuses_shows_its_message() -> None:
    data = pd.DataFrame({"q": ["a", "b"], "score": ["x", "y"]})  # named like a summary column
    run = eb.run(data, task=lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    tab = eb.show(run).scores
    tab.by.value = "score"
    assert 'data-evalbook="slice-error"' in tab.value and "score" in tab.value


def test_columns_with_many_values_are_not_offered() -> None:
    n = MAX_SLICES + 1
    data = pd.DataFrame({"q": [f"q{i}" for i in range(n)], "kind": ["a", "b"] * (n // 2) + ["a"]})
    run = eb.run(data, task=lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    assert [v for _, v in eb.show(run).scores.by.options] == [None, "kind"]


def test_a_run_without_data_columns_shows_no_dropdown() -> None:
    run = demo_run()
    run.data = pd.DataFrame(index=run.data.index)  # as a run loaded without data.parquet
    tab = eb.show(run).scores
    assert tab.controls == () and "data-eb-action" not in tab.html()
    assert summary_html(run.summary()) in tab.value


def test_the_static_html_is_unchanged_by_the_dropdowns(run: eb.Run) -> None:
    view = eb.show(run)
    view.scores.by.value = "topic"
    view.scores.cluster.value = "passage"
    static = view._repr_mimebundle_()["text/html"]
    table = view.table._static_html
    assert static == run._repr_html_() + table  # the card, then the case table
    assert 'data-evalbook="slice"' not in static


def test_a_clustered_run_offers_its_own_cluster_first_and_none_turns_it_off() -> None:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(6)], "passage": ["p0", "p0", "p1"] * 2})
    run = eb.run(
        data,
        task=lambda q: q,
        scorers=[lambda output: 1.0],
        cluster="passage",
        store=None,
        progress=False,
    )
    tab = eb.show(run).scores
    assert tab.cluster.options[:2] == (("passage (run)", None), ("(none)", False))
    assert "CIs clustered by passage: 2 clusters" in tab.value  # the run's own default
    tab.cluster.value = False
    assert "clustered" not in tab.value
    tab.by.value = "passage"
    assert "· 4 counted cases" in _blocks(tab.value)[0]  # each case its own cluster
