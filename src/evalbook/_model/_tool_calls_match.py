"""`eb.tool_calls_match`: did the agent make the expected tool calls, with the right arguments?

The expected calls come from a column of the data, checked for every case before any case
runs (the scorer's `check`, see `_scorers.DataCheck`); the calls made come from the sample's
transcript, in order (each assistant message's `tool_calls`). Matching is a multiset matching:
each expected call accounts for at most one call made, so `subset` and `superset` together say
exactly what `unordered` says.
"""

from __future__ import annotations

import inspect
import json
import keyword
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._errors import ConfigurationError
from ._contract import Score, Unscored, safe_repr
from ._definitions import Grader, ScoreDefinition, define_score
from ._scorers import Scorer
from ._transcript import Transcript

__all__ = [
    "MODES",
    "ExpectedCall",
    "calls_made",
    "expected_calls",
    "json_equal",
    "json_key",
    "matches",
    "tool_calls_match",
]

Mode = Literal["strict", "unordered", "subset", "superset"]
MODES = ("strict", "unordered", "subset", "superset")
NO_TRANSCRIPT = "no_transcript"
ArgsRule = Literal["exact", "ignore"] | Callable[[Any, Any], bool]
# names a scorer receives besides the columns: a column named so is read from `row`
_SPECIAL = ("output", "row", "case_id", "epoch", "ctx", "transcript")
_NO_ARGS = object()  # an expected call given by its name only: its arguments are not compared


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One call, expected or made: its tool's name and arguments (a JSON value).

    An expected call given by name only has `arguments` `None` and `compare_args` False.
    `key` is the arguments' `json_key` (what args="exact" compares), computed once.
    """

    name: str
    arguments: Any = None
    compare_args: bool = True
    key: Any = field(default=None, repr=False, compare=False)


def json_key(value: Any) -> Any:
    """A hashable form of a JSON value, equal for values equal as JSON: `true` is not `1`,
    `1` is `1.0`, a tuple or a 1-D array is a list, an object's key whose value is null
    counts as absent (so what a Parquet round trip of a column of dicts adds is no change)."""
    if isinstance(value, bool | np.bool_):
        return ("bool", bool(value))
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ("number", value)  # 1 and 1.0 are equal and hash alike
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null",)
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, list | tuple):
        return ("array", tuple(json_key(v) for v in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((k, json_key(v)) for k, v in value.items() if v is not None))
    return ("other", safe_repr(value))


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON (see `json_key`).

    Example:
        >>> json_equal({"n": 1, "tags": ("a",)}, {"tags": ["a"], "n": 1.0}), json_equal(True, 1)
        (True, False)
        >>> json_equal({"q": "x", "page": None}, {"q": "x"})
        True
    """
    return bool(json_key(a) == json_key(b))


def _plain(value: Any) -> Any:
    """A JSON value as Python's plain types: arrays as lists, an object's null keys left out
    (a Parquet round trip of a column of dicts gives arrays, and every key of every row)."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _arguments(value: Any, where: str) -> Any:
    """Expected arguments: a dict (or any JSON value), or JSON text of one."""
    if not isinstance(value, str):
        return _plain(value)
    try:
        return _plain(json.loads(value))
    except ValueError:
        raise ConfigurationError(
            f"{where}: the arguments {safe_repr(value)} are not JSON text; give a dict "
            'such as {"city": "Paris"} or its JSON text'
        ) from None


def expected_calls(value: Any, where: str) -> list[ExpectedCall]:
    """The expected calls of one case: a list of tool names or `{"name", "arguments"}` dicts
    (or JSON text of such a list). Anything else is a `ConfigurationError` naming `where`.

    Example:
        >>> expected_calls(["search", {"name": "open", "arguments": {"url": "a"}}], "case 1")
        [ExpectedCall(name='search', arguments=None, compare_args=False), \
ExpectedCall(name='open', arguments={'url': 'a'}, compare_args=True)]
    """
    items = value
    if isinstance(value, str):
        try:
            items = json.loads(value)
        except ValueError:
            items = value
    if isinstance(items, np.ndarray) and items.ndim == 1:
        items = items.tolist()
    if not isinstance(items, list | tuple):
        raise ConfigurationError(
            f"{where}: the expected tool calls must be a list of tool names or of "
            f'{{"name": ..., "arguments": ...}} dicts (or JSON text of one), got '
            f"{safe_repr(value)}"
        )
    out: list[ExpectedCall] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(ExpectedCall(item, None, False))
            continue
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            unknown = sorted(str(k) for k in item if k not in ("name", "arguments"))
            if unknown:
                raise ConfigurationError(
                    f"{where}: expected call {i} has keys {', '.join(map(repr, unknown))}; an "
                    'expected call has only "name" and "arguments"'
                )
            if item.get("arguments") is None:  # absent (or null): the name only
                out.append(ExpectedCall(item["name"], None, False))
            else:
                args = _arguments(item["arguments"], f"{where}, expected call {i}")
                out.append(ExpectedCall(item["name"], args, True, json_key(args)))
            continue
        raise ConfigurationError(
            f"{where}: expected call {i} is {safe_repr(item)}; each expected call is a tool "
            'name or a {"name": ..., "arguments": ...} dict'
        )
    return out


def calls_made(transcript: Transcript) -> list[ExpectedCall]:
    """Every tool call of a transcript, in order; arguments parsed from their JSON text (text
    that is not JSON is kept as it is, so it equals no dict)."""
    out: list[ExpectedCall] = []
    for m in transcript.messages:
        for call in m.tool_calls or ():
            try:
                args: Any = json.loads(call.function.arguments)
                key = json_key(args)
            except ValueError:
                args = call.function.arguments
                key = ("text", args)  # equal to no JSON value
            out.append(ExpectedCall(call.function.name, args, True, key))
    return out


def _same_name(e: ExpectedCall, a: ExpectedCall) -> bool:
    return True  # args="ignore"


def _same_args(e: ExpectedCall, a: ExpectedCall) -> bool:
    return not e.compare_args or e.key == a.key  # args="exact"


def _matching_by_key(
    expected: Sequence[ExpectedCall], made: Sequence[ExpectedCall], by_args: bool
) -> dict[int, int]:
    """A largest matching for args="exact" (`by_args`) or "ignore", in linear time.

    First each expected call with arguments takes a call made with the same name and
    arguments, then each name-only one any call left of its name. That is a largest
    matching: an expected call with arguments can stand for no more calls than one without
    of its name, so matching it first never costs a match.
    """
    by_key: dict[tuple[str, Any], list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for j in range(len(made) - 1, -1, -1):  # popped from the end: the first call first
        a = made[j]
        by_key.setdefault((a.name, a.key), []).append(j)
        by_name.setdefault(a.name, []).append(j)
    pairs: dict[int, int] = {}
    used: set[int] = set()
    later: list[int] = []
    for i, e in enumerate(expected):
        if not (by_args and e.compare_args):
            later.append(i)
            continue
        free = by_key.get((e.name, e.key))
        if free:
            pairs[i] = j = free.pop()
            used.add(j)
    for i in later:
        pool = by_name.get(expected[i].name)
        while pool and pool[-1] in used:
            pool.pop()
        if pool:
            pairs[i] = j = pool.pop()
            used.add(j)
    return pairs


def _matching(
    expected: Sequence[ExpectedCall],
    made: Sequence[ExpectedCall],
    same: Callable[[ExpectedCall, ExpectedCall], bool],
) -> dict[int, int]:
    """A largest matching of expected calls to calls made (expected index → made index), each
    call made used once: by key for the built-in rules, else by augmenting paths (a user's
    function is asked only about calls of the same name)."""
    if same is _same_name or same is _same_args:
        return _matching_by_key(expected, made, same is _same_args)
    edges = [[j for j, a in enumerate(made) if a.name == e.name and same(e, a)] for e in expected]
    owner: dict[int, int] = {}  # made index → expected index

    def augment(root: int) -> bool:  # one augmenting path from `root`, depth first, no recursion
        for j in edges[root]:  # a free call first: most expected calls need no path
            if j not in owner:
                owner[j] = root
                return True
        seen: set[int] = set()
        stack, tried, chosen = [root], [iter(edges[root])], []
        while stack:
            for j in tried[-1]:
                if j in seen:
                    continue
                seen.add(j)
                chosen.append(j)
                if j not in owner:  # free: each expected call on the path takes its choice
                    for i, k in zip(stack, chosen, strict=True):
                        owner[k] = i
                    return True
                stack.append(owner[j])
                tried.append(iter(edges[owner[j]]))
                break
            else:  # nothing left to try from here
                stack.pop()
                tried.pop()
                if chosen:
                    chosen.pop()
        return False

    for i in range(len(expected)):
        augment(i)
    return {i: j for j, i in owner.items()}


def matches(
    expected: Sequence[ExpectedCall],
    made: Sequence[ExpectedCall],
    mode: Mode,
    same: Callable[[ExpectedCall, ExpectedCall], bool],
) -> tuple[bool, str]:
    """Whether the calls made match the expected ones under `mode`, and why not (or "")."""
    if mode == "strict":
        for i, (e, a) in enumerate(zip(expected, made, strict=False)):
            if e.name != a.name or not same(e, a):
                what = "arguments differ" if e.name == a.name else f"expected {e.name!r}"
                return False, f"call {i} ({a.name!r}): {what}"
        if len(expected) != len(made):
            return False, f"expected {len(expected)} calls, {len(made)} were made"
        return True, ""
    pairs = _matching(expected, made, same)
    missing = [e.name for i, e in enumerate(expected) if i not in pairs]
    used = set(pairs.values())
    extra = [a.name for j, a in enumerate(made) if j not in used]
    ok = {
        "unordered": not missing and not extra,
        "subset": not missing,
        "superset": not extra,
    }[mode]
    if ok:
        return True, ""
    why = []
    if missing and mode != "superset":
        why.append(f"not made: {', '.join(missing[:10])}" + (" …" if len(missing) > 10 else ""))
    if extra and mode != "subset":
        why.append(f"not expected: {', '.join(extra[:10])}" + (" …" if len(extra) > 10 else ""))
    return False, "; ".join(why)


def _rule(args: ArgsRule) -> Callable[[ExpectedCall, ExpectedCall], bool]:
    if isinstance(args, str) and args == "ignore":
        return _same_name
    if isinstance(args, str) and args == "exact":
        return _same_args
    if isinstance(args, str) or not callable(args):
        raise ConfigurationError(
            f"args must be 'exact', 'ignore' or a function (expected, actual) -> bool, got {args!r}"
        )
    fn = args

    def by_user(e: ExpectedCall, a: ExpectedCall) -> bool:
        if not e.compare_args:
            return True
        said = fn(e.arguments, a.arguments)
        if not isinstance(said, bool | np.bool_):
            raise TypeError(
                f"tool_calls_match args= function returned {safe_repr(said)}, not a bool"
            )
        return bool(said)

    return by_user


def _check_column(column: str) -> Callable[[Any, Sequence[str]], None]:
    def check(data: Any, case_ids: Sequence[str]) -> None:
        if column not in data.columns:
            shown = ", ".join(map(str, data.columns)) or "(none)"
            raise ConfigurationError(
                f"eb.tool_calls_match: expected={column!r} is not a column of the data; "
                f"columns: {shown}"
            )
        for case_id, value in zip(case_ids, data[column].tolist(), strict=True):
            expected_calls(value, f"eb.tool_calls_match: case {case_id!r}, column {column!r}")

    return check


def tool_calls_match(
    definition: ScoreDefinition | str,
    expected: str,
    *,
    mode: Mode = "strict",
    args: ArgsRule = "exact",
) -> Scorer:
    """A scorer: 1.0 when the sample's tool calls match the expected ones, else 0.0.

    Args:
        definition: The score (a `ScoreDefinition`, or a name: then the definition gets
            `Grader(kind="rule", id="tool_calls_match")`).
        expected: The column holding each case's expected calls: a list of tool names (their
            arguments are not compared) or of `{"name": ..., "arguments": ...}` dicts
            (arguments a dict or its JSON text; a dict without "arguments", or with null
            ones, compares the name only), or JSON text of such a list. A value that is
            none of these is a `ConfigurationError` naming the case, before any case runs.
        mode: "strict": the same calls in the same order; "unordered": the same calls in any
            order (the same multiset); "subset": every expected call was made, other calls
            are allowed; "superset": no call was made outside the expected ones (each
            expected call accounts for one call made; some may not be made).
        args: "exact": arguments equal as JSON values (the calls' JSON text parsed; `true`
            is not `1`, a key whose value is null counts as absent); "ignore": names only;
            or a function `(expected, actual) -> bool` given both calls' arguments.

    A sample without a transcript is `Unscored("no_transcript")`. When the value is 0.0,
    the rationale says which calls differ.

    Example:
        >>> import evalbook as eb
        >>> m = eb.tool_calls_match("tools.ok", "expected_calls", mode="subset")
        >>> m.definitions[0].name, m.definitions[0].grader.id
        ('tools.ok', 'tool_calls_match')
    """
    if mode not in MODES:
        raise ConfigurationError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    same = _rule(args)
    if not isinstance(expected, str) or not expected:
        raise ConfigurationError(
            f"expected must name the column holding the expected calls, not {expected!r}"
        )
    if isinstance(definition, ScoreDefinition):
        if definition.derived:
            raise ConfigurationError(
                f"score {definition.name!r} is derived (combine=) and cannot be bound to "
                "eb.tool_calls_match"
            )
        d = definition
    elif isinstance(definition, str):
        d = define_score(definition, grader=Grader(kind="rule", id="tool_calls_match"))
    else:
        raise ConfigurationError(
            f"eb.tool_calls_match() takes a score definition or a score name first, "
            f"not {definition!r}"
        )
    by_name = expected.isidentifier() and not keyword.iskeyword(expected)
    by_name = by_name and expected not in _SPECIAL
    where = f"eb.tool_calls_match: column {expected!r}"

    def score(**kw: Any) -> Score | Unscored:
        transcript = kw["transcript"]
        if transcript is None:
            return Unscored(NO_TRANSCRIPT)
        value = kw[expected] if by_name else kw["row"][expected]
        ok, why = matches(expected_calls(value, where), calls_made(transcript), mode, same)
        return Score(1.0 if ok else 0.0, rationale=why or None)

    params = [inspect.Parameter("transcript", inspect.Parameter.KEYWORD_ONLY)]
    params.append(inspect.Parameter(expected if by_name else "row", inspect.Parameter.KEYWORD_ONLY))
    score.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    name = f"tool_calls_match({d.name})"
    score.__name__ = score.__qualname__ = name
    return Scorer(score, [d], name=name, check=_check_column(expected))
