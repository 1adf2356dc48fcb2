"""Importing lm-evaluation-harness results (docs/interop.md "lm-evaluation-harness").

The fixture (fixtures/lm-eval/out/) was written by lm-eval 0.4.13 itself, its `dummy` model on
the two tasks of fixtures/lm-eval/tasks/ (fixtures/lm-eval/README.md, regenerate.sh). Every
cell of the run is checked against the raw lines, the names and metadata against the results
file, and damaged files (truncations, byte flips, garbage lines) are imported to count what is
read differently. Values come from the files, so a regenerated fixture needs no new numbers.
"""

from __future__ import annotations

import json
import random
import shutil
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _interop_helpers import (
    FormatError,
    contract,
    json_lines,
    quiet_import,
    same_record,
    with_warning,
)

import evalbook as eb

HERE = Path(__file__).parent / "fixtures" / "lm-eval"
OUT = HERE / "out"
# lm-eval names the folder by the model; the dummy model has none, so a (seeded) random id
(MODEL,) = (p for p in OUT.iterdir() if p.is_dir())
(RESULTS,) = MODEL.glob("results_*.json")
DATE = RESULTS.stem.removeprefix("results_")
ARC = MODEL / f"samples_arc_mini_{DATE}.jsonl"
GSM = MODEL / f"samples_gsm_mini_{DATE}.jsonl"


def _quiet(path: Path) -> eb.Run:
    return quiet_import(path, "lm-eval")


def score_key(metric: str, filter_key: str) -> str:
    """lm-eval's results key of a (metric, filter) without `,none`: the score's label."""
    return metric if filter_key == "none" else f"{metric},{filter_key}"


def test_the_fixture_is_lm_evals_own_run_of_the_committed_tasks() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert results["lm_eval_version"] == "0.4.13" and results["config"]["model"] == "dummy"
    assert sorted(p.name for p in MODEL.iterdir()) == sorted([RESULTS.name, ARC.name, GSM.name])
    for task, samples in (("arc_mini", ARC), ("gsm_mini", GSM)):
        data = results["configs"][task]["dataset_kwargs"]["data_files"]["test"]
        docs = json_lines(HERE / "tasks" / data)
        assert {line["doc_id"]: line["doc"] for line in json_lines(samples)} == dict(
            enumerate(docs)
        )
    assert results["configs"]["gsm_mini"]["repeats"] == 2


def test_every_cell_is_the_raw_line_through_the_score_contract() -> None:
    run = _quiet(OUT)
    scores = run.scores.set_index(["case_id", "score"])
    labels = {d.label or d.name: d.name for d in run.definitions}
    cells: list[tuple[tuple[str, str], object]] = []
    for path, task in ((ARC, "arc_mini"), (GSM, "gsm_mini")):
        for line in json_lines(path):
            case = f"{task}/{line['doc_id']}"
            for metric in line["metrics"]:
                key = score_key(metric, line["filter"])
                if metric == "mcc":  # a corpus-level argument, not imported
                    assert key not in labels
                    continue
                cells.append(((case, labels[key]), line[metric]))
    for (key, value), want in zip(cells, contract([v for _, v in cells]), strict=True):
        assert same_record(scores.loc[key], want), (key, value, want)
    assert len(cells) == 4 * 2 + 3 * 2 * 3
    # the metrics of the other task: explicitly unscored, not errors
    other = scores.loc[("arc_mini/0", "exact_match_strict-match")]
    assert (other["status"], other["reason"]) == ("unscored", "not_a_metric_of_arc_mini")
    other = scores.loc[("gsm_mini/2", "acc")]
    assert (other["status"], other["reason"]) == ("unscored", "not_a_metric_of_gsm_mini")
    # out of range (a 1-10 rating) and text (a verdict) are invalid_score, never coerced
    rating = scores.loc[("gsm_mini/0", "rating_flexible-extract")]
    assert (rating["status"], rating["reason"]) == ("error", "invalid_score")
    assert repr(json_lines(GSM)[3]["rating"]) in rating["message"]
    verdict = scores.loc[("gsm_mini/0", "verdict_flexible-extract")]
    assert (verdict["status"], verdict["reason"]) == ("error", "invalid_score")
    assert "'correct'" in verdict["message"]


def test_cases_inputs_and_outputs() -> None:
    run = _quiet(OUT)
    cases = run.cases.set_index("case_id")
    assert list(cases.index) == [f"arc_mini/{i}" for i in range(4)] + [
        f"gsm_mini/{i}" for i in range(3)
    ]
    assert set(cases.epoch) == {1} and set(cases.outcome) == {"passed"}
    # repeats: 2 -> the two answers of the one request, before any filter (the dummy
    # model answers every generation "lol")
    assert json_lines(GSM)[1]["resps"] == [["lol", "lol"]]
    assert cases.loc["gsm_mini/1", "output"] == ["lol", "lol"]
    # multiple choice: one (loglikelihood, is_greedy) per choice, as lm-eval's strings
    first_arc = json_lines(ARC)[0]["resps"]
    assert len(first_arc) == 4 and first_arc[0][0][1] == "False"
    assert cases.loc["arc_mini/0", "output"] == first_arc
    data = run.data.set_index(pd.Index(list(cases.index)))
    third = json_lines(ARC)[2]
    assert data.loc["arc_mini/2", "task"] == "arc_mini"
    assert json.loads(data.loc["arc_mini/2", "doc"]) == third["doc"]
    assert "Café au lait" in data.loc["arc_mini/2", "prompt"]  # ensure_ascii=False, kept
    assert data.loc["arc_mini/2", "target"] == "2"
    assert data.loc["gsm_mini/0", "target"] == "A short laugh.\n#### lol"
    # each score's record keeps the response its filter extracted
    recs = run.scores.set_index(["case_id", "score"])
    meta = recs.loc[("gsm_mini/2", "exact_match_strict-match"), "metadata"]
    assert json.loads(meta) == {"filter": "strict-match", "filtered_resps": ["[invalid]"]}
    meta = recs.loc[("gsm_mini/2", "exact_match_flexible-extract"), "metadata"]
    assert json.loads(meta) == {"filter": "flexible-extract", "filtered_resps": ["lol"]}


def test_names_descriptions_and_what_the_results_file_adds() -> None:
    run = _quiet(OUT)
    names = [(d.name, d.label) for d in run.definitions]
    assert names == [
        ("acc", None),
        ("acc_norm", None),
        ("exact_match_strict-match", "exact_match,strict-match"),
        ("rating_strict-match", "rating,strict-match"),
        ("verdict_strict-match", "verdict,strict-match"),
        ("exact_match_flexible-extract", "exact_match,flexible-extract"),
        ("rating_flexible-extract", "rating,flexible-extract"),
        ("verdict_flexible-extract", "verdict,flexible-extract"),
    ]
    assert not any(d.primary for d in run.definitions)
    assert run.definitions[0].description == "lm-eval metric acc, filter none; higher is better"
    assert run.name == "arc_mini+gsm_mini"
    source = run.options["imported"]
    assert source["format"] == "lm-eval" and source["lm_eval_version"] == "0.4.13"
    results = json.loads(RESULTS.read_text(encoding="utf-8"))["results"]
    assert source["model_name"] == MODEL.name and source["date_id"] == DATE
    arc = source["tasks"]["arc_mini"]
    assert arc["results"]["acc,none"] == results["arc_mini"]["acc,none"] and arc["n-shot"] == 0
    assert list(arc["not_imported"]) == ["mcc"]
    assert arc["results"]["mcc,none"] == results["arc_mini"]["mcc,none"]
    summary = run.summary().set_index("score")
    for name, key, task in [
        ("acc", "acc,none", "arc_mini"),
        ("acc_norm", "acc_norm,none", "arc_mini"),
        ("exact_match_strict-match", "exact_match,strict-match", "gsm_mini"),
        ("exact_match_flexible-extract", "exact_match,flexible-extract", "gsm_mini"),
    ]:  # a mean over the samples is lm-eval's own mean
        assert summary.loc[name, "mean"] == pytest.approx(results[task][key])


def test_one_samples_file_a_results_file_and_a_folder_agree() -> None:
    folder = _quiet(OUT)
    assert _quiet(MODEL).scores.equals(folder.scores)
    assert _quiet(RESULTS).scores.equals(folder.scores)
    gsm = _quiet(GSM)
    assert gsm.definitions[0].label == "exact_match,strict-match"
    assert list(gsm.cases.case_id) == [f"gsm_mini/{i}" for i in range(3)]
    assert gsm.options["imported"]["tasks"]["gsm_mini"]["version"] == 1.0  # results beside it
    full = folder.scores.set_index(["case_id", "score"])
    for _, row in gsm.scores.iterrows():
        assert full.loc[(row.case_id, row.score), "status"] == row.status


def test_a_folder_of_several_runs_reads_the_latest_and_names_the_others(tmp_path: Path) -> None:
    shutil.copytree(MODEL, tmp_path / "m")
    older = "2026-11-30T09-00-00.000001"
    shutil.copy(ARC, tmp_path / "m" / f"samples_arc_mini_{older}.jsonl")
    run = _quiet(tmp_path / "m")
    assert run.options["imported"]["other_runs"] == [older]
    assert len(run.cases) == 7
    older_run = _quiet(tmp_path / "m" / f"samples_arc_mini_{older}.jsonl")
    assert len(older_run.cases) == 4 and older_run.options["imported"]["results_file"] is None


def test_several_models_and_not_lm_eval_are_format_errors(tmp_path: Path) -> None:
    for model in ("a", "b"):
        shutil.copytree(MODEL, tmp_path / "out" / model)
    with pytest.raises(FormatError, match=r"several models \(a, b\)"):
        eb.import_results(tmp_path / "out", format="lm-eval")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match="not an lm-eval output folder"):
        eb.import_results(tmp_path / "empty", format="lm-eval")
    other = tmp_path / "results.json"
    other.write_text('{"evalId": "x", "results": {}}', encoding="utf-8")
    with pytest.raises(FormatError, match="not an lm-eval results file: expected"):
        eb.import_results(other, format="lm-eval")
    lines = tmp_path / "other.jsonl"
    lines.write_text('{"id": 1}\n{"id": 2}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"no line is an lm-eval sample .*no doc_id"):
        eb.import_results(lines, format="lm-eval")
    no_samples = tmp_path / "nosamples"
    no_samples.mkdir()
    shutil.copy(RESULTS, no_samples / RESULTS.name)
    with pytest.raises(FormatError, match="--log_samples"):
        eb.import_results(no_samples / RESULTS.name, format="lm-eval")


def test_detected_from_its_files_and_not_from_near_misses(tmp_path: Path) -> None:
    for path in (OUT, MODEL, ARC, RESULTS):
        assert quiet_import(path).options["imported"]["format"] == "lm-eval", path
    (tmp_path / "x.jsonl").write_text('{"id": 1}\n', encoding="utf-8")
    (tmp_path / "results_2026-12-01T16-30-05.json").write_text("[]", encoding="utf-8")
    for path in [
        tmp_path / "x.jsonl",
        tmp_path / "results_2026-12-01T16-30-05.json",
        tmp_path,
        HERE / "tasks" / "gsm_mini.yaml",
        HERE / "tasks" / "arc_mini.jsonl",  # the task's data, not lm-eval's output
    ]:
        with pytest.raises(FormatError, match="not a results file evalbook can import"):
            eb.import_results(path)


def test_lines_that_disagree_repeat_or_fail_their_hash_are_skipped(tmp_path: Path) -> None:
    # two damaged copies, so that the warning quotes every part skipped (it quotes three)
    lines = ARC.read_text(encoding="utf-8").splitlines()
    changed = json.loads(lines[1])
    changed["target"] = "3"  # the target_hash is of "1"
    hashed = tmp_path / "hashed"
    shutil.copytree(MODEL, hashed)
    body = [lines[0], json.dumps(changed, ensure_ascii=False), *lines[2:], "not json"]
    (hashed / ARC.name).write_text("\n".join(body) + "\n", encoding="utf-8")
    run, skipped = with_warning(hashed, "lm-eval")
    assert "skipped 3 part(s)" in skipped and run.options["imported"]["skipped"] == 3
    assert f"{ARC.name}:2: target does not match its target_hash" in skipped
    assert f"{ARC.name}:5: not JSON" in skipped
    assert f"{ARC.name}: 1 of the 4 docs its results file counts have no readable line" in skipped
    arc = {f"arc_mini/{i}" for i in range(4)}
    assert sorted(set(run.cases.dropna(subset=["outcome"]).case_id) & arc) == [
        "arc_mini/0",
        "arc_mini/2",
        "arc_mini/3",
    ]
    repeated = tmp_path / "repeated"
    shutil.copytree(MODEL, repeated)
    (repeated / ARC.name).write_text("\n".join([*lines, lines[3]]) + "\n", encoding="utf-8")
    run, skipped = with_warning(repeated, "lm-eval")
    assert "skipped 3 part(s)" in skipped and run.options["imported"]["skipped"] == 3
    assert f"{ARC.name}:4: doc_id 3 appears 2 times for filter 'none'" in skipped
    assert f"{ARC.name}:5: doc_id 3 appears 2 times for filter 'none'" in skipped
    assert f"{ARC.name}: 1 of the 4 docs its results file counts have no readable line" in skipped
    assert sorted(set(run.cases.dropna(subset=["outcome"]).case_id) & arc) == [
        "arc_mini/0",
        "arc_mini/1",
        "arc_mini/2",
    ]


def test_a_value_that_disagrees_with_the_results_file_warns(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(MODEL, folder)
    arc = folder / ARC.name
    arc.write_text(
        arc.read_text(encoding="utf-8").replace('"acc": 0.0', '"acc": 1.0'), encoding="utf-8"
    )
    with pytest.warns(RuntimeWarning, match=r"the mean of acc,none over its 4 lines is 1\.0"):
        eb.import_results(folder, format="lm-eval")


# --- fault injection ----------------------------------------------------------------------


def _cells(run: Any) -> dict[tuple[str, str], tuple[Any, ...]]:
    cells: dict[tuple[str, str], tuple[Any, ...]] = {}
    for row in run.scores.itertuples():
        cells[row.case_id, row.score] = (row.status, repr(row.value), row.reason, row.message)
    data = run.data.to_dict("records")
    for i, row in enumerate(run.cases.itertuples()):
        cells[row.case_id, "<case>"] = (repr(row.output), row.outcome, repr(data[i]))
    return cells


def _classify(folder: Path, clean: dict[tuple[str, str], tuple[Any, ...]]) -> str:
    """same | counted (what was lost is skipped and counted) | refused (FormatError) | warned
    (a value differs, and the mean check warned) | response text differs | different."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            run = eb.import_results(folder, format="lm-eval")
        except FormatError:
            return "refused"
    skipped = run.options["imported"]["skipped"]
    mean_warned = any("the mean of" in str(w.message) for w in caught)
    got = _cells(run)
    # a cell lost with its line is a missing_score error: counted, not a different value
    differs = [k for k, cell in got.items() if cell != clean.get(k) and cell[2] != "missing_score"]
    if differs:
        if mean_warned:
            return "warned"
        # lm-eval hashes the doc, prompt and target, not the responses: a flip inside a
        # response's text reads as that text (counted apart; every score must stay the same)
        only_output = all(
            key[1] == "<case>" and key in clean and got[key][1:] == clean[key][1:]
            for key in differs
        )
        return "response text differs" if only_output else "different"
    if got.keys() == clean.keys() and not skipped and not mean_warned:
        return "same"
    return "counted" if skipped or len(got) < len(clean) else "different"


def _mutants(rng: random.Random) -> list[tuple[str, str, bytes]]:
    out: list[tuple[str, str, bytes]] = []
    for path in (ARC, GSM, RESULTS):
        data = path.read_bytes()
        for cut in range(1, len(data), 61):
            out.append(("truncation", path.name, data[:cut]))
        for _ in range(120 if path is not RESULTS else 40):
            at = rng.randrange(len(data))
            flipped = bytes([data[at] ^ (1 << rng.randrange(8))])
            out.append(("byte flip", path.name, data[:at] + flipped + data[at + 1 :]))
    garbage = [b"garbage", b"{}", b'{"doc_id": 1}', b"\x00\xff\xfe", b"[1, 2]", b"null"]
    for path in (ARC, GSM):
        lines = path.read_bytes().splitlines(keepends=True)
        for junk in garbage:
            at = rng.randrange(len(lines) + 1)
            out.append(
                ("garbage line", path.name, b"".join([*lines[:at], junk + b"\n", *lines[at:]]))
            )
        at = rng.randrange(len(lines))  # a line written twice
        out.append(("garbage line", path.name, b"".join([*lines, lines[at]])))
    return out


@pytest.mark.slow
def test_damaged_files_are_never_read_as_a_different_result(
    tmp_path: Path, record_property: Any
) -> None:
    clean = _cells(_quiet(MODEL))
    tally: dict[str, dict[str, int]] = {}
    different: list[str] = []
    for i, (kind, name, data) in enumerate(_mutants(random.Random(21))):
        folder = tmp_path / str(i)
        shutil.copytree(MODEL, folder)
        (folder / name).write_bytes(data)
        verdict = _classify(folder, clean)
        tally.setdefault(kind, {}).setdefault(verdict, 0)
        tally[kind][verdict] += 1
        if verdict == "different":
            different.append(f"{kind} in {name}")
        shutil.rmtree(folder)
    tried = sum(sum(v.values()) for v in tally.values())
    kinds = "; ".join(
        f"{kind}: " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(v.items()))
        for kind, v in tally.items()
    )
    figure = f"damaged lm-eval files: {tried} tried, {len(different)} silently different ({kinds})"
    print(figure)
    record_property("faults", figure)
    assert not different, different


def test_a_file_whose_doc_hashes_all_differ_is_read_with_them_unchecked(tmp_path: Path) -> None:
    # lm-eval hashes a multimodal doc before it replaces its images by their hashes
    folder = tmp_path / "m"
    shutil.copytree(MODEL, folder)
    arc = folder / ARC.name
    lines = [json.loads(line) for line in arc.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["doc"]["image"] = "sha256:0f1e2d"
    arc.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    run, skipped = with_warning(folder, "lm-eval")
    assert skipped == "" and run.options["imported"]["skipped"] == 0
    assert run.options["imported"]["doc_hash_unchecked"] == [ARC.name]
    assert len([c for c in run.cases.case_id if c.startswith("arc_mini/")]) == 4


def test_a_doc_id_outside_the_tasks_docs_is_skipped_not_a_doc_of_its_own(tmp_path: Path) -> None:
    # nothing hashes the doc_id: a damaged one (a byte flip made 2 a 6) must not be a new doc
    folder = tmp_path / "m"
    shutil.copytree(MODEL, folder)
    arc = folder / ARC.name
    lines = arc.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[2].startswith('{"doc_id": 2, ')
    lines[2] = lines[2].replace('{"doc_id": 2, ', '{"doc_id": 6, ', 1)
    arc.write_text("".join(lines), encoding="utf-8")
    run, skipped = with_warning(folder, "lm-eval")
    original = json.loads(RESULTS.read_text(encoding="utf-8"))["n-samples"]["arc_mini"]
    assert original["original"] == 4
    assert f"{ARC.name}:3: doc_id 6 is not one of the task's 4 docs" in skipped
    assert "arc_mini/6" not in set(run.cases.case_id)
    read = set(run.cases.dropna(subset=["outcome"]).case_id)
    assert {c for c in read if c.startswith("arc_mini/")} == {
        "arc_mini/0",
        "arc_mini/1",
        "arc_mini/3",
    }
