"""A deterministic subsample of cases (`eb.sample`, docs/spend-less.md): which cases are kept,
and the spec that a run records.

Each case gets a key in [0, 1) from SHA-256 of (seed, case_id) — not Python's `hash`, which
changes between processes — so a case's key depends on nothing else: not on the row order, not
on which other cases exist.

- `frac=` keeps the cases whose key is below `frac`: adding cases never drops a kept one;
- `n=` keeps the n cases of smallest key;
- `by=` splits `n` (or round(frac · N)) across the strata in proportion to their sizes, by the
  largest remainder (ties: the strata in sorted order), and keeps the smallest keys of each.

>>> keys = case_keys(["a", "b", "c"], seed=0)
>>> bool(((0 <= keys) & (keys < 1)).all()), bool(keys[0] == case_keys(["z", "a"], seed=0)[1])
(True, True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SAMPLE_ATTR", "allocate", "case_keys", "chosen", "spec_text", "specs_differ"]

# the key of the spec in a sampled frame's `attrs` and in `run.options`
SAMPLE_ATTR = "evalbook.sample"
_SCALE = float(2**64)


def case_keys(case_ids: Sequence[str], seed: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each case's key in [0, 1): the first 8 bytes of SHA-256 of `seed` and the case id."""
    prefix = f"evalbook.sample\x00{int(seed)}\x00".encode()
    out = np.empty(len(case_ids), dtype=np.float64)
    for i, case_id in enumerate(case_ids):
        digest = hashlib.sha256(prefix + case_id.encode("utf-8", "surrogatepass")).digest()
        out[i] = int.from_bytes(digest[:8], "big") / _SCALE
    return out


def allocate(total: int, sizes: Sequence[int]) -> list[int]:
    """`total` split across strata of these sizes in proportion, by the largest remainder.

    >>> allocate(10, [5, 3, 2]), allocate(3, [1, 1, 1, 1]), allocate(7, [2, 20])
    ([5, 3, 2], [1, 1, 1, 0], [1, 6])
    """
    whole = sum(sizes)
    total = min(total, whole)
    if whole == 0 or total <= 0:
        return [0] * len(sizes)
    quotas = [total * s / whole for s in sizes]
    counts = [min(int(q), s) for q, s in zip(quotas, sizes, strict=True)]
    left = total - sum(counts)
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - int(quotas[i])), i))
    while left > 0:  # a stratum never gets more than it has (a second pass when one is full)
        for i in order:
            if left > 0 and counts[i] < sizes[i]:
                counts[i] += 1
                left -= 1
    return counts


def chosen(
    keys: np.ndarray[Any, np.dtype[np.float64]],
    *,
    n: int | None,
    frac: float | None,
    strata: np.ndarray[Any, np.dtype[np.int64]] | None,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which cases are kept: a mask over `keys` (`strata`: each case's stratum, 0, 1, … in the
    strata's sorted order)."""
    kept = np.zeros(len(keys), dtype=bool)
    if strata is None:
        if frac is not None:
            return keys < frac
        assert n is not None
        kept[np.argsort(keys, kind="stable")[: max(n, 0)]] = True
        return kept
    sizes = np.bincount(strata).tolist() if len(strata) else []
    total = n if n is not None else round((frac or 0.0) * len(keys))
    for stratum, count in enumerate(allocate(total, sizes)):
        members = np.flatnonzero(strata == stratum)
        kept[members[np.argsort(keys[members], kind="stable")[:count]]] = True
    return kept


def spec_text(spec: Any) -> str:
    """A sample spec in words, for warnings: `n=200, by='topic', seed=0` or `all cases`."""
    if not isinstance(spec, dict):
        return "all cases (no eb.sample)"
    parts = [f"{k}={spec[k]!r}" for k in ("n", "frac", "by") if spec.get(k) is not None]
    return ", ".join([*parts, f"seed={spec.get('seed')!r}"])


def specs_differ(a: Any, b: Any) -> bool:
    """Whether two recorded specs draw differently (the source's size `of` aside)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return isinstance(a, dict) != isinstance(b, dict)
    fields = ("n", "frac", "by", "seed")
    return any(a.get(k) != b.get(k) for k in fields)
