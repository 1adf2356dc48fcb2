"""Cost of a response-cache hit (`_judges/_cache.ResponseCache`) against its floor.

A folder holds `--entries` cached chat completions (about 1 KB of JSON each, the shape of
an OpenAI `ChatCompletion` with `usage`). Each round reads every entry once in four ways,
alternating so that machine load hits all of them alike:

- a bare dict lookup of the value (what an in-memory cache would cost);
- a plain file read of the entry (`Path.read_bytes`, the floor of any on-disk cache);
- `ResponseCache.get(key)` (read, parse, check the version, key and checksum);
- a whole hit as a wrapped client pays it: `key(request)` (canonical JSON + SHA-256) + `get`.

Printed: the median over rounds of the per-call time of each, and the ratios to the file
read. The target: a whole hit ≤ 200 µs per call on this machine.

    python benchmarks/bench_cache.py [--entries 1000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalbook._judges._cache import ResponseCache


def _request(i: int) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a careful grader. " * 4},
            {"role": "user", "content": f"Question {i}: what is {i} + {i}? Answer briefly."},
        ],
        "temperature": 0,
        "max_tokens": 256,
    }


def _reply(i: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{i:08d}",
        "object": "chat.completion",
        "created": 1_764_000_000 + i,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"{2 * i}. " + "Reasoning. " * 40},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 41, "completion_tokens": 87, "total_tokens": 128},
    }


def _per_call(fn: Callable[[int], object], n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    n = args.entries
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(folder)
        requests = [_request(i) for i in range(n)]
        keys: list[str] = []
        for i, request in enumerate(requests):
            key = cache.key(request, epoch=1, occurrence=0)
            assert key is not None
            cache.put(key, _reply(i), model="gpt-4o-mini")
            keys.append(key)
        paths = [Path(folder) / k[:2] / f"{k}.json" for k in keys]
        memory = {k: _reply(i) for i, k in enumerate(keys)}
        size = statistics.mean(p.stat().st_size for p in paths)

        def whole_hit(i: int) -> object:
            key = cache.key(requests[i], epoch=1, occurrence=0)
            assert key is not None
            hit, value = cache.get(key)
            assert hit
            return value

        ways: dict[str, Callable[[int], object]] = {
            "dict lookup": lambda i: memory[keys[i]],
            "file read": lambda i: paths[i].read_bytes(),
            "cache.get": lambda i: cache.get(keys[i]),
            "key + get (a hit)": whole_hit,
        }
        for fn in ways.values():  # warm-up: the page cache and the code paths
            _per_call(fn, n)
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, fn in ways.items():
                times[name].append(_per_call(fn, n))
    med = {name: statistics.median(t) for name, t in times.items()}
    floor = med["file read"]
    print("## Response cache hit\n")
    print(f"{n} entries of {size:,.0f} bytes, {args.rounds} rounds (median per call)\n")
    print("| way | per call | ratio to a file read | target |")
    print("|---|---|---|---|")
    for name, t in med.items():
        target = "≤ 200 µs" if name == "key + get (a hit)" else ""
        print(f"| {name} | {t * 1e6:.1f} µs | {t / floor:.2f}× | {target} |")


if __name__ == "__main__":
    main()
