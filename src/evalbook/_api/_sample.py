"""`eb.sample`: a deterministic subsample of the cases, the same whatever the row order."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._sampling import SAMPLE_ATTR, case_keys, chosen
from .._runner._plan import case_ids_of

__all__ = ["sample"]


def sample(
    data: pd.DataFrame,
    n: int | None = None,
    *,
    frac: float | None = None,
    by: str | Sequence[str] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """A deterministic subsample of `data`: the same cases for the same `seed`, whatever the
    row order and whichever other cases exist.

    A case is kept by a hash of (seed, case_id) (SHA-256; the case id as `eb.run` reads it:
    the `id` column, else the index). `frac=` keeps each case whose hash falls below it, so
    adding cases never drops a kept one; `n=` keeps the n cases of smallest hash; `by=` (a
    column, or several) splits the count across its strata in proportion to their sizes (the
    largest remainder). The rows keep their order. The spec is on the result's
    `attrs["evalbook.sample"]`, and a run of the result records it (`run.options["sample"]`);
    `eb.compare` warns when two runs were drawn with different specs.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"id": [f"q{i}" for i in range(100)], "topic": ["a", "b"] * 50})
        >>> small = eb.sample(df, 10, by="topic")
        >>> len(small), sorted(small["topic"].value_counts().items())
        (10, [('a', 5), ('b', 5)])
        >>> eb.sample(df.iloc[::-1], 10, by="topic")["id"].tolist() == small["id"].tolist()[::-1]
        True
        >>> small.attrs["evalbook.sample"]
        {'n': 10, 'frac': None, 'by': 'topic', 'seed': 0, 'of': 100}
    """
    if not isinstance(data, pd.DataFrame):
        raise ConfigurationError(
            f"eb.sample takes a pandas DataFrame of cases, got {type(data).__name__}"
        )
    if (n is None) == (frac is None):
        raise ConfigurationError(
            "eb.sample needs exactly one of n= (how many cases) or frac= (which share), "
            "e.g. eb.sample(df, 200) or eb.sample(df, frac=0.1)"
        )
    if n is not None and (isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0):
        raise ConfigurationError(f"n= must be a whole number of cases >= 0, got {n!r}")
    if frac is not None and (
        isinstance(frac, bool)
        or not isinstance(frac, int | float)
        or not math.isfinite(frac)
        or not 0 <= frac <= 1
    ):
        raise ConfigurationError(f"frac= must be a share between 0 and 1, got {frac!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigurationError(f"seed= must be an integer, got {seed!r}")
    columns = _by_columns(data, by)
    keys = case_keys(case_ids_of(data), int(seed))
    strata: np.ndarray[Any, np.dtype[np.int64]] | None = None
    if columns:
        codes = data.groupby(columns, dropna=False, sort=True, observed=True).ngroup()
        strata = np.asarray(codes.to_numpy(), dtype=np.int64)
    mask = chosen(
        keys,
        n=None if n is None else int(n),
        frac=None if frac is None else float(frac),
        strata=strata,
    )
    out = data.loc[mask] if len(data) else data.copy()
    out = out.copy()
    out.attrs = {
        **data.attrs,
        SAMPLE_ATTR: {
            "n": None if n is None else int(n),
            "frac": None if frac is None else float(frac),
            "by": by if isinstance(by, str) or by is None else list(by),
            "seed": int(seed),
            "of": len(data),
        },
    }
    return out


def _by_columns(data: pd.DataFrame, by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    columns = [by] if isinstance(by, str) else list(by)
    missing = [c for c in columns if not isinstance(c, str) or c not in data.columns]
    if missing or not columns:
        raise ConfigurationError(
            f"by= takes a column of the data (or a list of them); {missing or by!r} is not "
            f"one. Columns: {', '.join(map(str, data.columns))}"
        )
    return columns
