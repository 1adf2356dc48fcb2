"""Each importer's means against the harness's own figures (docs/interop.md, "Means against
<harness>'s own figures").

Every fixture here was written by the harness itself (fixtures/*/README.md). For each score the
test recomputes the harness's figure from the per-sample values by the harness's own rule and
checks it is the figure the harness wrote, then checks that evalbook's mean is the same values
by evalbook's rule: equal where the rules agree, and different by exactly the documented reason
where they do not (an errored or timed-out sample not counted, a value outside [0, 1] or not a
number not counted, an absent value never read as 0). All figures come from the files.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from _interop_helpers import json_lines, quiet_import

import evalbook as eb

FIXTURES = Path(__file__).parent / "fixtures"
# two means of the same floats, summed in another order, agree to this
CLOSE = 1e-12


def _summary(run: eb.Run) -> dict[str, dict[str, Any]]:
    """The summary by score label (the harness's own name for it)."""
    rows = run.summary().to_dict("records")
    return {str(row["label"] or row["score"]): row for row in rows}


def _in_range(value: object) -> bool:
    """What evalbook's score contract counts: a finite real in [0, 1], never a boolean."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


# --- lm-eval ------------------------------------------------------------------------------

LM_EVAL = FIXTURES / "lm-eval" / "out"


def _lm_eval_files() -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    (model,) = (p for p in LM_EVAL.iterdir() if p.is_dir())
    (results_file,) = model.glob("results_*.json")
    date = results_file.stem.removeprefix("results_")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    lines = {
        task: json_lines(model / f"samples_{task}_{date}.jsonl") for task in results["results"]
    }
    return results, lines


def test_lm_eval_means_against_its_results_file() -> None:
    results, lines = _lm_eval_files()
    summary = _summary(quiet_import(LM_EVAL, "lm-eval"))
    seen: dict[str, list[str]] = {"equal": [], "corpus": [], "out of range": [], "text": []}
    for task, figures in results["results"].items():
        aggregation = {
            m["metric"]: m["aggregation"] for m in results["configs"][task]["metric_list"]
        }
        for key, figure in figures.items():
            if "," not in key or "_stderr," in key:
                continue
            metric, filter_key = key.split(",")
            values = [line[metric] for line in lines[task] if line["filter"] == filter_key]
            assert len(values) == results["n-samples"][task]["effective"]
            label = metric if filter_key == "none" else key
            if all(isinstance(v, list) for v in values):
                # a corpus-level metric (mcc of the (gold, pred) pairs): not a mean, not imported
                assert aggregation[metric] == "matthews_corrcoef"
                assert label not in summary
                seen["corpus"].append(key)
            elif all(isinstance(v, str) for v in values):
                # the task's own aggregation of a text verdict; each text is invalid_score
                assert figure == sum(v == "correct" for v in values) / len(values)
                assert math.isnan(summary[label]["mean"]) and summary[label]["counted"] == 0
                seen["text"].append(key)
            else:
                # lm-eval's `mean` is the plain mean over the docs (one value per doc: repeats
                # are reduced by the filter before the metric)
                assert aggregation[metric] == "mean"
                assert figure == pytest.approx(fmean(values), rel=CLOSE)
                kept = [v for v in values if _in_range(v)]
                if len(kept) == len(values):
                    assert summary[label]["mean"] == pytest.approx(figure, rel=CLOSE, abs=CLOSE)
                    seen["equal"].append(key)
                else:
                    # a 1-10 rating: each value over 1 is invalid_score, not counted; a rating
                    # of 1 is a valid 1.0 to the contract, so it alone is counted
                    assert kept == [1.0], (key, values)
                    assert summary[label]["mean"] == fmean(kept) != figure
                    assert summary[label]["errors"] == len(values) - len(kept)
                    seen["out of range"].append(key)
    assert seen == {
        "equal": [
            "acc,none",
            "acc_norm,none",
            "exact_match,strict-match",
            "exact_match,flexible-extract",
        ],
        "corpus": ["mcc,none"],
        "out of range": ["rating,strict-match", "rating,flexible-extract"],
        "text": ["verdict,strict-match", "verdict,flexible-extract"],
    }, seen


# --- promptfoo ----------------------------------------------------------------------------

PROMPTFOO = FIXTURES / "promptfoo" / "results.json"


def test_promptfoo_pass_rate_against_its_stats() -> None:
    doc = json.loads(PROMPTFOO.read_text(encoding="utf-8"))
    stats = doc["results"]["stats"]
    passed, failed, errors = stats["successes"], stats["failures"], stats["errors"]
    assert (passed, failed, errors) == (3, 7, 2)  # what promptfoo printed (fixture README)
    summary = _summary(quiet_import(PROMPTFOO, "promptfoo"))
    # promptfoo's "3 passed (25.00%)" counts its 2 errors as not passed; evalbook does not count
    # an errored result (it is in the completion rate instead)
    promptfoos_rate = passed / (passed + failed + errors)
    assert summary["pass"]["mean"] == passed / (passed + failed)
    assert summary["pass"]["mean"] != promptfoos_rate
    assert summary["pass"]["counted"] == passed + failed
    assert summary["pass"]["errors"] == errors


def test_promptfoo_per_prompt_metrics_against_its_prompts() -> None:
    doc = json.loads(PROMPTFOO.read_text(encoding="utf-8"))
    run = quiet_import(PROMPTFOO, "promptfoo")
    by_slice = {
        (row["prompt"], row["provider"], row["score"]): row
        for row in run.summary(by=["prompt", "provider"]).to_dict("records")
    }
    results = doc["results"]["results"]
    checked = {"equal": 0, "out of range": 0, "scores over 1": 0}
    for prompt in doc["results"]["prompts"]:
        label, provider, metrics = prompt["label"], prompt["provider"], prompt["metrics"]
        mine = [
            r
            for r in results
            if r["prompt"]["label"] == label and r["provider"]["label"] == provider
        ]
        graded = [r for r in mine if r["failureReason"] != 2]  # errored results are not graded
        assert metrics["testErrorCount"] == len(mine) - len(graded)
        # pass: promptfoo's testPassCount over the graded results is evalbook's mean
        n_graded = metrics["testPassCount"] + metrics["testFailCount"]
        assert n_graded == len(graded)
        row = by_slice[label, provider, "pass"]
        assert row["mean"] == metrics["testPassCount"] / n_graded
        # each named score: promptfoo writes its sum and count over the graded results
        for name, total in metrics["namedScores"].items():
            count = metrics["namedScoresCount"][name]
            values = [r["namedScores"][name] for r in graded if name in r["namedScores"]]
            assert (sum(values), len(values)) == pytest.approx((total, count), rel=CLOSE)
            row = by_slice[label, provider, name]
            if all(_in_range(v) for v in values):
                assert row["mean"] == pytest.approx(total / count, rel=CLOSE)
                checked["equal"] += 1
            else:  # length/10: 4 or 1.7, invalid_score, never clamped
                assert not any(_in_range(v) for v in values) and math.isnan(row["mean"])
                checked["out of range"] += 1
        # score: promptfoo's sum of each graded result's weighted mean, some of them over 1
        scores = [r["score"] for r in graded]
        assert sum(scores) == pytest.approx(metrics["score"], rel=CLOSE)
        kept = [s for s in scores if _in_range(s)]
        assert by_slice[label, provider, "score"]["mean"] == pytest.approx(fmean(kept), rel=CLOSE)
        checked["scores over 1"] += len(scores) - len(kept)
    # 4 prompts x (mentions_city, coverage) agree; 4 x length_tenths are out of range, and so
    # are the Japan test's overall scores under the first prompt, (1 + 1 + 4) / 3 and
    # (0 + 1 + 4) / 3, which evalbook does not count (promptfoo's per-prompt score does)
    assert checked == {"equal": 8, "out of range": 4, "scores over 1": 2}, checked


# --- Harbor -------------------------------------------------------------------------------

HARBOR = FIXTURES / "harbor" / "job"


def _trials() -> list[dict[str, Any]]:
    return [
        json.loads((p / "result.json").read_text(encoding="utf-8"))
        for p in sorted(HARBOR.iterdir())
        if p.is_dir()
    ]


def test_harbor_means_against_its_job_result() -> None:
    job = json.loads((HARBOR / "result.json").read_text(encoding="utf-8"))
    ((key, evals),) = job["stats"]["evals"].items()
    (figures,) = evals["metrics"]
    trials = _trials()
    # Harbor's Mean (harbor/metrics/mean.py over job.py's rewards): over the trials whose
    # reward_valid is true, a reward a trial lacks counted as 0
    valid = [t["verifier_result"]["rewards"] for t in trials if t["reward_valid"]]
    assert evals["n_trials"] == len(valid) == 6
    for name, figure in figures.items():
        assert figure == pytest.approx(fmean(r.get(name, 0) for r in valid), rel=CLOSE)
    # evalbook: only trials that ended without an exception; a reward only where the trial has
    # it; a value only in [0, 1]; each task's trials averaged first (its epochs)
    summary = _summary(quiet_import(HARBOR, "harbor"))
    for name, figure in figures.items():
        per_task: dict[str, list[float]] = {}
        for t in trials:
            rewards = (t["verifier_result"] or {}).get("rewards") or {}
            if t["exception_info"] is None and name in rewards and _in_range(rewards[name]):
                per_task.setdefault(t["task_name"], []).append(rewards[name])
        want = fmean(fmean(v) for v in per_task.values()) if per_task else math.nan
        got = summary[name]["mean"]
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=CLOSE)
        assert summary[name]["counted"] == sum(len(v) for v in per_task.values()), name
        assert got != pytest.approx(figure, rel=CLOSE), name  # every rule differs here
    shown = {name: (round(figures[name], 4), summary[name]["mean"]) for name in figures}
    assert {k: v for k, v in shown.items() if k != "speed_bonus"} == {
        # slow-fix's timed-out trials (reward 1, verified anyway) are not counted, nor
        # fix-bug's trials (no `reward`, Harbor's 0): hello-world's two 1.0 remain
        "reward": (0.6667, 1.0),
        # only fix-bug's trials have it: the four other valid trials' 0 is not read
        "tests_pass": (0.3333, 1.0),
        "lint": (0.1667, 0.5),
    }
    # 1.25 is invalid_score in evalbook; Harbor averages it in
    assert figures["speed_bonus"] == pytest.approx(2 * 1.25 / 6)
    assert math.isnan(summary["speed_bonus"]["mean"])
    assert key.startswith("oracle__")


# --- Inspect AI ---------------------------------------------------------------------------

INSPECT = FIXTURES / "inspect" / "tiny.eval"


def test_inspect_means_against_its_header_results() -> None:
    log_module = pytest.importorskip("inspect_ai.log")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = log_module.read_eval_log(str(INSPECT))
    assert log.results is not None and log.reductions is not None
    raw = {(s.id, s.epoch): s for s in log.samples or []}
    limited = {s.id for s in raw.values() if s.limit is not None}
    assert limited == {"long", "slow"}  # a message limit and a time limit
    figures = {
        name: metric.value
        for score in log.results.scores
        for name, metric in [(score.name, next(iter(score.metrics.values())))]
    }
    run = quiet_import(INSPECT, "inspect")
    outcome = {row.case_id: row.outcome for row in run.cases.itertuples()}
    assert {outcome["long"], outcome["slow"]} == {"errored", "timed_out"}
    summary = _summary(run)
    checked: dict[str, tuple[float, float]] = {}
    for reduction in log.reductions:
        for sub in _reduced_names(reduction):
            name = sub if sub != reduction.scorer else reduction.scorer
            # Inspect's figure: the mean of its per-sample epoch reductions (NaN unscored),
            # over every sample it scored, the two that hit a limit included
            values = {x.sample_id: _part(x.value, sub) for x in reduction.samples}
            known = {k: v for k, v in values.items() if not math.isnan(v)}
            assert figures[name] == pytest.approx(fmean(known.values()), rel=CLOSE), name
            # evalbook's: the samples that finished (not those that hit a limit), each
            # epoch's value only when the contract takes it (not 1.5, not True)
            kept = [
                v
                for k, v in known.items()
                if k not in limited
                and all(_taken(raw[k, e], reduction.scorer, sub) for e in (1, 2))
            ]
            want = fmean(kept) if kept else math.nan
            got = summary[name]["mean"]
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=CLOSE)
            checked[name] = (round(figures[name], 4), got)
    assert checked == {
        "match": (0.25, 0.5),  # long's and slow's 0 not counted
        "too_big": (0.5625, 0.25),  # a's 1.5 invalid, long's and slow's 0.25 not counted
        "boolean": (1.0, checked["boolean"][1]),  # True is invalid_score: no value left
        "fluency": (0.5, 0.5),  # equal: every sample 0.5
        "grade": (0.875, 0.75),  # long's and slow's "C" not counted
    }
    assert math.isnan(checked["boolean"][1])


def _reduced_names(reduction: Any) -> list[str]:
    first = reduction.samples[0].value
    return list(first) if isinstance(first, dict) else [reduction.scorer]


def _part(value: Any, name: str) -> float:
    return float(value[name] if isinstance(value, dict) else value)


def _taken(sample: Any, scorer: str, name: str) -> bool:
    """Whether evalbook's contract counts this epoch's raw value (Inspect's letters mapped)."""
    value = sample.scores[scorer].value
    if isinstance(value, dict):
        value = value[name]
    if value in ("C", "I", "P"):
        return True
    return _in_range(value)
