"""Write an N-sample Inspect AI `.eval` log with transcripts, through Inspect's own writer.

A real `inspect_ai.eval` run with `mockllm` makes a few template samples: an agent that calls a
`lookup` tool 4 to 10 times and then answers (10 to 22 messages, one model event per
assistant message, one tool event per call, usage on each). The log of N samples is written by
Inspect's `EvalRecorder` (`log_start`, `log_sample`, the buffered samples written into the zip
in chunks, `log_finish`), each sample a template copied under a new id, with its score
alternating C / I, so the file is what Inspect writes and generation never holds more than a
chunk of samples.

    python benchmarks/make_inspect_log.py --n 200000 [--out /tmp/evalbook-inspect-200000.eval]

Prints the file's path; a file already there for the same N is reused (the cache is /tmp).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

_TEMPLATES = 8
_CHUNK = 500


def _templates(folder: Path) -> Any:
    """A small real log: `_TEMPLATES` samples of an agent run with mockllm."""
    import inspect_ai
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def lookup() -> Any:
        async def execute(key: str, page: int) -> str:
            """Look a key up.

            Args:
                key: The key.
                page: Which page of results.
            """
            return f"page {page} of the entry for {key}: " + "some retrieved text " * 6

        return execute

    def answer(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        done = sum(1 for m in messages if m.role == "tool")
        want = 4 + int(messages[0].text.split()[-1]) % 7  # 4..10 calls: 10..22 messages
        if done < want:
            out = ModelOutput.for_tool_call("mockllm", "lookup", {"key": "k", "page": done})
        else:
            out = ModelOutput.from_content(model="mockllm", content=f"the answer is {done}")
        out.usage = ModelUsage(input_tokens=40 * len(messages), output_tokens=12, total_tokens=0)
        return out

    samples = [
        Sample(id=f"t{k}", input=f"please research item {k}", target=str(4 + k % 7))
        for k in range(_TEMPLATES)
    ]
    task = Task(dataset=samples, solver=[use_tools(lookup()), generate()], scorer=includes())
    model = get_model("mockllm/model", custom_outputs=answer)
    [log] = inspect_ai.eval(task, model=model, log_dir=str(folder), display="none")
    return inspect_ai.log.read_eval_log(log.location)


async def _write(path: Path, n: int, template: Any) -> None:
    from inspect_ai.log._recorders.eval import EvalRecorder
    from inspect_ai.scorer import Score

    samples = template.samples
    ids = [f"s{i:06d}" for i in range(n)]
    spec = template.eval.model_copy(
        update={
            "dataset": template.eval.dataset.model_copy(
                update={"samples": n, "sample_ids": ids, "shuffled": False}
            )
        }
    )
    recorder = EvalRecorder(str(path.parent))
    await recorder.log_init(spec, str(path), clean=True)
    await recorder.log_start(spec, template.plan)
    for i, sid in enumerate(ids):
        base = samples[i % len(samples)]
        scores = {
            name: Score(value="C" if i % 3 else "I", answer=s.answer, explanation=s.explanation)
            for name, s in (base.scores or {}).items()
        }
        sample = base.model_copy(update={"id": sid, "uuid": uuid.uuid4().hex, "scores": scores})
        await recorder.log_sample(spec, sample)
        if (i + 1) % _CHUNK == 0:
            # Inspect's own step of a flush that writes the buffered samples into the log's
            # zip (and their summaries journal); `recorder.flush` would then also copy the
            # whole log so far to its destination and re-read its zip directory, which makes
            # writing N samples quadratic. `log_finish` writes the file once, as Inspect does.
            await recorder.data[recorder._log_file_key(spec)].write_buffered_samples()
    results = template.results
    if results is not None:
        results = results.model_copy(update={"total_samples": n, "completed_samples": n})
    await recorder.log_finish(spec, "success", template.stats, results, None)


def make(n: int, out: Path | None = None) -> Path:
    """The path of an N-sample log, written unless it is already there."""
    path = out or Path(tempfile.gettempdir()) / f"evalbook-inspect-{n}.eval"
    if path.exists() and path.stat().st_size > 0:
        return path
    with tempfile.TemporaryDirectory() as tmp:
        template = _templates(Path(tmp))
    partial = path.with_name(path.name + ".partial.eval")
    partial.unlink(missing_ok=True)
    asyncio.run(_write(partial, n, template))
    partial.rename(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    t = time.perf_counter()
    path = make(args.n, args.out)
    print(path, f"({path.stat().st_size / 1e6:.0f} MB, {time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
