"""Everything `run()` checks before any case runs, resolved into a plan the engine follows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._errors import ConfigurationError, ScorerSignatureError
from .._model._definitions import Combine, ScoreDefinition
from .._model._reducers import reducer_k
from .._model._scorers import Scorer, as_scorers, func_name
from .._util._callables import is_async
from .._util._text import TextGate
from ._binding import Binding, bind

__all__ = ["BoundScorer", "Derived", "Plan", "check_epochs", "make_plan"]

TASK_NAMES = ("row", "case_id", "epoch", "ctx")
SCORER_NAMES = ("output", "row", "case_id", "epoch", "transcript")


@dataclass(frozen=True, slots=True)
class BoundScorer:
    scorer: Scorer
    binding: Binding
    positions: tuple[int, ...]  # where its definitions sit in the run's definition list
    is_async: bool


@dataclass(frozen=True, slots=True)
class Derived:
    position: int
    combine: Combine
    components: tuple[tuple[str, int], ...]  # (name, position) of every score it reads


@dataclass(frozen=True, slots=True)
class Plan:
    definitions: tuple[ScoreDefinition, ...]
    index: dict[str, int]
    scorers: tuple[BoundScorer, ...]
    derived: tuple[Derived, ...]  # in evaluation (topological) order
    task: Callable[..., Any] | None
    task_binding: Binding | None
    task_is_async: bool
    output_column: str | None
    case_ids: list[str]
    columns: dict[Any, list[Any]]  # the columns some case needs, as Python lists
    row_keys: tuple[Any, ...]  # every column label, for the `row` dict
    needed: tuple[str, ...]  # columns some function binds by name
    wants_row: bool
    # the input data as the run keeps it (`run.data`, data.parquet): text cleaned, see make_plan
    data: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the run's text boundary: the run's `Results` takes it too, so the run warns once
    text: TextGate = field(default_factory=TextGate)


def case_ids_of(data: pd.DataFrame, text: TextGate | None = None) -> list[str]:
    """Case ids: the `id` column if present, else the index, as strings; no duplicates.

    A lone surrogate in an id is replaced by its escape (`text`, the run's boundary, warns),
    before the duplicate check: two ids that differ only there would be one id in the tables.
    """
    raw = data["id"].tolist() if "id" in data.columns else data.index.tolist()
    _check_missing_ids(data, raw)
    ids = [str(x) for x in raw]
    if not "".join(ids).isascii():  # one C-level look for the common case
        gate = TextGate() if text is None else text
        ids = [gate(i, "a case id") for i in ids]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dups: list[str] = []
        for i in ids:
            if i in seen and i not in dups:
                dups.append(i)
            seen.add(i)
        where = "the 'id' column" if "id" in data.columns else "the index"
        shown = ", ".join(repr(d) for d in dups[:5]) + (" …" if len(dups) > 5 else "")
        raise ConfigurationError(
            f"duplicate case ids in {where}: {shown}. Every case needs a unique id "
            "(add an 'id' column or call data.reset_index(drop=True))"
        )
    return ids


def _check_missing_ids(data: pd.DataFrame, raw: list[Any]) -> None:
    """A missing id (NaN, None, NaT, pd.NA) would become the id 'nan' or 'None': refuse it."""
    missing = pd.isna(pd.Series(raw, dtype=object)).to_numpy()
    if not missing.any():
        return
    where = "the 'id' column" if "id" in data.columns else "the index"
    rows = [i for i, m in enumerate(missing) if m]
    shown = ", ".join(f"row {i} (index {data.index[i]!r})" for i in rows[:5])
    more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
    raise ConfigurationError(
        f"missing case id in {where}: {shown}{more}. Every case needs an id: fill it in, "
        "drop the row, or call data.reset_index(drop=True) and drop the 'id' column"
    )


def _check_is_list(value: Any, option: str, example: str) -> None:
    """`scorers=exact` / `scores=d`: one item where a list is expected (a raw TypeError else)."""
    if isinstance(value, (Scorer, ScoreDefinition, str, bytes)) or callable(value):
        raise ConfigurationError(f"{option}= takes a list: {option}=[{example}]")


def _check_shadowed(
    data: pd.DataFrame, binding: Binding, what: str, allow: Sequence[str], output: str | None
) -> None:
    """A column named like a special name (`case_id`, `row`, ...) a function would receive.

    The function gets one value under that name, so either the column or the special value
    would be hidden. Only names the function actually receives (a parameter, or any name
    with **kwargs) are refused; a column nobody reads under that name is harmless. A scorer
    reading `output` from `output_column="output"` is the same value, not a clash.
    """
    received = {src for _, src in binding.params} | set(binding.positional)
    for name in allow:
        if name not in data.columns or name == output == "output":
            continue
        if name in received or binding.var_kw:
            raise ConfigurationError(
                f"the data has a column named {name!r} and {what} takes {name!r}: the column "
                f"and evalbook's own {name!r} argument would hide one another; rename the "
                f"column, e.g. data.rename(columns={{{name!r}: '{name}_value'}})"
            )


def _resolve_definitions(
    scorers: Sequence[Scorer], scores: Iterable[ScoreDefinition | str]
) -> tuple[list[ScoreDefinition], dict[str, int]]:
    defs: list[ScoreDefinition] = []
    index: dict[str, int] = {}

    def add(d: ScoreDefinition) -> None:
        if d.name in index:
            if defs[index[d.name]] != d:
                raise ConfigurationError(
                    f"two different score definitions are named {d.name!r}; "
                    "give each score a unique name"
                )
            return
        if d.combine is not None:
            for component in d.combine.all_definitions():
                add(component)
        index[d.name] = len(defs)
        defs.append(d)

    bound_by: dict[str, str] = {}
    for s in scorers:
        for d in s.definitions:
            if d.name in bound_by:
                raise ConfigurationError(
                    f"score {d.name!r} is bound to two scorers ({bound_by[d.name]!r} and "
                    f"{s.name!r}); bind each score to one scorer"
                )
            if d.derived:
                raise ConfigurationError(
                    f"score {d.name!r} is derived (combine=) and cannot also be bound to "
                    f"scorer {s.name!r}"
                )
            bound_by[d.name] = s.name
            add(d)
    for item in scores:
        if isinstance(item, ScoreDefinition):
            add(item)
        elif isinstance(item, str):
            if item not in index:
                raise ConfigurationError(
                    f"scores=[...] names {item!r}, which no scorer defines; pass the "
                    "ScoreDefinition from eb.define_score() instead of its name"
                )
        else:
            raise ConfigurationError(
                f"scores=[...] takes score definitions from eb.define_score(), not {item!r}"
            )
    primaries = [d.name for d in defs if d.primary]
    if len(primaries) > 1:
        raise ConfigurationError(
            f"a run has at most one primary score, got {len(primaries)}: {', '.join(primaries)}"
        )
    return defs, index


def _derived_order(defs: Sequence[ScoreDefinition], index: dict[str, int]) -> list[Derived]:
    order: list[Derived] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(d: ScoreDefinition, path: tuple[str, ...]) -> None:
        if d.combine is None or state.get(d.name) == 2:
            return
        if state.get(d.name) == 1:
            raise ConfigurationError(f"derived scores form a cycle: {' -> '.join(path)}")
        state[d.name] = 1
        components: list[tuple[str, int]] = []
        for name in dict.fromkeys(d.combine.names()):
            if name not in index:
                known = ", ".join(index) or "(none)"
                raise ConfigurationError(
                    f"score {d.name!r} combines {name!r}, which is not a score of this run. "
                    f"Known scores: {known}"
                )
            visit(defs[index[name]], (*path, name))
            components.append((name, index[name]))
        state[d.name] = 2
        order.append(Derived(index[d.name], d.combine, tuple(components)))

    for d in defs:
        visit(d, (d.name,))
    return order


def _input_data(data: pd.DataFrame, text: TextGate) -> pd.DataFrame:
    """The input data with lone surrogates replaced in its text: values, index and labels.

    Only object columns are looked at (pandas' `str` dtype and numbers cannot hold a lone
    surrogate). The caller's frame is never changed: it comes back as it is when nothing
    needed cleaning (the common case, no copy), else as a shallow copy with new columns.
    """
    frame = data
    for pos, label in enumerate(data.columns):
        column = data.iloc[:, pos]
        if column.dtype != object:
            continue
        values = column.tolist()
        cleaned = text(values, f"input column {label!r}")
        if cleaned is not values:
            frame = data.copy(deep=False) if frame is data else frame
            # a Series keeps the column object (an array would be inferred as pandas' `str`)
            frame.isetitem(pos, pd.Series(cleaned, index=data.index, dtype=object))  # type: ignore[arg-type]
    if data.index.dtype == object and not isinstance(data.index, pd.MultiIndex):
        values = data.index.tolist()
        cleaned = text(values, "the input data's index")
        if cleaned is not values:
            frame = data.copy(deep=False) if frame is data else frame
            frame.index = pd.Index(cleaned, dtype=object, name=text(data.index.name, "a name"))
    labels = list(data.columns)
    cleaned = text(labels, "a column name")
    if cleaned is not labels:
        frame = data.copy(deep=False) if frame is data else frame
        frame.columns = pd.Index(cleaned, dtype=object)
    return frame


def _bound_scorer(s: Scorer, names: Sequence[str], index: dict[str, int]) -> BoundScorer:
    b = bind(s.fn, names, kind="scorer", allow=SCORER_NAMES)
    positions = tuple(index[d.name] for d in s.definitions)
    return BoundScorer(s, b, positions, is_async(s.fn))


def make_plan(
    data: pd.DataFrame,
    task: Callable[..., Any] | None,
    scorers: Iterable[Scorer | Callable[..., Any]],
    scores: Iterable[ScoreDefinition | str],
    output_column: str | None,
    cluster: str | None = None,
) -> Plan:
    """Check the whole configuration and resolve it; raises `ConfigurationError` on any problem.

    Input text enters the run here: case ids and the input data's text (object columns, the
    index, column names) have each lone surrogate replaced by its escape, with one warning
    for the run (`Plan.text`, which the run's `Results` shares). Tasks and scorers see that
    text, and it is what `Plan.data` holds for `run.data` and data.parquet. (A `str` column
    cannot hold a lone surrogate, so the common input costs one dtype check per column.)
    """
    text = TextGate()
    data = _input_data(data, text)
    output_column = text(output_column, "output_column=")  # named as its column now is
    if task is not None and output_column is not None:
        raise ConfigurationError(
            "give either task= (to produce outputs) or output_column= (to score existing "
            "outputs), not both"
        )
    if task is None and output_column is None:
        raise ConfigurationError(
            "nothing produces an output: pass task=your_function, or output_column='name' "
            "to score outputs already in the DataFrame"
        )
    if task is not None and not callable(task):
        raise ConfigurationError(f"task= must be a function, not {task!r}")
    if output_column is not None and output_column not in data.columns:
        raise ConfigurationError(
            f"output_column={output_column!r} is not a column; columns: "
            f"{', '.join(map(str, data.columns))}"
        )
    if cluster is not None and cluster not in data.columns:  # summary() would fail at the end
        raise ConfigurationError(
            f"cluster={cluster!r} is not a column of the data; columns: "
            f"{', '.join(map(str, data.columns)) or '(none)'}"
        )
    _check_is_list(scorers, "scorers", getattr(scorers, "name", None) or "exact")
    _check_is_list(scores, "scores", repr(scores) if isinstance(scores, str) else "score")
    ids = case_ids_of(data, text)
    scorer_list = as_scorers(scorers)
    defs, index = _resolve_definitions(scorer_list, scores)
    derived = _derived_order(defs, index)
    names = [c for c in data.columns if isinstance(c, str)]
    for s in scorer_list:  # what a scorer checks of the data (eb.tool_calls_match: its column)
        if s.check is not None:
            s.check(data, ids)

    try:
        task_binding = bind(task, names, kind="task", allow=TASK_NAMES) if task else None
        bound: list[BoundScorer] = []
        for s in scorer_list:
            bound.append(_bound_scorer(s, names, index))
    except ScorerSignatureError as exc:
        if len(data.columns) and len(data):
            raise
        # an empty frame: the missing parameter is a symptom, say the cause
        shape = f"{len(data)} rows and {len(data.columns)} columns"
        raise ScorerSignatureError(f"{exc} Note: the DataFrame has {shape}.") from None
    if task_binding is not None:
        what = f"task {func_name(task)!r}"  # type: ignore[arg-type]
        _check_shadowed(data, task_binding, what, TASK_NAMES, output_column)
    for b in bound:
        what = f"scorer {b.scorer.name!r}"
        _check_shadowed(data, b.binding, what, SCORER_NAMES, output_column)

    bindings = [b.binding for b in bound] + ([task_binding] if task_binding else [])
    wants_row = any(b.wants_row for b in bindings)
    named = {src for b in bindings for _, src in b.params} | {
        n for b in bindings for n in b.positional
    }
    if data.columns.has_duplicates:
        dups = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
        raise ConfigurationError(f"duplicate column names: {', '.join(dups)}; rename them first")
    takes_all = any(b.var_kw for b in bindings)
    needed = tuple(c for c in names if takes_all or c in named)
    loaded: list[Any] = list(data.columns) if wants_row else list(needed)
    if output_column is not None and output_column not in loaded:
        loaded.append(output_column)
    columns = {c: data[c].tolist() for c in loaded}
    return Plan(
        definitions=tuple(defs),
        index=index,
        scorers=tuple(bound),
        derived=tuple(derived),
        task=task,
        task_binding=task_binding,
        task_is_async=task is not None and is_async(task),
        output_column=output_column,
        case_ids=ids,
        columns=columns,
        row_keys=tuple(data.columns),
        needed=needed,
        wants_row=wants_row,
        data=data,
        text=text,
    )


def check_epochs(definitions: Iterable[ScoreDefinition], epochs: int) -> None:
    """Raise ConfigurationError when a pass@k / pass^k score has k > epochs.

    Called by the runner before any case runs (a run and a rescore), like every check here.
    """
    short = [(d.name, d.reducer, k) for d in definitions if (k := reducer_k(d.reducer))]
    short = [s for s in short if s[2] > epochs]
    if not short:
        return
    needed = max(k for _, _, k in short)
    which = ", ".join(f"{name!r} ({reducer})" for name, reducer, _ in short)
    scores = "score" if len(short) == 1 else "scores"
    raise ConfigurationError(
        f"{scores} {which} need{'s' if len(short) == 1 else ''} epochs ≥ {needed}, but the "
        f"run has epochs={epochs}; "
        f"run with epochs={needed} (or more), or use a smaller k"
    )
