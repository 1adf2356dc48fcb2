"""Single-byte flips and truncations of a stored run's events.jsonl, at random offsets.

Each damaged log is loaded and the result classified: **identical** (the same tables as the
undamaged log), **detected** (a warning names the file and a line, and the tables are those of
the log's lines before it), **raised** (a clear error naming the file), **wrong recovery** (a
warning, but not the prefix's tables), **raw** (an exception naming no file) or **silently
different** (other tables and no warning). The bounded form runs here (seeded); the long form
is `python tools/faults_byte_flips.py --trials 200 --seed 1`.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb

CLASSES = ("identical", "detected", "raised", "wrong recovery", "raw", "silently different")
N_CASES = 30
_LINE = re.compile(r"events\.jsonl(?:: the last line \(|, )line (\d+)")

correct = eb.define_score("correct", grader=eb.Grader(kind="rule", id="exact"))
graded = eb.define_score("graded", label="Graded", errors="zero")


@eb.scorer(correct)
def exact(output: Any, expected: str) -> float:
    return float(output == expected)


@eb.scorer(graded)
def grade(output: Any, i: int) -> Any:
    if i % 7 == 3:
        return eb.Unscored("no_reference")
    return eb.Score((i % 5) / 4, rationale=f"step {i % 5} of 4 — «ok»", metadata={"raw": i})


def _task(i: int, question: str) -> str:
    if i == 11:
        raise RuntimeError("model down")
    return question.upper() if i % 3 else question


def stored_run(root: Path, final_files: bool = False) -> Path:
    """A stored run (30 cases, 2 scores, rationales, an unscored and an errored case), its
    folder holding the log and data.parquet only (so that loading reads the log), or every
    file (`final_files`)."""
    data = pd.DataFrame(
        {
            "i": range(N_CASES),
            "question": [f"q{i}" for i in range(N_CASES)],
            "expected": [f"Q{i}" for i in range(N_CASES)],
        }
    )
    run = eb.run(data, task=_task, scorers=[exact, grade], name="flips", store=root, progress=False)
    assert run.path is not None
    for name in () if final_files else ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    return run.path


def _tables(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = eb.load_run(folder)
    return run.cases, run.scores


def _same(a: tuple[pd.DataFrame, pd.DataFrame], b: tuple[pd.DataFrame, pd.DataFrame]) -> bool:
    try:
        for x, y in zip(a, b, strict=True):
            assert_frame_equal(x.astype(object), y.astype(object))
    except AssertionError:
        return False
    return True


class Trials:
    """Damaged copies of one stored log, loaded and classified.

    A subclass changes what is stored (`stored`), what is compared (`tables`, `same`) and
    where bytes are flipped (`flip_offset`): tests/faults/test_usage_faults.py does.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.source = self.stored(root / "store")
        self.log = (self.source / "events.jsonl").read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the undamaged run loads without a warning
            self.baseline = self.tables(self.source)
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.n = 0

    def stored(self, root: Path) -> Path:
        return stored_run(root)

    def tables(self, folder: Path) -> Any:
        return _tables(folder)

    def same(self, a: Any, b: Any) -> bool:
        return _same(a, b)

    def flip_offset(self, rng: random.Random) -> int:
        return rng.randrange(len(self.log))

    def _folder(self, content: bytes) -> Path:
        self.n += 1
        folder = self.root / f"t{self.n}"
        folder.mkdir()
        shutil.copy(self.source / "data.parquet", folder / "data.parquet")
        (folder / "events.jsonl").write_bytes(content)
        return folder

    def classify(self, content: bytes, what: str) -> str:
        """Load one damaged log; count and return its class."""
        folder = self._folder(content)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                tables = self.tables(folder)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}"
                named = str(folder / "events.jsonl") in str(exc)
                raw = isinstance(exc, KeyError | TypeError | AttributeError | IndexError)
                return self._count("raised" if named and not raw else "raw", what, text)
        if self.same(tables, self.baseline):
            return self._count("identical", what, "")
        lines = [int(m[1]) for w in caught if (m := _LINE.search(str(w.message)))]
        if not lines and content.endswith(b"\n") and len(content) < len(self.log):
            # cut at a line end: a log as a kill leaves it, loaded with the incomplete-run
            # warning (a cut is not a change: the lines kept are the log's own)
            said = any("is incomplete" in str(w.message) for w in caught)
            return self._count(
                "detected" if said else "silently different", what, "cut at a line end"
            )
        if not lines:
            return self._count("silently different", what, "no warning")
        kept = b"".join(content.splitlines(keepends=True)[: lines[0] - 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prefix = self.tables(self._folder(kept))
        if self.same(tables, prefix):
            return self._count("detected", what, "")
        return self._count("wrong recovery", what, f"line {lines[0]}")

    def _count(self, kind: str, what: str, detail: str) -> str:
        self.counts[kind] += 1
        self.examples.setdefault(kind, f"{what}: {detail}")
        return kind

    def flips(self, n: int, rng: random.Random) -> None:
        for _ in range(n):
            offset = self.flip_offset(rng)
            damaged = bytearray(self.log)
            damaged[offset] ^= rng.randrange(1, 256)
            self.classify(bytes(damaged), f"flip at byte {offset}")

    def cuts(self, n: int, rng: random.Random) -> None:
        for _ in range(n):
            offset = rng.randrange(len(self.log))
            self.classify(self.log[:offset], f"cut at byte {offset}")


def run_trials(flips: int, cuts: int, seed: int) -> tuple[Counter[str], Counter[str], Trials]:
    """`flips` byte flips and `cuts` truncations of one stored log: the counts of each."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="evalbook-flips-") as tmp:
        trials = Trials(Path(tmp))
        trials.flips(flips, rng)
        flipped = Counter(trials.counts)
        trials.counts.clear()
        trials.cuts(cuts, rng)
        return flipped, Counter(trials.counts), trials


def line(kind: str, counts: Counter[str]) -> str:
    """One line of figures, e.g. `byte flips: 60 tried, 58 detected, ... 0 silently different`."""
    tried = sum(counts.values())
    return f"{kind}: {tried} tried, " + ", ".join(f"{counts[c]} {c}" for c in CLASSES)


BAD = ("wrong recovery", "raw", "silently different")
FINAL = ("cases.parquet", "scores.parquet", "summary.json", "data.parquet")


def _whole(run: eb.Run) -> tuple[Any, ...]:
    """Everything a loaded run shows: tables, data, identity, definitions, options."""
    return (run.cases, run.scores, run.data, run.name, run.id, run.definitions, run.options)


def _equal(a: tuple[Any, ...], b: tuple[Any, ...], data: bool = True) -> bool:
    if not _same((a[0], a[1]), (b[0], b[1])) or a[3:] != b[3:]:
        return False
    try:
        assert_frame_equal(a[2], b[2])
    except AssertionError:
        return not data
    return True


def final_file_flips(n: int, seed: int) -> dict[str, Counter[str]]:
    """`n` single-byte flips in each final file (the log intact): counts per file.

    identical: the same run, no warning; detected: a warning, and the same run (or, for
    data.parquet, the same results without the data columns); raised: an error naming the
    file; silently different / raw: as for the log.
    """
    rng = random.Random(seed)
    out: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="evalbook-flips-") as tmp:
        source = stored_run(Path(tmp) / "store", final_files=True)
        baseline = _whole(eb.load_run(source))
        for k, name in enumerate(FINAL):
            counts: Counter[str] = Counter()
            content = (source / name).read_bytes()
            for t in range(n):
                folder = Path(tmp) / f"{k}-{t}"
                shutil.copytree(source, folder)
                damaged = bytearray(content)
                damaged[rng.randrange(len(damaged))] ^= rng.randrange(1, 256)
                (folder / name).write_bytes(bytes(damaged))
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        got = _whole(eb.load_run(folder))
                    except Exception as exc:
                        named = name in str(exc) and not isinstance(exc, KeyError | TypeError)
                        counts["raised" if named else "raw"] += 1
                        continue
                if _equal(got, baseline, data=name != "data.parquet"):
                    counts["detected" if caught else "identical"] += 1
                else:
                    counts["wrong recovery" if caught else "silently different"] += 1
            out[name] = counts
    return out


def _report(
    record_property: Callable[[str, object], None], kind: str, counts: Counter[str]
) -> None:
    print(line(kind, counts))
    record_property(kind.replace(" ", "_"), line(kind, counts))


def test_byte_flips_and_truncations_never_give_a_silently_different_result(
    record_property: pytest.RecordProperty,
) -> None:
    flipped, cut, trials = run_trials(flips=60, cuts=30, seed=17)
    _report(record_property, "byte flips", flipped)
    _report(record_property, "truncations", cut)
    for kind in BAD:
        assert flipped[kind] == 0 and cut[kind] == 0, trials.examples.get(kind)
    assert sum(flipped.values()) == 60 and sum(cut.values()) == 30
    assert flipped["detected"] + flipped["raised"] >= 50  # the checksum finds nearly every flip


def test_byte_flips_in_the_final_files_never_give_a_silently_different_run(
    record_property: pytest.RecordProperty,
) -> None:
    counts = final_file_flips(n=15, seed=5)
    for name, c in counts.items():
        _report(record_property, f"{name} flips", c)
        for kind in BAD:
            assert c[kind] == 0, (name, kind)
