"""Transcripts in the views (docs/transcripts.md "In the notebook"): the case view
shows a sample's transcript as chat turns with each tool call paired with its result and the
score records beside it; errors marked; long content collapsed and bounded; the case table
filters by tool errors and tool name; the comparison shows two transcripts side by side from
the first step where they differ; the static HTML carries the shown rows' transcripts;
hostile text is escaped everywhere."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED, case_view

pytest.importorskip("anywidget")

QUESTIONS = ["paris", "rome", "oslo", "lima"]
CASES = pd.DataFrame({"question": QUESTIONS}, index=QUESTIONS)  # the index: the case ids


def _call(cid: str, name: str, args: str = '{"city": "x"}') -> dict[str, Any]:
    return {"id": cid, "function": {"name": name, "arguments": args}}


def agent(question: str) -> eb.Transcript:
    """Two tools; `weather` fails for rome and lima; oslo uses `search` only."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": f"weather in {question}?"},
    ]
    if question == "oslo":
        messages += [
            {"role": "assistant", "tool_calls": [_call("s1", "search")]},
            {"role": "tool", "tool_call_id": "s1", "content": "cold"},
        ]
    else:
        failed = question in ("rome", "lima")
        messages += [
            {"role": "assistant", "tool_calls": [_call("w1", "weather"), _call("s1", "search")]},
            {
                "role": "tool",
                "tool_call_id": "w1",
                "content": "" if failed else "sunny",
                **({"error": "HTTP 503 from the weather server"} if failed else {}),
            },
            {"role": "tool", "tool_call_id": "s1", "content": "found it"},
        ]
    messages.append({"role": "assistant", "content": f"{question}: fine", "model": "m-1",
                     "input_tokens": 12, "output_tokens": 3, "latency_s": 0.25})  # fmt: skip
    return eb.Transcript(messages=messages)


@eb.scorer(eb.define_score("answered", primary=True))
def answered(output: str) -> float:
    return float(output.endswith("fine"))


def _run(store: Any = None, task: Any = agent, name: str = "agent") -> eb.Run:
    return eb.run(CASES, task=task, scorers=[answered], store=store, name=name, progress=False)


class _Tags(HTMLParser):
    """Every start tag with its attributes (the markup a browser builds)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _marked(html: str, marker: str) -> list[dict[str, str | None]]:
    parser = _Tags()
    parser.feed(html)
    return [a for _, a in parser.tags if a.get("data-evalbook") == marker]


def test_the_case_view_shows_the_turns_with_each_call_paired_and_the_scores_beside() -> None:
    run = _run()
    html = case_view(run, 1)  # rome: weather failed, search answered
    # five turns drawn (system, user, assistant with two calls, final assistant): the two tool
    # results are under their calls, not turns of their own
    steps = _marked(html, "step")
    assert [s["data-role"] for s in steps] == ["system", "user", "assistant", "assistant"]
    calls = _marked(html, "tool-call")
    assert [c["data-failed"] for c in calls] == ["true", "false"]
    assert html.count('data-evalbook="tool-result"') == 2
    assert "error: HTTP 503 from the weather server" in html
    assert "→ <b>weather</b>" in html and "← result, step 3" in html
    assert "12 → 3 tokens" in html and "m-1" in html
    # the score records sit beside the transcript: both inside one flex row
    row = html[html.index("display: flex; gap: 12px") :]
    assert row.index('data-evalbook="transcript"') < row.index('data-evalbook="record"')
    assert "6 steps · 2 tool calls · 1 tool error" in html


def test_a_sample_without_a_transcript_shows_none() -> None:
    run = _run(task=lambda question: f"{question}: fine")
    html = case_view(run, 0)
    assert 'data-evalbook="transcript"' not in html and "transcript" not in html.lower()


def test_hostile_text_in_every_field_of_a_transcript_is_escaped() -> None:
    def hostile(question: str) -> eb.Transcript:
        return eb.Transcript(
            messages=[
                {"role": "user", "content": EVIL, "name": EVIL},
                {"role": "assistant", "content": EVIL, "model": EVIL,
                 "tool_calls": [{"id": EVIL, "function": {"name": EVIL, "arguments": EVIL}}]},
                {"role": "tool", "tool_call_id": EVIL, "content": EVIL, "error": EVIL},
                {"role": "tool", "tool_call_id": EVIL, "content": "\x1b[31m\u202e" + EVIL},
            ]
        )  # fmt: skip

    run = _run(task=hostile)
    views = [case_view(run, 0), eb.show(run)._static_html, eb.show(run).table._static_html]
    for html in views:
        assert EVIL not in html
        assert "<script" not in html
    view = views[0]
    assert view.count(EVIL_ESCAPED) >= 8  # name, content ×3, model, call name/args/id, error
    assert "\\x1b[31m\\u202e" in view  # control characters shown escaped


def test_long_content_is_collapsed_and_a_transcript_is_bounded() -> None:
    long = "word " * 20_000  # 100,000 characters a message
    many = [{"role": "user", "content": "start"}]
    many += [{"role": "assistant", "content": f"{i} {long}"} for i in range(400)]

    run = _run(task=lambda question: eb.Transcript(messages=many, output="done"))
    html = case_view(run, 0)
    turns = html.count('data-evalbook="step"')
    assert turns == 200  # MAX_STEPS; the rest counted
    assert "… 201 more steps from here: run.steps() holds them all" in html
    assert html.count('data-evalbook="whole"') >= 1  # long content behind "show all"
    shown = html.count("word")
    assert shown <= 30_000 // 5 + 10  # the transcript's text budget (30,000 characters)
    assert len(html) < 400_000, len(html)  # 40 MB of messages: a view of a few hundred kB
    print(f"a 400-step transcript of 40 MB: a case view of {len(html):,} characters")


def test_the_case_table_filters_by_tool_errors_and_by_tool_name() -> None:
    table = eb.show(_run()).table
    assert {"n_steps", "n_tool_calls", "n_tool_errors"} <= set(table.labels)
    ids = lambda: [str(table.frame["case_id"].iloc[int(i)]) for i in table.positions]  # noqa: E731
    table.tool_errors.value = "some"
    assert ids() == ["rome", "lima"]
    table.tool_errors.value = "none"
    assert ids() == ["paris", "oslo"]
    table.tool_errors.value = "all"
    assert "weather" not in table.tool.options  # the names are read when asked for
    table.tool.value = "list tools…"
    assert list(table.tool.options) == ["all", "search", "weather"]
    table.tool.value = "weather"
    assert ids() == ["paris", "rome", "lima"]
    table.tool_errors.value = "some"
    assert ids() == ["rome", "lima"]


def test_a_run_without_transcripts_has_no_transcript_filters() -> None:
    table = eb.show(_run(task=lambda question: question)).table
    assert "n_steps" not in table.labels
    assert table.tool_errors not in table.filters
    assert "tool_errors" not in table.value


def test_the_comparison_shows_both_transcripts_side_by_side_from_the_first_difference() -> None:
    a = _run(name="a")

    def better(question: str) -> eb.Transcript:
        t = agent(question)
        if question == "rome":  # the same first three steps, then a retry of the weather call
            t.messages[3:] = [t.messages[3], *agent("paris").messages[3:]]
        return t

    b = _run(task=better, name="b")
    view = eb.show(eb.compare(a, b))
    view.change.value = "all"
    row = next(i for label, i in view.cases.options if label.startswith("rome"))
    view.cases.value = row
    html = str(view.detail.value)
    assert "transcripts side by side from step 4, where they differ" in html
    assert "4 shared steps (0–3), the same in both runs" in html
    sides = html[html.index('data-evalbook="transcript-side"') : html.index('"case-view"')]
    assert sides.count('data-evalbook="transcript-side"') == 2
    # each side starts at step 4, none before it: the failed weather result (step 3) is in
    # the shared steps; from 4, A has the search result, B the retried weather one
    assert sides.count(">#4<") == 2 and ">#3<" not in sides and ">#1<" not in sides
    assert "HTTP 503" not in sides and "sunny" in sides and "found it" in sides
    view.cases.value = next(i for label, i in view.cases.options if label.startswith("paris"))
    assert "transcripts: the same steps in both runs" in str(view.detail.value)


def test_the_static_html_carries_the_transcripts_of_the_shown_rows(tmp_path: Path) -> None:
    run = _run(store=tmp_path)
    loaded = eb.load_run(run.path)
    html = eb.show(loaded)._static_html
    found = _marked(html, "static-transcript")
    assert len(found) == 4
    assert "Transcripts of these rows" in html
    assert re.search(r"rome · 6 steps · 2 tool calls · 1 tool error", html)


def test_a_stored_runs_case_view_reads_one_line_not_the_file(tmp_path: Path) -> None:
    run = _run(store=tmp_path)
    loaded = eb.load_run(run.path)
    html = case_view(loaded, 2)
    assert "cold" in html  # oslo's search result
    results = loaded._results
    assert results.transcripts is None  # the others were not read
    assert not loaded.tool_calls().empty  # the tables read them all when asked
    assert results.transcripts is not None


def test_a_damaged_transcript_line_shows_no_transcript_with_a_warning(tmp_path: Path) -> None:
    run = _run(store=tmp_path)
    path = Path(run.path) / "transcripts.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # rome's line (samples finish, and are written, in any order)
    at = next(i for i, line in enumerate(lines) if b'"case_id":"rome"' in line)
    lines[at] = lines[at].replace(b"weather in rome", b"weather in rame")  # a byte flip
    path.write_bytes(b"".join(lines))
    loaded = eb.load_run(run.path)
    with pytest.warns(RuntimeWarning, match=rf"transcripts.jsonl, line {at + 1}: .*case 'rome'"):
        html = case_view(loaded, 1)
    assert 'data-evalbook="transcript"' not in html
    assert "HTTP 503" not in html  # never another sample's (or a damaged) transcript
