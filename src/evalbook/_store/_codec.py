"""The one output codec of the run store: how a task's output is written and read back.

An output has one stored form, `(value, kind)` (docs/file-formats.md, *Outputs*): a
JSON-native output is itself (`kind` None), a Python literal JSON cannot hold is its `repr`
(`"literal"`, read back with `ast.literal_eval`), anything else is its `repr` (`"repr"`, read
back as that text). The event log writes `value` as JSON with `output_kind` next to it; the
Parquet and CSV tables hold text, so there `value` is written as JSON text (`"json"`), a
string is itself (`"text"`) and None is `"none"`.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util._text import clean

__all__ = [
    "OUTPUT_KINDS",
    "StoredRepr",
    "decode_output",
    "encode_output",
    "file_output",
    "output_columns",
    "read_file_output",
    "read_file_outputs",
]

OUTPUT_KINDS = ("none", "text", "json", "literal", "repr")  # the tables' `output_kind` codes
_TEXT, _JSON = OUTPUT_KINDS.index("text"), OUTPUT_KINDS.index("json")
_MAX_DEPTH = 64


# ints up to this many bits write as decimal under Python's default limit of 4,300 digits
# (`sys.set_int_max_str_digits`); a longer one (10**5000) cannot be written as JSON
_MAX_INT_BITS = 14_000


class StoredRepr(str):
    """The text of a stored `repr` output, read back: it is written again as kind `repr`.

    A plain str with a mark, so that a resume (or a save) of a loaded run keeps the kind
    the run stored instead of calling it text.
    """

    __slots__ = ()


def _native(x: Any, depth: int = 0) -> bool:
    """True when JSON holds `x` exactly (str, int, float, bool, None, lists, str-keyed dicts)."""
    t = type(x)
    if t is str or t is float or t is bool or x is None:
        return True
    if t is int:
        return x.bit_length() <= _MAX_INT_BITS  # type: ignore[no-any-return]
    if depth > _MAX_DEPTH:
        return False
    if t is list:
        return all(_native(v, depth + 1) for v in x)
    if t is dict:
        return all(type(k) is str and _native(v, depth + 1) for k, v in x.items())
    return False


def encode_output(output: Any) -> tuple[Any, str | None]:
    """How an output is stored: `(value, kind)`.

    kind None: `value` is the output itself (JSON-native). kind "literal": `value` is a Python
    literal (`repr`) that `ast.literal_eval` turns back into an equal value (tuples, sets,
    bytes, dicts with non-string keys). kind "repr": `value` is the output's `repr()`; the
    object itself cannot be restored.

    Example:
        >>> encode_output({"a": [1]}), encode_output(("a", 1)), encode_output(object)
        (({'a': [1]}, None), ("('a', 1)", 'literal'), ("<class 'object'>", 'repr'))
    """
    if _native(output):
        return output, None
    if type(output) is StoredRepr:  # a repr read back stays a repr
        return str.__str__(output), "repr"
    if isinstance(output, np.generic):
        item = output.item()
        if _native(item):
            return item, None
    if type(output) is int:  # too long for decimal (`repr` raises): hex has no limit
        return f"<int too long to write in decimal: {output:#x}>", "repr"
    try:
        text = repr(output)
    except Exception:  # a user's __repr__ may raise anything (a list of huge ints too)
        return f"<{type(output).__name__} object with a failing __repr__>", "repr"
    try:
        back = ast.literal_eval(text)
        if type(back) is type(output) and bool(back == output):
            return text, "literal"
    except Exception:  # not a literal, or == is not a plain bool (arrays, frames)
        pass
    return text, "repr"


def decode_output(value: Any, kind: str | None) -> Any:
    """The inverse of `encode_output` (a "repr" output stays its repr text).

    A literal may spell a lone surrogate (`'\\ud800'`, as 0.1.0 wrote such text): it comes
    back escaped, as the text boundary would have made it.

    Example:
        >>> decode_output("('a', 1)", "literal"), decode_output([1], None)
        (('a', 1), [1])
    """
    if kind == "literal":
        return clean(ast.literal_eval(value))
    if kind == "repr" and type(value) is str:
        return StoredRepr(value)
    return value


def file_output(output: Any) -> tuple[str | None, str]:
    """An output as the tables hold it: `(text, output_kind)`.

    Example:
        >>> file_output(None), file_output("hi"), file_output([1.5]), file_output({1, 2})
        ((None, 'none'), ('hi', 'text'), ('[1.5]', 'json'), ('{1, 2}', 'literal'))
    """
    if output is None:
        return None, "none"
    if type(output) is str:
        return output, "text"
    value, kind = encode_output(output)
    if kind is None:
        return json.dumps(value, ensure_ascii=False), "json"
    return value, kind


def _float_texts(outputs: list[float]) -> list[str]:
    """JSON texts of floats (`repr`, or NaN / Infinity / -Infinity as Python's json writes)."""
    texts = list(map(float.__repr__, outputs))
    if not np.isfinite(np.array(outputs, dtype=np.float64)).all():
        texts = [
            t if math.isfinite(o) else json.dumps(o) for t, o in zip(texts, outputs, strict=True)
        ]
    return texts


def output_columns(outputs: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The `output` texts of a run's outputs and their `output_kind` codes (`OUTPUT_KINDS`)."""
    texts = np.empty(len(outputs), dtype=object)
    types = set(map(type, outputs))
    if types <= {str}:  # the common case: every output a string
        texts[:] = outputs
        return texts, np.full(len(outputs), _TEXT, dtype=np.int8)
    if types <= {float}:  # numbers, e.g. scores of stored outputs
        texts[:] = _float_texts(outputs)
        return texts, np.full(len(outputs), _JSON, dtype=np.int8)
    encoded = [file_output(o) for o in outputs]
    texts[:] = [t for t, _ in encoded]
    return texts, np.array([OUTPUT_KINDS.index(k) for _, k in encoded], dtype=np.int8)


def read_file_output(text: str | None, kind: str | None) -> Any:
    """The output stored as `text` with `output_kind` `kind` (the inverse of `file_output`).

    Example:
        >>> read_file_output("[1.5]", "json"), read_file_output("{1, 2}", "literal")
        ([1.5], {1, 2})
    """
    if text is None or kind == "none":
        return None
    if kind == "json":
        return clean(_json(text))  # JSON text may escape a lone surrogate (`\ud800`)
    return decode_output(text, kind)


_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json(text: str) -> Any:
    """`json.loads(text)`, through the C scanner directly when the text is one bare value."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)  # raises the usual error, or reads leading whitespace
    return value if end == len(text) else json.loads(text)


def read_file_outputs(texts: list[str | None], kinds: np.ndarray) -> list[Any]:
    """The outputs of a table's `output` texts and `output_kind` codes (-1: unknown kind).

    Plain text (most outputs) is taken as it is; an unknown kind reads as its text.
    """
    out: list[Any] = list(texts)
    where = np.flatnonzero(kinds != _TEXT)
    for i, k in zip(where.tolist(), kinds[where].tolist(), strict=True):
        out[i] = read_file_output(texts[i], OUTPUT_KINDS[k] if k >= 0 else None)
    return out
