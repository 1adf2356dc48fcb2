"""Reading an Inspect sample member's JSON for the fields kept (`_inspect_json`, msgspec) and
its zip member straight from the file (`_inspect_files._Direct`), issue 31.

Each gives what Inspect's own reading gives or nothing: the values are `pydantic_core.from_json`'s
(what Inspect's `model_validate_json` parses) wherever from_json reads the member, and a member
from_json refuses is refused here too (then Inspect's models refuse it: the sample is skipped).
"""

from __future__ import annotations

import json
import math
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")

import msgspec
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

import evalbook as eb
from _eval_members import rewritten
from evalbook._interop import _inspect
from evalbook._interop._inspect_events import Unusual
from evalbook._interop._inspect_files import read_eval
from evalbook._interop._inspect_json import decoded, of_parsed
from evalbook._interop._inspect_sample import light_sample

FIXTURES = Path(__file__).parent / "fixtures" / "inspect"
AGENT = FIXTURES / "agent.eval"

# JSON values of every kind: integers past 64 bits, NaN and infinities (Inspect writes them as
# constants), -0.0, text of any code point a JSON text may spell (lone surrogates included)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats()
    | st.text(st.characters(exclude_categories=()), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, NaN equal to NaN and -0.0 told from 0.0 (by their repr)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and repr(a) == repr(b)


def _member(kept: Any, skipped: Any, ascii_only: bool) -> bytes:
    doc = {"id": "s", "epoch": 1, "store": skipped, "metadata": kept, "events": []}
    return json.dumps(doc, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


def _outcome(read: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "read", read(data)
    except (ValueError, msgspec.MsgspecError) as exc:  # msgspec's errors are ValueErrors too
        return "refused", type(exc).__name__


@settings(max_examples=300, deadline=None)
@given(kept=json_values, skipped=json_values, ascii_only=st.booleans())
def test_the_fields_read_are_from_jsons_values_or_refused_as_it_refuses(
    kept: Any, skipped: Any, ascii_only: bool
) -> None:
    data = _member(kept, skipped, ascii_only)
    theirs = _outcome(from_json, data)
    mine = _outcome(decoded, data)
    assert mine[0] == theirs[0], (mine, theirs)
    if mine[0] == "read":
        assert _same(mine[1].metadata, theirs[1]["metadata"])
        assert mine[1].id == "s" and mine[1].events == []


_MEMBER = b'{"id": "s", "epoch": 1, "events": [], %s}'
_BIG = 123456789012345678901234567890


@pytest.mark.parametrize(
    ("fields", "metadata"),
    [
        (b'"metadata": {"n": 123456789012345678901234567890}', {"n": _BIG}),
        (b'"metadata": {"n": -9223372036854775809}', {"n": -9223372036854775809}),
        (b'"metadata": {"n": NaN, "m": -Infinity}', {"n": math.nan, "m": -math.inf}),
        (b'"metadata": {"n": 1e400}', {"n": math.inf}),  # beyond a float: from_json's infinity
        (b'"metadata": {"n": -0.0}', {"n": -0.0}),
        (b'"metadata": {"n": 1, "n": 2}', {"n": 2}),  # a key twice: the last
        (b'"metadata": {"a": 1}, "metadata": {"b": 2}', {"b": 2}),
        (b'"metadata": {"t": "\\ud83d\\ude00"}', {"t": "\U0001f600"}),
        (b'"store": {"x": NaN}, "metadata": {}', {}),  # NaN where nothing is read
        (b'"metadata": {"t": "\xc3\xbc"}', {"t": "\u00fc"}),
    ],
    ids=[
        "int-beyond-64-bits", "int-below-int64", "nan-infinity", "1e400", "minus-zero",
        "key-twice", "field-twice", "surrogate-pair", "nan-skipped", "utf-8",
    ],
)  # fmt: skip
def test_odd_values_read_as_inspects_parser_reads_them(fields: bytes, metadata: Any) -> None:
    data = _MEMBER % fields
    assert _same(from_json(data)["metadata"], metadata)
    assert _same(decoded(data).metadata, metadata)


@pytest.mark.parametrize(
    "fields",
    [
        b'"store": "\xff"',  # invalid UTF-8 where nothing is read: msgspec alone would skip it
        b'"store": "\xed\xa0\x80"',  # a surrogate encoded in UTF-8
        b'"store": "\xc0\xaf"',  # an overlong encoding
        b'"metadata": {"t": "\xff"}',
        b'"store": "\\ud800"',  # a lone surrogate escape, skipped or read
        b'"metadata": {"t": "\\udc00 x"}',
        b'"store": "a\x01b"',  # a control character in a text
        b'"store": [1,]',
        b'"store": ' + b"[" * 2000 + b"]" * 2000,  # past both parsers' nesting limits
    ],
    ids=[
        "bad-utf8-skipped", "encoded-surrogate", "overlong", "bad-utf8-read",
        "lone-surrogate-skipped", "lone-surrogate-read", "control-char", "trailing-comma",
        "very-deep",
    ],
)  # fmt: skip
def test_what_inspects_parser_refuses_is_refused(fields: bytes) -> None:
    data = _MEMBER % fields
    with pytest.raises(ValueError):
        from_json(data)
    with pytest.raises(ValueError):
        decoded(data)


def test_the_one_difference_a_member_nested_past_200_levels_is_read() -> None:
    """from_json refuses JSON nested more than 200 levels deep; msgspec reads it to its own
    limit (Python's recursion limit), so such a member, which Inspect's reader refuses, is read
    here, with its true values. Pinned so that it is a known difference, not a silent one."""
    data = _MEMBER % (b'"metadata": {"deep": ' + b"[" * 250 + b"]" * 250 + b"}")
    with pytest.raises(ValueError, match="recursion limit"):
        from_json(data)
    deep = decoded(data).metadata["deep"]
    for _ in range(249):
        assert isinstance(deep, list) and len(deep) == 1
        deep = deep[0]
    assert deep == []


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf" + _MEMBER % b'"metadata": {}',  # a byte order mark
        _MEMBER % b'"metadata": {}' + b" x",  # trailing data
    ],
    ids=["bom", "trailing"],
)
def test_a_member_that_is_no_json_text_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        from_json(data)
    with pytest.raises(ValueError):
        decoded(data)


@pytest.mark.parametrize(
    "fields",
    [
        b'"attachments": {"a": 1}',  # Inspect's attachments are texts
        b'"attachments": null',
        b'"events": {}',
        b'"events": [1]',
        # a model event's output: an object of choices, each choice's message an object
        b'"events": [{"event": "model", "output": "text"}]',
        b'"events": [{"event": "model", "output": {"choices": null}}]',
        b'"events": [{"event": "model", "output": {"choices": [1]}}]',
        b'"events": [{"event": "model", "output": {"choices": [{"message": "hi"}]}}]',
    ],
)
def test_a_member_of_another_shape_is_not_read_here(fields: bytes) -> None:
    data = b'{"id": "s", "epoch": 1, "events": [], %s}' % fields
    from_json(data)  # JSON all the same: Inspect's models decide
    with pytest.raises(msgspec.ValidationError):
        decoded(data)
    with pytest.raises(msgspec.ValidationError):
        of_parsed(from_json(data))


def test_a_legacy_sample_and_a_missing_events_list_are_inspects_to_read() -> None:
    with pytest.raises(Unusual):
        light_sample(decoded(b'{"id": "s", "epoch": 1, "events": [], "score": {"value": 1}}'))
    with pytest.raises(msgspec.ValidationError):
        decoded(b'{"id": "s", "epoch": 1}')


def _import(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eb.import_results(path, format="inspect")


def _tables(run: Any) -> list[pd.DataFrame]:
    return [run.cases, run.scores, run.steps(), run.tool_calls()]


def test_a_log_with_nan_and_bad_utf8_imports_as_inspects_models_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def odd(data: bytes, n: int) -> bytes:
        doc = json.loads(data)
        if n == 0:  # a NaN: read by from_json, then the same fields
            doc["store"] = {"x": math.nan}
            doc["metadata"] = {"ratio": math.nan}
        out = json.dumps(doc).encode()
        if n == 1:  # a byte that is no UTF-8 where nothing is read: Inspect refuses the sample
            out = out.replace(b'"store": {', b'"store": {"bad": "\xff", ', 1)
        return out

    log = rewritten(AGENT, tmp_path / "odd.eval", odd)
    read_light = []
    light = _inspect._light

    def counting(log_api: Any, data: Any) -> Any:
        found = light(log_api, data)
        read_light.append(found[0].id)
        return found

    monkeypatch.setattr(_inspect, "_light", counting)
    quick = _import(log)
    assert read_light == ["a", "c"]  # b (not UTF-8) was left to Inspect, which refused it
    assert quick.options["imported"]["skipped"] == 1 and len(quick.cases) == 3

    def refuse(log_api: Any, data: Any) -> Any:
        raise Unusual("the quick path is off")

    monkeypatch.setattr(_inspect, "_light", refuse)
    slow = _import(log)
    for mine, theirs in zip(_tables(quick), _tables(slow), strict=True):
        pd.testing.assert_frame_equal(mine, theirs)
    assert slow.options["imported"]["skipped"] == 1


def test_members_read_straight_from_the_file_are_zipfiles_bytes() -> None:
    for log in (AGENT, FIXTURES / "tiny.eval"):
        _, members, _ = read_eval(log)
        try:
            assert members.direct is not None
            infos = [members.members[n] for n in members.names()]
            assert infos and all(members.direct.read(i) == members.zf.read(i) for i in infos)
        finally:
            members.close()


def test_a_member_not_plainly_whole_is_left_to_zipfile(tmp_path: Path) -> None:
    _, members, _ = read_eval(AGENT)
    try:
        info = members.members[members.names()[0]]
        good = members.direct.read(info)
        assert good is not None
        for change in (
            {"CRC": info.CRC ^ 1},  # another CRC than the bytes'
            {"file_size": info.file_size - 1},  # another size
            {"compress_type": zipfile.ZIP_DEFLATED},  # not zstd
            {"flag_bits": info.flag_bits | 0x1},  # encrypted
            {"orig_filename": "samples/other.json"},  # not the local header's name
            {"header_offset": info.header_offset + 1},  # no local header there
        ):
            odd = zipfile.ZipInfo(info.filename)
            for attr in ("CRC", "file_size", "compress_size", "compress_type", "flag_bits"):
                setattr(odd, attr, getattr(info, attr))
            odd.header_offset, odd.orig_filename = info.header_offset, info.orig_filename
            for attr, value in change.items():
                setattr(odd, attr, value)
            assert members.direct.read(odd) is None, change
    finally:
        members.close()


def test_a_damaged_member_is_reported_not_read(tmp_path: Path) -> None:
    body = bytearray(AGENT.read_bytes())
    with zipfile.ZipFile(AGENT) as zf:
        info = zf.getinfo(sorted(n for n in zf.namelist() if n.startswith("samples/"))[1])
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    body[start + info.compress_size // 2] ^= 0xFF
    flipped = tmp_path / "flipped.eval"
    flipped.write_bytes(bytes(body))
    _, members, skipped = read_eval(flipped)
    assert (
        members.direct is not None and members.direct.read(members.members[info.filename]) is None
    )
    read = [where for where, _ in members]
    assert len(read) == 2 and len(skipped) == 1 and info.filename in skipped[0]
