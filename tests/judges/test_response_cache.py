"""The response cache (`_judges/_cache.py`): keys, hits and misses, corrupt entries, a folder
that cannot be written, `cache_info` / `cache_clear`, and the judge's use of it."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from _judge_helpers import Scripted, one, run, score

# the cache's files, keys and corruptions, read and written directly
from evalbook._judges._cache import (
    MARKER,
    CacheFolderError,
    ResponseCache,
    cache_clear,
    cache_info,
)

REQUEST: dict[str, Any] = {
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0,
}


def _key(cache: ResponseCache, epoch: int | None = 1, occurrence: int = 0, **changes: Any) -> str:
    key = cache.key({**REQUEST, **changes}, epoch=epoch, occurrence=occurrence)
    assert key is not None
    return key


def _entry(cache: ResponseCache, key: str) -> Path:
    return cache.folder / key[:2] / f"{key}.json"


# -- keys -------------------------------------------------------------------------------------


def test_the_key_is_the_canonical_request_epoch_and_occurrence(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    base = _key(cache)
    assert base == cache.key(dict(reversed(REQUEST.items())), epoch=1, occurrence=0)  # key order
    changed = {
        _key(cache, epoch=2),
        _key(cache, epoch=None),
        _key(cache, occurrence=1),
        _key(cache, temperature=0.5),
        _key(cache, model="m2"),
        _key(cache, messages=[{"role": "user", "content": "hi "}]),
        _key(cache, seed=1),
    }
    assert len(changed) == 7 and base not in changed
    for bad in (float("nan"), float("inf"), object(), b"bytes", "\ud800"):
        assert cache.key({**REQUEST, "x": bad}, epoch=1, occurrence=0) is None


def test_hit_miss_and_a_changed_parameter_misses(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    key = _key(cache)
    assert cache.get(key) == (False, None)
    cache.put(key, {"choices": [{"text": "4"}], "usage": {"prompt_tokens": 3}}, model="m")
    assert cache.get(key) == (True, {"choices": [{"text": "4"}], "usage": {"prompt_tokens": 3}})
    assert cache.get(_key(cache, temperature=1)) == (False, None)
    assert cache.get(_key(cache, epoch=2)) == (False, None)
    data = json.loads(_entry(cache, key).read_text(encoding="utf-8"))
    assert {k: data[k] for k in ("schema_version", "kind", "model")} == {
        "schema_version": 1,
        "kind": "response",
        "model": "m",
    }
    assert (tmp_path / "c" / MARKER).is_file()
    for not_a_key in ("", "../" + key[3:], key.upper(), key + "0"):
        assert cache.get(not_a_key) == (False, None)


def test_values_read_back_as_json_reads_them_and_others_are_not_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = _key(cache)
    cache.put(key, {"t": (1, 2), "n": {3: "int key", 10: "sorted as text"}})
    assert cache.get(key) == (True, {"t": [1, 2], "n": {"3": "int key", "10": "sorted as text"}})
    for i, bad in enumerate([float("nan"), {"x": object()}, b"\xff", {1: "a", "b": 2}]):
        other = _key(cache, occurrence=10 + i)
        cache.put(other, bad)
        assert cache.get(other) == (False, None)
    cache.put(None, {"x": 1})  # a request JSON cannot hold has no key: nothing to do


# -- corrupt entries --------------------------------------------------------------------------


def _corrupt_entries(tmp_path: Path) -> tuple[ResponseCache, str, Any]:
    cache = ResponseCache(tmp_path)
    key = _key(cache)
    value = {"score": 7, "justification": "ok"}
    cache.put(key, value, model="m")
    return cache, key, value


@pytest.mark.parametrize(
    "corrupt",
    [
        "truncated",
        "empty",
        "garbage",
        "not utf-8",
        "a list",
        "directory",
        "version 2",
        "version true",
        "version 1.0",
        "no value",
        "value changed",
        "another key's entry",
    ],
)
def test_a_corrupt_entry_is_a_miss_and_the_next_put_replaces_it(
    tmp_path: Path, corrupt: str
) -> None:
    cache, key, value = _corrupt_entries(tmp_path)
    path = _entry(cache, key)
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)

    def rewrite() -> None:  # as the cache writes it: compact, the value last
        path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")

    rewrite()
    assert cache.get(key) == (True, value)  # rewritten unchanged: still a hit
    if corrupt == "truncated":
        path.write_text(text[: len(text) // 2], encoding="utf-8")
    elif corrupt == "empty":
        path.write_bytes(b"")
    elif corrupt == "garbage":
        path.write_bytes(os.urandom(200))
    elif corrupt == "not utf-8":
        path.write_bytes(text.encode("utf-8").replace(b"ok", b"\xff\xfe"))
    elif corrupt == "a list":
        path.write_text(json.dumps([data]), encoding="utf-8")
    elif corrupt == "directory":
        path.unlink()
        path.mkdir()
    elif corrupt.startswith("version"):
        data["schema_version"] = {"version 2": 2, "version true": True, "version 1.0": 1.0}[corrupt]
        rewrite()
    elif corrupt == "no value":
        del data["value"]
        rewrite()
    elif corrupt == "value changed":
        data["value"]["score"] = 8
        rewrite()
    else:
        other = _key(cache, occurrence=1)
        cache.put(other, {"score": 1})
        shutil.copyfile(_entry(cache, other), path)
    assert cache.get(key) == (False, None)
    if corrupt == "directory":  # cannot be replaced: one warning, and the cache stops writing
        with pytest.warns(RuntimeWarning, match="cannot be written"):
            cache.put(key, value)
        assert path.is_dir()
        return
    assert path.exists()  # left where it is, not deleted by a read
    cache.put(key, value)
    assert cache.get(key) == (True, value)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _corruptions(draw: st.DrawFn, size: int) -> tuple[str, list[int]]:
    kind = draw(st.sampled_from(["flip", "truncate", "overwrite", "insert", "delete"]))
    spots = draw(st.lists(st.integers(0, max(size - 1, 0)), min_size=1, max_size=4))
    return kind, spots


def test_random_corruptions_are_misses_never_crashes_or_wrong_replies(
    record_property: Any,
) -> None:
    tally = {"corruptions": 0, "crashes": 0, "wrong hits": 0, "misses": 0, "hits": 0}

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(value=_JSON, data=st.data())
    def check(value: Any, data: st.DataObject) -> None:
        with tempfile.TemporaryDirectory() as folder:
            cache = ResponseCache(folder)
            key = _key(cache)
            cache.put(key, value, model="m")
            path = _entry(cache, key)
            raw = bytearray(path.read_bytes())
            kind, spots = data.draw(_corruptions(len(raw)))
            for spot in spots:
                spot %= max(len(raw), 1)
                if kind == "flip" and raw:
                    raw[spot] ^= 1 << data.draw(st.integers(0, 7))
                elif kind == "truncate":
                    del raw[spot:]
                elif kind == "overwrite" and raw:
                    raw[spot] = data.draw(st.integers(0, 255))
                elif kind == "insert":
                    raw[spot:spot] = data.draw(st.binary(min_size=1, max_size=3))
                elif kind == "delete":
                    del raw[spot : spot + data.draw(st.integers(1, 3))]
            path.write_bytes(bytes(raw))
            tally["corruptions"] += 1
            try:
                hit, got = cache.get(key)
            except Exception:
                tally["crashes"] += 1
                raise
            if hit and got != value:
                tally["wrong hits"] += 1
            tally["hits" if hit else "misses"] += 1  # a hit: the bytes still say the same
            assert not hit or got == value

    check()
    figure = (
        f"{tally['corruptions']} corruptions, {tally['crashes']} crashes, "
        f"{tally['wrong hits']} wrong hits ({tally['misses']} misses, {tally['hits']} hits "
        "with the right value)"
    )
    print(figure)
    record_property("corruptions", figure)
    assert tally["corruptions"] >= 100 and tally["crashes"] == tally["wrong hits"] == 0
    assert tally["misses"] > tally["hits"]


# -- a folder that cannot be written -----------------------------------------------------------


def _run_judged(folder: Path, cases: int = 4) -> tuple[eb.Run, Scripted, list[str]]:
    client = Scripted(score(80))
    j = eb.judge("q", "{q} {output}", client=client, votes=2, cache=folder)
    df = pd.DataFrame({"q": [f"q{i}" for i in range(cases)]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = run(df, task=lambda q: q, scorers=[j], concurrency=2)
    said = [str(w.message) for w in caught if "response cache" in str(w.message)]
    return r, client, said


def test_a_folder_under_a_file_warns_once_and_the_run_goes_on_uncached(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r, client, said = _run_judged(blocker / "sub")
    assert list(r.scores["value"]) == [0.8] * 4
    assert len(client.calls) == 8  # every vote asked: nothing was served from a cache
    assert len(said) == 1, said
    assert str(blocker / "sub") in said[0] and "cache=" in said[0]
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores the permission bits")
def test_a_read_only_folder_warns_once_and_the_run_goes_on_uncached(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        r, client, said = _run_judged(folder)
    finally:
        folder.chmod(0o700)
    assert list(r.scores["value"]) == [0.8] * 4 and len(client.calls) == 8
    assert len(said) == 1, said


def test_each_copy_of_a_cache_finds_out_for_itself(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("")
    cache = ResponseCache(blocker / "sub")
    with pytest.warns(RuntimeWarning):
        cache.put(_key(cache), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put(_key(cache, occurrence=1), 1)  # given up: no second warning
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.folder == cache.folder and copy.kind == cache.kind
    with pytest.warns(RuntimeWarning):
        copy.put(_key(cache), 1)


def test_a_deleted_folder_is_made_again_with_its_marker(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    cache.put(_key(cache), 1)
    shutil.rmtree(tmp_path / "c")
    assert cache.get(_key(cache)) == (False, None)
    cache.put(_key(cache), 2)
    assert cache.get(_key(cache)) == (True, 2) and (tmp_path / "c" / MARKER).is_file()


# -- the judge's cache -------------------------------------------------------------------------


def test_the_judge_keys_by_epoch_so_repeats_are_asked_again(tmp_path: Path) -> None:
    df = pd.DataFrame({"q": ["a", "b"]})
    first = Scripted(score(90), score(40))
    j = eb.judge("q", "{q} {output}", client=first, cache=tmp_path)
    r1 = run(df, task=lambda q: q, scorers=[j], epochs=2)
    assert len(first.calls) == 4  # 2 cases x 2 epochs: each epoch asked
    again = Scripted(RuntimeError("must not be called"))
    j2 = eb.judge("q", "{q} {output}", client=again, cache=tmp_path)
    r2 = run(df, task=lambda q: q, scorers=[j2], epochs=2)
    assert again.calls == []
    assert sorted(r2.scores["value"]) == sorted(r1.scores["value"])
    info = cache_info(tmp_path)
    assert info["entries"] == 4 and info["kinds"] == {"judge_reply": 4}


def test_the_judge_caches_bytes_replies_as_text(tmp_path: Path) -> None:
    assert one(b'{"score": 30}', cache=tmp_path).value == 0.3
    assert one(RuntimeError("not asked"), cache=tmp_path).value == 0.3
    (path,) = tmp_path.glob("*/*.json")
    assert json.loads(path.read_text(encoding="utf-8"))["value"] == '{"score": 30}'
    other = tmp_path / "other"
    assert one(b'{"score": 30, "x": "\xff"}', cache=other).reason == "invalid_judge_output"
    assert list(other.glob("*/*.json")) == []  # not UTF-8: JSON cannot hold it, not cached


# -- info and clear ----------------------------------------------------------------------------


def test_info_counts_entries_bytes_models_and_dates(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    for i, model in enumerate(["a", "b", "a", None]):
        cache.put(_key(cache, occurrence=i), {"i": i}, model=model)
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "notes.txt").write_text("not an entry")
    bad = _key(cache, occurrence=9)
    _entry(cache, bad).parent.mkdir(exist_ok=True)
    _entry(cache, bad).write_text("{broken")
    info = cache_info(tmp_path)
    sizes = sum(p.stat().st_size for p in tmp_path.glob("*/*.json"))
    assert info["entries"] == 5 and info["unreadable"] == 1 and info["bytes"] == sizes
    assert info["models"] == {"a": 2, "b": 1, "(unknown)": 1}
    assert info["oldest"] is not None and info["oldest"] <= info["newest"]
    assert cache_info(tmp_path / "zz" / "..")["entries"] == 5


def test_clear_removes_only_the_cache_files(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    keys = [_key(cache, occurrence=i) for i in range(20)]
    for k in keys:
        cache.put(k, k)
    shard = _entry(cache, keys[0]).parent
    (shard / "mine.txt").write_text("keep")
    temp = shard / f".{keys[0]}.json.abcd1234.tmp"
    temp.write_text("half")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"{'ab' * 32}.json").write_text("{}")
    (tmp_path / "c" / "ab").mkdir(exist_ok=True)
    link = tmp_path / "c" / "cd"
    if not link.exists():
        link.symlink_to(outside, target_is_directory=True)
    assert cache_clear(tmp_path / "c") == 20
    assert cache.get(keys[0]) == (False, None)
    left = sorted(str(p.relative_to(tmp_path / "c")) for p in (tmp_path / "c").rglob("*"))
    expected = {MARKER, shard.name, f"{shard.name}/mine.txt"}
    if link.is_symlink():
        expected.add("cd")
    assert set(left) == expected
    assert (outside / f"{'ab' * 32}.json").exists()  # a symlinked sub-folder is not followed
    assert cache_clear(tmp_path / "c") == 0


def test_info_and_clear_refuse_what_is_not_a_cache(tmp_path: Path) -> None:
    with pytest.raises(CacheFolderError, match="no such cache folder"):
        cache_info(tmp_path / "missing")
    (tmp_path / "ab").mkdir()
    entry = tmp_path / "ab" / f"{'ab' * 32}.json"
    entry.write_text("{}")
    with pytest.raises(CacheFolderError, match=f"has no {MARKER}"):
        cache_clear(tmp_path)
    assert entry.exists()
    with pytest.raises(CacheFolderError, match="is a file"):
        cache_info(entry)


def test_put_never_raises_on_a_bad_key_or_path(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    for bad_key in (123, b"ab" * 32, "zz" * 32, ""):
        cache.put(bad_key, 1)  # type: ignore[arg-type]
    assert not (tmp_path / MARKER).exists()
    nul = ResponseCache(f"{tmp_path}/a\0b")
    assert nul.get(_key(nul)) == (False, None)
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        nul.put(_key(nul), 1)
