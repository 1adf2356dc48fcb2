"""How every importer reads files (docs/interop.md, "Importing results"), through eb.import_results.

What is not a regular file (a FIFO, a symlink to /dev/zero) is refused at once, never waited on
or read; a file over the one size cap (1 GiB) gets the one message in every format (tested with
sparse files: nothing is written); a JSON-lines line that is not UTF-8, or cut short, is skipped
and named by file and line.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from _interop_helpers import FormatError, with_warning

import evalbook as eb

FIXTURES = Path(__file__).parent / "fixtures"
# lm-eval's <output>/<model>/ (a seeded random id for its dummy model) and its run's date
(LM_EVAL,) = (p for p in (FIXTURES / "lm-eval" / "out").iterdir() if p.is_dir())
LM_EVAL_DATE = next(LM_EVAL.glob("results_*.json")).stem.removeprefix("results_")
ARC = LM_EVAL / f"samples_arc_mini_{LM_EVAL_DATE}.jsonl"
EVALSCOPE = FIXTURES / "evalscope" / "outputs" / "20261201_163005"
GSM = EVALSCOPE / "reviews" / "tiny-canned" / "gsm8k_main.jsonl"
HARBOR = FIXTURES / "harbor" / "job"
# one of the job's eight trials (Harbor names them <task>__<random>)
HELLO = next(p.name for p in sorted(HARBOR.iterdir()) if p.name.startswith("hello-world__"))
CAP = 1 << 30
# a file name each format reads as its own, for a file made here
NAMED = {
    "inspect": ["tiny.eval", "tiny.json"],
    "promptfoo": ["results.json"],
    "harbor": ["result.json"],
    "lm-eval": [f"samples_arc_mini_{LM_EVAL_DATE}.jsonl"],
    "evalscope": ["gsm8k_main.jsonl"],
}
CASES = [(fmt, name) for fmt, names in NAMED.items() for name in names]
# a FIFO opened to be read waits for a writer; refusing one is immediate
QUICK = 5.0

posix = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero are POSIX")


def _needs(fmt: str) -> None:
    if fmt == "inspect":  # its read needs Inspect AI before it opens anything
        pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")


def _special(kind: str, path: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def _timed(call: Any) -> tuple[float, BaseException | None]:
    began = time.monotonic()
    try:
        call()
    except Exception as exc:  # what was raised is the caller's to check
        return time.monotonic() - began, exc
    return time.monotonic() - began, None


@posix
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_a_device_is_refused_at_once_in_every_format(
    tmp_path: Path, kind: str, record_property: Any
) -> None:
    formats = [f for f in NAMED if f != "inspect" or importlib.util.find_spec("inspect_ai")]
    (tmp_path / "empty").mkdir()
    for fmt in formats:  # load each importer (and Inspect AI) first: the time is the refusal's
        with pytest.raises(FormatError):
            eb.import_results(tmp_path / "empty", format=fmt)
    took: list[float] = []
    for fmt, name in CASES:
        if fmt not in formats:
            continue  # its read needs Inspect AI before it opens anything
        folder = tmp_path / f"{fmt}-{name}"
        folder.mkdir()
        path = _special(kind, folder / name)
        for format in (None, fmt):
            seconds, exc = _timed(lambda p=path, f=format: eb.import_results(p, format=f))
            took.append(seconds)
            assert isinstance(exc, FormatError), (fmt, name, format, exc)
            assert str(path) in str(exc) and "\n" not in str(exc), exc
            if format is None:
                assert "not a results file evalbook can import" in str(exc)
            assert seconds < QUICK, (fmt, name, format, seconds)
    figure = f"{kind}: {len(took)} imports refused, the slowest in {max(took) * 1000:.1f} ms"
    print(figure)
    record_property(f"refused_{kind}", figure)


@posix
def test_a_fifo_in_a_folder_is_never_opened(tmp_path: Path) -> None:
    job = Path(shutil.copytree(HARBOR, tmp_path / "job"))
    os.unlink(job / HELLO / "result.json")
    _special("fifo", job / HELLO / "result.json")
    lm = Path(shutil.copytree(LM_EVAL, tmp_path / "lm"))
    _special("fifo", lm / f"samples_fifo_{LM_EVAL_DATE}.jsonl")
    began = time.monotonic()
    run, skipped = with_warning(job, "harbor")
    assert f"{HELLO}: no result.json" in skipped
    assert run.cases.outcome.notna().sum() == 7
    run, skipped = with_warning(lm, "lm-eval")
    assert "fifo" not in " ".join(run.cases.case_id) and skipped == ""
    assert time.monotonic() - began < QUICK


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # a hole: no byte of it is written to disk
    return path


def _over_the_cap(path: Path) -> str:
    return f"{path}: larger than the {CAP} bytes (1 GiB) evalbook reads of one file"


@pytest.mark.parametrize(("fmt", "name"), CASES)
def test_a_file_over_the_cap_gets_the_one_message(tmp_path: Path, fmt: str, name: str) -> None:
    _needs(fmt)
    path = _sparse(tmp_path / name, CAP + 1)
    seconds, exc = _timed(lambda: eb.import_results(path, format=fmt))
    assert isinstance(exc, FormatError), exc
    assert str(exc) == f"{_over_the_cap(path)} (it has {CAP + 1} bytes)"
    assert seconds < QUICK  # refused by its size, not read
    with pytest.raises(FormatError, match="not a results file evalbook can import"):
        eb.import_results(path)  # its head is not read either: no format claims it


def test_a_file_over_the_cap_in_a_folder_is_skipped_with_the_one_message(tmp_path: Path) -> None:
    job = Path(shutil.copytree(HARBOR, tmp_path / "job"))
    result = job / HELLO / "result.json"
    result.unlink()
    _sparse(result, CAP + 1)
    run, skipped = with_warning(job, "harbor")
    assert run.cases.outcome.notna().sum() == 7 and "skipped 1 part(s)" in skipped
    why = f"larger than the {CAP} bytes (1 GiB) evalbook reads of one file"
    assert f"{HELLO}/result.json: {why} (it has {CAP + 1} bytes)" in skipped
    lm = Path(shutil.copytree(LM_EVAL, tmp_path / "lm"))  # the samples file is what is read
    _sparse(lm / ARC.name, CAP + 1)
    with pytest.raises(FormatError) as caught:
        eb.import_results(lm, format="lm-eval")
    assert str(caught.value) == f"{_over_the_cap(lm / ARC.name)} (it has {CAP + 1} bytes)"


@pytest.mark.parametrize(
    ("fmt", "source", "folder"),
    [("lm-eval", ARC, LM_EVAL), ("evalscope", GSM, EVALSCOPE)],
)
def test_a_line_not_utf8_or_cut_short_is_skipped_and_named_by_file_and_line(
    tmp_path: Path, fmt: str, source: Path, folder: Path
) -> None:
    copy = Path(shutil.copytree(folder, tmp_path / "copy"))
    damaged = next(copy.rglob(source.name))
    lines = source.read_bytes().splitlines(keepends=True)
    bad = b'{"doc_id": 7, "note": "caf\xe9"}\n'  # latin-1, not UTF-8
    cut = lines[-1][: len(lines[-1]) // 2]  # the last line, cut short without its newline
    damaged.write_bytes(b"".join([lines[0], bad, *lines[1:-1], cut]))
    run, skipped = with_warning(damaged, fmt)
    assert f"{damaged.name}:2: not UTF-8" in skipped, skipped
    assert f"{damaged.name}:{len(lines) + 1}: not JSON (" in skipped, skipped
    assert run.options["imported"]["skipped"] >= 2


@pytest.mark.parametrize(("fmt", "folder"), [("lm-eval", LM_EVAL), ("evalscope", EVALSCOPE)])
def test_intact_files_agree_with_the_means_their_harness_reported(fmt: str, folder: Path) -> None:
    # EvalScope's report rounds its means to 4 decimals: the check allows half a last digit
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.import_results(folder, format=fmt)
    assert [str(w.message) for w in caught if "the mean of" in str(w.message)] == []
    assert run.options["imported"]["skipped"] == 0
