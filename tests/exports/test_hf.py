"""The Hugging Face layout without a database: every item of a release comes back whole from its Parquet row
(nothing is lost on the way to the Hub), split names the Hub accepts, size categories, and the golden card.

Regenerate the golden card with ``FORKPATHS_UPDATE_GOLDEN=1`` (Parquet digests are masked: they change with the
pyarrow version that wrote the files).
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exports.hf import CONFIGS, write_hf_release
from exports.hf.card import size_category
from exports.hf.tables import config_rows, split_name
from exports.hypotheses_part import HypothesesPart
from exports.manifest import sha256_file
from exports.mcq_part import MCQPart
from exports.native import write_release
from exports.native.document import parse_release_json
from exports.programmatic_part import ProgrammaticPart, ProgrammaticTaskRelease
from exports.schema import Alternative, Release, ReleaseModel, ReleaseTransform, ReleaseVariable
from tests.exports.test_native import build_release, data_files_in

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("FORKPATHS_UPDATE_GOLDEN") == "1"
SCHEMAS = {c.name: c.schema for c in CONFIGS}


def through_parquet(release: Release) -> dict[str, dict[str, list[dict]]]:  # type: ignore[type-arg]
    """Each configuration's rows as Arrow gives them back under the configuration's schema."""
    return {name: {split: pa.Table.from_pylist(rows, schema=SCHEMAS[name]).to_pylist() for split, rows in splits.items()}
            for name, splits in config_rows(release).items()}


def test_every_decision_alternative_and_mcq_comes_back_whole() -> None:
    release = build_release()
    tables = through_parquet(release)
    models = {"variable": ReleaseVariable, "transform": ReleaseTransform, "model": ReleaseModel}
    decisions = [models[r["kind"]].model_validate(json.loads(r["record_json"])) for r in tables["decisions"]["test"]]
    assert decisions == [i for d in release.datasets for i in (*d.variables, *d.transforms, *d.models)]
    status = {(c.target_kind, c.target_id): c.status for d in release.datasets for c in d.consensus}
    assert [r["consensus"] for r in tables["decisions"]["test"]] == [status.get((r["kind"], r["id"]))
                                                                     for r in tables["decisions"]["test"]]
    assert any(r["consensus"] for r in tables["decisions"]["test"])
    alternatives = [Alternative.model_validate(json.loads(r["record_json"])) for r in tables["alternatives"]["test"]]
    assert alternatives == [a for d in release.datasets for a in d.alternatives]
    mcqs = [q for d in release.datasets for q in MCQPart.of(d).items]
    assert [(r["options"], r["correct_index"]) for r in tables["mcqs"]["test"]] == [
        ([o.text for o in q.options], q.correct_index) for q in mcqs]
    assert len(tables["votes"]["test"]) == sum(len(d.votes) for d in release.datasets)
    assert set(tables) == {"analyses", "decisions", "alternatives", "votes", "mcqs"}  # no hypotheses, no tasks


def test_programmatic_tasks_and_hypothesis_tasks_come_back_whole() -> None:
    programmatic = parse_release_json((GOLDEN / "datascibench" / "release-with-programmatic-task.json").read_bytes())
    (row,) = through_parquet(programmatic)["programmatic"]["test"]
    record = json.loads(row["record_json"]) | {"artifacts": [
        {"path": a["path"], "sha256": a["sha256"], "size": a["size"], "content_b64": base64.b64encode(a["content"]).decode()}
        for a in row["artifacts"]]}
    (task,) = [t for d in programmatic.datasets for t in ProgrammaticPart.of(d).tasks]
    assert ProgrammaticTaskRelease.model_validate(record) == task
    assert [c["code"] for c in row["checks"]] == [c.code for c in task.checks]

    hypotheses = parse_release_json((GOLDEN / "hypotheses" / "release.json").read_bytes())
    tables = through_parquet(hypotheses)["hypotheses"]
    tasks = {t.key: t for d in hypotheses.datasets for t in HypothesesPart.of(d).tasks}
    assert sorted(r["key"] for rows in tables.values() for r in rows) == sorted(tasks)
    for split, rows in tables.items():
        for r in rows:
            t = tasks[r["key"]]
            assert split == t.split and r["question"] == t.question
            assert r["gold_hypothesis"] == (t.gold.hypothesis if t.gold else None)


@given(st.text())
def test_split_names_are_what_the_hub_accepts(split: str) -> None:
    assert re.fullmatch(r"\w+(\.\w+)*", split_name(split))


def test_size_categories_follow_the_hubs_bounds() -> None:
    assert [size_category(n) for n in (0, 999, 1000, 99_999, 100_000, 5_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M"]


def test_golden_card(tmp_path: Path) -> None:
    release = build_release()
    folder = write_release(release, data_files_in(tmp_path, release), tmp_path / "releases")
    export = write_hf_release(release, folder, tmp_path / "hub", manifest_sha256=sha256_file(folder / "MANIFEST"))
    assert export.left_out == ["hypotheses", "programmatic"]
    card = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    masked = re.sub(r"(\.parquet` \| `)[0-9a-f]{64}", r"\1<sha256>", card)
    golden = GOLDEN / "hf" / "README.md"
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(masked, encoding="utf-8")
    assert golden.is_file(), f"missing {golden}; run with FORKPATHS_UPDATE_GOLDEN=1 to create it"
    assert masked == golden.read_text(encoding="utf-8"), f"the card differs from {golden}; if intended, regenerate"
    with pytest.raises(FileExistsError):
        write_hf_release(release, folder, tmp_path / "hub", manifest_sha256="0" * 64)
