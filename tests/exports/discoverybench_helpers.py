"""Hand-made DiscoveryBench folders for the format tests (small, in tmp_path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def real_metadata(**overrides: Any) -> dict[str, Any]:
    """A real-shaped metadata object: ``columns`` with ``raw``, queries as a list of lists."""
    data: dict[str, Any] = {
        "id": 0,
        "domain": "sociology",
        "workflow_tags": "regression",
        "domain_knowledge": "Savings behaviour proxies time preference.",
        "datasets": [
            {
                "name": "data.csv",
                "description": "A survey.",
                "columns": {"raw": [{"name": "AGE", "description": "Age in years"},
                                    {"name": "BMI", "description": "Body mass index"}]},
            }
        ],
        "intermediate": [],
        "hypotheses": {"main": [{}], "intermediate": []},
        "queries": [[{"qid": 0, "question_type": "relationship", "question": "How does BMI relate to age?"}]],
    }
    data.update(overrides)
    return data


def synth_metadata(**overrides: Any) -> dict[str, Any]:
    """A synth-shaped metadata object: ``columns`` a list, queries flat."""
    data: dict[str, Any] = {
        "id": 0,
        "domain": "jazz music",
        "datasets": [
            {
                "name": "data.csv",
                "description": "Concerts.",
                "columns": [{"name": "tempo", "description": "Beats per minute"},
                            {"name": "sold_out", "description": "Share of seats sold"}],
            }
        ],
        "queries": [{"qid": 7, "question": "What drives sell-outs?", "question_type": "general", "difficulty": 1}],
    }
    data.update(overrides)
    return data


def dump_upstream(data: dict[str, Any]) -> bytes:
    """Upstream's layout: indent 4, raw UTF-8, CRLF, no final newline."""
    return json.dumps(data, indent=4, ensure_ascii=False).replace("\n", "\r\n").encode("utf-8")


def make_folder(
    parent: Path,
    name: str,
    metadata: dict[int, dict[str, Any] | bytes],
    files: dict[str, bytes] | None = None,
) -> Path:
    """A task folder: ``metadata_<k>.json`` per entry (dicts dumped upstream's way, bytes as given) and files
    (default: a ``data.csv`` with the columns of the first dataset)."""
    folder = parent / name
    folder.mkdir(parents=True)
    for k, content in metadata.items():
        (folder / f"metadata_{k}.json").write_bytes(content if isinstance(content, bytes) else dump_upstream(content))
    if files is None:
        files = {"data.csv": b"AGE,BMI,tempo,sold_out\n30,22.5,120,0.5\n41,27.1,90,0.9\n"}
    for file_name, content in files.items():
        (folder / file_name).write_bytes(content)
    return folder
