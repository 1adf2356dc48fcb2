"""Importing EvalScope results (docs/interop.md "EvalScope", format "evalscope").

The fixture (fixtures/evalscope/outputs/) is written by fixtures/evalscope/make.py, which
follows EvalScope 1.14.1's writer code (`save_review_cache`, `JsonlWriter`, `Report.to_json`);
a test checks that make.py still writes exactly the committed files. Every cell is checked
against the raw review lines, and damaged files (truncations, byte flips, garbage lines) are
imported to count what is read differently.
"""

from __future__ import annotations

import json
import math
import random
import shutil
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

import evalbook as eb

HERE = Path(__file__).parent / "fixtures" / "evalscope"
ROOT = HERE / "outputs" / "20261201_163005"
MODEL = "qwen2.5-0.5b-instruct"
REVIEWS = ROOT / "reviews" / MODEL
GSM = REVIEWS / "gsm8k_main.jsonl"
MT = REVIEWS / "mt_mini_default.jsonl"


def _quiet(path: Path) -> eb.Run:
    return quiet_import(path, "evalscope")


def test_the_fixture_is_what_make_py_writes(tmp_path: Path) -> None:
    make = load_make(HERE / "make.py", "evalscope_make")
    make.main(tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(HERE / "outputs") for p in ROOT.rglob("*") if p.is_file())
    assert written == committed
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (HERE / "outputs" / rel).read_bytes(), rel


def test_every_cell_is_the_raw_value_through_the_score_contract() -> None:
    run = _quiet(ROOT)
    scores = run.scores.set_index(["case_id", "epoch", "score"])
    cells = [
        ((f"{path.stem}/{sample['group_id']}", sample["generation_index"] + 1, metric), value)
        for path in (GSM, MT)
        for sample in (line["sample_score"] for line in json_lines(path))
        for metric, value in sample["score"]["value"].items()
    ]
    for (key, value), want in zip(cells, contract([v for _, v in cells]), strict=True):
        assert same_record(scores.loc[key], want), (key, value, want)
    assert len(cells) == 6 + 2 + 2 + 1
    cell = scores.loc[("mt_mini_default/0", 1, "rating")]
    assert (cell["status"], cell["reason"]) == ("error", "invalid_score")  # 8.0 on 1-10
    cell = scores.loc[("mt_mini_default/0", 1, "passed")]
    assert cell["reason"] == "invalid_score" and "True" in cell["message"]  # a bool, not 1
    # a judge that could not be parsed: an error, never a zero
    cell = scores.loc[("mt_mini_default/1", 1, "rating")]
    assert (cell["status"], cell["reason"]) == ("error", "invalid_judge_output")
    assert cell["message"] == "EvalScope parse_error: the judge's answer has no [[rating]]"
    # a metric that raised in match_score (status degraded)
    cell = scores.loc[("mt_mini_default/1", 2, "passed")]
    assert (cell["status"], cell["reason"]) == ("error", "scorer_raised")
    assert "no verdict line" in cell["message"]
    # the other benchmark's metric: explicitly unscored
    cell = scores.loc[("gsm8k_main/2", 2, "rating")]
    assert (cell["status"], cell["reason"]) == ("unscored", "not_a_metric_of_gsm8k_main")
    acc = scores.loc[("gsm8k_main/0", 1, "acc")]
    assert json.loads(acc["metadata"]) == {"status": "success", "extracted_prediction": "7"}


def test_cases_epochs_inputs_outputs_and_names() -> None:
    run = _quiet(ROOT)
    cases = run.cases
    assert list(zip(cases.case_id, cases.epoch, strict=True)) == [
        (f"{d}/{g}", e)
        for d, n in (("gsm8k_main", 3), ("mt_mini_default", 2))
        for g in range(n)
        for e in (1, 2)
    ]
    assert set(cases.outcome) == {"passed"} and run.options["epochs"] == 2
    assert cases.output[1] == "The answer is 8."  # gsm8k doc 0, its second repeat
    data = run.data
    assert list(data.columns) == [
        "dataset",
        "benchmark",
        "subset",
        "input",
        "target",
        "sample_metadata",
    ]
    assert data.iloc[1]["input"].endswith("ç'est ça")  # ensure_ascii=False, kept
    assert list(data.iloc[1]["target"]) == ["30"] and data.iloc[3]["target"] is None
    assert (data.iloc[4]["benchmark"], data.iloc[4]["subset"]) == ("mt_mini", "default")
    assert json.loads(data.iloc[4]["sample_metadata"]) == {"category": "writing"}
    assert [d.name for d in run.definitions] == ["acc", "rating", "passed"]
    assert run.name == "gsm8k+mt_mini"
    # two benchmarks whose reports name different primaries (acc; none): no primary
    assert not any(d.primary for d in run.definitions)
    source = run.options["imported"]
    assert source["model"] == MODEL and source["files"] == [GSM.name, MT.name]
    gsm = source["benchmarks"]["gsm8k"]
    assert gsm["pretty_name"] == "GSM8K" and gsm["execution_summary"]["requested"] == 6
    summary = run.summary().set_index("score")
    assert summary.loc["acc", "mean"] == pytest.approx(gsm["metrics"][0]["score"], abs=5e-5)


def test_one_review_file_the_model_folder_and_the_output_folder_agree() -> None:
    full = _quiet(ROOT).scores.set_index(["case_id", "epoch", "score"])
    assert _quiet(REVIEWS).scores.equals(_quiet(ROOT).scores)
    assert _quiet(ROOT / "reviews").scores.equals(_quiet(ROOT).scores)
    gsm = _quiet(GSM)
    assert [(d.name, d.primary) for d in gsm.definitions] == [("acc", True)]  # its report's
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
    for path in [tmp_path / "x.jsonl", tmp_path, HERE / "make.py"]:
        with pytest.raises(FormatError, match="not a results file evalbook can import"):
            eb.import_results(path)


def test_a_sample_written_twice_keeps_the_last_as_evalscope_does(tmp_path: Path) -> None:
    folder = tmp_path / "reviews" / MODEL
    shutil.copytree(REVIEWS, folder)
    lines = json_lines(folder / GSM.name)
    again = json.loads(json.dumps(lines[1]))
    again["sample_score"]["score"]["value"]["acc"] = 1.0  # a resumed run rescored it
    with open(folder / GSM.name, "a", encoding="utf-8") as f:
        f.write(json.dumps(again, ensure_ascii=False) + "\n")
        f.write('{"index": 3, "target": ["30"], "messages": [], "sample_score": {"score"\n')
    run, skipped = with_warning(folder, "evalscope")
    assert "skipped 2 part(s)" in skipped and run.options["imported"]["skipped"] == 2
    assert f"{GSM.name}:2: sample 1 again at {GSM.name}:7" in skipped
    assert f"{GSM.name}:8: not JSON" in skipped
    scores = run.scores.set_index(["case_id", "epoch", "score"])
    assert scores.loc[("gsm8k_main/0", 2, "acc"), "value"] == 1.0


def test_a_value_that_disagrees_with_the_report_warns(tmp_path: Path) -> None:
    shutil.copytree(ROOT, tmp_path / "run")
    gsm = tmp_path / "run" / "reviews" / MODEL / GSM.name
    gsm.write_text(gsm.read_text(encoding="utf-8").replace('"acc": 0.0', '"acc": 1.0'), "utf-8")
    with pytest.warns(RuntimeWarning, match=r"the mean of acc over its 6 lines is 1, the report"):
        eb.import_results(tmp_path / "run", format="evalscope")


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


@pytest.mark.slow
def test_damaged_files_are_never_read_as_a_different_result(
    tmp_path: Path, record_property: Any
) -> None:
    clean = _cells(_quiet(ROOT))
    rng = random.Random(21)
    tally: dict[str, dict[str, int]] = {}
    different: list[str] = []
    mutants: list[tuple[str, Path, bytes]] = []
    for path in (GSM, MT, ROOT / "reports" / MODEL / "gsm8k.json"):
        data = path.read_bytes()
        mutants += [("truncation", path, data[:cut]) for cut in range(1, len(data), 97)]
        for _ in range(100 if path.suffix == ".jsonl" else 30):
            at = rng.randrange(len(data))
            bit = bytes([data[at] ^ (1 << rng.randrange(8))])
            mutants.append(("byte flip", path, data[:at] + bit + data[at + 1 :]))
    for path in (GSM, MT):
        lines = path.read_bytes().splitlines(keepends=True)
        for junk in (b"garbage", b"{}", b'{"index": 1}', b"\x00\xff", b"[1]", b"null"):
            at = rng.randrange(len(lines) + 1)
            mutants.append(
                ("garbage line", path, b"".join([*lines[:at], junk + b"\n", *lines[at:]]))
            )
    for i, (kind, path, data) in enumerate(mutants):
        root = tmp_path / str(i)
        shutil.copytree(ROOT, root)
        (root / path.relative_to(ROOT)).write_bytes(data)
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
        f"damaged EvalScope files: {len(mutants)} tried, {len(different)} silently different "
        f"({kinds})"
    )
    print(figure)
    record_property("faults", figure)
    assert not different, different
