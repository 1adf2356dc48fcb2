"""evalbook: a notebook-first evaluation toolkit for LLM and AI systems.

Example:
    >>> import evalbook as eb
    >>> correct = eb.define_score("correct", label="Correct", primary=True)
"""

from ._api._entry import arun, load_run, run
from ._api._eval import Eval
from ._api._import import import_results
from ._api._run import Run
from ._compare._agreement import Agreement, agreement
from ._compare._compare import Comparison, compare
from ._compare._leaderboard import leaderboard
from ._compare._pool import pool
from ._compare._power import mde, sample_size
from ._errors import ConfigurationError, ScorerSignatureError, SkipScore
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
from ._store._listing import runs
from ._version import __version__ as __version__
from .display import show

__all__ = [
    "Agreement",
    "Comparison",
    "ConfigurationError",
    "Eval",
    "Grader",
    "Run",
    "Score",
    "ScoreDefinition",
    "ScorerSignatureError",
    "SkipScore",
    "Unscored",
    "agreement",
    "all_of",
    "any_of",
    "arun",
    "at_least",
    "compare",
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
    "run",
    "runs",
    "sample_size",
    "scorer",
    "show",
    "wrap_openai",
]


def load_ipython_extension(ipython: object) -> None:
    """Register the `%eval` / `%%eval` magics: `%load_ext evalbook` (imports IPython lazily)."""
    # IPython is optional: the magics (and IPython with them) load only on %load_ext
    from ._magics import load_ipython_extension as load

    load(ipython)
