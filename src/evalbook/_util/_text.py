"""Text as evalbook shows it: lone surrogates spelled out."""

from __future__ import annotations

__all__ = ["visible"]


def visible(text: str) -> str:
    """`text` with each lone surrogate shown as its escape (the six characters `\\ud800`).

    A Python str may hold lone surrogates (model output decoded with `surrogateescape`);
    UTF-8 cannot, and a notebook sends every output as UTF-8. Tables keep such text exactly;
    only what is shown goes through here.

    Example:
        >>> visible("ok \\ud800 \\u00e9")  # a lone surrogate is spelled out, é is kept
        'ok \\\\ud800 é'
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
