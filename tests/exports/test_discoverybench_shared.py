"""The shared DiscoveryBench data (../shared/discoverybench): read all of it, write it back, compare."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from exports.discoverybench import (
    DiscoveryBenchTree,
    QuestionType,
    dump_metadata,
    read_discoverybench,
    read_task_folder,
    render_metadata,
    write_discoverybench,
)
from tests.conftest import SHARED_DISCOVERYBENCH, unavailable


@pytest.fixture(scope="module")
def tree() -> DiscoveryBenchTree:
    """Read once per module (about half a second); skips like ``shared_discoverybench`` when absent."""
    if not SHARED_DISCOVERYBENCH.is_dir():
        unavailable("shared", f"the shared DiscoveryBench data is absent (expected at {SHARED_DISCOVERYBENCH})")
    return read_discoverybench(SHARED_DISCOVERYBENCH)


def _raw_json(path: Path) -> object:
    content = path.read_bytes()
    try:
        return json.loads(content.decode("utf-8"))
    except UnicodeDecodeError:
        return json.loads(content.decode("cp1252"))


def test_reads_every_folder_split_and_query(tree: DiscoveryBenchTree, shared_discoverybench: Path) -> None:
    # The README's counts: real train 4 folders / 14 files / 25 queries, real test 6 folders, synth dev 6, synth test 4.
    folders = Counter((f.kind, f.split) for f in tree.folders)
    assert folders == {("real", "train"): 4, ("real", "test"): 6, ("synth", "dev"): 6, ("synth", "test"): 4}
    files = Counter((f.kind, f.split) for f in tree.folders for _ in f.metadata)
    assert files[("real", "train")] == 14
    # every query of every metadata file (counted straight from the JSON) is a task, once
    expected: set[tuple[str, str, str, int, int]] = set()
    for path in shared_discoverybench.rglob("metadata_*.json"):
        if ".ipynb_checkpoints" in path.parts:
            continue
        data = _raw_json(path)
        assert isinstance(data, dict)
        queries = data["queries"]
        flat = [q for group in queries for q in group] if isinstance(queries[0], list) else queries
        kind, split, folder = path.parts[-4], path.parts[-3], path.parts[-2]
        expected.update((kind, split, folder, int(path.stem.split("_")[1]), q["qid"]) for q in flat)
    got = [(t.kind, t.split, t.folder, t.metadata_k, t.qid) for t in tree.tasks]
    assert len(got) == len(set(got))
    assert set(got) == expected
    assert Counter((t.kind, t.split) for t in tree.tasks)[("real", "train")] == 25


def test_test_split_gold_comes_from_the_answer_keys(tree: DiscoveryBenchTree, shared_discoverybench: Path) -> None:
    by_key = {(t.kind, t.folder, t.metadata_k, t.qid): t for t in tree.tasks}
    for kind in ("real", "synth"):
        with open(shared_discoverybench / f"answer_key_{kind}.csv", encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert rows
        for row in rows:
            task = by_key[(kind, row["dataset"], int(row["metadataid"]), int(row["query_id"]))]
            assert task.split == "test"
            assert task.gold is not None and task.gold.source == "answer_key"
            assert task.gold.text == row["gold_hypo"]
    assert len(tree.answer_keys["real"].rows) == 145
    assert len(tree.answer_keys["synth"].rows) == 6
    # train and dev carry their gold in the metadata; real train also the gold workflow
    for task in tree.tasks:
        if task.split in ("train", "dev"):
            assert task.gold is not None and task.gold.source == "metadata", task.key
        if task.kind == "real" and task.split == "train":
            assert task.gold is not None and task.gold.workflow
        if task.kind == "synth" and task.split == "dev":
            assert task.gold is not None and task.gold.true_hypothesis_expr and task.gold.target_col


def test_quirks_of_the_shared_data_are_read(tree: DiscoveryBenchTree) -> None:
    raw_types = Counter(t.question_type_raw for t in tree.tasks)
    assert raw_types["relationhsip"] == 1 and raw_types["variable"] > 0
    typo = next(t for t in tree.tasks if t.question_type_raw == "relationhsip")
    assert typo.question_type is QuestionType.RELATIONSHIP
    assert all(t.question_type is not None for t in tree.tasks)
    shapes = {(f.kind, d.columns_shape, m.metadata.queries_shape) for f in tree.folders for m in f.metadata
              for d in m.metadata.datasets}
    assert shapes == {("real", "object", "nested"), ("synth", "list", "flat")}
    encodings = Counter((f.name.split("_")[0], m.style.encoding) for f in tree.folders for m in f.metadata)
    assert encodings[("jazz-music", "cp1252")] > 0 and encodings[("astronomy", "cp1252")] > 0
    assert all(m.style.encoding == "utf-8" for f in tree.folders if f.kind == "real" for m in f.metadata)
    immigration = next(f for f in tree.folders if f.name == "immigration_offshoring_effect_on_employment")
    stata = [d for d in immigration.files if d.format == "stata"]
    assert len(stata) == 3  # one of them (off_shoring_imputed.dta) no metadata file names: kept, not read
    named = [d for d in stata if d.named]
    assert len(named) == 2 and all(d.columns and "year" in d.columns for d in named)
    assert any(d.column_labels for d in named)  # Stata variable labels come along
    plants = next(f for f in tree.folders if f.name == "introduction_pathways_non-native_plants")
    tree_file = next(d for d in plants.files if d.name == "phylogenetic_tree.txt")
    assert tree_file.format == "other" and tree_file.named


def test_round_trip_is_identical(tree: DiscoveryBenchTree, shared_discoverybench: Path, tmp_path: Path) -> None:
    out = write_discoverybench(tree, tmp_path / "out")
    source_files = sorted(p.relative_to(shared_discoverybench).as_posix() for p in shared_discoverybench.rglob("*")
                          if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == source_files
    for relative in written:
        assert (out / relative).read_bytes() == (shared_discoverybench / relative).read_bytes(), relative
    # and what was written reads back to the same tasks
    again = read_discoverybench(out)
    assert [t.model_dump() for t in again.tasks] == [t.model_dump() for t in tree.tasks]


def test_rendering_alone_reproduces_upstreams_layout(tree: DiscoveryBenchTree) -> None:
    """Without the kept bytes, the style read (CRLF, indent 4, raw UTF-8 or cp1252) rebuilds the files; only
    the hand-edited ones (introduction_pathways_non-native_plants) differ, and those only in layout."""
    differing = []
    for folder in tree.folders:
        for file in folder.metadata:
            original = Path(file.label).read_bytes()
            rendered = render_metadata(file.metadata, file.style)
            assert _decoded(rendered, file.style.encoding) == _decoded(original, file.style.encoding)
            assert dump_metadata(file) == original
            if rendered != original:
                differing.append(folder.name)
    assert set(differing) <= {"introduction_pathways_non-native_plants"}
    assert len(differing) < 10


def _decoded(content: bytes, encoding: str) -> object:
    return json.loads(content.decode(encoding))


def test_one_folder_alone_reads_its_kind_and_split(shared_discoverybench: Path) -> None:
    folder = read_task_folder(shared_discoverybench / "synth" / "test" / "astronomy_2_1")
    assert (folder.kind, folder.split) == ("synth", "test")
    tree = read_discoverybench(shared_discoverybench / "real" / "train")
    assert {f.name for f in tree.folders} == {
        "evolution_freshwater_fish", "immigration_offshoring_effect_on_employment", "nls_bmi", "nls_bmi_raw"}
    assert tree.answer_keys == {}
