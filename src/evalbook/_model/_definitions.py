"""Score definitions, graders and the combinators that derive one score from others."""

from __future__ import annotations

import contextlib
import difflib
import math
import re
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._errors import ConfigurationError
from .._util._text import TextGate, clean
from ._reducers import OLD_NAMES, check_reducer, reducer_k

__all__ = [
    "GRADER_KINDS",
    "AllOf",
    "AnyOf",
    "AtLeast",
    "Grader",
    "MeanOf",
    "ScoreDefinition",
    "all_of",
    "any_of",
    "at_least",
    "define_score",
    "mean_of",
    "reading_stored",
]

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class _Frozen(BaseModel):
    # defer_build: validators are built on first use, not at `import evalbook` (~0.1 s saved)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def _entering(data: Any, what: str, key: str) -> Any:
    """A model's fields as text enters evalbook: lone surrogates replaced, one warning
    naming the model by its `key` field (a score's name)."""
    if not isinstance(data, dict):
        return data
    name = clean(data.get(key))  # clean: the warning names it
    return TextGate(scope=None)(data, what if name is None else f"{what} {name!r}")


# Who grades a score: a rule (exact match, a regex), a model (a judge), a person, or code
# (a test suite, a checker program)
GRADER_KINDS = ("rule", "model", "human", "code")
# True while stored runs are read: a grader is read as it was written, whatever its kind
_READING_STORED: ContextVar[bool] = ContextVar("evalbook_reading_stored", default=False)


@contextlib.contextmanager
def reading_stored() -> Iterator[None]:
    """Within it, definitions and graders are read as stored: a kind made before the kinds
    were checked (or by another writer) loads as written rather than failing the read."""
    token = _READING_STORED.set(True)
    try:
        yield
    finally:
        _READING_STORED.reset(token)


class Grader(_Frozen):
    """Who or what grades a score.

    `reducer` is how a model grader's votes became one value, in the words of
    `eb.judge(reducer=...)`: `"median"`, `"mean"`, `"min"`, `"max"` or `"mode"` (the old
    `"majority"` reads as `"mode"`).

    Example:
        >>> import evalbook as eb
        >>> eb.Grader(kind="model", id="judge", model="gpt-x", votes=3, reducer="median").kind
        'model'
    """

    kind: str
    id: str
    model: str | None = None
    version: str | None = None
    votes: int | None = None
    reducer: str | None = None

    def __init__(self, kind: str, id: str, **data: Any) -> None:
        # checked when a user makes one; a stored grader is read as it was written
        if kind not in GRADER_KINDS and not _READING_STORED.get():
            near = difflib.get_close_matches(str(kind), GRADER_KINDS, n=1)
            raise ConfigurationError(
                f"Grader kind {kind!r} is not one of {', '.join(GRADER_KINDS)}"
                + (f": did you mean kind={near[0]!r}?" if near else "")
            )
        fields: dict[str, Any] = {"kind": kind, "id": id, **data}
        super().__init__(**fields)

    @model_validator(mode="before")
    @classmethod
    def _clean_text(cls, data: Any) -> Any:
        return _entering(data, "grader", "id")

    @field_validator("reducer", mode="before")
    @classmethod
    def _new_name(cls, reducer: Any) -> Any:
        # a run stored with a judge's reducer="majority" reads as "mode" (its one name now),
        # so that it resumes and compares like a run written since
        return OLD_NAMES.get(reducer, reducer) if isinstance(reducer, str) else reducer


# A component of a derived score: a score name, or another combinator.
Component: TypeAlias = "str | AtLeast | AllOf | AnyOf | MeanOf"


def _component(item: object, where: str) -> str | _Combinator:
    if isinstance(item, ScoreDefinition):
        return item.name
    if isinstance(item, str | _Combinator):
        return item
    raise ConfigurationError(
        f"{where} takes score definitions, score names or combinators, not {item!r}"
    )


class _Combinator(_Frozen):
    """Base of the combinators; evaluates on the component values of one case."""

    # Definitions passed as objects, kept so a run can include them automatically.
    definitions: tuple[ScoreDefinition, ...] = Field(default=(), exclude=True, repr=False)

    def names(self) -> Iterator[str]:
        """Yield every score name this expression reads, depth first."""
        for item in self._items():
            if isinstance(item, str):
                yield item
            else:
                yield from item.names()

    def all_definitions(self) -> Iterator[ScoreDefinition]:
        """Yield every definition object given to this expression, depth first."""
        yield from self.definitions
        for item in self._items():
            if isinstance(item, _Combinator):
                yield from item.all_definitions()

    @abstractmethod
    def _items(self) -> tuple[str | _Combinator, ...]:
        """The direct components."""

    @abstractmethod
    def evaluate(self, values: Mapping[str, float]) -> float:
        """Return the derived value in [0, 1] from the component values of one case."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description of the expression."""
        return self.model_dump(mode="json")


def _value(item: str | _Combinator, values: Mapping[str, float]) -> float:
    return values[item] if isinstance(item, str) else item.evaluate(values)


def _holds(item: str | _Combinator, values: Mapping[str, float]) -> bool:
    # A bare requirement holds iff its value is exactly 1.
    return _value(item, values) == 1.0


class AtLeast(_Combinator):
    """Holds (1.0) when a score's value is at least `threshold` (inclusive), else 0.0."""

    op: Literal["at_least"] = "at_least"
    score: str | AllOf | AnyOf | MeanOf | AtLeast
    threshold: float

    @field_validator("threshold")
    @classmethod
    def _check_threshold(cls, t: float) -> float:
        if not (math.isfinite(t) and 0.0 <= t <= 1.0):
            raise ValueError(f"at_least threshold must be in [0, 1], got {t!r}")
        return t

    def _items(self) -> tuple[str | _Combinator, ...]:
        return (self.score,)

    def evaluate(self, values: Mapping[str, float]) -> float:
        return 1.0 if _value(self.score, values) >= self.threshold else 0.0


class AllOf(_Combinator):
    """Holds (1.0) when every requirement holds, else 0.0."""

    op: Literal["all_of"] = "all_of"
    items: tuple[str | AtLeast | AllOf | AnyOf | MeanOf, ...]

    def _items(self) -> tuple[str | _Combinator, ...]:
        return self.items

    def evaluate(self, values: Mapping[str, float]) -> float:
        return 1.0 if all(_holds(i, values) for i in self.items) else 0.0


class AnyOf(_Combinator):
    """Holds (1.0) when at least one requirement holds, else 0.0."""

    op: Literal["any_of"] = "any_of"
    items: tuple[str | AtLeast | AllOf | AnyOf | MeanOf, ...]

    def _items(self) -> tuple[str | _Combinator, ...]:
        return self.items

    def evaluate(self, values: Mapping[str, float]) -> float:
        return 1.0 if any(_holds(i, values) for i in self.items) else 0.0


class MeanOf(_Combinator):
    """The weighted mean of component values; weights are normalised to sum to 1."""

    op: Literal["mean_of"] = "mean_of"
    items: tuple[str | AtLeast | AllOf | AnyOf | MeanOf, ...]
    weights: tuple[float, ...]

    @model_validator(mode="after")
    def _check_weights(self) -> MeanOf:
        if len(self.weights) != len(self.items):
            raise ValueError(
                f"mean_of got {len(self.items)} scores but {len(self.weights)} weights"
            )
        if any(not (math.isfinite(w) and w >= 0) for w in self.weights) or sum(self.weights) <= 0:
            raise ValueError(f"mean_of weights must be finite, >= 0 and not all 0: {self.weights}")
        return self

    def _items(self) -> tuple[str | _Combinator, ...]:
        return self.items

    def evaluate(self, values: Mapping[str, float]) -> float:
        total = sum(self.weights)
        value = sum(w * _value(i, values) for i, w in zip(self.items, self.weights, strict=True))
        return min(1.0, max(0.0, value / total))  # guards float rounding only


Combine: TypeAlias = AtLeast | AllOf | AnyOf | MeanOf


class ScoreDefinition(_Frozen):
    """A named, labelled score. Build it with `eb.define_score`."""

    name: str
    label: str | dict[str, str] | None = None
    description: str | None = None
    primary: bool = False
    combine: AtLeast | AllOf | AnyOf | MeanOf | None = None
    errors: Literal["exclude", "zero"] = "exclude"
    grader: Grader | None = None
    # How a case's epochs become its value (docs/repeats.md); a definition logged before
    # reducers existed has no such field and reads as "mean".
    reducer: str = "mean"

    @model_validator(mode="before")
    @classmethod
    def _clean_text(cls, data: Any) -> Any:
        # the label and description (the name is checked below); a grader cleans its own
        return _entering(data, "score", "name")

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(
                f"score name {name!r} is not allowed: use letters, digits, '_', '.' and '-' only"
            )
        return name

    @field_validator("reducer", mode="before")
    @classmethod
    def _check_reducer(cls, reducer: Any) -> str:
        try:
            return check_reducer(reducer)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _check_binary(self) -> ScoreDefinition:
        # pass@k / pass^k count passes: a derived score under one must be 0/1 per sample
        if reducer_k(self.reducer) is not None and isinstance(self.combine, MeanOf):
            raise ValueError(
                f"reducer {self.reducer} needs 0/1 values, but score {self.name!r} is a "
                "mean_of(...), which is not; derive it with all_of, any_of or at_least, "
                'or use reducer="mean"'
            )
        return self

    @property
    def derived(self) -> bool:
        """True when the score is computed from other scores (`combine=`)."""
        return self.combine is not None

    def display_label(self, locale: str = "en") -> str:
        """The label to show: the locale's text, else English, else the first, else the name."""
        if self.label is None:
            return self.name
        if isinstance(self.label, str):
            return self.label
        for key in (locale, "en"):
            if key in self.label:
                return self.label[key]
        return next(iter(self.label.values()), self.name)

    def __hash__(self) -> int:
        return hash(self.name)


def define_score(
    name: str,
    *,
    label: str | Mapping[str, str] | None = None,
    description: str | None = None,
    primary: bool = False,
    combine: Combine | None = None,
    errors: Literal["exclude", "zero"] = "exclude",
    grader: Grader | None = None,
    reducer: str = "mean",
) -> ScoreDefinition:
    """Define a named score.

    Args:
        name: Unique name, letters, digits, `_`, `.` and `-`.
        label: Display text, or a `{locale: text}` map.
        description: Longer help text.
        primary: The run's headline score (at most one per run).
        combine: Derive the score from others (`all_of`, `any_of`, `mean_of`, `at_least`).
        errors: What an error record counts as: `"exclude"` (not counted) or `"zero"`.
        grader: Who grades it.
        reducer: How a case's counted epoch values become the case's value (with
            `eb.run(..., epochs=K)`): `"mean"`, `"median"`, `"min"`, `"max"`, `"mode"` (the
            smallest of the most frequent values), `eb.pass_at(k)` or `eb.pass_hat(k)`
            (values must be 0/1). A derived score is combined per sample from its
            components' sample values, then reduced by its own reducer; the components'
            reducers do not enter it. So pass@k / pass^k over a `mean_of` (not 0/1) is a
            ConfigurationError; `all_of`, `any_of` and `at_least` are 0/1.

    Example:
        >>> import evalbook as eb
        >>> correct = eb.define_score("correct", label="Correct answer")
        >>> passed = eb.define_score("pass", combine=eb.all_of(correct), primary=True)
        >>> passed.derived
        True
    """
    if type(primary) is not bool:  # pydantic would read "yes", 1 or "false" as a bool
        raise ConfigurationError(
            f"define_score({name!r}): primary= takes True or False, not {primary!r}"
        )
    try:
        return ScoreDefinition(
            name=name,
            label=dict(label) if isinstance(label, Mapping) else label,
            description=description,
            primary=primary,
            combine=combine,
            errors=errors,
            grader=grader,
            reducer=reducer,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ConfigurationError(_first_error(exc)) from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        items = errors()
        if items:
            loc = ".".join(str(p) for p in items[0].get("loc", ()))
            msg = str(items[0].get("msg", exc)).removeprefix("Value error, ")
            return f"{loc}: {msg}" if loc else msg
    return str(exc)


def _build(cls: type[_Combinator], where: str, **fields: Any) -> Any:
    try:
        return cls(**fields)
    except ValueError as exc:
        raise ConfigurationError(f"{where}: {_first_error(exc)}") from None


def _defs(items: tuple[object, ...]) -> tuple[ScoreDefinition, ...]:
    return tuple(i for i in items if isinstance(i, ScoreDefinition))


def all_of(*requirements: ScoreDefinition | str | Combine) -> AllOf:
    """Holds when every requirement holds (a bare score holds iff its value is 1).

    Example:
        >>> import evalbook as eb
        >>> a, b = eb.define_score("a"), eb.define_score("b")
        >>> eb.all_of(a, eb.at_least(b, 0.5)).evaluate({"a": 1.0, "b": 0.5})
        1.0
    """
    if not requirements:
        raise ConfigurationError("all_of() needs at least one requirement")
    items = tuple(_component(r, "all_of()") for r in requirements)
    return _build(AllOf, "all_of()", items=items, definitions=_defs(requirements))  # type: ignore[no-any-return]


def any_of(*requirements: ScoreDefinition | str | Combine) -> AnyOf:
    """Holds when at least one requirement holds (a bare score holds iff its value is 1)."""
    if not requirements:
        raise ConfigurationError("any_of() needs at least one requirement")
    items = tuple(_component(r, "any_of()") for r in requirements)
    return _build(AnyOf, "any_of()", items=items, definitions=_defs(requirements))  # type: ignore[no-any-return]


def mean_of(
    *scores: ScoreDefinition | str | Combine, weights: tuple[float, ...] | list[float] | None = None
) -> MeanOf:
    """The (weighted) mean of several scores; weights are normalised.

    Example:
        >>> import evalbook as eb
        >>> eb.mean_of("a", "b", weights=[3, 1]).evaluate({"a": 1.0, "b": 0.0})
        0.75
    """
    if not scores:
        raise ConfigurationError("mean_of() needs at least one score")
    items = tuple(_component(s, "mean_of()") for s in scores)
    w = tuple(float(x) for x in weights) if weights is not None else (1.0,) * len(items)
    return _build(MeanOf, "mean_of()", items=items, weights=w, definitions=_defs(scores))  # type: ignore[no-any-return]


def at_least(score: ScoreDefinition | str | Combine, threshold: float) -> AtLeast:
    """Holds when `score` is at least `threshold` (inclusive)."""
    item = _component(score, "at_least()")
    defs = _defs((score,))
    return _build(AtLeast, "at_least()", score=item, threshold=threshold, definitions=defs)  # type: ignore[no-any-return]
