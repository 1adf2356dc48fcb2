"""`eb.review` and `run.labels()` (docs/judges.md "Labelling in the notebook"):
blind by default, labels kept the moment they are given (a killed kernel keeps them), the
review goes on where it stopped, the labels feed `eb.agreement`, and selection is seeded."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _store_helpers import resealed, seal
from display_fixtures import EVIL, EVIL_ESCAPED
from evalbook._model._agreement_stats import corrected_mean, stratified_corrected_mean
from evalbook._model._label_pick import label_strata, pick_samples

pytest.importorskip("anywidget")

N = 40
DATA = pd.DataFrame({"question": [f"q{i} {EVIL}" for i in range(N)]})
HELPFUL = eb.define_score("helpful", primary=True)


@eb.scorer(HELPFUL)
def judged(question: str) -> eb.Score:
    """A stand-in judge on a 1-5 scale (its raw value and scale in the metadata, as a judge's)."""
    raw = 1 + int(question[1:].split()[0]) % 5
    return eb.Score((raw - 1) / 4, rationale=f"raw {raw} {EVIL}",
                    metadata={"raw": raw, "scale": [1, 5]})  # fmt: skip


def _run(store: Any = None) -> eb.Run:
    return eb.run(DATA, task=lambda question: f"answer {EVIL}", scorers=[judged], store=store,
                  progress=False, name="judged")  # fmt: skip


def test_a_blind_review_hides_the_judge_and_escapes_every_text() -> None:
    view = eb.review(_run(), score="helpful", n=5)
    html = str(view.sample.value)
    assert "raw " not in html and "judge " not in html  # value and rationale hidden
    assert "hidden while you label" in html
    assert EVIL not in html and EVIL_ESCAPED in html
    assert [b.description for b in view.buttons] == ["1", "2", "3", "4", "5"]
    seen = eb.review(_run(), score="helpful", n=5, blind=False)
    assert "judge " in str(seen.sample.value) and "raw " in str(seen.sample.value)


def test_clicks_become_labels_and_feed_agreement(tmp_path: Path) -> None:
    run = _run(tmp_path)
    view = eb.review(run, score="helpful", n=10, labeler="ana")
    for _ in range(9):
        i = view.position
        assert i is not None
        view.note.value = "close call" if i == 0 else ""
        view.buttons[int(view.raw[i]) - 1].click()  # agree with the judge
    view.skip_button.click()
    assert view.progress == "10 of 10 labelled" and view.position is None
    labels = run.labels()
    assert list(labels.columns) == ["case_id", "epoch", "score", "label", "labeler",
                                    "labeled_at", "note", "select", "seed", "n",
                                    "candidates", "stratum", "stratum_size"]  # fmt: skip
    assert set(labels["select"]) == {"random"} and labels["stratum"].isna().all()
    assert set(labels["candidates"]) == {N} and set(labels["n"]) == {10}
    assert len(labels) == 9 and set(labels["labeler"]) == {"ana"}  # the skip is no label
    assert labels["note"].notna().sum() == 1
    agreement = eb.agreement(run, labels=labels, score="helpful")
    assert agreement.summary["n"].iloc[0] == 9
    assert agreement.summary["exact_agreement"].iloc[0] == 1.0
    # the same from a fresh load: the labels are in the run folder
    assert eb.load_run(run.path).labels().equals(labels)


def test_a_review_goes_on_where_it_stopped(tmp_path: Path) -> None:
    run = _run(tmp_path)
    first = eb.review(run, score="helpful", n=6, labeler="ana")
    first.buttons[0].click()
    first.buttons[1].click()
    again = eb.review(eb.load_run(run.path), score="helpful", n=6, labeler="ana")
    assert again.progress == "2 of 6 labelled"
    assert again.sample_keys == first.sample_keys  # the same draw
    other = eb.review(run, score="helpful", n=6, labeler="ben")  # each labeller their own
    assert other.progress == "0 of 6 labelled"


def test_two_different_labels_of_one_case_are_refused_by_agreement(tmp_path: Path) -> None:
    run = _run(tmp_path)
    for who, button in (("ana", 0), ("ben", 4)):
        view = eb.review(run, score="helpful", n=1, labeler=who)
        view.buttons[button].click()
    with pytest.raises(eb.ConfigurationError, match="different labels"):
        eb.agreement(run, labels=run.labels(), score="helpful")
    labels = run.labels()
    assert eb.agreement(run, labels=labels[labels.labeler == "ana"], score="helpful")


def test_a_run_without_a_store_keeps_labels_in_memory_and_says_so() -> None:
    run = _run()
    view = eb.review(run, score="helpful", n=1)
    view.buttons[2].click()
    assert len(run.labels()) == 1 and run.labels()["label"].iloc[0] == 3.0
    assert "memory (a run without a store)" in str(view.sample.value)


def test_bad_arguments_are_configuration_errors() -> None:
    run = _run()
    for kwargs in (
        {"score": "nope"},
        {"score": "helpful", "select": "best"},
        {"score": "helpful", "n": 0},
        {"score": "helpful", "n": True},
        {"score": "helpful", "labeler": 3},
    ):
        with pytest.raises(eb.ConfigurationError):
            eb.review(run, **kwargs)


def test_a_damaged_label_line_is_left_out_with_file_and_line(tmp_path: Path) -> None:
    run = _run(tmp_path)
    view = eb.review(run, score="helpful", n=3)
    for _ in range(3):
        view.buttons[0].click()
    path = Path(run.path) / "labels.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"label":1', b'"label":5')  # a byte flip: another label
    path.write_bytes(b"".join(lines))
    with pytest.warns(RuntimeWarning, match=r"labels.jsonl, line 2: checksum mismatch"):
        labels = run.labels()
    assert len(labels) == 2 and set(labels["label"]) == {1.0}  # never read as a 5


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    import pandas as pd, evalbook as eb
    run = eb.load_run(sys.argv[1])
    view = eb.review(run, score="helpful", n=20, labeler="ana")
    for i in range(int(sys.argv[2])):
        view.buttons[0].click()
    print("clicked", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the kernel dies right after the clicks
    """
)


def test_a_killed_kernel_keeps_every_label_already_given(
    tmp_path: Path, record_property: Any
) -> None:
    run = _run(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    kept = []
    for clicks in (1, 7, 13):
        child = subprocess.run(
            [sys.executable, "-c", KILLED, str(run.path), str(clicks)],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert child.returncode == -signal.SIGKILL, child.stderr
        assert "clicked" in child.stdout
        kept.append(len(run.labels()))
    # each session resumed where the last stopped: 1, then 7 more, then 12 more (20 in all)
    assert kept == [1, 8, 20], kept
    figure = f"3 kernels killed after 1, 7 and 13 clicks: {kept[-1]} of 20 labels kept"
    print(figure)
    record_property("review_kill", figure)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=200),
    st.integers(1, 250),
    st.sampled_from(["random", "stratified"]),
    st.integers(0, 3),
)
def test_a_draw_is_seeded_distinct_and_stratified_in_proportion(
    values: list[int], n: int, select: str, seed: int
) -> None:
    v = np.array(values, dtype=float)
    picked = pick_samples(v, n, select, seed)
    assert len(picked) == min(n, len(v)) and len(set(picked.tolist())) == len(picked)
    assert np.array_equal(picked, pick_samples(v, n, select, seed))  # seeded
    if select == "stratified" and n < len(v):
        for value in np.unique(v):  # each judge value within one label of its share
            share = n * np.mean(v == value)
            assert abs(np.sum(v[picked] == value) - share) < 1 + 1e-9


def test_a_saved_copy_keeps_the_labels(tmp_path: Path) -> None:
    stored = _run(tmp_path / "a")
    eb.review(stored, score="helpful", n=2, labeler="ana").buttons[3].click()
    memory = _run()
    eb.review(memory, score="helpful", n=2).buttons[1].click()
    before, source = stored.labels(), stored.path
    copy = eb.load_run(stored.save(tmp_path / "b"))  # a new folder in another store
    assert copy.path != source and len(copy.labels()) == 1
    assert copy.labels().equals(before)  # each label as given, its time too
    saved = eb.load_run(memory.save(tmp_path / "c"))  # in memory until saved, then on disk
    assert saved.labels()["label"].tolist() == [2.0]


# -- the draw kept with each label (issue 35): eb.agreement's stratified interval -----------


def _human(case_id: str) -> int:
    """A person's grade of case `q<i>`: the judge's at 4-5, another at 1-3 (an uneven judge)."""
    i = int(case_id)
    raw = 1 + i % 5
    return raw if raw >= 4 else 1 + (i * 7) % 3


def _label_all(view: Any) -> None:
    while view.position is not None:
        view.buttons[_human(view.sample_keys[view.position][0]) - 1].click()


def _by_hand(run: eb.Run, labels: pd.DataFrame) -> tuple[Any, Any]:
    """The stratified and the uniform corrected mean of `labels`, from the run's own values."""
    rows = run.scores[run.scores["score"] == "helpful"]
    judged = rows["value"].to_numpy(dtype=float)
    raw = 1 + 4 * judged
    by_case = labels.set_index(labels["case_id"].astype(str))["label"]
    human = (by_case.reindex(rows["case_id"].astype(str)).to_numpy(dtype=float) - 1) / 4
    return (
        stratified_corrected_mean(judged, human, label_strata(raw))[0],
        corrected_mean(judged, human),
    )


def test_a_stratified_review_round_trips_to_the_stratified_interval(tmp_path: Path) -> None:
    run = _run(tmp_path)
    view = eb.review(run, score="helpful", n=20, select="stratified", labeler="ana")
    _label_all(view)
    lines = (Path(run.path) / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 20 and all(x.startswith('{"schema_version":5,') for x in lines)
    labels = eb.load_run(run.path).labels()  # from the file, as a fresh session reads it
    assert set(labels["select"]) == {"stratified"} and set(labels["seed"]) == {0}
    assert set(labels["candidates"]) == {N} and set(labels["stratum_size"]) == {8}
    assert sorted(labels["stratum"].value_counts().tolist()) == [4] * 5  # 20 over 5 grades
    with warnings_as_errors():
        agreement = eb.agreement(run, labels=labels, score="helpful")
    assert agreement.draw == "stratified" and "5 strata" in str(agreement.draw_note)
    stratified, uniform = _by_hand(run, labels)
    assert np.allclose(agreement.corrected_mean, stratified)
    assert not np.allclose(stratified[1:], uniform[1:])  # another interval than the uniform
    assert "stratified interval" in agreement._repr_html_()


@contextlib.contextmanager
def warnings_as_errors() -> Iterator[None]:
    """No warning at all inside (each one raises)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_labels_of_two_draws_or_by_hand_get_the_uniform_interval(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _label_all(eb.review(run, score="helpful", n=10, select="stratified", seed=1))
    _label_all(eb.review(run, score="helpful", n=10, select="stratified", seed=2))
    labels = run.labels()
    assert set(labels["seed"]) == {1, 2}
    with pytest.warns(UserWarning, match=r"the labels mix 2 draws: the interval is the uniform"):
        mixed = eb.agreement(run, labels=labels, score="helpful")
    assert mixed.draw == "random" and "2 draws" in str(mixed.draw_note)
    assert np.allclose(mixed.corrected_mean, _by_hand(run, labels)[1])
    assert "uniform" in mixed._repr_html_()
    one = labels[labels.seed == 1]  # one draw's labels: stratified again
    assert eb.agreement(run, labels=one, score="helpful").draw == "stratified"
    # a table made by hand, without the draw's columns: a uniform draw, as ever, no warning
    with warnings_as_errors():
        hand = eb.agreement(run, labels=one[["case_id", "score", "label"]], score="helpful")
    assert hand.draw == "random" and hand.draw_note is None
    assert np.allclose(hand.corrected_mean, _by_hand(run, one)[1])


def test_labels_of_a_random_draw_keep_the_uniform_interval(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _label_all(eb.review(run, score="helpful", n=12, select="random"))
    with warnings_as_errors():
        agreement = eb.agreement(run, labels=run.labels(), score="helpful")
    assert agreement.draw == "random" and agreement.draw_note is None
    assert np.allclose(agreement.corrected_mean, _by_hand(run, run.labels())[1])


def test_a_draw_made_on_other_judge_values_gets_the_uniform_interval(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _label_all(eb.review(run, score="helpful", n=10, select="stratified"))

    @eb.scorer(HELPFUL)
    def other(question: str) -> eb.Score:  # the same cases, judged otherwise
        raw = 1 + int(question[1:].split()[0]) % 3
        return eb.Score((raw - 1) / 4, metadata={"raw": raw, "scale": [1, 5]})

    rescored = eb.run(DATA, task=lambda question: "a", scorers=[other], store=None,
                      progress=False)  # fmt: skip
    with pytest.warns(UserWarning, match="not those the stratified draw was made on"):
        agreement = eb.agreement(rescored, labels=run.labels(), score="helpful")
    assert agreement.draw == "random"
    fewer = eb.run(DATA.iloc[:30], task=lambda question: "a", scorers=[judged], store=None,
                   progress=False)  # fmt: skip
    labels = run.labels()
    kept = labels[labels.case_id.astype(int) < 30]
    with pytest.warns(UserWarning, match="among 40 judged samples, the run has 30"):
        assert eb.agreement(fewer, labels=kept, score="helpful").draw == "random"


def test_with_epochs_a_stratified_draw_gets_the_uniform_interval(tmp_path: Path) -> None:
    run = eb.run(DATA, task=lambda question: "a", scorers=[judged], store=tmp_path,
                 epochs=2, progress=False)  # fmt: skip
    view = eb.review(run, score="helpful", n=10, select="stratified")
    while view.position is not None:
        view.buttons[_human(view.sample_keys[view.position][0]) - 1].click()
    labels = run.labels()
    labels = labels.drop_duplicates("case_id")
    with pytest.warns(UserWarning, match="several epochs"):
        assert eb.agreement(run, labels=labels, score="helpful").draw == "random"


def _old_line(version: int, case_id: str, label: int) -> str:
    return seal(
        f'{{"schema_version":{version},"event":"label","case_id":"{case_id}","epoch":1,'
        f'"score":"helpful","label":{label},"labeler":"ana","labeled_at":1764694800.5,'
        '"note":null,"skipped":false}'
    )


def test_label_lines_of_versions_3_and_4_read_as_a_draw_not_known(tmp_path: Path) -> None:
    run = _run(tmp_path)
    path = Path(run.path) / "labels.jsonl"
    path.write_text("".join(_old_line(v, str(i), _human(str(i))) for i, v in
                            [(0, 3), (1, 4), (2, 4), (5, 4)]))  # fmt: skip
    labels = run.labels()
    assert labels["case_id"].tolist() == ["0", "1", "2", "5"]
    assert labels["select"].isna().all() and labels["stratum_size"].isna().all()
    with warnings_as_errors():
        old = eb.agreement(run, labels=labels, score="helpful")
    assert old.draw == "random" and np.allclose(old.corrected_mean, _by_hand(run, labels)[1])
    # a stratified review given after them: their lines have no draw, so the interval is uniform
    _label_all(eb.review(run, score="helpful", n=10, select="stratified", labeler="ana"))
    with pytest.warns(UserWarning, match=r"stratified draw and 4 label\(s\) without a recorded"):
        assert eb.agreement(run, labels=run.labels(), score="helpful").draw == "random"


def test_a_damaged_or_newer_draw_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _label_all(eb.review(run, score="helpful", n=3, select="stratified"))
    path = Path(run.path) / "labels.jsonl"
    good = path.read_text()
    lines = good.splitlines(keepends=True)
    lines[1] = resealed(lines[1].replace('"stratum_size":8', '"stratum_size":41'))
    path.write_text("".join(lines))  # sealed again: only the draw's check finds it
    with pytest.warns(RuntimeWarning, match=r"labels.jsonl, line 2: a label line whose draw"):
        assert len(run.labels()) == 2
    lines[1] = resealed(lines[1].replace('"schema_version":5', '"schema_version":4'))
    path.write_text("".join(lines))  # a version 4 line with draw keys: read without them
    assert run.labels()["stratum"].isna().sum() == 1
    path.write_text(good + resealed(good.splitlines()[0].replace(
        '"schema_version":5', '"schema_version":6')))  # fmt: skip
    with pytest.raises(ValueError, match=r"line 4\) has schema_version 6.*reads schema_version 5"):
        run.labels()
