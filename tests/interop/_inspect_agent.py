"""An Inspect AI agent task with two tools (one failing for one sample), run with `mockllm`.

Three samples; the model calls `lookup`, then `add`, then answers. `lookup` raises a
`ToolError` for sample "c", which Inspect records as the tool message's `error`.

`python tests/interop/_inspect_agent.py DIR` writes DIR/agent.eval (the fixture in
tests/interop/fixtures/inspect/ was made so).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import inspect_ai
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool

FIXTURE = Path(__file__).parent / "fixtures" / "inspect" / "agent.eval"


@tool
def lookup() -> Any:
    async def execute(key: str) -> str:
        """Look a key up.

        Args:
            key: The key.
        """
        if key == "c":
            raise ToolError("the lookup service is down")
        return f"value of {key} <script>"

    return execute


@tool
def add() -> Any:
    async def execute(x: int, y: int) -> str:
        """Add two numbers.

        Args:
            x: One number.
            y: The other.
        """
        return str(x + y)

    return execute


def _answer(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """Call lookup, then add, then answer: by how many tool results came back."""
    done = [m for m in messages if m.role == "tool"]
    key = messages[0].text.split()[-1]
    if not done:
        out = ModelOutput.for_tool_call("mockllm", "lookup", {"key": key})
    elif len(done) == 1:
        out = ModelOutput.for_tool_call("mockllm", "add", {"x": 40, "y": 2})
    else:
        out = ModelOutput.from_content(model="mockllm", content=f"{done[-1].text}")
    out.usage = ModelUsage(input_tokens=10 * len(messages), output_tokens=3, total_tokens=0)
    return out


@task
def agent() -> Task:
    samples = [Sample(id=k, input=f"look up {k}", target="42") for k in ("a", "b", "c")]
    return Task(dataset=samples, solver=[use_tools(lookup(), add()), generate()], scorer=includes())


def write(folder: Path) -> Path:
    model = get_model("mockllm/model", custom_outputs=_answer)
    [log] = inspect_ai.eval(agent(), model=model, log_dir=str(folder), display="none")
    written = Path(log.location)
    target = folder / "agent.eval"
    written.rename(target)
    return target


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
