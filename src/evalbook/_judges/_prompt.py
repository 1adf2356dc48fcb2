"""A judge's prompt: a template with placeholders, or a function returning chat messages.

Either way the prompt exposes a `signature` whose parameters are what it needs from a case, so
the run's plan (`_binding.bind`) checks them against the data's columns before any case runs:
a template placeholder no case can fill raises `ScorerSignatureError` naming it.
"""

from __future__ import annotations

import inspect
import keyword
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._errors import ConfigurationError
from .._model._transcript import Transcript
from .._model._transcript_text import transcript_text

__all__ = ["NO_TRANSCRIPT", "Prompt", "make_prompt", "placeholders"]

# the unscored reason of a judge whose template shows {transcript}, for a sample without one
NO_TRANSCRIPT = "no_transcript"


class _Shown(str):
    """A transcript in a template: its bounded text (`transcript_text`), and its fields for
    `{transcript.output}` and the like."""

    __slots__ = ("transcript",)
    transcript: Transcript

    def __new__(cls, transcript: Transcript) -> _Shown:
        shown = super().__new__(cls, transcript_text(transcript))
        shown.transcript = transcript
        return shown

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transcript, name)


def placeholders(template: str, where: str) -> list[str]:
    """The names a template reads (the root of `{name}`, `{row[col]}`, `{output.text}`), in order.

    Example:
        >>> placeholders("Q: {question}\\nA: {output!r} {{not this}}", "judge")
        ['question', 'output']
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigurationError(
            f"{where}: the prompt template is not valid: {exc}. Write literal braces as {{{{ }}}}"
        ) from None
    names: list[str] = []
    for _, field, spec, _ in parsed:
        if field is None:  # literal text only
            continue
        root = field.split(".", 1)[0].split("[", 1)[0]
        if not root.isidentifier() or keyword.iskeyword(root):
            raise ConfigurationError(
                f"{where}: the placeholder {{{field}}} must name a column or `output` "
                "(a Python identifier); for other column names use {row[...]} or pass a "
                "function as the prompt"
            )
        nested = placeholders(spec, where) if spec and "{" in spec else []  # "{x:{width}}"
        for name in (root, *nested):
            if name not in names:
                names.append(name)
    return names


def _as_messages(result: object, where: str) -> list[dict[str, Any]]:
    if isinstance(result, str):
        return [{"role": "user", "content": result}]
    if isinstance(result, Sequence) and not isinstance(result, bytes | bytearray) and result:
        out: list[dict[str, Any]] = []
        for m in result:
            if not (isinstance(m, Mapping) and isinstance(m.get("role"), str) and "content" in m):
                break
            out.append(dict(m))
        else:
            return out
    shown = repr(result)
    shown = shown if len(shown) <= 200 else shown[:199] + "…"
    raise TypeError(
        f"{where}: the prompt function must return a string or a non-empty list of "
        f"{{'role': ..., 'content': ...}} dicts, got {shown}"
    )


class Prompt:
    """Builds one case's chat messages; `signature` lists what it needs from the case.

    A template's `{transcript}` is the sample's transcript as bounded text (one line per
    message, about 20,000 characters at most: `_model/_transcript_text.py`); `shows_transcript`
    says a template has one, so that a judge leaves a sample without a transcript unscored
    (`NO_TRANSCRIPT`) rather than show the model "None". A prompt function's `transcript`
    parameter gets the `eb.Transcript` itself (or None).
    """

    __slots__ = ("fn", "shows_transcript", "signature", "template", "where")

    def __init__(
        self,
        where: str,
        signature: inspect.Signature,
        template: str | None = None,
        fn: Callable[..., Any] | None = None,
    ) -> None:
        self.where = where
        self.signature = signature
        self.template = template
        self.fn = fn
        self.shows_transcript = template is not None and "transcript" in signature.parameters

    def lacks_transcript(self, kwargs: dict[str, Any]) -> bool:
        """Whether this is a template showing `{transcript}` and the sample has none."""
        return self.shows_transcript and kwargs.get("transcript") is None

    async def messages(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        """The messages for one case, from the values the engine bound."""
        if self.template is not None:
            if isinstance(kwargs.get("transcript"), Transcript):
                kwargs = {**kwargs, "transcript": _Shown(kwargs["transcript"])}
            return [{"role": "user", "content": self.template.format_map(kwargs)}]
        assert self.fn is not None
        result = self.fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return _as_messages(result, self.where)


def make_prompt(prompt: object, where: str) -> Prompt:
    """Check a template or prompt function once, when the judge is made."""
    if isinstance(prompt, str):
        names = placeholders(prompt, where)
        params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names]
        return Prompt(where, inspect.Signature(params), template=prompt)
    if callable(prompt):
        try:
            sig = inspect.signature(prompt)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{where}: cannot read the signature of the prompt function: {exc}"
            ) from None
        return Prompt(where, sig.replace(return_annotation=inspect.Signature.empty), fn=prompt)
    raise ConfigurationError(
        f"{where}: prompt must be a template string with {{output}} / {{column}} placeholders "
        f"or a function returning chat messages, not {prompt!r}"
    )
