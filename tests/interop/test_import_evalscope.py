"""Importing EvalScope results (docs/interop.md "EvalScope", format "evalscope").

The fixture (fixtures/evalscope/outputs/) is written by EvalScope 1.14.1 itself, run offline by
fixtures/evalscope/regenerate.py (a canned model and judge, local datasets; see its README): a
`gsm8k` + `general_qa` run with two metrics that raised (each of EvalScope's two shapes) and a
sample that errored, and a judged `general_qa` run with a judge parse error. Every cell is
checked against the raw review lines, the import against EvalScope's own report figures, and
damaged files (truncations, byte flips, garbage lines) are imported to count what is read
differently.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import random
import re
import shutil
import statistics
import warnings
from pathlib import Path
from typing import Any

import pytest
from _interop_helpers import (
    FormatError,
    contract,
    json_lines,
    load_make,
    quiet_import,
    same_record,
    with_warning,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb

HERE = Path(__file__).parent / "fixtures" / "evalscope"
ROOT = HERE / "outputs" / "20261201_163005"  # gsm8k + general_qa, rule-scored
JUDGED = HERE / "outputs" / "20261201_170000"  # general_qa, scored by an LLM judge
MODEL = "tiny-canned"
REVIEWS = ROOT / "reviews" / MODEL
GSM = REVIEWS / "gsm8k_main.jsonl"
QA = REVIEWS / "general_qa_example.jsonl"
JUDGED_QA = JUDGED / "reviews" / MODEL / "general_qa_example.jsonl"
BLEU = [f"bleu-{n}" for n in range(1, 5)]
ROUGE = [f"Rouge-{v}-{s}" for v in "12L" for s in "RPF"]


def _evalscope_installed() -> bool:
    # by its distribution: a folder named evalscope on sys.path (this fixture's) is not it
    try:
        return importlib.metadata.version("evalscope") == "1.14.1"
    except importlib.metadata.PackageNotFoundError:
        return False


_HAS_EVALSCOPE = _evalscope_installed()


def _quiet(path: Path) -> eb.Run:
    return quiet_import(path, "evalscope")


def _report(root: Path, benchmark: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (root / "reports" / MODEL / f"{benchmark}.json").read_text("utf-8")
    )
    return data


@pytest.mark.slow
@pytest.mark.skipif(not _HAS_EVALSCOPE, reason="EvalScope 1.14.1 is not installed")
def test_the_fixture_is_what_evalscope_writes(tmp_path: Path) -> None:
    regenerate = load_make(HERE / "regenerate.py", "evalscope_regenerate")
    regenerate.main(tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(HERE / "outputs") for p in (HERE / "outputs").rglob("*") if p.is_file()
    )
    assert written == committed
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (HERE / "outputs" / rel).read_bytes(), rel


def test_the_fixture_is_evalscopes_own_output() -> None:
    """What regenerate.py's runs wrote: the shapes the other tests rely on are EvalScope's."""
    gsm = json_lines(GSM)
    assert [line["sample_score"]["score"]["status"] for line in gsm] == ["degraded"] * 7
    assert {k for line in gsm for k in line["sample_score"]["score"]["value"]} == {"accuracy"}
    assert gsm[0]["sample_score"]["score"]["metadata"]["comet"].startswith("error: `comet`")
    assert _report(ROOT, "gsm8k")["execution_summary"]["subsets"]["main"] == {
        "requested": 8,
        "succeeded": 7,
        "errored": 1,
    }
    qa = json_lines(QA)
    errors = [line["sample_score"]["score"]["metadata"].get("metric_errors") for line in qa]
    assert [e is not None and e["BLEU"].startswith("LookupError") for e in errors] == [
        False,
        False,
        True,
        True,
    ]
    assert all(qa[2]["sample_score"]["score"]["value"][k] == 0.0 for k in BLEU)
    judged = json_lines(JUDGED_QA)[1]["sample_score"]["score"]
    assert judged["status"] == "degraded" and judged["judge_summary"]["failures"] == {
        "parse_error": 1
    }


def test_every_cell_is_the_raw_value_through_the_score_contract() -> None:
    for root, files in ((ROOT, (GSM, QA)), (JUDGED, (JUDGED_QA,))):
        run = _quiet(root)
        scores = run.scores.set_index(["case_id", "epoch", "score"])
        cells = [
            ((f"{path.stem}/{sample['group_id']}", sample["generation_index"] + 1, metric), value)
            for path in files
            for sample in (line["sample_score"] for line in json_lines(path))
            for metric, value in sample["score"]["value"].items()
            if "metric_errors" not in sample["score"]["metadata"]
        ]
        for (key, value), want in zip(cells, contract([v for _, v in cells]), strict=True):
            assert same_record(scores.loc[key], want), (key, value, want)
    run = _quiet(ROOT)
    scores = run.scores.set_index(["case_id", "epoch", "score"])
    # the other benchmark's metric: explicitly unscored
    cell = scores.loc[("gsm8k_main/2", 2, "bleu-1")]
    assert (cell["status"], cell["reason"]) == ("unscored", "not_a_metric_of_gsm8k_main")
    acc = scores.loc[("gsm8k_main/0", 1, "accuracy")]
    assert json.loads(acc["metadata"]) == {"status": "degraded", "extracted_prediction": "7"}
    # the judged run: a judge answer that is not JSON is an error, never a zero; the lines the
    # judge scored have no rule metric (EvalScope computes one only when the judge failed)
    scores = _quiet(JUDGED).scores.set_index(["case_id", "epoch", "score"])
    cell = scores.loc[("general_qa_example/0", 2, "acc")]
    assert (cell["status"], cell["reason"]) == ("error", "invalid_judge_output")
    assert cell["message"] == (
        "EvalScope parse_error: no judge produced a usable verdict (no JSON object found in "
        "the reply)"
    )
    assert scores.loc[("general_qa_example/0", 2, "Rouge-L-R"), "value"] == 1.0
    cell = scores.loc[("general_qa_example/1", 1, "Rouge-L-R")]
    assert (cell["status"], cell["reason"]) == ("unscored", "rule_metric_not_computed")


def test_values_that_are_not_scores_are_invalid_records(tmp_path: Path) -> None:
    """EvalScope's values are numbers or booleans (a judge's 1-10 rating, a `passed` flag):
    through the score contract as they are, `True` is not 1."""
    folder = tmp_path / "reviews" / MODEL
    folder.mkdir(parents=True)
    lines = json_lines(GSM)[:2]
    lines[0]["sample_score"]["score"]["value"]["accuracy"] = 8.0
    lines[1]["sample_score"]["score"]["value"]["accuracy"] = True
    (folder / GSM.name).write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8"
    )
    scores = _quiet(folder).scores
    scores = scores[scores.score == "accuracy"].set_index(["epoch"])
    assert list(scores["reason"]) == ["invalid_score", "invalid_score"]
    assert "True" in scores.loc[2, "message"]


def test_general_qa_metrics_are_their_reports_by_identity() -> None:
    """Issue 29 item 11: a review key is matched with the report metric EvalScope names it
    (`bleu-1` is `bleu` with `ngram: 1`, `Rouge-L-R` is `rouge` with `variant: l,
    statistic: recall`, `accuracy` is `accuracy`): nothing of general_qa is skipped, its
    report's primary is the primary score, and its means are checked against the report."""
    run, skipped = with_warning(QA.parent, "evalscope")
    assert skipped == ""
    assert [d.name for d in run.definitions] == [*BLEU, *ROUGE, "accuracy", "comet"]
    qa = _quiet(QA)
    assert [(d.name, d.primary) for d in qa.definitions if d.primary] == [("Rouge-L-R", True)]
    assert set(qa.scores.status) == {"scored", "error"}
    judged = _quiet(JUDGED)
    assert [d.name for d in judged.definitions if d.primary] == ["Rouge-L-R"]


def test_a_general_qa_value_that_disagrees_with_its_report_warns(tmp_path: Path) -> None:
    shutil.copytree(ROOT, tmp_path / "run")
    qa = tmp_path / "run" / "reviews" / MODEL / QA.name
    text = qa.read_text(encoding="utf-8")
    qa.write_text(text.replace('"Rouge-2-P": 1.0', '"Rouge-2-P": 0.5', 1), "utf-8")
    with pytest.warns(RuntimeWarning, match=r"the mean of Rouge-2-P over its 4 lines is 0\.175"):
        eb.import_results(tmp_path / "run", format="evalscope")


def test_a_metric_that_raised_is_an_error_never_its_zero() -> None:
    """Issue 29 item 12: general_qa writes `0.0` for each key of a metric that raised, and
    `metadata.metric_errors.<METRIC>`; `match_score` writes `metadata[<metric>] = "error: ..."`.
    Either is a `scorer_raised` error record with EvalScope's reason, not counted."""
    scores = _quiet(ROOT).scores.set_index(["case_id", "epoch", "score"])
    for epoch in (1, 2):
        for key in BLEU:
            cell = scores.loc[("general_qa_example/1", epoch, key)]
            assert (cell["status"], cell["reason"]) == ("error", "scorer_raised"), key
            assert cell["message"].startswith("EvalScope: metric BLEU raised (LookupError:")
            assert "punkt_tab" in cell["message"] and "is not a score" in cell["message"]
        # the other metric of the same line is a score
        assert scores.loc[("general_qa_example/1", epoch, "Rouge-1-R"), "status"] == "scored"
    cell = scores.loc[("gsm8k_main/0", 1, "comet")]
    assert (cell["status"], cell["reason"]) == ("error", "scorer_raised")
    assert cell["message"].startswith("EvalScope: error: `comet` not found")
    summary = _quiet(QA).summary().set_index("score")
    # the two raised lines are errors: bleu-1's mean is over the two lines that have one
    assert summary.loc["bleu-1", "counted"] == 2 and summary.loc["bleu-1", "errors"] == 2
    first = [line["sample_score"]["score"]["value"]["bleu-1"] for line in json_lines(QA)[:2]]
    assert summary.loc["bleu-1", "mean"] == pytest.approx(statistics.fmean(first))


def test_the_import_reproduces_the_reports_figures() -> None:
    """Every mean EvalScope reports (per metric and subset) is the mean of the values imported
    for it, once the 0.0 EvalScope counts for a metric that raised is added back: the
    differences docs/interop.md lists, and no other (to the report's 4 decimals)."""
    checked = 0
    for root in (ROOT, JUDGED):
        run = _quiet(root)
        scores = run.scores
        data = run.data.set_index(run.data.index)
        for report_file in sorted((root / "reports" / MODEL).glob("*.json")):
            report = json.loads(report_file.read_text("utf-8"))
            for metric in report["metrics"]:
                for subset in (s for c in metric["categories"] for s in c["subsets"]):
                    stem = f"{report['dataset_name']}_{subset['name']}"
                    keys = _keys_of(root / "reviews" / MODEL / f"{stem}.jsonl", metric)
                    assert len(keys) == 1, (metric["identity"], keys)
                    rows = scores[
                        (scores.score == keys[0]) & scores.case_id.str.startswith(f"{stem}/")
                    ]
                    values = list(rows[rows.status == "scored"].value)
                    raised = rows[rows.reason == "scorer_raised"]
                    assert len(values) + len(raised) == subset["num"], (stem, keys)
                    mean = math.fsum(values) / subset["num"]  # the raised ones: EvalScope's 0.0
                    assert mean == pytest.approx(subset["score"], abs=5e-5), (stem, keys)
                    checked += 1
        assert len(data) > 0
    assert checked == 13 + 1 + 13 + 1  # general_qa's 13 and gsm8k's accuracy; the judged 13 + acc


def _keys_of(path: Path, metric: dict[str, Any]) -> list[str]:
    """The review keys of `path` that EvalScope's report names by `metric`'s identity, found
    from the report's own display names (`semantics.metric_name` and the identity's
    dimensions), independently of the importer's mapping."""
    identity = metric["identity"]
    keys = {k for line in json_lines(path) for k in line["sample_score"]["score"]["value"]}
    dims = identity["dimensions"]
    found = []
    for key in keys:
        if m := re.fullmatch(r"bleu-(\d)", key):
            ok = identity["name"] == "bleu" and dims == {"ngram": int(m[1])}
        elif m := re.fullmatch(r"Rouge-([12L])-([RPF])", key):
            stat = {"R": "recall", "P": "precision", "F": "f1"}[m[2]]
            axis = {"variant": "l"} if m[1] == "L" else {"ngram": int(m[1])}
            ok = identity["name"] == "rouge" and dims == {**axis, "statistic": stat}
        else:
            ok = identity["name"] == {"acc": "accuracy"}.get(key, key) and dims == {}
        if ok:
            found.append(key)
    return found


def test_evalbooks_mean_and_evalscopes_differ_only_as_documented() -> None:
    """evalbook's mean averages each case's epochs first, then the cases: EvalScope's is over
    samples. They agree where every case has all its epochs scored; the judged run's `acc`
    (one judge answer not read) is 0.75 in evalbook (case means 1.0 and 0.5), 0.6667 in
    EvalScope (2 of 3 samples)."""
    summary = _quiet(ROOT).summary().set_index("score")
    report = _report(ROOT, "general_qa")
    rouge = next(m for m in report["metrics"] if m["identity"]["dimensions"].get("variant"))
    assert summary.loc["Rouge-L-R", "mean"] == pytest.approx(rouge["score"], abs=5e-5)
    judged = _quiet(JUDGED).summary().set_index("score")
    acc = next(
        m for m in _report(JUDGED, "general_qa")["metrics"] if m["identity"]["name"] == "accuracy"
    )
    assert (acc["score"], acc["num"]) == (0.6667, 3)
    assert judged.loc["acc", "mean"] == pytest.approx(0.75)
    # gsm8k, one sample errored: 5 of 7 in EvalScope; case means 0.5, 1, 0.5, 1 in evalbook
    gsm = next(m for m in _report(ROOT, "gsm8k")["metrics"])
    assert (gsm["score"], gsm["num"]) == (0.7143, 7)
    assert summary.loc["accuracy", "mean"] == pytest.approx(0.75)


def test_samples_the_report_asked_that_the_file_lacks_are_not_run(tmp_path: Path) -> None:
    """Issue 29 item 13: a cut-short review file, whose report says how many samples were
    asked (`execution_summary`), leaves the samples it does not hold not run: the run is
    incomplete, its true completion, and no case is dropped."""
    shutil.copytree(ROOT, tmp_path / "run")
    gsm = tmp_path / "run" / "reviews" / MODEL / GSM.name
    gsm.write_bytes(gsm.read_bytes()[:3000])  # 3 whole lines and a cut one
    run, skipped = with_warning(tmp_path / "run", "evalscope")
    assert "gsm8k_main.jsonl:4: not JSON" in skipped
    cases = run.cases[run.cases.case_id.str.startswith("gsm8k_main/")]
    assert list(zip(cases.case_id, cases.epoch, strict=True)) == [
        (f"gsm8k_main/{g}", e) for g in range(4) for e in (1, 2)
    ]
    assert [o if isinstance(o, str) else "not run" for o in cases.outcome] == ["passed"] * 3 + [
        "not run"
    ] * 5
    assert run.headline.text.endswith("completed 58% (5 not run)")  # 7 of 12
    # a case not run has no input of its own (the file holds none): its row is empty
    datasets = [d if isinstance(d, str) else None for d in run.data.dataset[2:]]
    assert datasets == ["gsm8k_main"] * 2 + [None] * 2


def test_a_sample_evalscope_counts_as_errored_is_errored() -> None:
    """The intact gsm8k file holds the report's 7 succeeded samples of 8: the one missing is
    the sample the report counts as errored (`ignore_errors` keeps no line of it)."""
    run = _quiet(ROOT)
    cases = run.cases.set_index(["case_id", "epoch"])
    row = cases.loc[("gsm8k_main/3", 2)]
    assert row["outcome"] == "errored" and row["error_type"] == "EvalScope"
    assert "execution_summary.errored" in row["error_message"]
    assert run.headline.text.endswith("completed 92% (1 errored)")


def test_missing_samples_of_ids_evalscope_did_not_give_are_counted(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(ROOT, folder)
    gsm = folder / "reviews" / MODEL / GSM.name
    lines = json_lines(gsm)[:3]
    for line in lines:  # ids of a dataset's own: which of the 8 asked are missing is unknown
        line["index"] = line["sample_score"]["sample_id"] = f"q{line['index']}"
    gsm.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    run, skipped = with_warning(folder, "evalscope")
    assert (
        "gsm8k_main.jsonl: its report asks 8 samples, the file holds 3; its ids are not "
        "EvalScope's own, so which are missing is not known" in skipped
    )
    assert len(run.cases[run.cases.case_id.str.startswith("gsm8k_main/")]) == 4


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (
            3,
            r"gsm8k\.json: a EvalScope report file of format version 3, newer than evalbook "
            r"reads \(version 2\): upgrade evalbook \(pip install -U evalbook\) and import again",
        ),
        (1, r"gsm8k\.json: a EvalScope report file of format version 1; evalbook reads version 2"),
        (None, r"gsm8k\.json: a EvalScope report file of no format version; evalbook reads"),
    ],
)
def test_a_report_of_another_schema_version_is_refused_by_name(
    tmp_path: Path, version: int | None, message: str
) -> None:
    """Issue 29 item 14, the one rule for versions (docs/interop.md): EvalScope's report
    `schema_version` 2 is read; a newer one is refused by name, an older or missing one says
    which is read."""
    shutil.copytree(ROOT, tmp_path / "run")
    path = tmp_path / "run" / "reports" / MODEL / "gsm8k.json"
    report = json.loads(path.read_text("utf-8"))
    if version is None:
        del report["schema_version"]
    else:
        report["schema_version"] = version
    path.write_text(json.dumps(report, indent=4, ensure_ascii=False), "utf-8")
    with pytest.raises(FormatError, match=message):
        eb.import_results(tmp_path / "run", format="evalscope")


def test_cases_epochs_inputs_outputs_and_names() -> None:
    run = _quiet(ROOT)
    cases = run.cases
    assert list(zip(cases.case_id, cases.epoch, strict=True)) == [
        (f"{d}/{g}", e)
        for d, n in (("general_qa_example", 2), ("gsm8k_main", 4))
        for g in range(n)
        for e in (1, 2)
    ]
    assert run.options["epochs"] == 2
    assert cases.output[5] == "ANSWER: \\boxed{8}"  # gsm8k doc 0, its second repeat
    data = run.data
    assert list(data.columns) == [
        "dataset",
        "benchmark",
        "subset",
        "input",
        "target",
        "sample_metadata",
    ]
    assert "ç'est ça" in data.iloc[3]["input"]  # ensure_ascii=False, kept
    assert list(data.iloc[3]["target"]) == ["30"]
    assert (data.iloc[0]["benchmark"], data.iloc[0]["subset"]) == ("general_qa", "example")
    assert json.loads(data.iloc[2]["sample_metadata"]) == {"reasoning": "3 + 4 = 7"}
    assert run.name == "general_qa+gsm8k"
    # two benchmarks whose reports name different primaries (Rouge-L-R; accuracy): no primary
    assert not any(d.primary for d in run.definitions)
    source = run.options["imported"]
    assert source["model"] == MODEL and source["files"] == [QA.name, GSM.name]
    gsm = source["benchmarks"]["gsm8k"]
    assert gsm["pretty_name"] == "GSM8K" and gsm["execution_summary"]["requested"] == 8


def test_one_review_file_the_model_folder_and_the_output_folder_agree() -> None:
    full = _quiet(ROOT).scores.set_index(["case_id", "epoch", "score"])
    assert _quiet(REVIEWS).scores.equals(_quiet(ROOT).scores)
    assert _quiet(ROOT / "reviews").scores.equals(_quiet(ROOT).scores)
    gsm = _quiet(GSM)
    assert [(d.name, d.primary) for d in gsm.definitions] == [
        ("accuracy", True),
        ("comet", False),
    ]  # its report's
    for row in gsm.scores.itertuples():
        assert full.loc[(row.case_id, row.epoch, row.score), "value"] == row.value or (
            math.isnan(row.value)
        )


def test_not_evalscope_is_a_format_error(tmp_path: Path) -> None:
    for model in ("a", "b"):
        shutil.copytree(REVIEWS, tmp_path / "out" / "reviews" / model)
    with pytest.raises(FormatError, match=r"several models \(a, b\)"):
        eb.import_results(tmp_path / "out", format="evalscope")
    with pytest.raises(FormatError, match="not an EvalScope output folder: expected"):
        eb.import_results(HERE, format="evalscope")
    other = tmp_path / "other.jsonl"
    other.write_text('{"id": 1}\n{"index": 2}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"no line is an EvalScope review .*no sample_score"):
        eb.import_results(other, format="evalscope")
    report = ROOT / "reports" / MODEL / "gsm8k.json"
    with pytest.raises(FormatError, match="not an EvalScope review file"):
        eb.import_results(report, format="evalscope")


def test_detected_from_its_files_and_not_from_near_misses(tmp_path: Path) -> None:
    for path in (ROOT, REVIEWS, GSM, ROOT / "reviews"):
        assert quiet_import(path).options["imported"]["format"] == "evalscope", path
    (tmp_path / "x.jsonl").write_text('{"index": 1, "model": "m"}\n', encoding="utf-8")
    for path in [tmp_path / "x.jsonl", tmp_path, HERE / "regenerate.py"]:
        with pytest.raises(FormatError, match="not a results file evalbook can import"):
            eb.import_results(path)


def test_a_sample_written_twice_keeps_the_last_as_evalscope_does(tmp_path: Path) -> None:
    folder = tmp_path / "reviews" / MODEL
    shutil.copytree(REVIEWS, folder)
    lines = json_lines(folder / GSM.name)
    again = json.loads(json.dumps(lines[1]))
    again["sample_score"]["score"]["value"]["accuracy"] = 1.0  # a resumed run rescored it
    with open(folder / GSM.name, "a", encoding="utf-8") as f:
        f.write(json.dumps(again, ensure_ascii=False) + "\n")
        f.write('{"index": 3, "target": ["30"], "messages": [], "sample_score": {"score"\n')
    run, skipped = with_warning(folder, "evalscope")
    assert "skipped 2 part(s)" in skipped and run.options["imported"]["skipped"] == 2
    assert f"{GSM.name}:2: sample 1 again at {GSM.name}:8" in skipped
    assert f"{GSM.name}:9: not JSON" in skipped
    scores = run.scores.set_index(["case_id", "epoch", "score"])
    assert scores.loc[("gsm8k_main/0", 2, "accuracy"), "value"] == 1.0


def test_a_value_that_disagrees_with_the_report_warns(tmp_path: Path) -> None:
    shutil.copytree(ROOT, tmp_path / "run")
    gsm = tmp_path / "run" / "reviews" / MODEL / GSM.name
    text = gsm.read_text(encoding="utf-8").replace('"accuracy": 0.0', '"accuracy": 1.0')
    gsm.write_text(text, "utf-8")
    with pytest.warns(RuntimeWarning, match=r"the mean of accuracy over its 7 lines is 1, the"):
        eb.import_results(tmp_path / "run", format="evalscope")


def test_a_rare_metric_name_the_report_does_not_name_is_damage(tmp_path: Path) -> None:
    """A key on one line that the report names by no identity is a damaged name: the line is
    skipped and counted. A key on most lines is the benchmark's own, whatever its report."""
    shutil.copytree(ROOT, tmp_path / "run")
    gsm = tmp_path / "run" / "reviews" / MODEL / GSM.name
    text = gsm.read_text(encoding="utf-8")
    gsm.write_text(text.replace('"accuracy"', '"accurady"', 1), "utf-8")
    run, skipped = with_warning(tmp_path / "run", "evalscope")
    assert f"{GSM.name}:1: metric 'accurady' is not in the benchmark's report" in skipped
    text = text.replace('"accuracy"', '"acc_v2"')
    gsm.write_text(text, "utf-8")
    run, skipped = with_warning(tmp_path / "run", "evalscope")
    assert skipped == "" and "acc_v2" in {d.name for d in run.definitions}


# --- fault injection ----------------------------------------------------------------------


def _cells(run: Any) -> dict[tuple[str, int, str], tuple[Any, ...]]:
    cells: dict[tuple[str, int, str], tuple[Any, ...]] = {}
    for row in run.scores.itertuples():
        cells[row.case_id, row.epoch, row.score] = (row.status, repr(row.value), row.reason)
    data = run.data.to_dict("records")
    per_case = {cid: i for i, cid in enumerate(dict.fromkeys(run.cases.case_id))}
    for row in run.cases.itertuples():
        if isinstance(row.outcome, str):
            cells[row.case_id, row.epoch, "<case>"] = (
                repr(row.output),
                row.outcome,
                repr(data[per_case[row.case_id]]),
            )
    return cells


def _classify(root: Path, clean: dict[tuple[str, int, str], tuple[Any, ...]]) -> str:
    """same | counted | refused | warned | text differs | different (see test_import_lm_eval)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run = eb.import_results(root, format="evalscope")
        except FormatError:
            return "refused"
    skipped = run.options["imported"]["skipped"]
    mean_warned = any("the mean of" in str(w.message) for w in caught)
    got = {k: v for k, v in _cells(run).items() if v[0] == v[0]}  # slots never read: lost
    # a cell lost with its line is a missing_score error: counted, not a different value
    differs = [k for k, cell in got.items() if cell != clean.get(k) and cell[2] != "missing_score"]
    if differs:
        if mean_warned:
            return "warned"
        if not all(k[2] == "<case>" and k in clean for k in differs):
            return "different"
        # EvalScope writes no checksum: a flip inside a prompt or an answer reads as that text;
        # a lost report leaves benchmark and subset unknown (the report is counted as skipped)
        same_output = all(got[k][0] == clean[k][0] for k in differs)
        return "counted" if skipped and same_output else "text differs"
    if got.keys() == clean.keys() and not skipped:
        return "same"
    return "counted" if skipped else "different"


_REPORTS = ROOT / "reports" / MODEL
_DAMAGED = {
    "rules": (ROOT, [GSM, QA], [_REPORTS / "gsm8k.json", _REPORTS / "general_qa.json"]),
    "judged": (JUDGED, [JUDGED_QA], [JUDGED / "reports" / MODEL / "general_qa.json"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("run", sorted(_DAMAGED))
def test_damaged_files_are_never_read_as_a_different_result(
    tmp_path: Path, record_property: Any, run: str
) -> None:
    root_of, reviews, reports = _DAMAGED[run]
    clean = _cells(_quiet(root_of))
    rng = random.Random(21)
    tally: dict[str, dict[str, int]] = {}
    different: list[str] = []
    mutants: list[tuple[str, Path, bytes]] = []
    for path in (*reviews, *reports):
        data = path.read_bytes()
        step = 97 if path.suffix == ".jsonl" else 397  # a cut report is not JSON: fewer cuts
        mutants += [("truncation", path, data[:cut]) for cut in range(1, len(data), step)]
        for _ in range(100 if path.suffix == ".jsonl" else 30):
            at = rng.randrange(len(data))
            bit = bytes([data[at] ^ (1 << rng.randrange(8))])
            mutants.append(("byte flip", path, data[:at] + bit + data[at + 1 :]))
    for path in reviews:
        lines = path.read_bytes().splitlines(keepends=True)
        for junk in (b"garbage", b"{}", b'{"index": 1}', b"\x00\xff", b"[1]", b"null"):
            at = rng.randrange(len(lines) + 1)
            mutants.append(
                ("garbage line", path, b"".join([*lines[:at], junk + b"\n", *lines[at:]]))
            )
    for i, (kind, path, data) in enumerate(mutants):
        root = tmp_path / str(i)
        shutil.copytree(root_of, root)
        (root / path.relative_to(root_of)).write_bytes(data)
        verdict = _classify(root, clean)
        tally.setdefault(kind, {}).setdefault(verdict, 0)
        tally[kind][verdict] += 1
        if verdict == "different":
            different.append(f"{kind} in {path.name}")
        shutil.rmtree(root)
    kinds = "; ".join(
        f"{kind}: " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(v.items()))
        for kind, v in tally.items()
    )
    figure = (
        f"damaged EvalScope files ({run} run): {len(mutants)} tried, {len(different)} silently "
        f"different ({kinds})"
    )
    print(figure)
    record_property("faults", figure)
    assert not different, different


_KEYS = st.sampled_from(
    [
        *BLEU,
        *ROUGE,
        "acc",
        "accuracy",
        "AverageAccuracy",
        "F1",
        "f1_score",
        "em",
        "bertscore",
        "score",
        "mean_Rouge-1-P",
        "Bleu_3",
        "pass@1",
        "2nd",
        "",
    ]
) | st.text(alphabet="abAB_-1L.@ é", max_size=12)


@pytest.mark.skipif(not _HAS_EVALSCOPE, reason="EvalScope 1.14.1 is not installed")
@settings(max_examples=300, deadline=None)
@given(_KEYS)
def test_a_keys_identity_is_the_one_evalscope_gives_it(key: str) -> None:
    """Where EvalScope is installed: the importer's `identity_of` is EvalScope's own
    `canonicalize_producer_identity` (as its aggregators name a report metric)."""
    from evalscope.metrics.semantics.naming import canonicalize_producer_identity

    from evalbook._interop._evalscope import identity_of

    theirs = canonicalize_producer_identity(key, "mean")
    assert identity_of(key) == (
        theirs.name,
        json.dumps(theirs.dimensions, sort_keys=True, ensure_ascii=False),
    )
