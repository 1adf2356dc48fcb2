"""The JSON of `--format json`: plain JSON (no NaN), long text shortened, lists counted."""

from __future__ import annotations

import json

import pandas as pd

import evalbook as eb
from evalbook._compare._verdict import verdict
from evalbook._render._json_view import MAX_LISTED, comparison_json, run_json


def test_comparison_json_shortens_outputs_and_counts_regressions() -> None:
    df = pd.DataFrame({"x": range(MAX_LISTED + 20)})
    a = eb.run(df, task=lambda x: "a" * 5000, scorers=[lambda output: 1.0], store=None,
               progress=False)  # fmt: skip
    b = eb.run(df, task=lambda x: "b" * 5000, scorers=[lambda output: 0.0], store=None,
               progress=False)  # fmt: skip
    comparison = eb.compare(a, b)
    data = comparison_json(comparison, verdict(b, a, max_drop=0.1))
    text = json.dumps(data, allow_nan=False)  # no NaN: missing values are null
    again = json.loads(text)
    listed = again["comparison"]["regressions"]
    assert again["comparison"]["n_regressions"] == MAX_LISTED + 20 and len(listed) == MAX_LISTED
    assert listed[0]["case_id"] == "0" and listed[0]["delta"] == -1.0
    assert again["verdict"]["passed"] is False
    assert json.loads(json.dumps(run_json(b)))["summary"][0]["mean"] == 0.0
    out = comparison_json(comparison, regressions=comparison.regressions())
    output = out["comparison"]["regressions"][0]["output_a"]
    assert output.startswith("a" * 1000) and len(output) < 1100
