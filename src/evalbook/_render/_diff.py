"""Two outputs side by side with the differing words highlighted (stdlib `difflib`).

The comparison's case view (`eb.show(comparison)`, Cases tab) shows a case's output in run A
and in run B: words only in A are marked on the left, words only in B on the right. Every
piece of text is escaped and its invisible characters shown as escapes, as in every view
(docs/notebooks.md). A long output is diffed on its first `DIFF_LIMIT` characters (the
diff says so); the run's tables keep the whole text.
"""

from __future__ import annotations

import difflib
import html
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._util._fmt import format_num, format_pp
from .._util._text import visible
from ._cases import text_of
from ._protocols import ComparisonLike
from ._style import BORDER, MUTED, badge, esc

__all__ = ["DIFF_LIMIT", "case_output", "output_diff_html", "score_changes_html", "word_diff"]

# Characters of each output that are diffed and shown: the matcher's cost grows with the
# product of the two token counts, and a side-by-side view of two 100 kB texts is not read.
DIFF_LIMIT = 10_000
# Pairs of equal tokens (one in each text) above which the word matcher is not run on the
# whole text: its time grows with them (module docstring of `_opcodes`)
PAIR_LIMIT = 200_000
# a word or one other character, with the spacing after it (spacing at the start alone): a
# diff marks whole words, and no token (a lone space) repeats on every other position, which
# would make the matcher slow on long texts
_TOKEN = re.compile(r"\s+|(?:\w+|[^\w\s])\s*")
_MARK = {
    "del": "background: rgba(220, 38, 38, 0.25); border-radius: 2px",
    "ins": "background: rgba(22, 163, 74, 0.25); border-radius: 2px",
}


def _esc(text: str) -> str:
    return html.escape(visible(text, keep="\n\t"), quote=True)


def _marked(tokens: list[str], kind: str) -> str:
    text = "".join(tokens)
    if not text:
        return ""
    if kind == "same" or not text.strip():
        return _esc(text)  # spacing that differs is not worth a mark
    core = text.rstrip()  # the spacing after the last word stays unmarked
    mark = f'<span data-diff="{kind}" style="{_MARK[kind]}">{_esc(core)}</span>'
    return mark + _esc(text[len(core) :])


Opcode = tuple[str, int, int, int, int]


def _opcodes(ta: Sequence[str], tb: Sequence[str], limit: int = PAIR_LIMIT) -> list[Opcode] | None:
    """`difflib` opcodes of two token lists, None when matching them would be too slow.

    The common start and end are matched as they are; the matcher sees only the middle, and
    only when its pairs of equal tokens are at most `limit` (`PAIR_LIMIT`; a text that
    repeats one line 700 times, each a word apart, once took 21 s).
    """
    n = min(len(ta), len(tb))
    head = 0
    while head < n and ta[head] == tb[head]:
        head += 1
    tail = 0
    while tail < n - head and ta[-1 - tail] == tb[-1 - tail]:
        tail += 1
    mid_a, mid_b = ta[head : len(ta) - tail], tb[head : len(tb) - tail]
    counts = Counter(mid_b)
    if sum(counts[t] for t in mid_a) > limit:
        return None
    # autojunk off: in a long output common words ("the") would be ignored as junk
    middle = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False)
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    ops += [(op, i1 + head, i2 + head, j1 + head, j2 + head) for op, i1, i2, j1, j2 in
            middle.get_opcodes()]  # fmt: skip
    if tail:
        ops.append(("equal", len(ta) - tail, len(ta), len(tb) - tail, len(tb)))
    return ops


def _tokens_diff(
    ta: list[str], tb: list[str], cut: bool, limit: int = PAIR_LIMIT
) -> tuple[list[str], list[str]]:
    """Marked HTML pieces of two token lists (all of the middle marked when it is too slow)."""
    ops = _opcodes(ta, tb, limit)
    if ops is None:
        return [_marked(ta, "del")], [_marked(tb, "ins")]
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in ops:
        if op == "equal" or (cut and i2 == len(ta) and j2 == len(tb)):
            left.append(_marked(ta[i1:i2], "same"))
            right.append(_marked(tb[j1:j2], "same"))
        else:
            left.append(_marked(ta[i1:i2], "del"))
            right.append(_marked(tb[j1:j2], "ins"))
    return left, right


def word_diff(a: str, b: str, *, pair_limit: int = PAIR_LIMIT) -> tuple[str, str]:
    """Escaped HTML of `a` and of `b`, the words not in the other marked (`data-diff`).

    Each side is cut to `DIFF_LIMIT` characters first; a difference at the very end of
    both cut sides is left unmarked, as the cut (not the outputs) may have made it. When
    the words are too many alike to match quickly (more than `pair_limit` pairs of equal
    tokens), the lines are matched first and the
    words of each changed line against the line it replaces; a line still too alike is
    marked whole.

    Example:
        >>> left, right = word_diff("the cat sat", "the dog sat")
        >>> "cat" in left and 'data-diff="del"' in left, 'data-diff="ins"' in right
        (True, True)
    """
    a, b = a[:DIFF_LIMIT], b[:DIFF_LIMIT]
    cut = len(a) == DIFF_LIMIT or len(b) == DIFF_LIMIT
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    if _opcodes(ta, tb, pair_limit) is not None:
        left, right = _tokens_diff(ta, tb, cut, pair_limit)
        return "".join(left), "".join(right)
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    ops = _opcodes(la, lb, pair_limit)
    if ops is None:  # the lines too: everything that differs after the common start and end
        ops = [("replace", 0, len(la), 0, len(lb))]
    left, right = [], []
    for op, i1, i2, j1, j2 in ops:
        if op == "equal":
            left.append(_marked(la[i1:i2], "same"))
            right.append(_marked(lb[j1:j2], "same"))
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):  # a changed line against the line it replaces
            tokens = _TOKEN.findall(la[i1 + k]), _TOKEN.findall(lb[j1 + k])
            pa, pb = _tokens_diff(*tokens, False, pair_limit)
            left += pa
            right += pb
        left.append(_marked(la[i1 + pairs : i2], "del"))
        right.append(_marked(lb[j1 + pairs : j2], "ins"))
    return "".join(left), "".join(right)


def _side(name: str, body: str, text: str | None) -> str:
    if text is None:
        inner = f'<div style="{MUTED}">not in this run</div>'
    elif not text:
        inner = f'<div style="{MUTED}">(no output)</div>'
    else:
        cut = ""
        if len(text) > DIFF_LIMIT:
            more = len(text) - DIFF_LIMIT
            cut = (
                f'<div style="{MUTED}; font-size: 11.5px">diff of the first {DIFF_LIMIT:,} '
                f"characters ({more:,} more); the whole output is in run.cases</div>"
            )
        inner = (
            f'<div style="white-space: pre-wrap; overflow-wrap: anywhere; font-family: '
            f"ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; "
            f"padding: 6px 8px; border: {BORDER}; border-radius: 6px; max-height: 320px; "
            f'overflow-y: auto">{body}</div>{cut}'
        )
    return (
        f'<div style="flex: 1 1 380px; min-width: 0"><div style="font-weight: 600">'
        f"{esc(name)}</div>{inner}</div>"
    )


def output_diff_html(
    name_a: str,
    output_a: str | None,
    name_b: str,
    output_b: str | None,
    changes: str = "",
    title: str = "output",
    *,
    pair_limit: int = PAIR_LIMIT,
) -> str:
    """The two outputs side by side, differing words highlighted, `changes` (HTML) beside.

    `None` is an output of a case that is not in that run. `changes` is already-escaped HTML
    (the case's score changes); `title` heads the pair (its text is escaped). `pair_limit`
    bounds the matcher's work (`word_diff`): a page of many diffs (`eb.report`) asks less.
    """
    if output_a is not None and output_b is not None and output_a == output_b:
        left = right = _esc(output_a[:DIFF_LIMIT])
        same = f'<div style="{MUTED}; font-size: 12px">same output in both runs</div>'
    else:
        left, right = word_diff(output_a or "", output_b or "", pair_limit=pair_limit)
        same = ""
    beside = (
        f'<div data-evalbook="score-changes" style="flex: 0 1 220px; min-width: 160px">'
        f'<div style="font-weight: 600">score changes</div>{changes}</div>'
        if changes
        else ""
    )
    return (
        f'<div data-evalbook="output-diff" style="margin: 4px 0 10px 0">'
        f'<div style="{MUTED}; font-size: 12px">{esc(title)}</div>{same}'
        f'<div style="display: flex; gap: 10px; flex-wrap: wrap">'
        f"{_side(name_a, left, output_a)}{_side(name_b, right, output_b)}{beside}</div></div>"
    )


def case_output(run: Any, case_id: str) -> str | None:
    """A case's output in `run` (its first epoch), None when the case is not in the run."""
    if run is None:
        return None
    cases = run.cases
    hit = np.flatnonzero((cases["case_id"].astype(str) == case_id).to_numpy())
    if not len(hit):
        return None
    return text_of(cases["output"].iloc[int(hit[0])])


def score_changes_html(comp: ComparisonLike, case_id: str) -> str:
    """Each score's value in A and B and its change, for one case (escaped)."""
    table: pd.DataFrame = comp.cases
    rows = table[(table["case_id"].astype(str) == case_id).to_numpy()]
    lines = []
    for _, r in rows.iterrows():
        change = str(r["change"])
        lines.append(
            f'<div style="font-size: 12px; margin: 2px 0">{esc(r["score"])}<br>'
            f"{esc(format_num(r['a']))} → {esc(format_num(r['b']))} "
            f"({esc(format_pp(r['delta']))}) {badge(change.replace('_', ' '), change)}</div>"
        )
    return "".join(lines)
