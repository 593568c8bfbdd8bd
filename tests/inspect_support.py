"""Running inspect_ai on forkpaths's tasks in tests: the package's entry point made visible to inspect, and a
scripted model (inspect's own ``mockllm`` provider, answering by a function of the prompt)."""

from __future__ import annotations

import importlib
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def inspect_entry_point(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The ``inspect_ai`` entry point that pyproject.toml declares, visible to importlib.metadata as an installed
    distribution's (a checkout whose editable install predates the entry point has not got it; a fresh
    ``pip install -e .`` has, and then both name the same module). Yields the entry point's value."""
    from importlib.metadata import entry_points

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    value = declared["forkpaths"]
    installed = [ep for ep in entry_points(group="inspect_ai") if ep.name == "forkpaths"]
    site = None
    if not installed:
        site = tmp_path_factory.mktemp("entry-point")
        info = site / "forkpaths_inspect_test-0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: forkpaths-inspect-test\nVersion: 0.0\n")
        (info / "entry_points.txt").write_text(f"[inspect_ai]\nforkpaths = {value}\n")
        sys.path.append(str(site))
        importlib.invalidate_caches()
    try:
        yield value
    finally:
        if site is not None:
            sys.path.remove(str(site))
            importlib.invalidate_caches()


def scripted_model(reply: Callable[[list[Any], list[Any]], Any]) -> Any:
    """inspect's mockllm model answering each generate call with ``reply(messages, tools)``: a string (the answer)
    or a ModelOutput (e.g. a tool call)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def answer(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> ModelOutput:
        out = reply(messages, tools)
        out = out if isinstance(out, ModelOutput) else ModelOutput.from_content(model="mockllm/model", content=out)
        # usage given, so mockllm does not estimate it with tiktoken (whose encoding it would download)
        prompt = sum(len(m.text) for m in messages) // 4 + 1
        out.usage = out.usage or ModelUsage(input_tokens=prompt, output_tokens=len(out.completion) // 4 + 1,
                                            total_tokens=prompt + len(out.completion) // 4 + 1)
        return out

    return get_model("mockllm/model", custom_outputs=answer)
