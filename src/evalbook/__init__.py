"""evalbook: a notebook-first evaluation toolkit for LLM and AI systems.

Example:
    >>> import evalbook as eb
    >>> correct = eb.define_score("correct", label="Correct", primary=True)
"""

from importlib import import_module as _import_module

from ._version import __version__ as __version__

# not `typing.TYPE_CHECKING`: importing typing takes 30 ms, and the `evalbook` command must be
# in its own `try` (catching a Ctrl-C) as soon as it can; type checkers read this name so too
TYPE_CHECKING = False
if TYPE_CHECKING:  # what the names below are, for type checkers (at run time: __getattr__)
    from ._api._check import check
    from ._api._entry import arun, load_run, run
    from ._api._eval import Eval
    from ._api._import import import_results
    from ._api._report import report
    from ._api._review import review
    from ._api._run import Run
    from ._api._sample import sample
    from ._compare._agreement import Agreement, agreement
    from ._compare._compare import Comparison, compare
    from ._compare._gate import Check
    from ._compare._leaderboard import leaderboard
    from ._compare._pool import pool
    from ._compare._power import mde, sample_size
    from ._errors import ConfigurationError, EnvironmentFailure, ScorerSignatureError, SkipScore
    from ._interop._otel import export_otel
    from ._judges._clients import openai_client
    from ._judges._judge import judge
    from ._judges._pairwise import pairwise_judge
    from ._judges._wrap import wrap_openai
    from ._model._contract import Score, Unscored
    from ._model._definitions import (
        Grader,
        ScoreDefinition,
        all_of,
        any_of,
        at_least,
        define_score,
        mean_of,
    )
    from ._model._reducers import pass_at, pass_hat
    from ._model._scorers import scorer
    from ._model._stop_rules import decided, precise
    from ._model._tool_calls_match import tool_calls_match
    from ._model._transcript import Transcript
    from ._store._listing import runs
    from .display import show
del TYPE_CHECKING

__all__ = [
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
    "load_ipython_extension",
    "load_run",
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
]


# each public name and the module that defines it: a name loads (with what it needs: pandas,
# pyarrow, ...) when first used, so `import evalbook` is quick and the `evalbook` command can
# take a Ctrl-C during its start-up as any other (`_cli/__init__.py`)
_WHERE = {
    "check": "._api._check",
    "arun": "._api._entry",
    "load_run": "._api._entry",
    "run": "._api._entry",
    "Eval": "._api._eval",
    "import_results": "._api._import",
    "report": "._api._report",
    "review": "._api._review",
    "Run": "._api._run",
    "sample": "._api._sample",
    "Agreement": "._compare._agreement",
    "agreement": "._compare._agreement",
    "Comparison": "._compare._compare",
    "compare": "._compare._compare",
    "Check": "._compare._gate",
    "leaderboard": "._compare._leaderboard",
    "pool": "._compare._pool",
    "mde": "._compare._power",
    "sample_size": "._compare._power",
    "ConfigurationError": "._errors",
    "EnvironmentFailure": "._errors",
    "ScorerSignatureError": "._errors",
    "SkipScore": "._errors",
    "export_otel": "._interop._otel",
    "openai_client": "._judges._clients",
    "judge": "._judges._judge",
    "pairwise_judge": "._judges._pairwise",
    "wrap_openai": "._judges._wrap",
    "Score": "._model._contract",
    "Unscored": "._model._contract",
    "Grader": "._model._definitions",
    "ScoreDefinition": "._model._definitions",
    "all_of": "._model._definitions",
    "any_of": "._model._definitions",
    "at_least": "._model._definitions",
    "define_score": "._model._definitions",
    "mean_of": "._model._definitions",
    "pass_at": "._model._reducers",
    "pass_hat": "._model._reducers",
    "scorer": "._model._scorers",
    "decided": "._model._stop_rules",
    "precise": "._model._stop_rules",
    "Transcript": "._model._transcript",
    "tool_calls_match": "._model._tool_calls_match",
    "runs": "._store._listing",
    "show": ".display",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalbook' has no attribute {name!r}")
    value = getattr(_import_module(module, __name__), name)
    globals()[name] = value  # the next use is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


def load_ipython_extension(ipython: object) -> None:
    """Register the `%eval` / `%%eval` magics: `%load_ext evalbook` (imports IPython lazily)."""
    # IPython is optional: the magics (and IPython with them) load only on %load_ext
    from ._magics import load_ipython_extension as load

    load(ipython)
