"""Importing promptfoo's `results.json` (docs/interop.md "promptfoo", format "promptfoo").

The committed fixture was written by promptfoo itself (fixtures/promptfoo/README.md); when a
`promptfoo` binary is found the same config is run again offline and that output imported.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _interop_helpers import (
    FormatError,
    contract,
    detected,
    literal_bytes,
    quiet_import,
    same_record,
    with_warning,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _cli_helpers import assert_user_error, cli
from evalbook import import_results

FIXTURES = Path(__file__).parent / "fixtures" / "promptfoo"
RESULTS = FIXTURES / "results.json"
QUIET = ("--no-cache", "--no-progress-bar")
COLUMNS = ["case_id", "score", "status", "value", "reason"]


def _import(path: Path, **kw: Any) -> eb.Run:
    return quiet_import(path, "promptfoo", **kw)


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(RESULTS.read_text())
    return doc


def _write(tmp: Path, doc: dict[str, Any], name: str = "results.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def _check_fixture_run(run: Any) -> None:
    """What the fixture's 12 results must become (shared by the committed and the live run)."""
    cases = run.cases
    assert len(cases) == 12
    assert cases.case_id.tolist()[:4] == ["0/p1@echo", "0/p2@echo", "0/p1@flaky", "0/p2@flaky"]
    assert (cases.outcome == "errored").sum() == 2
    errored = cases[cases.outcome == "errored"]
    assert set(errored.case_id) == {"2/p1@flaky", "2/p2@flaky"}
    assert errored.error_message.str.contains("connection refused").all()
    assert set(run.data.provider) == {"echo", "flaky"}
    assert set(run.data.country) == {"France", "Japan", "Peru"}
    summary = run.summary().set_index("score")
    assert summary.index.tolist() == ["pass", "score", "mentions_city", "coverage", "length_tenths"]
    assert summary.loc["pass", "primary"]
    # 3 of the 10 results that ran passed every assertion (promptfoo: "3 passed")
    assert summary.loc["pass", "mean"] == pytest.approx(0.3)
    assert summary.loc["pass", "counted"] == 10 and summary.loc["pass", "errors"] == 2
    scores = run.scores
    tenths = scores[scores.score == "length_tenths"]
    # promptfoo's length/10 is 1.7 or 4 here: invalid, never clamped to 1
    assert set(tenths[tenths.status == "error"].reason) <= {"invalid_score", "case_errored"}
    assert (tenths[tenths.case_id.str.startswith("1/")].reason == "invalid_score").all()
    assert set(tenths[tenths.case_id.str.startswith("0/")].reason) == {"not_asserted"}
    # the overall score of 2 (mean of 1, 1 and 4) is invalid too, 0.5 is kept
    overall = scores[(scores.score == "score") & (scores.case_id == "1/p1@echo")]
    assert overall.reason.tolist() == ["invalid_score"]
    assert scores[(scores.score == "score") & (scores.case_id == "0/p2@echo")].value.tolist() == [
        0.5
    ]
    flaky = cases[(cases.case_id == "0/p1@flaky")].iloc[0]
    assert (flaky.input_tokens, flaky.output_tokens, flaky.cost) == (8, 4, 0.0005)


def test_the_committed_fixture_imports_as_promptfoo_reported_it() -> None:
    run = _import(RESULTS)
    _check_fixture_run(run)
    assert run.name == "evalbook-import-fixture"
    imported = run.options["imported"]
    assert imported["promptfoo_version"] == "0.123.1" and imported["skipped"] == 0
    failed = run.scores[(run.scores.score == "pass") & (run.scores.case_id == "0/p2@echo")]
    assert failed.value.tolist() == [0.0]
    assert failed.rationale.tolist() == ['Expected output to contain "Paris"']


def _promptfoo() -> str | None:
    return os.environ.get("EVALBOOK_PROMPTFOO") or shutil.which("promptfoo")


def test_a_live_promptfoo_run_imports_the_same(tmp_path: Path) -> None:
    binary = _promptfoo()
    if binary is None:
        pytest.skip("no promptfoo binary: set EVALBOOK_PROMPTFOO or put promptfoo on PATH")
    for name in ("promptfooconfig.yaml", "flaky_provider.js"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / ".promptfoo"),
    }
    done = subprocess.run(
        [binary, "eval", "-c", "promptfooconfig.yaml", "-o", "results.json", *QUIET],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # promptfoo exits 100 when some test failed, which this config makes happen
    assert done.returncode in (0, 100), done.stderr[-2000:]
    run = _import(tmp_path / "results.json")
    _check_fixture_run(run)
    committed = _import(RESULTS)
    cols = ["case_id", "score", "status", "value", "reason"]
    pd.testing.assert_frame_equal(run.scores[cols], committed.scores[cols])


def test_two_providers_compare_when_imported_from_one_file_each(tmp_path: Path) -> None:
    # what `promptfoo eval --filter-providers echo` (then flaky) writes: one provider a file
    runs = []
    for provider in ("echo", "flaky"):
        doc = _doc()
        rows = doc["results"]["results"]
        doc["results"]["results"] = [r for r in rows if r["provider"]["label"] == provider]
        # promptfoo lists only the filtered provider's prompts too (checked by hand with 0.121.20)
        listed = doc["results"]["prompts"]
        doc["results"]["prompts"] = [p for p in listed if p["provider"] == provider]
        runs.append(_import(_write(tmp_path, doc, f"{provider}.json"), name=provider))
    assert runs[0].cases.case_id.tolist() == runs[1].cases.case_id.tolist()
    assert runs[0].cases.case_id.tolist()[:2] == ["0/p1", "0/p2"]
    comparison = eb.compare(runs[0], runs[1], score="mentions_city")
    row = comparison.summary.iloc[0]
    # Peru errored under flaky: 4 paired cases of 6
    assert row.n_paired == 4 and row.mean_a == pytest.approx(0.5)


def test_one_malformed_result_is_skipped_and_counted(tmp_path: Path) -> None:
    doc = _doc()
    del doc["results"]["results"][3]["success"]
    doc["results"]["results"][5] = "garbage"
    path = _write(tmp_path, doc)
    with pytest.warns(RuntimeWarning, match="skipped 2 part") as caught:
        run = import_results(path, format="promptfoo")
    text = str(caught[0].message)
    assert "results[3]: no `success`" in text and "results[5]: not an object" in text
    assert len(run.cases) == 10 and run.options["imported"]["skipped"] == 2


def test_a_damaged_copy_of_a_score_is_caught_not_read(tmp_path: Path) -> None:
    doc = _doc()
    doc["results"]["results"][0]["namedScores"]["coverage"] = 0.25
    run, skipped = with_warning(_write(tmp_path, doc), "promptfoo")
    assert run.cases.outcome.notna().sum() == 11 and "skipped 1 part(s)" in skipped
    assert "results[0]: `namedScores` is" in skipped and "the file is damaged" in skipped


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ("2", "format version 2; evalbook reads version 3"),
        ("null", "no format version; evalbook reads version 3"),
        ('"3"', "format version '3'; evalbook reads version 3"),
        ("4", "format version 4, newer than evalbook reads (version 3): upgrade evalbook"),
    ],
)
def test_a_results_version_other_than_3_is_refused_by_the_one_version_rule(
    tmp_path: Path, version: str, says: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(f'{{"evalId": "x", "results": {{"version": {version}, "results": []}}}}')
    with pytest.raises(FormatError, match="promptfoo results file of ") as info:
        import_results(path, format="promptfoo")
    assert says in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"evalId": "x", "results": [1, 2]}', "no `results` object"),
        ("[1, 2, 3]", "no `results` object"),
        ('{"evalId": "x",\n "results": {', "invalid JSON at line 2"),
        ("\xff\xfe not text", "not UTF-8"),
    ],
)
def test_a_file_that_is_not_promptfoo_gets_one_clear_error(
    tmp_path: Path, content: str, why: str
) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(content.encode("latin-1"))
    with pytest.raises(FormatError, match="not a promptfoo results file") as info:
        import_results(path, format="promptfoo")
    assert why in str(info.value) and "promptfoo eval -o results.json" in str(info.value)
    assert str(path) in str(info.value)


def test_detected_from_its_file_and_not_from_near_misses(tmp_path: Path) -> None:
    assert detected(RESULTS) == "promptfoo"
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "other.json").write_text('{"results": {"acc": 0.5}}')
    (tmp_path / "results.txt").write_text(RESULTS.read_text())
    for path in ("dir.json", "other.json", "results.txt"):
        with pytest.raises(FormatError, match="not a results file evalbook can import"):
            import_results(tmp_path / path)


def _flip(data: bytes, at: int, rng: random.Random) -> bytes:
    return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]


def _outcome(path: Path, base: pd.DataFrame) -> tuple[str, pd.DataFrame | None]:
    try:
        run = _import(path)
    except FormatError:
        return "refused", None
    scores = run.scores
    if run.options["imported"]["skipped"]:
        return "skipped", scores
    same = scores[base.columns].equals(base)
    return ("same" if same else "different"), scores


def _rows(scores: pd.DataFrame) -> set[tuple[Any, ...]]:
    return set(scores[COLUMNS].astype(str).itertuples(index=False))


def _values(scores: pd.DataFrame) -> list[tuple[Any, ...]]:
    rows = scores[["score", "status", "value", "reason"]].astype(str).itertuples(index=False)
    return sorted(tuple(r) for r in rows)


def test_truncated_and_flipped_files_never_read_as_a_different_result(
    tmp_path: Path, record_property: Any
) -> None:
    data = RESULTS.read_bytes()
    base = _import(RESULTS).scores[["case_id", "score", "status", "value", "reason"]]
    rng = random.Random(21)
    path = tmp_path / "results.json"
    cuts = sorted(rng.sample(range(len(data)), 60))
    truncated: dict[str, int] = {}
    for cut in cuts:
        path.write_bytes(data[:cut])
        kind, scores = _outcome(path, base)
        truncated[kind] = truncated.get(kind, 0) + 1
        if kind == "skipped":  # the results before the cut, each exactly as in the whole file
            assert scores is not None and _rows(scores) <= _rows(base), cut
    literal = literal_bytes(data)
    flipped: dict[str, int] = {}
    for at in rng.sample(range(len(data)), 200):
        path.write_bytes(_flip(data, at, rng))
        kind, scores = _outcome(path, base)
        flipped[kind] = flipped.get(kind, 0) + 1
        if kind == "skipped":
            assert scores is not None and _rows(scores) <= _rows(base), at
        if kind == "different":
            # only a flip inside a value's own bytes (a text, a latency, a test index) can be
            # a different valid file; a score's value has a second copy, so it is never one
            assert at in literal, (at, data[max(0, at - 40) : at + 40])
            assert scores is not None and _values(scores) == _values(base), at
    figure = (
        f"truncations: {len(cuts)} tried, {truncated.get('different', 0)} read as a different "
        f"result ({truncated}); byte flips: 200 tried, 0 read as different scores, "
        f"{flipped.get('different', 0)} changed a text or an index inside a value ({flipped})"
    )
    print(figure)
    record_property("promptfoo_faults", figure)
    assert truncated.get("different", 0) == 0 and truncated.get("same", 0) == 0
    assert truncated.get("skipped", 0) > 0  # a cut file keeps the results before the cut


finite = st.floats(allow_nan=True, allow_infinity=False)
named_values = finite | st.integers(-2, 3) | st.booleans() | st.none() | st.text(max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(named_values, min_size=1, max_size=4))
def test_named_scores_go_through_the_score_contract(values: list[object]) -> None:
    doc = _doc()
    template = next(r for r in doc["results"]["results"] if r["failureReason"] == 0)
    rows = []
    for i, value in enumerate(values):
        row = copy.deepcopy(template)
        row["testIdx"], row["promptIdx"] = i, 0
        row["namedScores"] = {"m": value}
        row["gradingResult"]["namedScores"] = {"m": value}
        rows.append(row)
    doc["results"]["results"] = rows
    doc["results"]["prompts"] = doc["results"]["prompts"][:1]
    with tempfile.TemporaryDirectory() as tmp:
        scores = _import(_write(Path(tmp), doc)).scores
    m = scores[scores.score == "m"].reset_index(drop=True)
    for i, (value, want) in enumerate(zip(values, contract(values), strict=True)):
        assert same_record(m.iloc[i], want), (value, want)


def test_detected_and_stored_from_the_command_line(tmp_path: Path) -> None:
    store = tmp_path / "runs"
    done = cli("import", str(RESULTS), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = eb.load_run(eb.runs(store).path[0])
    assert loaded.options["imported"]["format"] == "promptfoo"  # detected
    pd.testing.assert_frame_equal(loaded.scores[COLUMNS], _import(RESULTS).scores[COLUMNS])
    broken = tmp_path / "results.json"
    broken.write_text(RESULTS.read_text()[:5000])
    done = cli("import", str(broken), "--format", "promptfoo", cwd=tmp_path)
    assert_user_error(done, "invalid JSON")


def test_a_file_cut_short_keeps_the_results_before_the_cut(tmp_path: Path) -> None:
    text = RESULTS.read_text()
    cut = text.index('"testIdx"', text.index('"testIdx"') + 1)  # inside the second result
    path = tmp_path / "results.json"
    path.write_text(text[:cut])
    with pytest.warns(RuntimeWarning, match="skipped 1 part") as caught:
        run = import_results(path, format="promptfoo")
    assert "the 1 complete results before the damage were read" in str(caught[0].message)
    assert "invalid JSON" in str(caught[0].message)
    # the case id is the whole file's: the prompts listed before the results decide it
    read = run.cases.dropna(subset=["outcome"])
    assert read.case_id.tolist() == [_doc_case_id(_doc()["results"]["results"][0])]
    # its evalId: the config, which comes after the results, is lost, and the warning says so
    assert run.name == _doc()["evalId"].replace(":", "-")
    assert "the run is named by its evalId, as the file breaks off before its config" in str(
        caught[0].message
    )


@pytest.mark.parametrize("after", ['"description"', '\n  "metadata"', '\n  "runtimeOptions"'])
def test_a_file_cut_after_its_description_is_named_by_it(tmp_path: Path, after: str) -> None:
    text = RESULTS.read_text()
    start = text.index('\n  "config"')
    # cut inside the config just past its description, in the metadata after the config, or
    # after the metadata
    cut = text.index("\n", text.index(after, start)) + 1
    path = tmp_path / "results.json"
    path.write_text(text[:cut])
    with pytest.warns(RuntimeWarning, match="skipped 1 part") as caught:
        run = import_results(path, format="promptfoo")
    message = str(caught[0].message)
    assert f"the {len(_doc()['results']['results'])} complete results before" in message
    assert "named by its evalId" not in message
    assert _doc()["config"]["description"] == "evalbook import fixture"
    assert run.name == "evalbook-import-fixture"  # the description, made a valid run name
    _check_fixture_run(run)
    version = run.options["imported"]["promptfoo_version"]
    assert version == (_doc()["metadata"]["promptfooVersion"] if "runtime" in after else None)


def test_a_file_cut_inside_its_config_before_the_description_says_so(tmp_path: Path) -> None:
    text = RESULTS.read_text()
    cut = text.index('"description"', text.index('\n  "config"'))
    path = tmp_path / "results.json"
    path.write_text(text[:cut])
    with pytest.warns(RuntimeWarning, match="skipped 1 part") as caught:
        run = import_results(path, format="promptfoo")
    assert "breaks off in its config, before the config.description" in str(caught[0].message)
    assert run.name == _doc()["evalId"].replace(":", "-")


def _doc_case_id(result: dict[str, Any]) -> str:
    number = 1 if result["prompt"]["label"].startswith("Name") else 2
    return f"{result['testIdx']}/p{number}@{result['provider']['label']}"


def test_a_result_whose_prompt_is_not_listed_is_skipped(tmp_path: Path) -> None:
    doc = _doc()
    doc["results"]["results"][0]["provider"]["label"] = "other"
    run, skipped = with_warning(_write(tmp_path, doc), "promptfoo")
    assert run.cases.outcome.notna().sum() == 11 and "skipped 1 part(s)" in skipped
    assert "of provider 'other' is not in the file's prompts" in skipped
