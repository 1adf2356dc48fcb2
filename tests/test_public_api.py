"""The public surface of `evalbook` is exactly these names (the `__all__` of `__init__`)."""

from __future__ import annotations

import subprocess
import sys

import evalbook as eb

PUBLIC = {
    "Agreement",
    "Check",
    "Comparison",
    "ConfigurationError",
    "EnvironmentFailure",
    "Eval",
    "Grader",
    "Run",
    "Score",
    "ScoreDefinition",
    "ScorerSignatureError",
    "SkipScore",
    "Transcript",
    "Unscored",
    "agreement",
    "all_of",
    "any_of",
    "arun",
    "at_least",
    "check",
    "compare",
    "decided",
    "define_score",
    "export_otel",
    "import_results",
    "judge",
    "leaderboard",
    "load_run",
    "load_ipython_extension",
    "mde",
    "mean_of",
    "openai_client",
    "pairwise_judge",
    "pass_at",
    "pass_hat",
    "pool",
    "precise",
    "report",
    "review",
    "run",
    "runs",
    "sample",
    "sample_size",
    "scorer",
    "show",
    "tool_calls_match",
    "wrap_openai",
}


def test_all_is_pinned() -> None:
    assert set(eb.__all__) == PUBLIC


def test_every_public_name_exists() -> None:
    for name in PUBLIC:
        assert getattr(eb, name) is not None, name


def test_no_other_public_attributes() -> None:
    extra = {
        n
        for n in vars(eb)
        if not n.startswith("_") and n not in PUBLIC and not isinstance(getattr(eb, n), type(eb))
    }
    assert extra == set()


def test_import_is_light() -> None:
    code = (
        "import sys, evalbook, evalbook._cli; "
        "heavy = [m for m in ('plotly', 'ipywidgets', 'anywidget', 'IPython', 'scipy', 'dask', "
        "'openai', 'pandas', 'pyarrow', 'numpy', 'evalbook._cli._main') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_names_load_on_first_use_and_unknown_ones_are_attribute_errors() -> None:
    """`import evalbook` loads nothing heavy (above); a name loads its module when first used."""
    assert set(dir(eb)) >= PUBLIC
    code = (
        "import sys, evalbook as eb; before = 'evalbook._api._run' in sys.modules; "
        "run = eb.Run; print(before, 'evalbook._api._run' in sys.modules, run.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "evalbook._api._run"]
    try:
        eb.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("an unknown name must be an AttributeError")
