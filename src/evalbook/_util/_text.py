"""Text where it enters evalbook: valid Unicode kept exactly, lone surrogates replaced once.

A Python str may hold lone surrogates (model output decoded with `surrogateescape`, a slice
that cut a pair in two); UTF-8, and so JSON, Parquet, CSV and a notebook's display, cannot.
Rather than every layer carrying such text around, it is replaced where it enters a run (the
run's results, its input data, score definitions, files read back) by its backslash escape:
the six characters `\\ud800`. Everything past that point holds valid Unicode only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar, cast

from ._warn import warn

__all__ = ["MAX_DEPTH", "TextGate", "clean", "nested_deeper_than", "safe_str", "visible"]

# How deeply lists, dicts and tuples may nest in what a run keeps (a task's output): beyond,
# Python's recursion (json, repr, this module's walks) would fail, and no real output nests so
MAX_DEPTH = 100

T = TypeVar("T")


def _clean_str(text: str) -> str:
    if text.isascii():  # the common case: nothing to look at
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # only lone surrogates fail to encode
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _dirty(value: Any, seen: set[int]) -> bool:
    """Whether some str in `value` holds a lone surrogate (walks without building anything).

    `seen` holds the containers already walked: each is looked at once, so a container that
    holds itself ends the walk.
    """
    kind = type(value)
    if kind is str:
        return not value.isascii() and _clean_str(value) is not value
    if kind is dict or kind is list or kind is tuple:
        if id(value) in seen:
            return False
        seen.add(id(value))
        if kind is dict:
            for k, v in value.items():
                if _dirty(k, seen) or _dirty(v, seen):
                    return True
        else:
            for v in value:
                if _dirty(v, seen):
                    return True
        return False
    # a str subclass; `type()`, not isinstance: isinstance asks a user object's `__class__`,
    # which may raise, and the text gate must never raise
    return issubclass(kind, str) and _clean_str(value) is not value


def _rebuild(value: Any, path: set[int]) -> Any:
    """`value` rebuilt with its text cleaned (only called when `_dirty` said so).

    `path` holds the containers being rebuilt: one met again inside itself is left as it is.
    """
    kind = type(value)
    if issubclass(kind, str):
        return _clean_str(value)
    if (kind is not dict and kind is not list and kind is not tuple) or id(value) in path:
        return value  # numbers, None, other objects; a container inside itself
    path.add(id(value))
    try:
        if kind is dict:
            return {_rebuild(k, path): _rebuild(v, path) for k, v in value.items()}
        items = [_rebuild(v, path) for v in value]
        return items if kind is list else tuple(items)
    finally:
        path.discard(id(value))


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether lists, dicts and tuples nest in `value` more than `limit` levels deep.

    Walks without recursion (a loop over a stack), so any depth is measured; a container met
    again inside itself is not walked twice.

    Example:
        >>> nested_deeper_than([[1], {"a": 2}], 2), nested_deeper_than([[1], {"a": (2,)}], 2)
        (False, True)
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is not dict and kind is not list and kind is not tuple:
            continue
        if depth >= limit:
            return True
        if id(item) in seen:
            continue
        seen.add(id(item))
        children = item.values() if kind is dict else item
        stack.extend((child, depth + 1) for child in children)
    return False


def clean(value: T) -> T:
    """`value` with each lone surrogate in its text replaced by its escape (`\\ud800`).

    Works on a str and on the str inside dicts (keys too), lists and tuples, at any depth;
    other values (numbers, None, objects) are returned as they are. When nothing needs
    replacing, the very same object comes back (so `clean(x) is not x` says something was
    replaced), and an ASCII str costs one `isascii()`.

    Example:
        >>> clean("ok \\ud800 \\u00e9")  # the lone surrogate is spelled out, é is kept
        'ok \\\\ud800 é'
        >>> clean({"votes": ["\\udcff", 3]})
        {'votes': ['\\\\udcff', 3]}
        >>> s = "déjà vu"
        >>> clean(s) is s
        True
    """
    if issubclass(type(value), str):  # never isinstance: see `_dirty`
        return cast(T, _clean_str(cast(str, value)))
    return cast(T, _rebuild(value, set())) if _dirty(value, set()) else value


def safe_str(obj: object) -> str:
    """The text of any object as a plain str; never raises.

    User objects reach evalbook's text (an exception's message, a rationale, a reason) through
    here: a `__str__` that raises, or returns something other than a str, gives a placeholder
    naming the type instead of an exception escaping a run. A str subclass comes back as a
    plain str, so nothing of the user's class travels further.

    Example:
        >>> class Bad(Exception):
        ...     def __str__(self):
        ...         raise ValueError("no")
        >>> safe_str(Bad())
        '<Bad: str() raised ValueError>'
        >>> safe_str(3)
        '3'
    """
    if type(obj) is str:
        return obj
    try:
        text = str(obj)  # str() itself rejects a __str__ that returns a non-str (TypeError)
        return str.__str__(text)  # a str subclass, as a plain str
    except Exception as exc:  # a user's __str__ may raise anything
        return f"<{type(obj).__name__}: str() raised {type(exc).__name__}>"


# What a view shows as its escape rather than raw: characters that are invisible, or that
# change how the text around them is drawn, so that a reader sees what is really there.
#   controls (Cc): C0, DEL, C1 -- a terminal obeys ESC sequences, a browser drops NUL;
#   bidi controls: ALM U+061C, LRM/RLM U+200E-F, embeddings and overrides U+202A-E, isolates
#     U+2066-9 -- an RTL override shows "gnp.exe" as "exe.png";
#   line and paragraph separators U+2028-9 (a line break that is not a newline);
#   invisible format characters: soft hyphen U+00AD, U+180E, zero-width space U+200B, word
#     joiner and invisible operators U+2060-4, deprecated format U+206A-F, BOM U+FEFF,
#     interlinear annotation U+FFF9-B, shorthand and musical format controls, tags U+E0001 and
#     U+E0020-7F (invisible ASCII: text hidden in plain sight);
#   lone surrogates (text from outside a run's gate).
# Kept as they are: ZWNJ/ZWJ U+200C-D (they shape Persian, Indic scripts and emoji) and the
# visible format signs (Arabic number signs, hieroglyph controls); every other character.
_INVISIBLE: tuple[tuple[int, int], ...] = (
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x61C, 0x61C),
    (0x180E, 0x180E),
    (0x200B, 0x200B),
    (0x200E, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xD800, 0xDFFF),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
_UNSEEN: dict[str, re.Pattern[str]] = {}


def _unseen(keep: str) -> re.Pattern[str]:
    """The character class of `_INVISIBLE` without the characters of `keep` (built once)."""
    pattern = _UNSEEN.get(keep)
    if pattern is None:
        kept = sorted({ord(ch) for ch in keep})
        parts = []
        for low, high in _INVISIBLE:
            for k in kept:  # split the range around each kept character
                if low <= k <= high:
                    if low < k:
                        parts.append((low, k - 1))
                    low = k + 1
            if low <= high:
                parts.append((low, high))
        body = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in parts)
        pattern = _UNSEEN.setdefault(keep, re.compile(f"[{body}]"))
    return pattern


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def visible(text: str, keep: str = "") -> str:
    """`text` with every invisible or text-reordering character shown as its escape.

    The one spelling of untrusted text in every view (HTML, reprs, the terminal): controls
    (`\\x1b`, `\\x00`), bidi controls (`\\u202e`, `\\u2066`), zero-width and other invisible
    format characters, line separators and lone surrogates become backslash escapes; all
    other text is kept exactly. `keep` names characters to leave as they are (the HTML keeps
    `"\\n\\t"`, which it lays out; a terminal row keeps none).

    Example:
        >>> visible("a\\x1b[31m \\u202egnp.exe")
        'a\\\\x1b[31m \\\\u202egnp.exe'
        >>> visible("line\\nnext", keep="\\n"), visible("line\\nnext")
        ('line\\nnext', 'line\\\\nnext')
        >>> s = "déjà vu 👩\\u200d💻"
        >>> visible(s) is s
        True
    """
    pattern = _unseen(keep)
    return pattern.sub(_escape, text) if pattern.search(text) else text


def _strings(value: Any, seen: set[int]) -> Iterator[str]:
    if issubclass(type(value), str):
        yield value
    elif type(value) in (dict, list, tuple) and id(value) not in seen:
        seen.add(id(value))
        if type(value) is dict:  # keys and values apart: no (key, value) tuples, whose ids recur
            for k, v in value.items():
                yield from _strings(k, seen)
                yield from _strings(v, seen)
        else:
            for item in value:
                yield from _strings(item, seen)


def _first_surrogate(value: Any) -> str:
    """The escape of the first lone surrogate in `value` (e.g. `\\ud800`)."""
    for text in _strings(value, set()):
        for ch in text:
            if "\ud800" <= ch <= "\udfff":
                return ch.encode("utf-8", "backslashreplace").decode("ascii")
    return "?"  # not reached: only called when `clean` replaced something


class TextGate:
    """A text boundary: `clean` every value entering through it, warn at the first change.

    A run has one, shared by what brings its text in (the plan, for the input data;
    `Results`, for what tasks and scorers produced), so a run warns once however much text it
    replaced. `scope` names what the gate stands for in the warning ("run"), or is None for
    a one-off (a score definition).

    Example:
        >>> import warnings
        >>> gate = TextGate()
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     texts = [gate("a\\ud800", "output", "x"), gate("\\udfff", "output", "y")]
        >>> texts, len(caught)
        (['a\\\\ud800', '\\\\udfff'], 1)
        >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
        case 'x': output held a lone surrogate, replaced by \\ud800 (the first in this run;
        later ones are replaced without a warning)
    """

    __slots__ = ("scope", "warned")

    def __init__(self, scope: str | None = "run") -> None:
        self.scope = scope
        self.warned = False

    def __call__(self, value: T, field: str, case: str | None = None) -> T:
        """`clean(value)`; the first replacement warns, naming `field` and `case` (clean text)."""
        cleaned = clean(value)
        if cleaned is not value and not self.warned:
            self.warned = True
            where = field if case is None else f"case {case!r}: {field}"
            more = (
                ""
                if self.scope is None
                else f" (the first in this {self.scope}; later ones are replaced without a warning)"
            )
            warn(
                f"{where} held a lone surrogate, replaced by {_first_surrogate(value)}{more}",
                UnicodeWarning,
            )
        return cleaned
