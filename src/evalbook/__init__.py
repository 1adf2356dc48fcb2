"""evalbook: a notebook-first evaluation toolkit for LLM and AI systems.

Example:
    >>> import evalbook as eb
    >>> correct = eb.define_score("correct", label="Correct", primary=True)
"""

from ._compare import Comparison, compare, leaderboard
from ._contract import Score, Unscored
from ._errors import ConfigurationError, ScorerSignatureError, SkipScore
from ._eval import Eval
from ._judge import judge
from ._load import load_run, runs
from ._openai import openai_client
from ._run import Run
from ._runner import arun, run
from ._scorers import scorer
from ._scores import Grader, ScoreDefinition, all_of, any_of, at_least, define_score, mean_of
from .display import show

__version__ = "0.1.0"

__all__ = [
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
    "all_of",
    "any_of",
    "arun",
    "at_least",
    "compare",
    "define_score",
    "judge",
    "leaderboard",
    "load_ipython_extension",
    "load_run",
    "mean_of",
    "openai_client",
    "run",
    "runs",
    "scorer",
    "show",
]


def load_ipython_extension(ipython: object) -> None:
    """Register the `%eval` / `%%eval` magics: `%load_ext evalbook` (imports IPython lazily)."""
    from ._magics import load_ipython_extension as load

    load(ipython)
