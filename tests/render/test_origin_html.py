"""The headline card says how many samples failed outside the model, and warns above 10 %
(docs/origin.md), escaped like every other text of the card."""

from __future__ import annotations

import warnings

import pandas as pd

import evalbook as eb


def _run(failing: int, n: int = 10) -> eb.Run:
    def task(i: int) -> int:
        if i < failing:
            raise eb.EnvironmentFailure("<b>sandbox</b> down")
        return i

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return eb.run(
            pd.DataFrame({"i": range(n)}), task=task, scorers=[lambda output: 1.0], store=None,
            progress=False,
        )  # fmt: skip


def test_the_card_notes_failures_outside_the_model_and_warns_above_ten_percent() -> None:
    quiet = _run(0)._repr_html_()
    assert 'data-evalbook="outside-model"' not in quiet
    one = _run(1)._repr_html_()  # 10 %: the note, no warning
    assert "1 sample failed outside the model (environment 1)" in one
    assert "may reflect infrastructure" not in one
    many = _run(3)._repr_html_()
    assert "3 samples failed outside the model (environment 3), 30% of the samples" in many
    assert "--retry-errors RUN --origin provider,environment" in many
    assert "<b>sandbox" not in many  # the error message is not shown here, let alone raw
