"""Settings for the whole suite: tests/, notebooks/ (nbval) and the doctests in src/.

`python -m pytest` runs on every core with `--dist loadfile` (pyproject.toml): a file's tests
all run on one worker, so its module-scoped fixtures (a JupyterLab with Chromium, a Dask
cluster) are built once and a notebook's cells run in order in one kernel. (Not
`--dist loadgroup`: with pytest 9.2 it silently stops grouping, pytest-xdist#1386.)

The browser test and the notebooks are marked `slow` here, beside the tests marked in their
files, so `python -m pytest -m "not slow"` is the fast inner loop.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb" or item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.slow)
