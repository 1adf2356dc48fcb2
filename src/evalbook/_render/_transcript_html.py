"""A sample's transcript as chat turns, and two transcripts side by side from where they differ.

Each message is a turn (its step number, 0-based as in `run.steps()`, its role, and what the
step cost: model, tokens, latency, cost, cached). An assistant turn's tool calls each show
with their result: the tool message answering the call is drawn under it, not again as a
turn of its own; a result that failed (its `error`) and a model call that failed are marked
`error`; a call no message answers says "no result". Long content shows its start and a
`<details>` with more (`TextBudget`); a transcript shows at most `MAX_STEPS` turns and
`TRANSCRIPT_TEXT_LIMIT` characters of its text: `run.steps()` holds all of it. Every text is
escaped. The transcript is read by its documented fields (`eb.Transcript`: `messages`, each
with `role`, `content`, `tool_calls`, ...), so `_render` needs no import from `_model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._util._fmt import format_num
from ._budget import TextBudget
from ._style import BORDER, MUTED, STATUS_COLORS, badge, esc

__all__ = [
    "MAX_STEPS",
    "MESSAGE_TEXT_LIMIT",
    "TRANSCRIPT_TEXT_LIMIT",
    "first_difference",
    "sample_transcript",
    "transcript_budget",
    "transcript_html",
    "transcript_pair_html",
    "transcript_summary",
]

# Turns one transcript view shows (the rest are counted in one line; `run.steps()` has them):
# an agent that looped 5,000 times would otherwise make a view nobody scrolls through.
MAX_STEPS = 200
# Characters of a transcript's text one view shows, and of one message: a budget of its own
# beside the case view's (`CASE_TEXT_LIMIT`), so that a long transcript never hides the
# sample's scores, and its first turns are read first.
TRANSCRIPT_TEXT_LIMIT = 30_000
MESSAGE_TEXT_LIMIT = 4_000
# Characters of one tool call's arguments shown in its line (the steps table has them all).
ARGS_LIMIT = 300
_ROLE_COLORS = {
    "system": "#6b7280",
    "user": "#2563eb",
    "assistant": "#7c3aed",
    "tool": "#0d9488",
}
_MONO = "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"


def transcript_budget(whole: bool = False) -> TextBudget:
    """The text one transcript view may show (`TRANSCRIPT_TEXT_LIMIT`; all with `whole`)."""
    return _budget(whole)


def sample_transcript(run: Any, case_id: str, epoch: int = 1) -> Any:
    """Sample (`case_id`, `epoch`)'s transcript in `run` (None: it has none, or the run keeps
    none: `run.cases` has `n_steps` only when some sample has a transcript)."""
    if run is None or "n_steps" not in run.cases.columns:
        return None
    get = getattr(run, "transcript", None)
    if get is None:
        return None
    try:
        return get(case_id, epoch)
    except KeyError:  # not a case (or an epoch) of this run
        return None


def _budget(whole: bool, limit: int | None = None) -> TextBudget:
    if whole:
        return TextBudget(whole=True)
    total = TRANSCRIPT_TEXT_LIMIT if limit is None else limit
    return TextBudget(total=total, most=min(total, MESSAGE_TEXT_LIMIT))


def _messages(transcript: Any) -> list[Any]:
    messages = getattr(transcript, "messages", None)
    return list(messages) if messages is not None else []


def _calls(message: Any) -> list[Any]:
    return list(getattr(message, "tool_calls", None) or [])


def _call_parts(call: Any) -> tuple[str, str, str]:
    """A tool call's id, name and arguments (JSON text)."""
    function = getattr(call, "function", None)
    return (
        str(getattr(call, "id", "") or ""),
        str(getattr(function, "name", "") or ""),
        str(getattr(function, "arguments", "") or ""),
    )


def _meta(m: Any) -> str:
    """What a step cost, as one muted line: model, tokens, latency, cost, cached."""
    parts = []
    if getattr(m, "model", None):
        parts.append(esc(m.model, 120))
    tokens_in, tokens_out = getattr(m, "input_tokens", None), getattr(m, "output_tokens", None)
    if tokens_in is not None or tokens_out is not None:
        parts.append(
            f"{format_num(tokens_in) if tokens_in is not None else '?'} → "
            f"{format_num(tokens_out) if tokens_out is not None else '?'} tokens"
        )
    if getattr(m, "latency_s", None) is not None:
        parts.append(f"{format_num(m.latency_s)} s")
    if getattr(m, "cost", None) is not None:
        parts.append(f"${format_num(m.cost)}")
    if getattr(m, "cached", False):
        parts.append("cached")
    return " · ".join(parts)


def _error_html(text: str, budget: TextBudget) -> str:
    return (
        f'<div data-evalbook="step-error" style="font-size: 12px; color: '
        f'{STATUS_COLORS["error"]}; white-space: pre-wrap; overflow-wrap: anywhere">'
        f"error: {budget.esc(text, 1_000)}</div>"
    )


def _content_html(text: str, budget: TextBudget) -> str:
    return (
        f'<div style="white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12.5px">'
        f"{budget.esc(text)}</div>"
    )


def _result_html(step: int, result: Any, budget: TextBudget) -> str:
    """A tool call's result (its tool message), under the call."""
    error = getattr(result, "error", None)
    mark = badge("error", "error") if error else ""
    content = getattr(result, "content", None)
    body = _content_html(str(content), budget) if content else ""
    meta = _meta(result)
    return (
        f'<div data-evalbook="tool-result" style="margin-top: 3px; padding-left: 8px; '
        f'border-left: 2px solid {_ROLE_COLORS["tool"]}">'
        f'<div style="{MUTED}; font-size: 11.5px">← result, step {step}'
        f"{' · ' + meta if meta else ''}</div>{mark}{body}"
        f"{_error_html(str(error), budget) if error else ''}</div>"
    )


def _call_html(call: Any, answer: tuple[int, Any] | int | None, budget: TextBudget) -> str:
    """A tool call and, under it, its result (`answer`: its step and message), or where the
    result is (a step not drawn here), or "no result"."""
    _, name, args = _call_parts(call)
    if answer is None:
        result = f'<div style="{MUTED}; font-size: 11.5px">no result</div>'
    elif isinstance(answer, int):
        result = f'<div style="{MUTED}; font-size: 11.5px">result at step {answer}</div>'
    else:
        result = _result_html(answer[0], answer[1], budget)
    failed = isinstance(answer, tuple) and bool(getattr(answer[1], "error", None))
    return (
        f'<div data-evalbook="tool-call" data-failed="{str(failed).lower()}" style="margin: '
        f'4px 0 2px 12px; border: {BORDER}; border-radius: 6px; padding: 3px 8px">'
        f'<div style="{_MONO}; font-size: 12px; overflow-wrap: anywhere">→ '
        f"<b>{esc(name, 200)}</b>({esc(args, ARGS_LIMIT)})</div>{result}</div>"
    )


def _answers(messages: Sequence[Any]) -> dict[str, int]:
    """Each tool call's id → the position of the first tool message answering it."""
    out: dict[str, int] = {}
    for i, m in enumerate(messages):
        cid = getattr(m, "tool_call_id", None)
        if getattr(m, "role", None) == "tool" and cid is not None and str(cid) not in out:
            out[str(cid)] = i
    return out


def _turn_html(i: int, m: Any, messages: Sequence[Any], stop: int, answers: dict[str, int],
               budget: TextBudget, drawn: set[int]) -> str:  # fmt: skip
    role = str(getattr(m, "role", ""))
    color = _ROLE_COLORS.get(role, "#6b7280")
    name = getattr(m, "name", None)
    who = esc(role) + (f" · {esc(name, 120)}" if name else "")
    meta = _meta(m)
    error = getattr(m, "error", None)
    content = getattr(m, "content", None)
    calls = []
    for call in _calls(m):
        at = answers.get(_call_parts(call)[0])
        if at is not None and i < at < stop:
            drawn.add(at)
            calls.append(_call_html(call, (at, messages[at]), budget))
        else:
            calls.append(_call_html(call, at if at is not None and at > i else None, budget))
    answered = ""
    if role == "tool":  # a result not drawn under its call (a second answer to one call)
        answered = (
            f'<span style="{MUTED}; font-size: 11.5px"> answers '
            f"{esc(getattr(m, 'tool_call_id', ''), 200)}</span>"
        )
    return (
        f'<div data-evalbook="step" data-role="{esc(role)}" style="border-left: 3px solid '
        f'{color}; padding: 2px 8px; margin: 5px 0">'
        f'<div style="font-size: 11.5px"><span style="{MUTED}">#{i}</span> '
        f'<b style="color: {color}">{who}</b>{answered}'
        f'<span style="{MUTED}">{" · " + meta if meta else ""}</span> '
        f"{badge('error', 'error') if error else ''}</div>"
        f"{_content_html(str(content), budget) if content else ''}"
        f"{_error_html(str(error), budget) if error else ''}{''.join(calls)}</div>"
    )


def _turns(
    messages: Sequence[Any],
    start: int,
    budget: TextBudget,
    stop: int | None = None,
    most: int = MAX_STEPS,
) -> str:
    """The turns of steps `start` to `stop` (a result drawn under its call is no turn of its
    own; the result of a call before `start` is one)."""
    stop = len(messages) if stop is None else stop
    answers = _answers(messages)
    drawn: set[int] = set()
    out = []
    shown = 0
    for i in range(start, stop):
        if i in drawn:
            continue
        if shown == most:
            out.append(
                f'<div style="{MUTED}; font-size: 12px">… {stop - i:,} more steps from here: '
                "run.steps() holds them all</div>"
            )
            break
        out.append(_turn_html(i, messages[i], messages, stop, answers, budget, drawn))
        shown += 1
    return "".join(out)


def transcript_summary(transcript: Any) -> str:
    """One line: steps, tool calls, failed tool results (as the run.cases columns count them).

    Example:
        >>> import evalbook as eb
        >>> t = eb.Transcript(messages=[{"role": "user", "content": "hi"}])
        >>> transcript_summary(t)
        '1 step · 0 tool calls'
    """
    messages = _messages(transcript)
    calls = sum(len(_calls(m)) for m in messages)
    errors = sum(
        1 for m in messages if getattr(m, "role", None) == "tool" and getattr(m, "error", None)
    )
    text = f"{len(messages):,} step{'s' if len(messages) != 1 else ''} · {calls:,} tool call"
    text += "" if calls == 1 else "s"
    if errors:
        text += f" · {errors:,} tool error{'s' if errors != 1 else ''}"
    return text


def transcript_html(
    transcript: Any, *, whole: bool = False, budget: TextBudget | None = None
) -> str:
    """A transcript as chat turns (module docstring), escaped and bounded.

    Example:
        >>> import evalbook as eb
        >>> t = eb.Transcript(messages=[
        ...     {"role": "user", "content": "<b>weather?</b>"},
        ...     {"role": "assistant", "tool_calls": [
        ...         {"id": "c1", "function": {"name": "weather", "arguments": "{}"}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "", "error": "timeout"}])
        >>> html = transcript_html(t)
        >>> "&lt;b&gt;" in html, html.count('data-evalbook="step"'), "error: timeout" in html
        (True, 2, True)

    `budget`: text shared with other transcripts of one view (a case's epochs); by default
    the transcript has one of its own (`TRANSCRIPT_TEXT_LIMIT`, all with `whole`).
    """
    messages = _messages(transcript)
    budget = _budget(whole) if budget is None else budget
    head = (
        f'<div style="{MUTED}; font-size: 12px">transcript: '
        f"{esc(transcript_summary(transcript))}</div>"
    )
    return f'<div data-evalbook="transcript">{head}{_turns(messages, 0, budget)}</div>'


def _same(a: Any, b: Any) -> bool:
    """Whether two messages are the same step: role, content, error, tool calls (by name and
    arguments: call ids differ from run to run)."""
    fields = ("role", "content", "error", "name")
    if any(getattr(a, f, None) != getattr(b, f, None) for f in fields):
        return False
    calls_a = [_call_parts(c)[1:] for c in _calls(a)]
    calls_b = [_call_parts(c)[1:] for c in _calls(b)]
    return calls_a == calls_b


def first_difference(a: Any, b: Any) -> int | None:
    """The first step at which transcripts `a` and `b` differ (None: the same steps).

    Example:
        >>> import evalbook as eb
        >>> u = {"role": "user", "content": "q"}
        >>> x = eb.Transcript(messages=[u, {"role": "assistant", "content": "4"}])
        >>> y = eb.Transcript(messages=[u, {"role": "assistant", "content": "5"}])
        >>> first_difference(x, y), first_difference(x, x)
        (1, None)
    """
    ma, mb = _messages(a), _messages(b)
    for i, (x, y) in enumerate(zip(ma, mb, strict=False)):
        if not _same(x, y):
            return i
    return None if len(ma) == len(mb) else min(len(ma), len(mb))


def _side(name: str, transcript: Any, start: int, whole: bool, limit: int | None, most: int) -> str:
    if transcript is None:
        inner = f'<div style="{MUTED}; font-size: 12px">no transcript</div>'
    else:
        messages = _messages(transcript)
        inner = (
            f'<div style="{MUTED}; font-size: 12px">{esc(transcript_summary(transcript))}</div>'
            + (
                _turns(messages, start, _budget(whole, limit), most=most)
                if start < len(messages)
                else f'<div style="{MUTED}; font-size: 12px">no steps from here</div>'
            )
        )
    return (
        f'<div data-evalbook="transcript-side" style="flex: 1 1 380px; min-width: 0">'
        f'<div style="font-weight: 600">{esc(name)}</div>{inner}</div>'
    )


def transcript_pair_html(
    name_a: str,
    a: Any,
    name_b: str,
    b: Any,
    *,
    whole: bool = False,
    limit: int | None = None,
    most: int = MAX_STEPS,
) -> str:
    """Two samples' transcripts side by side from the first step where they differ; the
    steps they share before it are one line with a `<details>` showing them (once).

    `limit` bounds each part's text (default `TRANSCRIPT_TEXT_LIMIT`) and `most` its turns
    (a report of fifty regressions keeps each pair small)."""
    if a is None and b is None:
        return ""
    start = 0 if a is None or b is None else first_difference(a, b)
    if start is None:
        note = "the same steps in both runs"
        shared = _turns(_messages(a), 0, _budget(whole, limit), most=most)
        return (
            f'<div data-evalbook="transcript-pair"><div style="{MUTED}; font-size: 12px">'
            f"transcripts: {note}</div>{shared}</div>"
        )
    same = ""
    if start:
        same = (
            f'<details data-evalbook="shared-steps"><summary style="cursor: pointer; {MUTED}; '
            f'font-size: 12px">{start:,} shared step{"s" if start != 1 else ""} '
            f"(0–{start - 1}), the same in both runs</summary>"
            f"{_turns(_messages(a), 0, _budget(whole, limit), start, most=most)}</details>"
        )
    where = f"from step {start}, where they differ" if start else "from the first step"
    return (
        f'<div data-evalbook="transcript-pair"><div style="{MUTED}; font-size: 12px">'
        f"transcripts side by side {where}</div>{same}"
        f'<div style="display: flex; gap: 10px; flex-wrap: wrap">'
        f"{_side(name_a, a, start, whole, limit, most)}"
        f"{_side(name_b, b, start, whole, limit, most)}</div></div>"
    )
