"""Any text in a run (lone surrogates too) through tables, summary and display (issue 3).

pandas 3's default `str` dtype cannot hold lone surrogates (e.g. "\\ud800", which model output
decoded with `surrogateescape` can contain). Tables must hold such text exactly; the display
shows it as escapes (valid UTF-8, HTML-escaped) and never crashes.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook.display import case_html, summary_html, unscored_html
from evalbook.display._cases import case_list_html

S = "\ud800"  # a lone high surrogate
T = "\udcff"  # a lone low surrogate (what `surrogateescape` makes of the byte 0xff)
EVIL = "<script>alert(1)</script>"

X = eb.define_score(
    "x",
    label="Ex" + S + EVIL,
    primary=True,
    grader=eb.Grader(kind="model", id="judge" + S, model="m" + T),
)
Y = eb.define_score("y", label={"en": "Why" + T})
R = eb.define_score("r", label="recorded" + S)
P = eb.define_score("p", combine=eb.all_of(X, Y))
IDS = ["a" + S, "b" + T + EVIL, "c", "d" + S + T, "e", "f\ud83d\ude00"]


@eb.scorer(X)
def sx(output: Any, k: int) -> Any:
    if k == 1:
        return eb.Unscored("why" + S + EVIL)
    if k == 4:
        raise RuntimeError("boom" + T)
    return eb.Score(1.0, rationale="r" + S, label="lab" + T, metadata={"k" + S: T})


@eb.scorer(Y)
def sy(k: int) -> Any:
    if k == 5:
        return eb.Unscored("y" + T)
    return 0.5


def task(k: int, q: str, ctx: Any) -> Any:
    if k == 1:
        ctx.record_unscored(R, "ctx" + S)
    if k == 2:
        raise ValueError("bad" + T)
    if k == 3:
        ctx.fail("refused" + S)
    if k == 4:
        ctx.record_score(R, 1.0, rationale="ctx-r" + S, grader=eb.Grader(kind="human", id="h" + S))
    return "out" + S + q


def data() -> pd.DataFrame:
    index = pd.Index(IDS, dtype=object, name="id_")
    qs = pd.Series(["q" + T, "", EVIL, S, "é", "\ud83d"], index=index, dtype=object)
    notes = pd.Series([EVIL + S] * 6, index=index, dtype=object)
    df = pd.DataFrame({"k": range(6), "q": qs, "note": notes}, index=index)
    df.columns = pd.Index(["k", "q", "note" + S], dtype=object)  # pandas' str: not in a dict
    return df


def make(store: Any = None) -> eb.Run:
    return eb.run(data(), task=task, scorers=[sx, sy], scores=[R, P], store=store, progress=False)


def utf8(text: str) -> str:
    """The text, checked to be valid UTF-8 (what a notebook must send)."""
    text.encode("utf-8")
    return text


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


# -- tables hold the text exactly ---------------------------------------------------------


def test_tables_hold_lone_surrogates_exactly() -> None:
    run = make()
    cases, scores = run.cases, run.scores
    assert cases["case_id"].tolist() == IDS
    assert cases["output"].tolist()[0] == "out" + S + "q" + T
    assert cases["output"].tolist()[5] == "out" + S + "\ud83d"
    messages = cases["error_message"].tolist()
    assert "bad" + T in messages[2]
    assert cases["error_type"].tolist()[2] == "ValueError"  # (class names cannot be odd)
    assert "refused" + S in messages[3]
    assert scores["case_id"].tolist() == [i for i in IDS for _ in range(4)]
    reasons = set(scores["reason"].dropna().astype(object))
    assert {"why" + S + EVIL, "ctx" + S, "y" + T} <= reasons
    assert any("boom" + T in m for m in scores["message"].dropna())
    assert {"r" + S, "ctx-r" + S} <= set(scores["rationale"].dropna())
    assert {"judge" + S, "h" + S} <= set(scores["grader_id"].dropna().astype(object))
    assert set(scores["grader_model"].dropna().astype(object)) == {"m" + T}
    meta = [json.loads(m) for m in scores["metadata"].dropna()]
    assert {"k" + S: T, "label": "lab" + T} in meta


def test_tables_with_odd_text_work_with_everyday_pandas() -> None:
    run = make()
    for table in (run.cases, run.scores, run.summary(), run.unscored(), run.wide()):
        table.iloc[0]
        list(table.iterrows())
        pd.concat([table, table])
        table.to_numpy()
        table.to_dict("records")
        repr(table)
    odd = ["case_id", "reason", "grader_id", "grader_model"]
    assert all(run.scores[c].dtype == object for c in odd)  # a categorical could not be used
    assert isinstance(run.scores["grader_kind"].dtype, pd.CategoricalDtype)  # plain text: still
    assert run.scores["reason"].isna().sum() == run.scores["reason"].map(lambda v: v is None).sum()


def test_plain_text_columns_stay_categorical() -> None:
    df = pd.DataFrame({"k": range(6), "q": ["x"] * 6}, index=[f"c{i}" for i in range(6)])
    plain = eb.scorer(eb.define_score("plain", grader=eb.Grader(kind="rule", id="r")))(
        lambda k: eb.Unscored("no") if k == 1 else 1.0
    )
    run = eb.run(df, task=lambda k: "out", scorers=[plain], store=None, progress=False)
    for column in ("case_id", "score", "status", "reason", "grader_kind", "grader_id"):
        assert isinstance(run.scores[column].dtype, pd.CategoricalDtype), column
    assert list(run.scores["case_id"].cat.categories) == [f"c{i}" for i in range(6)]


def test_unscored_wide_summary_and_headline_hold_lone_surrogates() -> None:
    run = make()
    unscored = run.unscored()
    assert list(unscored.columns) == ["score", "status", "reason", "n"]
    assert unscored["reason"].dtype == object
    keys = zip(unscored["score"].astype(str), unscored["reason"], strict=True)
    reasons = dict(zip(keys, unscored["n"], strict=True))
    assert reasons[("x", "why" + S + EVIL)] == 1
    assert reasons[("r", "ctx" + S)] == 1
    assert reasons[("y", "y" + T)] == 1
    wide = run.wide()
    assert wide["case_id"].tolist() == IDS
    assert wide["case_id"].dtype == object
    assert list(wide.columns) == ["case_id", "outcome", "x", "y", "r", "p"]
    summary = run.summary()
    assert summary["label"].tolist() == ["Ex" + S + EVIL, "Why" + T, "recorded" + S, "p"]
    assert summary["label"].dtype == object
    assert summary["score"].astype(str).tolist() == ["x", "y", "r", "p"]
    assert run.headline.label == "Ex" + S + EVIL
    assert run.headline.text.startswith("Ex" + S + EVIL + " ")


def test_column_types_do_not_depend_on_the_text() -> None:
    odd = make()
    df = pd.DataFrame({"k": range(6), "q": ["x"] * 6}, index=[f"c{i}" for i in range(6)])
    plain_scores = [eb.define_score(d.name) for d in (X, Y, R, P)]
    plain = eb.run(
        df,
        task=lambda k: "out",
        scorers=[
            eb.scorer(plain_scores[0])(lambda k: eb.Unscored("no") if k == 1 else 1.0),
            eb.scorer(plain_scores[1])(lambda k: 0.5),
        ],
        scores=[plain_scores[2], eb.define_score("p", combine=eb.all_of("x", "y"))],
        store=None,
        progress=False,
    )
    for table in ("summary", "unscored", "wide"):
        a, b = getattr(odd, table)(), getattr(plain, table)()
        assert a.dtypes.to_dict() == b.dtypes.to_dict(), table
    assert plain.unscored()["reason"].dtype == object
    assert plain.summary()["label"].tolist() == ["x", "y", "r", "p"]


# -- text and HTML display: valid UTF-8, escaped, never a crash -----------------------------


def test_text_repr_shows_surrogates_as_escapes() -> None:
    run = make()
    text = utf8(repr(run))
    assert "Ex\\ud800" in text
    assert not has_surrogate(text)
    assert "\\ud800" in utf8(repr(run.headline))
    assert run.headline.text in str(run.headline)  # the text itself stays exact


def test_html_is_valid_utf8_and_escaped() -> None:
    run = make()
    pages = [
        run._repr_html_(),
        run.headline._repr_html_(),
        summary_html(run.summary()),
        unscored_html(run.unscored(), run.summary()),
        case_list_html(run, pd.RangeIndex(6).to_numpy(), "x"),
        *(case_html(run, pos) for pos in range(6)),
    ]
    for page in pages:
        utf8(page)
        assert "<script" not in page
    whole = "".join(pages)
    assert "&lt;script&gt;" in whole
    assert "Ex\\ud800" in whole  # the label, its surrogate spelled out
    assert "why\\ud800" in whole and "boom\\udcff" in whole and "r\\ud800" in whole
    assert "a\\ud800" in whole and "\\ud83d\\ude00" in whole  # ids; a pair stays two escapes
    assert "note\\ud800" in whole  # an input column's name


def test_show_widget_sends_only_utf8() -> None:
    pytest.importorskip("ipywidgets")
    run = make()
    view = eb.show(run)
    json.dumps(view._repr_mimebundle_(), ensure_ascii=False).encode("utf-8")
    explorer = view.explorer
    labels = [label for label, _ in explorer.cases.options]
    assert len(labels) == 6
    assert labels[0].startswith("a\\ud800")
    for label, _ in [*explorer.score.options, *explorer.cases.options]:
        utf8(label)
    for pos in range(6):
        explorer.cases.value = pos
        utf8(explorer.detail.value)
        assert "<script" not in explorer.detail.value
    for child in view.tabs.children[:3]:
        utf8(child.value)


def test_plots_serialise() -> None:
    pytest.importorskip("plotly")
    run = make()
    for fig in (run.plot.unscored(), run.plot.distribution()):
        utf8(fig.to_json())


# -- a stored run: final files written, loaded back equal ----------------------------------


def test_stored_run_writes_its_final_files_and_loads_back_equal(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = make(tmp_path)
    assert not [w for w in caught if "final files" in str(w.message)]
    assert run.path is not None
    for name in ("summary.json", "cases.parquet", "scores.parquet"):
        assert (run.path / name).is_file(), name
    loaded = eb.load_run(run.path)
    pd.testing.assert_frame_equal(loaded.cases, run.cases)
    pd.testing.assert_frame_equal(loaded.scores, run.scores)
    pd.testing.assert_frame_equal(loaded.summary(), run.summary())
    pd.testing.assert_frame_equal(loaded.unscored(), run.unscored())
    pd.testing.assert_frame_equal(loaded.wide(), run.wide())
    assert loaded.headline == run.headline
    assert loaded.cases["case_id"].tolist() == IDS


# -- property: any text -------------------------------------------------------------------

chars = (
    st.characters(categories=["Cs"]) | st.sampled_from(["<", ">", "&", '"', "'"]) | st.characters()
)
texts = st.text(alphabet=chars, max_size=6) | st.sampled_from(["<script>", S, T + S, ""])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ids=st.lists(texts, min_size=1, max_size=4, unique=True),
    outputs=st.lists(texts, min_size=4, max_size=4),
    reason=texts,
    rationale=texts,
    message=texts,
    label=texts,
)
def test_any_text_is_held_exactly_and_shown_safely(
    ids: list[str],
    outputs: list[str],
    reason: str,
    rationale: str,
    message: str,
    label: str,
) -> None:
    n = len(ids)
    score = eb.define_score("s", label=label)

    def task(k: int) -> str:
        if k % 4 == 3:
            raise ValueError(message)
        return outputs[k]

    @eb.scorer(score)
    def scorer(k: int) -> Any:
        if k % 4 == 1:
            return eb.Unscored(reason)
        if k % 4 == 2:
            raise RuntimeError(message)
        return eb.Score(1.0, rationale=rationale)

    df = pd.DataFrame({"k": range(n)}, index=pd.Index(ids, dtype=object))
    run = eb.run(df, task=task, scorers=[scorer], store=None, progress=False)
    assert run.cases["case_id"].tolist() == ids
    assert run.wide()["case_id"].tolist() == ids
    assert run.summary()["label"].tolist() == [label]
    assert run.headline.label == label
    for k in range(n):
        if k % 4 != 3:
            assert run.cases["output"][k] == outputs[k]
        else:
            assert message in run.cases["error_message"][k]
    scores = run.scores
    if n > 0:
        assert scores["rationale"][0] == rationale
    if n > 1:
        assert scores["reason"].astype(object)[1] == reason
        unscored = run.unscored()
        assert reason in unscored["reason"].tolist()
    if n > 2:
        assert message in scores["message"][2]
    utf8(repr(run))
    for page in [run._repr_html_(), *(case_html(run, pos) for pos in range(n))]:
        utf8(page)
        assert "<script" not in page  # user text is escaped; our markup has no script
