"""The run log's hot path in C (src/evalbook/_speedups.c); optional, see `_events.py`."""

from typing import Any

def case_block(
    ctx: tuple[Any, ...], pos: int, case: Any, started: list[tuple[int, int, int]]
) -> bytes: ...
def case_ended(state: tuple[Any, ...], pos: int, case: Any) -> None: ...
