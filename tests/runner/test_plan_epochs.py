"""check_epochs (`_runner/_plan.py`): a pass@k or pass^k score needs k epochs, refused while
the plan is made, before any case runs (docs/repeats.md)."""

from __future__ import annotations

import pytest

import evalbook as eb
from evalbook._runner._plan import check_epochs


def test_check_epochs_names_the_scores_and_the_epochs_needed() -> None:
    defs = [
        eb.define_score("plain"),
        eb.define_score("p3", reducer=eb.pass_at(3)),
        eb.define_score("h5", reducer=eb.pass_hat(5)),
    ]
    check_epochs(defs, 5)
    check_epochs(defs, 9)
    with pytest.raises(eb.ConfigurationError) as err:
        check_epochs(defs, 3)
    message = str(err.value)
    assert "'h5' (pass^5)" in message and "p3" not in message
    assert "epochs ≥ 5" in message and "epochs=5" in message and "epochs=3" in message
    with pytest.raises(eb.ConfigurationError, match=r"'p3' \(pass@3\), 'h5' \(pass\^5\)"):
        check_epochs(defs, 1)


def test_check_epochs_accepts_runs_without_pass_k() -> None:
    check_epochs([eb.define_score("a", reducer="mode")], 1)
    check_epochs([], 1)
