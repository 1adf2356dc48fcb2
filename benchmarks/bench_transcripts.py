"""What transcripts cost: loading, the steps table, the file's growth, capture in a run.

1. `load_run` + `summary()` + headline of a stored run of N samples × S steps, against the same
   run without transcripts (median of paired rounds). Bar: ≤ 1.1×.
2. `run.steps()` of that stored run (it reads `steps.parquet`), and built from the
   transcripts (`transcripts.jsonl`, as for a run without its final files). Bar: ≤ 2 s.
3. `transcripts.jsonl`'s bytes per step at S/3, 2S/3 and S steps (linear: equal bytes/step).
4. Capture through `eb.wrap_openai` in a latency-bound run: an async client whose calls take
   `--latency-ms` (50), concurrency 100, two calls per sample, `transcript=True` against
   `transcript=False` (median of paired rounds). Bar: ≤ 1.05×.

    python benchmarks/bench_transcripts.py [--cases 10000] [--steps 30] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

import evalbook as eb

SCORE = eb.define_score("ok", primary=True)


@eb.scorer(SCORE)
def ok(output: Any) -> float:
    return 1.0


def agent(steps: int) -> Any:
    def task(question: str, ctx: Any) -> str:
        for k in range(steps // 3):
            call = {"id": f"t{k}", "function": {"name": "search", "arguments": '{"q": "x"}'}}
            ctx.step(role="assistant", tool_calls=[call], model="m", input_tokens=120,
                     output_tokens=20, latency_s=0.8)  # fmt: skip
            ctx.step(role="tool", tool_call_id=f"t{k}", content="a result of some length " * 4)
            ctx.step(role="user", content="go on")
        return "done"

    return task


def plain(question: str) -> str:
    return "done"


def data(n: int) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"c{i}" for i in range(n)], "question": ["q"] * n})


def stored(root: Path, n: int, task: Any) -> Path:
    run = eb.run(data(n), task=task, scores=[SCORE], scorers=[ok], store=root, progress=False)
    assert run.path is not None
    return run.path


def load_summary(path: Path) -> float:
    gc.collect()
    t = time.perf_counter()
    run = eb.load_run(path)
    run.summary()
    _ = run.headline
    return time.perf_counter() - t


class _Completions:
    def __init__(self, latency: float) -> None:
        self.latency = latency

    async def create(self, **request: Any) -> dict[str, Any]:
        await asyncio.sleep(self.latency)
        message = {"role": "assistant", "content": "an answer"}
        return {"model": "m", "choices": [{"message": message}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5}}  # fmt: skip


class _Chat:
    def __init__(self, latency: float) -> None:
        self.completions = _Completions(latency)


class AsyncModel:
    """Stands in for `openai.AsyncOpenAI`: each call takes `latency` seconds."""

    max_retries = 0

    def __init__(self, latency: float) -> None:
        self.chat = _Chat(latency)

    def with_options(self, **options: Any) -> AsyncModel:
        return self


def show_and_open(path: Path) -> tuple[float, float, float]:
    """Seconds for `eb.show` of a stored run (its static HTML included: the transcripts of
    the rows it shows), then to open a case in the Cases tab, first and then another."""
    run = eb.load_run(path)
    t = time.perf_counter()
    view = eb.show(run)
    shown = time.perf_counter() - t
    times = []
    for pos in (len(run.cases) // 2, len(run.cases) // 3):
        t = time.perf_counter()
        view.explorer._show_case(pos)
        times.append(time.perf_counter() - t)
    return shown, times[0], times[1]


def capture_run(n: int, latency: float, transcript: bool) -> float:
    client = eb.wrap_openai(AsyncModel(latency), transcript=transcript)

    async def task(question: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        for _ in range(2):
            reply = await client.chat.completions.create(model="m", messages=messages)
            messages.append(reply["choices"][0]["message"])
            messages.append({"role": "user", "content": "again"})
        return "done"

    gc.collect()
    t = time.perf_counter()
    eb.run(data(n), task=task, scores=[SCORE], scorers=[ok], concurrency=100, progress=False)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--capture-cases", type=int, default=2_000)
    args = parser.parse_args()
    n, s = args.cases, args.steps
    root = Path(tempfile.mkdtemp(prefix="bench-transcripts-"))
    try:
        with_t, without = stored(root, n, agent(s)), stored(root, n, plain)
        load_summary(with_t), load_summary(without)  # warm-up
        pairs = [(load_summary(with_t), load_summary(without)) for _ in range(args.rounds)]
        ratio = statistics.median(a / b for a, b in pairs)
        print(f"## Transcripts: {n:,} samples × {s} steps\n")
        print("| load_run + summary, with | without | ratio (median of pairs) |")
        print("|---|---|---|")
        a, b = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        print(f"| {a * 1e3:.1f} ms | {b * 1e3:.1f} ms | {ratio:.2f}× |\n")

        views = [show_and_open(with_t), show_and_open(without)]
        print("| stored run | eb.show(run) | open a case (first) | open a case (next) |")
        print("|---|---|---|---|")
        for label, (shown, first, then) in zip(("with", "without"), views, strict=True):
            print(f"| {label} transcripts | {shown:.2f} s | {first * 1e3:.0f} ms | "
                  f"{then * 1e3:.0f} ms |")  # fmt: skip
        print()

        t = time.perf_counter()
        steps = eb.load_run(with_t).steps()
        from_file = time.perf_counter() - t
        (with_t / "summary.json").unlink()  # from the log: the table is built from transcripts
        t = time.perf_counter()
        built = eb.load_run(with_t).steps()
        from_transcripts = time.perf_counter() - t
        assert len(built) == len(steps) == n * (s // 3) * 3
        print("| run.steps() rows | from steps.parquet | built from transcripts.jsonl |")
        print("|---|---|---|")
        print(f"| {len(steps):,} | {from_file:.2f} s | {from_transcripts:.2f} s |\n")

        print("| steps per sample | transcripts.jsonl bytes | bytes per step |")
        print("|---|---|---|")
        for k in sorted({max(3, s // 3), max(3, 2 * s // 3), max(3, s)}):
            folder = stored(root, max(n // 10, 10), agent(k))
            size = os.path.getsize(folder / "transcripts.jsonl")
            per = size / (max(n // 10, 10) * (k // 3) * 3)
            print(f"| {k // 3 * 3} | {size:,} | {per:.1f} |")
        print()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    latency = args.latency_ms / 1e3
    capture_run(min(200, args.capture_cases), latency, True)  # warm-up
    rounds = [
        (
            capture_run(args.capture_cases, latency, True),
            capture_run(args.capture_cases, latency, False),
        )
        for _ in range(args.rounds)
    ]
    cap = statistics.median(a / b for a, b in rounds)
    print(f"## Capture through wrap_openai ({args.latency_ms:g} ms calls, concurrency 100)\n")
    print("| samples × calls | transcript=True | transcript=False | ratio (median of pairs) |")
    print("|---|---|---|---|")
    a = statistics.median(r[0] for r in rounds)
    b = statistics.median(r[1] for r in rounds)
    print(f"| {args.capture_cases:,} × 2 | {a:.2f} s | {b:.2f} s | {cap:.3f}× |\n")


if __name__ == "__main__":
    main()
