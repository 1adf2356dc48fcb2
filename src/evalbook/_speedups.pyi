from typing import Any

def case_block(
    ctx: tuple[Any, ...], pos: int, case: Any, started: list[tuple[int, int, int]]
) -> bytes: ...
