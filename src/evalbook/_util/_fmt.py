"""How evalbook spells numbers: one place for %, pp, p-values and CIs.

Every view (HTML cards, reprs, the CLI, the gate's messages) calls these, so a number reads
the same everywhere: a share is `52%`, a difference of two shares is in percentage points
`+4.0 pp` / `−2.5 pp` / `0 pp`, a p-value is `0.032` or `<0.001`, an interval is `[40%, 63%]`.
A missing value (None, NaN, pandas' NA) is `—`, or an empty string where a cell can be blank.
"""

from __future__ import annotations

import math

__all__ = [
    "format_ci",
    "format_count",
    "format_num",
    "format_p",
    "format_p_phrase",
    "format_pair",
    "format_pct",
    "format_pp",
    "format_pp_ci",
    "number",
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


def format_pp(x: object, *, signed: bool = True) -> str:
    """A difference of two shares in percentage points: `+4.0 pp`, `−2.5 pp`, `0 pp`.

    `signed=False` drops the sign (for a size, e.g. a drop of `3.0 pp`).

    Example:
        >>> format_pp(0.04), format_pp(-0.025), format_pp(0.0), format_pp(0.0001)
        ('+4.0 pp', '−2.5 pp', '0 pp', '+0.01 pp')
        >>> format_pp(-0.1, signed=False), format_pp(None)
        ('10.0 pp', '—')
    """
    value = number(x)
    if value is None:
        return MISSING
    if value == 0:
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
    """A whole count `12`, or an empty string when missing (a blank table cell).

    Example:
        >>> format_count(12.0), format_count(None)
        ('12', '')
    """
    value = number(x)
    return "" if value is None else str(int(value))


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
