"""Hostile text in usage never escapes a view: markup and controls in an `invalid` message.

A usage refusal message quotes the refused value, and a stored run's message is whatever its
files say. Both kinds go through every view that shows usage: the HTML card
(`run._repr_html_()`), the case explorer's sample HTML, `repr(run)` and `evalbook show`.
No view may carry raw markup (`<script>`, `<img`) or a raw control / bidi character; the
views that show the message show it escaped (docs/cost.md, docs/notebooks.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evalbook as eb
from evalbook._cli._main import main
from evalbook._render._cases import case_html

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>\x1b[31m\u202egnp.exe\x00"
RAW = ("\x1b", "\u202e", "\x00")
MARKUP = ("<script", "<img")


class ReprMarkup:
    """A refused amount whose repr is the hostile text."""

    def __repr__(self) -> str:
        return HOSTILE


def _task(x: int, ctx: Any) -> str:
    ctx.record_usage(input_tokens=5, cost=0.5)
    ctx.record_usage(input_tokens=ReprMarkup() if x % 2 else HOSTILE)  # refused, quoted
    return "a"


@eb.scorer
def done(output: str) -> float:
    return 1.0


def _stored(tmp_path: Path) -> eb.Run:
    run = eb.run(
        pd.DataFrame({"x": range(4)}),
        task=_task,
        scorers=[done],
        store=tmp_path,
        name="hostile-usage",
        progress=False,
    )
    assert run.path is not None
    return run


def _views(run: eb.Run, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    out = {"card": run._repr_html_(), "repr": repr(run)}
    for pos in range(len(run.cases)):
        out[f"case {pos}"] = case_html(run, pos)
    capsys.readouterr()
    assert run.path is not None
    assert main(["show", str(run.path)]) == 0
    out["evalbook show"] = capsys.readouterr().out
    return out


def _nothing_raw(views: dict[str, str]) -> None:
    for name, text in views.items():
        for ch in RAW:
            assert ch not in text, (name, repr(ch))
        if name != "repr" and name != "evalbook show":  # HTML: no markup of the message
            for tag in MARKUP:
                assert tag not in text.lower(), (name, tag)


def test_a_refused_value_quoted_in_usage_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _stored(tmp_path)
    messages = run.usage()["invalid"].tolist()
    assert all(isinstance(m, str) and "<script>" in m for m in messages)  # quoted as text
    views = _views(run, capsys)
    _nothing_raw(views)
    assert "&lt;script&gt;" in views["card"]  # the card shows the message, escaped
    assert "\\x1b" in views["evalbook show"] and "\\u202e" in views["repr"]
    _nothing_raw(_views(eb.load_run(tmp_path / run.path.name), capsys))


def test_a_stored_message_with_raw_controls_and_markup_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _stored(tmp_path)
    assert run.path is not None
    path = run.path / "cases.parquet"
    table = pq.read_table(path)
    texts = table.column("usage").to_pylist()
    for i, text in enumerate(texts):
        usage = json.loads(text)
        usage["task"]["invalid"] = HOSTILE  # raw: what an untrusted run folder may hold
        texts[i] = json.dumps(usage)
    at = table.column_names.index("usage")
    pq.write_table(table.set_column(at, "usage", pa.array(texts, type=table.schema[at].type)), path)
    # without its log, a folder's edited final files load as they are, with a warning
    (run.path / "events.jsonl").unlink()
    with pytest.warns(RuntimeWarning, match="changed or replaced after the run ended"):
        loaded = eb.load_run(run.path)
    assert loaded.usage()["invalid"].tolist() == [HOSTILE] * 4  # the views get it raw
    views = _views(loaded, capsys)
    _nothing_raw(views)
    assert "&lt;script&gt;" in views["card"]
