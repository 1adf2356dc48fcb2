"""Importing damaged Inspect AI logs (docs/interop.md, "Inspect AI"): fault injection.

Real logs (made by `mockllm`, tests/interop/conftest.py) cut short at several offsets and with
bits flipped inside their sample entries: every sample read back is the intact log's, cell by
cell, or is skipped and counted; a log damaged before any sample is refused, naming the file.
"""

from __future__ import annotations

import random
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")

from _inspect_task import rows_of, run_of
from _interop_helpers import FormatError, detected

import evalbook as eb


def _originals(path: Path) -> dict[Any, tuple[Any, ...]]:
    """Each sample's imported row of cases and scores, from the intact log."""
    run = run_of(path)
    return rows_of(run)


def _compare(damaged: Path, originals: dict[Any, tuple[Any, ...]]) -> tuple[str, int]:
    """'refused' (a FormatError), or 'partial'/'whole' and how many samples differ."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = run_of(damaged)
    except FormatError as exc:
        assert str(damaged) in str(exc)
        assert "damaged" in str(exc) or "no inspect sample could be read" in str(exc), exc
        return "refused", 0
    rows = rows_of(run)
    different = sum(1 for key, row in rows.items() if originals.get(key) != row)
    skipped = run.options["imported"]["skipped"]
    if len(rows) < len(originals):
        assert skipped > 0 and any("skipped" in str(w.message) for w in caught)
    return ("partial" if skipped else "whole"), different


def test_truncations(made: Path, tmp_path: Path, record_property: Any) -> None:
    originals = _originals(made)
    body = made.read_bytes()
    offsets = sorted({int(len(body) * f) for f in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 0.999)})
    offsets += [len(body) - 1]
    tally: dict[str, int] = {}
    different = 0
    for at in offsets:
        cut = tmp_path / f"cut{made.suffix}"
        cut.write_bytes(body[:at])
        kind, n = _compare(cut, originals)
        if kind == "partial":  # what was read is still told from other formats
            assert detected(cut) == "inspect"
        tally[kind] = tally.get(kind, 0) + 1
        different += n
    figure = f"{made.suffix} truncations: {len(offsets)} tried, {tally}, {different} read different"
    print(figure)
    record_property("truncations", figure)
    assert different == 0
    # a log cut inside its samples keeps those before the cut (a .eval: its whole members)
    assert tally.get("partial", 0) >= 3


# .eval only: a .json log has no checksum, so a flipped digit cannot be told from a value
@pytest.mark.parametrize("made", ["eval"], indirect=True)
def test_byte_flips_in_sample_entries(made: Path, tmp_path: Path, record_property: Any) -> None:
    originals = _originals(made)
    body = made.read_bytes()
    with zipfile.ZipFile(made) as zf:
        spans = [
            (info.header_offset, info.header_offset + 30 + len(info.filename) + info.compress_size)
            for info in zf.infolist()
            if info.filename.startswith("samples/")
        ]
    rng = random.Random(21)
    tried, different, skipped_some = 0, 0, 0
    for _ in range(40):
        start, end = rng.choice(spans)
        at = rng.randrange(start, end)
        flipped = bytearray(body)
        flipped[at] ^= 1 << rng.randrange(8)
        path = tmp_path / "flipped.eval"
        path.write_bytes(bytes(flipped))
        kind, n = _compare(path, originals)
        tried += 1
        different += n
        skipped_some += kind == "partial"
    figure = f"byte flips in sample entries: {tried} tried, {skipped_some} skipped a sample, "
    figure += f"{different} read as a different result"
    print(figure)
    record_property("byte_flips", figure)
    assert different == 0 and skipped_some > 0


def _cut_after_third_sample(made: Path, tmp_path: Path) -> Path:
    """A copy of the `.eval` log cut right after its third sample member (zip directory lost)."""
    with zipfile.ZipFile(made) as zf:
        third = [i for i in zf.infolist() if i.filename.startswith("samples/")][2]
    end = third.header_offset + 30 + len(third.filename) + len(third.extra) + third.compress_size
    cut = tmp_path / "cut.eval"
    cut.write_bytes(made.read_bytes()[:end])
    return cut


@pytest.mark.parametrize("made", ["eval"], indirect=True)
def test_samples_a_cut_short_log_does_not_finish_are_not_run_not_dropped(
    made: Path, tmp_path: Path, record_property: Any
) -> None:
    """The header lists every sample id and the epochs: samples the cut file lost are not run.

    Cut after the third sample member, whole cases (`long`, `slow`) have no sample left; they
    are still the run's cases, every epoch not run: 7 of its 10 samples are not run.
    """
    cut = _cut_after_third_sample(made, tmp_path)
    with pytest.warns(RuntimeWarning, match="skipped"):
        run = eb.import_results(cut, format="inspect")
    cases = run.cases
    assert sorted(set(cases.case_id)) == ["a", "b", "boom", "long", "slow"]
    assert len(cases) == 10 and int(cases.outcome.notna().sum()) == 3
    assert cases[cases.case_id.isin(["long", "slow"])].outcome.isna().all()
    assert "completed 20% (1 errored, 7 not run)" in repr(run)  # boom errored
    figure = f"cut after 3 of 10 sample members: {len(cases)} samples, 3 read, 7 not run"
    print(figure)
    record_property("cut_short", figure)


@pytest.mark.parametrize("made", ["eval"], indirect=True)
def test_a_stored_import_with_samples_not_run_says_to_rerun_them_in_the_harness(
    made: Path, tmp_path: Path
) -> None:
    """An imported run cannot be resumed (evalbook has no task for it): loading one whose
    file lacked samples says where they must run, not `resume it`."""
    cut = _cut_after_third_sample(made, tmp_path)
    with pytest.warns(RuntimeWarning, match="skipped"):
        run = eb.import_results(cut, format="inspect")
    folder = run.save(tmp_path / "store")
    with pytest.warns(RuntimeWarning, match="is incomplete") as caught:
        eb.load_run(folder)
    message = str(caught[0].message)
    assert "run them with inspect and import its results again" in message
    assert "resume" not in message
