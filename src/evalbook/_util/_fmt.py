"""How evalbook spells numbers: one place for %, pp, p-values, CIs, money, tokens, seconds.

Every view (HTML cards, reprs, the CLI, the gate's messages) calls these, so a number reads
the same everywhere: a share is `52%`, a difference of two shares is in percentage points
`+4.0 pp` / `−2.5 pp` / `0 pp`, a p-value is `0.032` or `<0.001`, an interval is `[40%, 63%]`,
money is `$1.23` / `$0.0123`, tokens `12.3k`, a duration `2.3 s`.
A missing value (None, NaN, pandas' NA) is `—`, or an empty string where a cell can be blank;
an unknown cost is never spelled `$0.00`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "counts_line",
    "format_amounts",
    "format_ci",
    "format_count",
    "format_money",
    "format_money_ci",
    "format_num",
    "format_p",
    "format_p_phrase",
    "format_pair",
    "format_pct",
    "format_pct_ci",
    "format_pp",
    "format_pp_ci",
    "format_seconds",
    "format_tokens",
    "number",
    "refused_note",
    "usage_delta_lines",
    "usage_delta_parts",
    "usage_delta_text",
    "usage_line",
]

MISSING = "—"
MINUS = "−"  # U+2212: the minus sign, as wide as "+" (a hyphen reads as a dash in tables)


def number(x: object) -> float | None:
    """`x` as a float, or None when it is missing (None, NaN, NaT, pandas' NA) or not a number.

    Example:
        >>> number(0.5), number(None), number(float("nan")), number("x")
        (0.5, None, None, None)
    """
    if x is None:
        return None
    try:
        value = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _digits(scaled: float, exact: float) -> str:
    """`scaled` with the fewest of 0-3 decimals that neither hide a non-zero value as 0 nor
    show an `exact` value below 1 as 100 (then `.4g`)."""
    for digits in (0, 1, 2, 3):
        text = f"{scaled:.{digits}f}"
        if (float(text) == 100 and exact < 1) or (float(text) == 0 and exact != 0):
            continue
        return text
    return f"{scaled:.4g}"


def format_pct(x: object) -> str:
    """A share as a percentage that never rounds to 0 % or 100 % unless it is exactly that.

    Example:
        >>> format_pct(0.52), format_pct(0.9996), format_pct(0.0004), format_pct(None)
        ('52%', '99.96%', '0.04%', '—')
    """
    value = number(x)
    if value is None:
        return MISSING
    text = _digits(value * 100, value)
    return f"{MINUS}{text[1:]}%" if text.startswith("-") else f"{text}%"


def _pp_digits(points: float) -> str:
    """One decimal, more when one decimal would show a non-zero difference as 0.0."""
    for digits in (1, 2, 3):
        text = f"{abs(points):.{digits}f}"
        if float(text) != 0:
            return text
    return f"{abs(points):.2g}"


# Shares are means of values in [0, 1]: two equal means summed in another order differ by
# ~1e-16 per case; far below any difference a view should spell
_FLOAT_NOISE = 1e-12


def format_pp(x: object, *, signed: bool = True) -> str:
    """A difference of two shares in percentage points: `+4.0 pp`, `−2.5 pp`, `0 pp`.

    `signed=False` drops the sign (for a size, e.g. a drop of `3.0 pp`). A difference below
    1e-12 is the rounding of two equal means computed in another order, and reads `0 pp`.

    Example:
        >>> format_pp(0.04), format_pp(-0.025), format_pp(0.0), format_pp(0.0001)
        ('+4.0 pp', '−2.5 pp', '0 pp', '+0.01 pp')
        >>> format_pp(-1.1e-14)
        '0 pp'
        >>> format_pp(-0.1, signed=False), format_pp(None)
        ('10.0 pp', '—')
    """
    value = number(x)
    if value is None:
        return MISSING
    if abs(value) < _FLOAT_NOISE:
        return "0 pp"
    sign = ("+" if value > 0 else MINUS) if signed else ""
    return f"{sign}{_pp_digits(value * 100)} pp"


def format_ci(low: object, high: object) -> str:
    """An interval of shares `[40%, 63%]`, or an empty string when there is none.

    Example:
        >>> format_ci(0.4, 0.63), format_ci(None, 0.5)
        ('[40%, 63%]', '')
    """
    if number(low) is None or number(high) is None:
        return ""
    return f"[{format_pct(low)}, {format_pct(high)}]"


def _pct_at(x: float, digits: int) -> str:
    """A share as a percentage with at least `digits` decimals (as `format_pct`, never 0 % or
    100 % unless exactly)."""
    text = f"{x * 100:.{digits}f}"
    if (float(text) == 100 and x < 1) or (float(text) == 0 and x != 0):
        text = _digits(x * 100, x)
    return f"{MINUS}{text[1:]}%" if text.startswith("-") else f"{text}%"


def _shown(text: str) -> float:
    return float(text.removesuffix("%").replace(MINUS, "-"))


def format_pct_ci(value: object, low: object, high: object) -> tuple[str, str]:
    """A share and its interval (`format_pct`, `format_ci`), with one more decimal at a time
    (up to 6) while the point, strictly inside its interval, would read as on its edge:
    `50.0%` and `[49.6%, 50.4%]`, never `50%` and `[49%, 50%]`. A point really on an edge is
    shown on it.

    Example:
        >>> format_pct_ci(0.5, 0.496, 0.504)
        ('50.0%', '[49.6%, 50.4%]')
        >>> format_pct_ci(0.52, 0.4, 0.63), format_pct_ci(1.0, 0.7, 1.0)
        (('52%', '[40%, 63%]'), ('100%', '[70%, 100%]'))
    """
    point, ci = format_pct(value), format_ci(low, high)
    v, lo, hi = number(value), number(low), number(high)
    if v is None or lo is None or hi is None or not lo < v < hi:
        return point, ci
    shown = (point, format_pct(lo), format_pct(hi))
    digits = 1
    while not _shown(shown[1]) < _shown(shown[0]) < _shown(shown[2]) and digits <= 6:
        shown = (_pct_at(v, digits), _pct_at(lo, digits), _pct_at(hi, digits))
        digits += 1
    if not _shown(shown[1]) < _shown(shown[0]) < _shown(shown[2]):
        return point, ci  # closer than 6 decimals tell apart: the plain form
    return shown[0], f"[{shown[1]}, {shown[2]}]"


def format_pp_ci(low: object, high: object) -> str:
    """An interval of differences `[−2.0 pp, +6.5 pp]`, or an empty string when there is none.

    Example:
        >>> format_pp_ci(-0.02, 0.065)
        '[−2.0 pp, +6.5 pp]'
    """
    if number(low) is None or number(high) is None:
        return ""
    return f"[{format_pp(low)}, {format_pp(high)}]"


def format_p(x: object) -> str:
    """A p-value as a table cell, three decimals: `0.032`, `1.000`, `<0.001`, `—`.

    Example:
        >>> format_p(0.0321), format_p(0.0004), format_p(1.0), format_p(float("nan"))
        ('0.032', '<0.001', '1.000', '—')
    """
    value = number(x)
    if value is None:
        return MISSING
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def format_p_phrase(x: object) -> str:
    """A p-value in a sentence: `p = 0.032`, `p < 0.001`, `p = —`.

    Example:
        >>> format_p_phrase(0.032), format_p_phrase(0.0001)
        ('p = 0.032', 'p < 0.001')
    """
    text = format_p(x)
    return f"p < {text[1:]}" if text.startswith("<") else f"p = {text}"


def format_num(x: object, digits: int = 3) -> str:
    """A plain number (a recorded value): `1`, `0.5`, `0.333`, `—` when missing.

    Example:
        >>> format_num(1.0), format_num(1 / 3), format_num(None)
        ('1', '0.333', '—')
    """
    value = number(x)
    if value is None:
        return MISSING
    return str(int(value)) if value.is_integer() else f"{value:.{digits}g}"


def format_count(x: object) -> str:
    """A whole count with thousands separators `12`, `19,905`, or an empty string when missing
    (a blank table cell).

    Example:
        >>> format_count(12.0), format_count(19905), format_count(None)
        ('12', '19,905', '')
    """
    value = number(x)
    return "" if value is None else f"{int(value):,}"


def format_pair(observed: float, threshold: float, *, points: bool = False) -> tuple[str, str]:
    """An observed value and its threshold (as `format_pct`, or as unsigned `format_pp` with
    `points=True`), with enough digits that unequal values never look equal.

    Values within 1e-9 of each other are equal (float noise, as the gate counts them).

    Example:
        >>> format_pair(0.7996, 0.8)
        ('79.96%', '80%')
        >>> format_pair(0.1004, 0.1, points=True)
        ('10.04 pp', '10.0 pp')
    """

    def shown(x: float) -> str:
        return format_pp(x, signed=False) if points else format_pct(x)

    unit = " pp" if points else "%"
    obs, thr = shown(observed), shown(threshold)
    if abs(observed - threshold) <= 1e-9:
        return obs, thr
    digits = 1
    while obs == thr and digits <= 12:
        obs = f"{abs(observed) * 100:.{digits}f}{unit}"
        thr = f"{abs(threshold) * 100:.{digits}f}{unit}"
        digits += 1
    plain = shown(threshold)
    if float(thr.removesuffix(unit)) == float(plain.removesuffix(unit).replace(MINUS, "-")):
        thr = plain  # the threshold as the user wrote it, when that is the same number
    return obs, thr


def format_amounts(observed: float, threshold: float, unit: str) -> tuple[str, str]:
    """An observed amount and its threshold (`$0.42`, `2.5 s`), with enough digits that
    unequal values never look equal (values within 1e-9 are equal, as the gate counts them).

    Example:
        >>> format_amounts(1.0004, 1.0, "$")
        ('$1.0004', '$1')
        >>> format_amounts(2.345, 3.0, " s")
        ('2.35 s', '3 s')
    """

    def shown(text: str) -> str:
        return f"${text}" if unit == "$" else f"{text}{unit}"

    # the threshold as the user wrote it: its shortest exact form
    thr = f"{threshold:g}" if float(f"{threshold:g}") == threshold else repr(threshold)
    digits = max(3, len(str(int(abs(observed)))))  # whole dollars or seconds in full
    obs = f"{observed:.{digits}g}"
    while abs(observed - threshold) > 1e-9 and float(obs) == float(f"{threshold:.{digits}g}"):
        digits += 1  # shown equal but not equal: one more digit
        obs = f"{observed:.{digits}g}"
    if abs(observed - threshold) <= 1e-9:
        obs = thr
    return shown(obs), shown(thr)


def _sig(x: float, figures: int) -> str:
    """`x >= 0` with `figures` significant digits in plain decimals (never `1e-05`)."""
    if x == 0:
        return "0"
    digits = max(0, figures - 1 - math.floor(math.log10(x)))
    text = f"{x:.{digits}f}"
    if len(text.replace(".", "").lstrip("0")) > figures and digits > 0:
        text = f"{x:.{digits - 1}f}"  # rounding carried into a new digit (0.0999 -> 0.100)
    return text


def _signed(value: float, text: str, signed: bool) -> str:
    if value < 0:
        return f"{MINUS}{text}"
    return f"+{text}" if signed and value > 0 else text


def format_money(x: object, *, signed: bool = False) -> str:
    """US dollars: cents from $1 up (`$1.23`, `$1,234.50`), three significant digits below
    (`$0.0123`), so a small cost never reads as `$0.00`; `—` when unknown (never `$0.00`).

    `signed=True` marks a difference: `+$0.0012`, `−$0.50`, `$0.00`.

    Example:
        >>> format_money(1.234), format_money(0.01234), format_money(0.5), format_money(0.0)
        ('$1.23', '$0.0123', '$0.50', '$0.00')
        >>> format_money(1234.5), format_money(None), format_money(-0.002, signed=True)
        ('$1,234.50', '—', '−$0.002')
    """
    value = number(x)
    if value is None:
        return MISSING
    size = abs(value)
    if size == 0 or size >= 1 or float(f"{size:.2f}") >= 1:
        text = f"{size:,.2f}"
    else:
        text = _sig(size, 3)
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0").ljust(2, "0")  # trailing zeros say nothing past the cents
        text = f"{whole}.{frac}"
    return _signed(value, f"${text}", signed)


def format_money_ci(low: object, high: object, *, signed: bool = False) -> str:
    """An interval of money `[$0.011, $0.014]`, or an empty string when there is none.

    Example:
        >>> format_money_ci(0.011, 0.014), format_money_ci(None, 1)
        ('[$0.011, $0.014]', '')
    """
    if number(low) is None or number(high) is None:
        return ""
    return f"[{format_money(low, signed=signed)}, {format_money(high, signed=signed)}]"


_UNITS = ((1e3, "k"), (1e6, "M"), (1e9, "B"))


def _bare(text: str) -> str:
    """Decimals without trailing zeros (`2.10` -> `2.1`, `1.00` -> `1`)."""
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_tokens(x: object) -> str:
    """A count of tokens: `950`, `12.3k`, `4.5M` (three significant digits); `—` unknown.

    Example:
        >>> format_tokens(950), format_tokens(12_345), format_tokens(2_100), format_tokens(999_960)
        ('950', '12.3k', '2.1k', '1M')
    """
    value = number(x)
    if value is None:
        return MISSING
    size = abs(value)
    if size.is_integer() and size < 1000:
        text = f"{size:.0f}"
    elif size < 999.5:
        text = _bare(_sig(size, 3))
    else:
        for scale, unit in _UNITS:
            scaled = _sig(size / scale, 3)
            if float(scaled) < 1000 or unit == "B":
                text = f"{_bare(scaled)}{unit}"
                break
    return _signed(value, text, False)


def format_seconds(x: object, *, signed: bool = False) -> str:
    """A duration: `2.3 s`, `0.45 s` (two significant digits), `12 s` from 10 s up; `—`.

    `signed=True` marks a difference: `+0.40 s`, `−1.2 s`, `0 s`.

    Example:
        >>> format_seconds(2.345), format_seconds(0.45), format_seconds(12.4), format_seconds(None)
        ('2.3 s', '0.45 s', '12 s', '—')
    """
    value = number(x)
    if value is None:
        return MISSING
    size = abs(value)
    text = f"{size:.0f}" if size >= 9.95 else _bare(_sig(size, 2))
    return _signed(value, f"{text} s", signed)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def usage_line(row: Mapping[str, object], *, ran: int, unit: str = "case") -> str:
    """What a run's calls cost, in one line, from its `usage_summary()` row; "" without calls.

    `ran` is how many samples ran (the partial-knowledge count is of them); `unit` is what
    `cost_per_case` is a mean over ("case", or "sample" with epochs). A cost no call reported
    is "unknown", never `$0.00`; when only some samples' cost is known, the line says how
    many. Cached calls and retries are named when there are any.

    Example:
        >>> row = {"calls": 40, "cached_calls": 0, "input_tokens": 12_300, "output_tokens": 2_100,
        ...        "cost": 1.23, "cost_per_case": 0.0123, "cost_ci_low": 0.011,
        ...        "cost_ci_high": 0.014, "latency_p95_s": 2.3, "n_cost_known": 100, "retries": 0}
        >>> usage_line(row, ran=100)
        'Cost $1.23 · $0.0123 per case [$0.011, $0.014] · 12.3k tokens in / 2.1k out · 40 calls · p95 latency 2.3 s'
        >>> usage_line({**row, "cost": float("nan"), "n_cost_known": 0}, ran=100)[:34]
        'Cost unknown · 12.3k tokens in / 2'
    """  # noqa: E501
    calls = int(number(row.get("calls")) or 0)
    if calls <= 0:
        return ""
    known = int(number(row.get("n_cost_known")) or 0)
    if known <= 0 or number(row.get("cost")) is None:
        parts = ["Cost unknown"]
    else:
        cost = f"Cost {format_money(row.get('cost'))}"
        if known < ran:
            cost += f" (known for {known} of {_plural(ran, 'sample')})"
        per = f"{format_money(row.get('cost_per_case'))} per {unit}"
        ci = format_money_ci(row.get("cost_ci_low"), row.get("cost_ci_high"))
        parts = [cost, f"{per} {ci}" if ci else per]
    tin, tout = row.get("input_tokens"), row.get("output_tokens")
    if number(tin) is None and number(tout) is None:
        parts.append("tokens unknown")
    else:
        parts.append(f"{format_tokens(tin)} tokens in / {format_tokens(tout)} out")
    cached = int(number(row.get("cached_calls")) or 0)
    parts.append(f"{cached} of {calls} calls cached" if cached else _plural(calls, "call"))
    retries = int(number(row.get("retries")) or 0)
    if retries:
        parts.append(f"{retries} {'retry' if retries == 1 else 'retries'}")
    p95 = row.get("latency_p95_s")
    if number(p95) is not None:
        parts.append(f"p95 latency {format_seconds(p95)}")
    return " · ".join(parts)


NOTE_LIMIT = 200  # characters of a refusal message quoted in a note


def refused_note(messages: Sequence[object]) -> str:
    """The note on usage records refused (`run.usage()["invalid"]`), "" when none was.

    `messages` is the `invalid` column (None where the record was fine); the first message
    is quoted as it is: each view escapes it.

    Example:
        >>> refused_note([None, "cost must be a finite number >= 0, got -1"])
        'usage refused in 1 record (amounts unknown): cost must be a finite number >= 0, got -1'
    """
    bad = [m for m in messages if isinstance(m, str)]
    if not bad:
        return ""
    first = bad[0]
    if len(first) > NOTE_LIMIT:  # a line of a card or a repr; run.usage() has it all
        first = f"{first[:NOTE_LIMIT]}… ({len(first) - NOTE_LIMIT} more characters)"
    return f"usage refused in {_plural(len(bad), 'record')} (amounts unknown): {first}"


_MEASURES = {"cost_per_case": ("cost per case", format_money), "latency_s": ("latency", None)}


def usage_delta_parts(row: Mapping[str, object]) -> tuple[str, str, str]:
    """One row of `Comparison.usage` in three parts: (`cost per case $0.01 → $0.03`,
    `+$0.02`, `[+$0.018, +$0.022] · 3 paired`); latency in seconds. With no paired case the
    first part says so and the others are empty.
    """
    measure = str(row.get("measure"))
    title, money = _MEASURES.get(measure, (measure, None))
    shown = money or format_seconds
    n = int(number(row.get("n_paired")) or 0)
    if n == 0:
        return f"{title}: no case with a known value in both runs", "", ""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    ci = ""
    if number(lo) is not None and number(hi) is not None:
        ci = f"[{shown(lo, signed=True)}, {shown(hi, signed=True)}] · "
    return (
        f"{title} {shown(row.get('mean_a'))} → {shown(row.get('mean_b'))}",
        shown(row.get("delta"), signed=True),
        f"{ci}{n} paired",
    )


def usage_delta_text(row: Mapping[str, object]) -> str:
    """One row of `Comparison.usage` as text (`usage_delta_parts` joined).

    Example:
        >>> usage_delta_text({"measure": "latency_s", "mean_a": 2.0, "mean_b": 1.5,
        ...                   "delta": -0.5, "ci_low": -0.8, "ci_high": -0.2, "n_paired": 12})
        'latency 2 s → 1.5 s  Δ −0.5 s [−0.8 s, −0.2 s] · 12 paired'
    """
    head, delta, tail = usage_delta_parts(row)
    return f"{head}  Δ {delta} {tail}" if delta else head


def usage_delta_lines(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """`Comparison.usage` as text lines (`usage_delta_text`), or [] when no case has a cost
    known in both runs (then latency alone says nothing about usage, and views stay as
    they were for runs without usage)."""
    cost = [r for r in rows if r.get("measure") == "cost_per_case"]
    if not cost or not number(cost[0].get("n_paired")):
        return []
    return [usage_delta_text(r) for r in rows]


def counts_line(row: Mapping[str, object]) -> str:
    """A summary row's counts as every view spells them: the samples' records, then, when the
    mean leaves cases out, over how many it is and why the others are not.

    Example:
        >>> row = {"counted": 5, "unscored": 0, "errors": 1, "excluded": 1, "zeroed": 0,
        ...        "n_cases": 3, "cases_counted": 2, "dropped_reasons": "too_few_epochs 1"}
        >>> counts_line(row)
        'counted 5 · unscored 0 · errors 1 · excluded 1 · mean over 2 of 3 cases (too_few_epochs 1)'
    """

    def n(key: str) -> int:  # a Python or a numpy number (a summary row of either kind)
        value = number(row.get(key))
        return 0 if value is None else int(value)

    parts = [f"{k} {format_count(n(k))}" for k in ("counted", "unscored", "errors", "excluded")]
    if n("zeroed"):
        parts.append(f"zeroed {format_count(n('zeroed'))}")
    cases, counted = n("n_cases"), n("cases_counted")
    if "cases_counted" in row and counted < cases:
        why = row.get("dropped_reasons")
        why_text = f" ({why})" if isinstance(why, str) else ""
        parts.append(f"mean over {format_count(counted)} of {format_count(cases)} cases{why_text}")
    return " · ".join(parts)
