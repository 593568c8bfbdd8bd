"""The hypotheses kind's result file and stored scores, golden: fixed answers, the scripted judge, both modes.

Normalised: the judge endpoint's address (a random port), the cache keys that include it, and timings. To
regenerate after an intended change: ``FORKPATHS_REGENERATE_GOLDEN=1 pytest tests/curation/test_hypotheses_golden.py``
and say why in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.curation.hms_world import make_hms_world
from tests.llm_server import ScriptedLLM

GOLDEN = Path(__file__).parent / "golden"
_VOLATILE = {"base_url", "cache_key", "seconds", "created_at"}


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<normalised>" if k in _VOLATILE else _normal(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


@pytest.mark.parametrize("mode", ["default", "discoverybench"])
def test_hms_result_file_is_golden(sqlite_engine, tmp_path, mode):
    with ScriptedLLM() as server:
        world = make_hms_world(sqlite_engine, tmp_path, server)
        world.script.contexts = {("all fields", "farms"): True}
        world.script.variables_full = '{"sizeA": 2, "sizeB": 2, "intersection": 1, "explanation": "one shared"}'
        world.script.relationship_full = '{"answer": "B", "explanation": "more general"}'
        run = world.score(mode=mode)
    assert run.status == "succeeded", run.message
    produced = {"result": json.loads(world.artifacts.get_bytes(run.result_sha256, what="the result")), "scores": run.scores,
                "message": run.message}
    text = json.dumps(_normal(produced), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path = GOLDEN / f"hypotheses_{mode}_result.json"
    if os.environ.get("FORKPATHS_REGENERATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
