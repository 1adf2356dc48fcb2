"""Calls a new user gets wrong: each is one clear error (or a warning) that says how to fix it,
never a raw TypeError, AttributeError, silent coercion or a file that reads as another."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from tests._store_helpers import resealed

import evalbook as eb

DATA = pd.DataFrame({"x": [1, 2]})
SCORERS = [lambda output: 1.0]


def _run(**kw: object) -> eb.Run:
    return eb.run(DATA, task=lambda x: x, scorers=SCORERS, progress=False, **kw)  # type: ignore[arg-type]


def test_a_store_that_is_not_a_path_says_what_to_pass() -> None:
    with pytest.raises(eb.ConfigurationError, match=r"store= takes the folder .* got 123 \(int\)"):
        _run(store=123)


def test_data_none_says_to_pass_a_dataframe() -> None:
    with pytest.raises(eb.ConfigurationError, match="data is None: pass the cases as a pandas"):
        eb.run(None, task=lambda x: x, scorers=SCORERS, store=None, progress=False)


def test_an_empty_dataframe_warns_at_the_users_line() -> None:
    with pytest.warns(UserWarning, match="data has no rows") as caught:
        run = eb.run(DATA.iloc[:0], task=lambda x: x, scorers=SCORERS, store=None, progress=False)
    assert caught[0].filename == __file__  # the user's line, not evalbook's or asyncio's
    assert run.headline.value is None


@pytest.mark.parametrize(
    ("call", "hint"),
    [
        (lambda: _run(store=None, epoch=5), "did you mean epochs=?"),
        (lambda: _run(store=None, concurency=4), "did you mean concurrency=?"),
    ],
)
def test_a_mistyped_keyword_names_the_one_meant(call: object, hint: str) -> None:
    with pytest.raises(TypeError, match=hint.replace("?", r"\?")):
        call()  # type: ignore[operator]


def test_a_mistyped_eval_option_names_the_one_meant() -> None:
    with pytest.raises(eb.ConfigurationError, match=r"did you mean epochs=\?"):
        eb.Eval(DATA, task=lambda x: x, scorers=SCORERS, epoch=3)


def test_export_otel_of_a_name_says_to_load_the_run() -> None:
    pytest.importorskip("opentelemetry.sdk")
    with pytest.raises(eb.ConfigurationError, match=r"pass eb.load_run\(path\)"):
        eb.export_otel("run", endpoint="http://127.0.0.1:9")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["yes", 1, "false", None])
def test_primary_is_true_or_false_never_coerced(value: object) -> None:
    with pytest.raises(eb.ConfigurationError, match="primary= takes True or False"):
        eb.define_score("a", primary=value)  # type: ignore[arg-type]


def test_a_grader_kind_is_checked_with_a_suggestion() -> None:
    with pytest.raises(eb.ConfigurationError, match="did you mean kind='rule'"):
        eb.Grader(kind="rules", id="exact")
    assert eb.Grader(kind="code", id="pytest").kind == "code"


def test_a_run_stored_with_another_grader_kind_still_loads(tmp_path: Path) -> None:
    run = _run(store=tmp_path)
    assert run.path is not None
    log = run.path / "events.jsonl"
    text = log.read_text()
    assert '"grader":null' in text
    text = text.replace('"grader":null', '"grader":{"kind":"llm","id":"j"}', 1)
    log.write_text(resealed(text))
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    loaded = eb.load_run(run.path)
    grader = loaded.definitions[0].grader
    assert grader is not None and grader.kind == "llm"  # read as written


@pytest.mark.parametrize("name", ["x.parquet", "x.pq", "x.csv"])
def test_an_export_to_a_file_name_says_it_writes_a_folder(tmp_path: Path, name: str) -> None:
    run = _run(store=None)
    with pytest.raises(eb.ConfigurationError, match=r"writes three tables .* into a folder"):
        run.to_parquet(tmp_path / name)
    assert not (tmp_path / name).exists()  # nothing was made that pd.read_parquet misreads


def test_an_empty_leaderboard_is_an_error_like_an_empty_pool() -> None:
    with pytest.raises(eb.ConfigurationError, match="needs at least one run"):
        eb.leaderboard([])
    with pytest.raises(eb.ConfigurationError, match="needs at least one run"):
        eb.pool([])


def test_comparing_runs_of_different_epochs_warns() -> None:
    one, five = _run(store=None), _run(store=None, epochs=5)
    comparison = eb.compare(one, five)
    assert any("different epochs" in w and "1" in w and "5" in w for w in comparison.warnings)
    assert not any("different epochs" in w for w in eb.compare(one, _run(store=None)).warnings)


def test_a_float_noise_delta_reads_as_zero() -> None:
    # the same values summed in another order: their means differ by float noise only
    values = [0.1, 0.2, 0.3, 0.7, 0.9, 0.6, 0.4] * 3
    data = pd.DataFrame({"v": values})
    a = eb.run(data, task=lambda v: v, scorers=[lambda output: output], store=None, progress=False)
    b = eb.run(
        data.iloc[::-1].reset_index(drop=True),
        task=lambda v: v,
        scorers=[lambda output: output],
        store=None,
        progress=False,
    )
    text = repr(eb.compare(a, b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert "e-1" not in text, text  # no "−1.1e-14 pp"


def test_an_interrupted_run_says_what_it_kept_and_how_to_resume(tmp_path: Path) -> None:
    data = pd.DataFrame({"x": list(range(6))})

    def task(x: int) -> int:
        if x == 3:
            raise KeyboardInterrupt  # what Ctrl-C in a notebook raises in the run
        return x

    with (
        pytest.raises(KeyboardInterrupt),
        pytest.warns(RuntimeWarning, match=r"was interrupted with \d of 6 samples done") as said,
    ):
        eb.run(data, task=task, scorers=SCORERS, store=tmp_path, concurrency=1, progress=False)
    message = next(str(w.message) for w in said if "interrupted" in str(w.message))
    folder = message.split("stored in ")[1].split(":")[0]
    assert "resume=" in message and Path(folder).exists()
    rest = eb.run(data, task=lambda x: x, scorers=SCORERS, resume=folder, progress=False)
    assert rest.headline.completion == 1.0


def test_a_resume_without_epochs_names_the_stored_runs_epochs(tmp_path: Path) -> None:
    scorer = eb.scorer(eb.define_score("ok", reducer=eb.pass_at(3)))(lambda output: 1.0)
    run = eb.run(DATA, task=lambda x: x, scorers=[scorer], store=tmp_path, epochs=5, progress=False)
    with pytest.raises(
        eb.ConfigurationError, match=r"stored: epochs=5; now: epochs=1\); pass epochs=5"
    ):
        eb.run(DATA, task=lambda x: x, scorers=[scorer], resume=run.path, progress=False)
