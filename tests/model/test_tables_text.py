"""Any text in a run through tables, summary, store and display (docs/design.md, "Text").

Valid Unicode is kept exactly. A lone surrogate (e.g. "\\ud800", which model output decoded
with `surrogateescape` can hold) is replaced where text enters the run, by its backslash
escape (the six characters `\\ud800`), with one warning per run. The views escape HTML.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import case_pages

S = "\ud800"  # a lone high surrogate
T = "\udcff"  # a lone low surrogate (what `surrogateescape` makes of the byte 0xff)
ES, ET = "\\ud800", "\\udcff"  # what they become: six ASCII characters each
EVIL = "<script>alert(1)</script>"
VALID = "é日😀\u0301"  # valid Unicode, kept exactly (a combining accent too)


def escaped(text: str) -> str:
    """The expected text: each lone surrogate as its escape (written apart from evalbook's)."""
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@contextmanager
def unicode_warnings() -> Iterator[list[str]]:
    """The UnicodeWarnings raised inside the block, as messages."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages: list[str] = []
        yield messages
    messages.extend(str(w.message) for w in caught if issubclass(w.category, UnicodeWarning))


with warnings.catch_warnings():  # definitions clean their own text (and warn: tested below)
    warnings.simplefilter("ignore", UnicodeWarning)
    X = eb.define_score(
        "x",
        label="Ex" + S + EVIL + VALID,
        primary=True,
        grader=eb.Grader(kind="model", id="judge" + S, model="m" + T),
    )
    R = eb.define_score("r", label="recorded" + VALID)
Y = eb.define_score("y", label={"en": "Why" + VALID + EVIL})
P = eb.define_score("p", combine=eb.all_of(X, Y))
IDS = ["a" + S, "b" + T + EVIL, "c" + VALID, "d" + S + T, "e", "f\ud83d\ude00"]


@eb.scorer(X)
def sx(output: Any, k: int) -> Any:
    if k == 1:
        return eb.Unscored("why" + S + EVIL)
    if k == 4:
        raise RuntimeError("boom" + T + EVIL)
    return eb.Score(1.0, rationale="r" + S + EVIL, label="lab" + T, metadata={"k" + S: [T, 1]})


@eb.scorer(Y)
def sy(k: int) -> Any:
    if k == 5:
        return eb.Unscored("y" + VALID)
    return eb.Score(0.5, rationale=VALID + EVIL, metadata={VALID: VALID})


def task(k: int, q: str, ctx: Any) -> Any:
    if k == 1:
        ctx.record_unscored(R, "ctx" + S)
    if k == 2:
        raise ValueError("bad" + T + EVIL)
    if k == 3:
        ctx.fail("refused" + S)
    if k == 4:
        ctx.record_score(R, 1.0, rationale="ctx-r" + VALID, metadata={"n": EVIL})
    return "out" + S + q


def data() -> pd.DataFrame:
    index = pd.Index(IDS, dtype=object, name="id_")
    qs = pd.Series(["q" + T, "", EVIL, S, VALID, "\ud83d"], index=index, dtype=object)
    notes = pd.Series([EVIL + VALID] * 6, index=index, dtype=object)
    df = pd.DataFrame({"k": range(6), "q": qs, "note": notes}, index=index)
    df.columns = pd.Index(["k", "q", "note" + S], dtype=object)
    return df


def make(store: Any = None) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnicodeWarning)
        return eb.run(
            data(), task=task, scorers=[sx, sy], scores=[R, P], store=store, progress=False
        )


def utf8(text: str) -> str:
    """The text, checked to be valid UTF-8 (what a notebook must send)."""
    text.encode("utf-8")
    return text


# -- the boundary: replaced once, one warning, valid text exact ----------------------------


def test_lone_surrogates_are_replaced_by_their_escape_and_valid_text_is_kept() -> None:
    run = make()
    cases, scores = run.cases, run.scores
    assert cases["case_id"].tolist() == [escaped(i) for i in IDS]
    assert cases["output"][0] == "out" + ES + "q" + ET
    assert cases["output"][4] == "out" + ES + VALID
    assert cases["output"][5] == "out" + ES + "\\ud83d"
    assert cases["error_message"][2] == "bad" + ET + EVIL
    assert cases["error_message"][3] == "refused" + ES
    reasons = set(scores["reason"].dropna().astype(str))
    assert {"why" + ES + EVIL, "ctx" + ES, "y" + VALID} <= reasons
    assert any(m == "RuntimeError: boom" + ET + EVIL for m in scores["message"].dropna())
    assert {"r" + ES + EVIL, VALID + EVIL, "ctx-r" + VALID} <= set(scores["rationale"].dropna())
    assert set(scores["grader_id"].dropna().astype(str)) == {"judge" + ES}
    assert set(scores["grader_model"].dropna().astype(str)) == {"m" + ET}
    meta = [json.loads(m) for m in scores["metadata"].dropna()]
    assert {"k" + ES: [ET, 1], "label": "lab" + ET} in meta
    assert {VALID: VALID} in meta and {"n": EVIL} in meta
    labels = ["Ex" + ES + EVIL + VALID, "Why" + VALID + EVIL, "recorded" + VALID, "p"]
    assert run.summary()["label"].tolist() == labels
    assert run.headline.label == "Ex" + ES + EVIL + VALID
    for table in (cases, scores, run.summary(), run.unscored(), run.wide()):
        utf8(table.to_csv())  # nothing left that UTF-8 cannot hold


def test_the_input_data_is_cleaned_without_changing_the_callers_frame() -> None:
    original = data()
    handed: dict[int, Any] = {}

    def seen(k: int, q: Any) -> str:
        handed[k] = q
        return "o"

    with unicode_warnings() as caught:
        run = eb.run(original, task=seen, store=None, progress=False)
    assert len(caught) == 1  # the first replacement; the rest of the input is silent
    assert list(run.data.columns) == ["k", "q", "note" + ES]
    assert run.data["q"].tolist() == ["q" + ET, "", EVIL, ES, VALID, "\\ud83d"]
    assert run.data.index.tolist() == run.cases["case_id"].tolist() == [escaped(i) for i in IDS]
    assert [handed[k] for k in range(6)] == run.data["q"].tolist()  # what the task is handed
    assert original["q"].iloc[0] == "q" + T and list(original.columns)[2] == "note" + S
    plain = pd.DataFrame({"k": [0, 1], "q": [VALID, EVIL]})
    assert eb.run(plain, task=seen, store=None, progress=False).data is plain  # no copy


def test_a_run_warns_once_naming_the_case_and_the_field() -> None:
    with unicode_warnings() as caught:
        eb.run(data(), task=task, scorers=[sx, sy], scores=[R, P], store=None, progress=False)
    assert len(caught) == 1
    assert caught[0].startswith("input column 'q' held a lone surrogate, replaced by \\udcff")
    with unicode_warnings() as caught:  # text only in what the task returns
        eb.run(pd.DataFrame({"k": [0, 1]}), task=lambda k: ["ok", S][k], store=None, progress=False)
    assert caught == [
        "case '1': output held a lone surrogate, replaced by \\ud800 (the first in this run; "
        "later ones are replaced without a warning)"
    ]
    with unicode_warnings() as caught:  # valid text: nothing to say
        eb.run(pd.DataFrame({"q": [VALID]}), task=lambda q: q, store=None, progress=False)
    assert caught == []


def test_a_definition_cleans_its_text_when_built_with_one_warning() -> None:
    with unicode_warnings() as caught:
        d = eb.define_score("d", label={"en": "L" + S}, description="D" + T + VALID)
    assert (d.label, d.description) == ({"en": "L" + ES}, "D" + ET + VALID)
    assert caught == ["score 'd' held a lone surrogate, replaced by \\ud800"]
    with unicode_warnings() as caught:
        g = eb.Grader(kind="model", id="j", model="m" + T)
    assert g.model == "m" + ET and caught == [
        "grader 'j' held a lone surrogate, replaced by \\udcff"
    ]
    with unicode_warnings() as caught:
        assert eb.define_score("v", label=VALID + EVIL).label == VALID + EVIL
    assert caught == []


def test_tables_are_everyday_pandas_with_the_usual_dtypes() -> None:
    run = make()
    for table in (run.cases, run.scores, run.summary(), run.unscored(), run.wide()):
        table.iloc[0]
        list(table.iterrows())
        pd.concat([table, table])
        table.to_dict("records")
        repr(table)
    for column in ("case_id", "score", "status", "reason", "grader_kind", "grader_id"):
        assert isinstance(run.scores[column].dtype, pd.CategoricalDtype), column
    assert run.cases["case_id"].dtype == object and run.wide()["case_id"].dtype == object
    assert run.unscored()["reason"].dtype == object and run.summary()["label"].dtype == object


def test_unscored_counts_the_replaced_reasons() -> None:
    unscored = make().unscored()
    keys = zip(unscored["score"].astype(str), unscored["reason"], strict=True)
    reasons = dict(zip(keys, unscored["n"], strict=True))
    assert reasons[("x", "why" + ES + EVIL)] == 1
    assert reasons[("r", "ctx" + ES)] == 1
    assert reasons[("y", "y" + VALID)] == 1


# -- text and HTML display: escaped, never a crash -----------------------------------------


def test_text_repr_holds_the_text_as_the_tables_do() -> None:
    run = make()
    assert ("Ex" + ES + EVIL + VALID) in utf8(repr(run))
    assert repr(run.headline) == f"<Headline {run.headline.text}>"


def test_html_is_valid_utf8_and_escapes_script_in_every_field() -> None:
    run = make()
    view = eb.show(run)  # its Scores tab: the summary table; run's card: the unscored one
    pages = [run._repr_html_(), run.headline._repr_html_(), view.scores.value, *case_pages(run)]
    assert len(pages) == 3 + 6
    for page in pages:
        utf8(page)
        assert "<script" not in page
    whole = "".join(pages)
    assert "&lt;script&gt;" in whole
    assert "Ex\\ud800" in whole and "why\\ud800" in whole and "boom\\udcff" in whole
    assert "a\\ud800" in whole and "\\ud83d\\ude00" in whole  # ids; a pair stays two escapes
    assert "note\\ud800" in whole  # an input column's name
    assert VALID in whole  # valid text as it is


def test_show_widget_sends_only_utf8() -> None:
    pytest.importorskip("anywidget")
    run = make()
    view = eb.show(run)
    json.dumps(view._repr_mimebundle_(), ensure_ascii=False).encode("utf-8")
    explorer = view.explorer
    labels = [label for label, _ in explorer.cases.options]
    assert len(labels) == 6 and labels[0].startswith("a\\ud800")
    for pos in range(6):
        explorer.cases.value = pos
        utf8(explorer.detail.value)
        assert "<script" not in explorer.detail.value


def test_plots_serialise() -> None:
    pytest.importorskip("plotly")
    run = make()
    for fig in (run.plot.unscored(), run.plot.distribution()):
        utf8(fig.to_json())


# -- a stored run: what was replaced is what is stored -------------------------------------


def test_a_stored_run_loads_back_equal(tmp_path: Path) -> None:
    run = make(tmp_path)
    assert run.path is not None
    with unicode_warnings() as caught:
        loaded = eb.load_run(run.path)
    assert caught == []  # the files hold the replaced text: nothing left to replace
    pd.testing.assert_frame_equal(loaded.cases, run.cases)
    pd.testing.assert_frame_equal(loaded.scores, run.scores)
    pd.testing.assert_frame_equal(loaded.summary(), run.summary())
    pd.testing.assert_frame_equal(loaded.unscored(), run.unscored())
    pd.testing.assert_frame_equal(loaded.wide(), run.wide())
    assert loaded.headline == run.headline
    assert loaded.cases["case_id"].tolist() == [escaped(i) for i in IDS]


# -- property: any text, in any field ------------------------------------------------------

chars = (
    st.characters(categories=["Cs"]) | st.sampled_from(["<", ">", "&", '"', "\\"]) | st.characters()
)
texts = st.text(alphabet=chars, max_size=6) | st.sampled_from(["<script>", S, T + S, "", VALID])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ids=st.lists(texts, min_size=1, max_size=4, unique_by=escaped),
    outputs=st.lists(texts, min_size=4, max_size=4),
    reason=texts,
    rationale=texts,
    message=texts,
    meta=texts,
    label=texts,
)
def test_any_text_in_any_field_is_kept_or_replaced_once_with_one_warning(
    ids: list[str],
    outputs: list[str],
    reason: str,
    rationale: str,
    message: str,
    meta: str,
    label: str,
) -> None:
    n = len(ids)
    with unicode_warnings() as at_definition:
        score = eb.define_score("s", label=label)
    assert len(at_definition) == has_surrogate(label)

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
        return eb.Score(1.0, rationale=rationale, label=label, metadata={meta: [meta]})

    df = pd.DataFrame({"k": range(n)}, index=pd.Index(ids, dtype=object))
    with unicode_warnings() as caught:
        run = eb.run(df, task=task, scorers=[scorer], store=None, progress=False)
    # the text the run took in: ids, outputs (k % 4 == 3 raises), and what case 0 (rationale,
    # label, metadata), case 1 (reason) and case 2 (message) recorded
    used = [*ids, *(outputs[k] for k in range(n) if k % 4 != 3), rationale, label, meta]
    used += [reason] * (n > 1) + [message] * (n > 2)
    assert len(caught) == any(has_surrogate(t) for t in used), caught
    assert run.cases["case_id"].tolist() == [escaped(i) for i in ids]
    assert run.wide()["case_id"].tolist() == [escaped(i) for i in ids]
    assert run.summary()["label"].tolist() == [escaped(label)]
    for k in range(n):
        if k % 4 != 3:
            assert run.cases["output"][k] == escaped(outputs[k])
        else:
            assert run.cases["error_message"][k] == escaped(message)
    scores = run.scores
    assert scores["rationale"][0] == escaped(rationale)
    assert json.loads(scores["metadata"][0]) == {
        escaped(meta): [escaped(meta)],
        "label": escaped(label),
    }
    if n > 1:
        assert scores["reason"].astype(object)[1] == escaped(reason)
        assert escaped(reason) in run.unscored()["reason"].tolist()
    if n > 2:
        assert scores["message"][2] == "RuntimeError: " + escaped(message)
    utf8(repr(run))
    for page in [run._repr_html_(), *case_pages(run)]:
        utf8(page)
        assert "<script" not in page  # user text is escaped; our markup has no script
