"""The palette reads on light and dark notebooks (WCAG 2 contrast, issue 35 item 8).

No colour has 4.5:1 as text on both white and a dark notebook (#111111, #1e1e1e: the best grey
reaches about 4.1:1), so status text keeps the theme's colour and the hue goes to a marker (a
badge's dot and border, a plot's trace), which needs 3:1 as a graphic (WCAG 1.4.11).
"""

from __future__ import annotations

import re

import pytest

from evalbook._render._figure import LINE_COLOR, PALETTE
from evalbook._render._style import MUTED, NEUTRAL_COLOR, STATUS_COLORS, badge

BACKGROUNDS = {"white": "#ffffff", "JupyterLab dark": "#111111", "dark panel": "#1e1e1e"}


def luminance(color: str) -> float:
    """WCAG 2 relative luminance of `#rrggbb`."""
    digits = color.lstrip("#")
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two colours (1 .. 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_formula_gives_the_known_ratios() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    # the figures of the issue: the old green and amber on white
    assert contrast("#16a34a", "#ffffff") == pytest.approx(3.3, abs=0.05)
    assert contrast("#ca8a04", "#ffffff") == pytest.approx(2.94, abs=0.05)


def test_no_one_text_colour_passes_both_themes() -> None:
    """Why text inherits: the best of all greys reaches 4.5:1 on white and #1e1e1e at once?"""
    best = max(
        min(
            contrast(f"#{v:02x}{v:02x}{v:02x}", "#ffffff"),
            contrast(f"#{v:02x}{v:02x}{v:02x}", "#1e1e1e"),
        )
        for v in range(256)
    )
    assert 4.0 < best < 4.5, best


@pytest.mark.parametrize(
    "color",
    sorted({*STATUS_COLORS.values(), NEUTRAL_COLOR, *PALETTE, LINE_COLOR}),
)
def test_every_marker_colour_has_3_to_1_on_light_and_dark(color: str) -> None:
    ratios = {name: round(contrast(color, bg), 2) for name, bg in BACKGROUNDS.items()}
    print(color, ratios)
    assert min(ratios.values()) >= 3.0, (color, ratios)


def test_one_palette_errors_red_unscored_amber() -> None:
    assert STATUS_COLORS["error"] == STATUS_COLORS["errored"] == STATUS_COLORS["failed"]
    assert STATUS_COLORS["unscored"] == STATUS_COLORS["timed_out"] == STATUS_COLORS["warning"]
    assert STATUS_COLORS["error"] != STATUS_COLORS["unscored"]


def test_a_badge_text_takes_the_theme_colour_and_its_dot_the_status_colour() -> None:
    html = badge("errored 1", "errored")
    text_colours = re.findall(r"(?<![-\w])color: ([^;\"]+)", html)
    assert text_colours == ["inherit"]  # the only text colour: the theme's
    assert f"background: {STATUS_COLORS['errored']}" in html  # the dot
    assert f"border: 1px solid {STATUS_COLORS['errored']}" in html


def test_muted_text_keeps_4_5_to_1_on_both_themes() -> None:
    """MUTED is an opacity over the theme's text colour: JupyterLab's light text (black at
    0.87) and dark text (white at 0.87), blended at that opacity over their backgrounds."""
    opacity = float(MUTED.split(":")[1])

    def blend(fg: int, bg: int, alpha: float) -> str:
        v = round(fg * alpha + bg * (1 - alpha))
        return f"#{v:02x}{v:02x}{v:02x}"

    light = blend(0, 255, 0.87 * opacity)
    dark = blend(255, 0x1E, 0.87 * opacity)
    assert contrast(light, "#ffffff") >= 4.5 and contrast(dark, "#1e1e1e") >= 4.5
