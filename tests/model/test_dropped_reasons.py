"""The summary's `dropped_reasons` (why cases are outside a cell's mean), counted on codes,
against a count case by case (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._model._scoring_rule import _dropped_reasons

_REASONS = st.one_of(
    st.none(),
    st.just(float("nan")),
    st.sampled_from(["too_few_epochs", "refusal", "empty_output", "x" * 59, "x" * 60, "x" * 61]),
    st.text(max_size=70),
)


def _naive(
    reason: list[object], cell: list[int], scored: list[bool], cells: int
) -> list[str | None]:
    found: list[dict[str, int]] = [{} for _ in range(cells)]
    for why, c, ok in zip(reason, cell, scored, strict=True):
        if ok:
            continue
        key = str(why) if isinstance(why, str) else "no value"
        key = key if len(key) <= 60 else key[:59] + "…"
        found[c][key] = found[c].get(key, 0) + 1
    out: list[str | None] = []
    for f in found:
        ranked = sorted(f.items(), key=lambda kv: (-kv[1], kv[0]))
        parts = [f"{k} {n}" for k, n in ranked[:3]]
        if len(ranked) > 3:
            parts.append(f"{len(ranked) - 3} other reasons {sum(n for _, n in ranked[3:])}")
        out.append(" · ".join(parts) or None)
    return out


@settings(max_examples=300, deadline=None)
@given(
    cells=st.integers(1, 4),
    rows=st.lists(st.tuples(_REASONS, st.integers(0, 3), st.booleans()), max_size=60),
)
def test_counted_on_codes_equals_a_count_case_by_case(
    cells: int, rows: list[tuple[object, int, bool]]
) -> None:
    reason = [r for r, _, _ in rows]
    cell = [c % cells for _, c, _ in rows]
    scored = [s for _, _, s in rows]
    got = _dropped_reasons(
        np.array(reason, dtype=object),
        np.array(cell, dtype=np.int64),
        np.array(scored, bool),
        cells,
    )
    assert got == _naive(reason, cell, scored, cells)
