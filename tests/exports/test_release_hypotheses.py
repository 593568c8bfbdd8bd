"""Releases holding DiscoveryBench folders (format 1.2): their files and hypothesis tasks on disk, golden files,
write → read round trips, the DiscoveryBench export of a release, and a release whose folder file was altered.

Regenerate the golden files with ``FORKPATHS_UPDATE_GOLDEN=1 .venv/bin/pytest tests/exports/test_release_hypotheses.py``
and review the diff before committing it.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from exports.changelog import diff_releases, render_changelog
from exports.discoverybench import read_discoverybench
from exports.discoverybench_export import (
    ATTRIBUTION_NAME,
    NOT_EXPORTED_NAME,
    not_in_layout,
    write_discoverybench_release,
)
from exports.errors import FormatError, ReleaseIntegrityError
from exports.hypotheses_part import (
    HypothesesPart,
    HypothesisCandidate,
    HypothesisGold,
    HypothesisTaskRelease,
    HypothesisVariable,
)
from exports.manifest import MANIFEST_NAME, parse_manifest, render_manifest
from exports.native import dump_release_json, parse_release_json, read_release, verify_release, write_release
from exports.schema import DatasetRelease, Release, ReleaseFile
from tests.exports.discoverybench_helpers import make_folder, real_metadata, synth_metadata

GOLDEN = Path(__file__).parent / "golden" / "hypotheses"
UPDATE_GOLDEN = os.environ.get("FORKPATHS_UPDATE_GOLDEN") == "1"
T0 = datetime(2025, 5, 6, 7, 8, 9, tzinfo=UTC)
ANSWER_KEY = (b"dataset,metadataid,query_id,gold_hypo\r\n"
              b'bmi,0,0,"BMI rises with age, then falls."\r\n')


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_tree(root: Path) -> Path:
    """Three folders: real test (gold in the answer key, one query still to curate), real train (gold in the
    metadata, with a workflow), synth dev (an executable hypothesis); and the real answer key."""
    make_folder(root / "real" / "test", "bmi", {0: real_metadata(queries=[[
        {"qid": 0, "question_type": "relationship", "question": "How does BMI relate to age?"},
        {"qid": 1, "question_type": "variables", "question": "Which variables explain BMI?"},
        {"qid": 2, "question_type": "context", "question": "For whom does it hold?"}]])})
    make_folder(root / "real" / "train", "savings", {0: real_metadata(workflow="1. regress BMI on AGE", queries=[[
        {"qid": 0, "question_type": "context", "question": "Where does it hold?", "true_hypothesis": "Everywhere."}]])},
        files={"data.csv": b"AGE,BMI\n30,22.5\n41,27.1\n", "notes.txt": b"kept as is\n"})
    make_folder(root / "synth" / "dev", "jazz_0_0", {0: synth_metadata(queries=[
        {"qid": 7, "question": "What drives sell-outs?", "question_type": "general", "difficulty": 1,
         "true_hypothesis": "Tempo drives sell-outs.", "target_col": "sold_out",
         "true_hypothesis_expr": "df['sold_out'] > 0.5", "relevant_cols": ["tempo"]}])},
        files={"data.csv": b"tempo,sold_out\n120,0.5\n90,0.9\n"})
    (root / "answer_key_real.csv").write_bytes(ANSWER_KEY)
    return root


def release_of_tree(root: Path, *, version: str = "1.0.0", gold: dict[str, HypothesisGold] | None = None,
                    candidates: dict[str, list[HypothesisCandidate]] | None = None) -> tuple[Release, dict, dict]:
    """A release of every folder of the tree as forkpaths imports it (one dataset per folder, every file), with
    the data_files and dataset_files to write it. ``gold`` overrides tasks' gold by key (consensus)."""
    tree = read_discoverybench(root)
    datasets, data_files, dataset_files = [], {}, {}
    for folder in tree.folders:
        name = f"db_{folder.kind}_{folder.split}_{folder.name}"
        sources = {m.file_name: folder.path / m.file_name for m in folder.metadata} | {
            d.name: d.path for d in folder.files}
        files = [ReleaseFile(name=n, path=f"data/{name}/{n}", sha256=_sha(p.read_bytes()), size=p.stat().st_size,
                             role="metadata" if n.startswith("metadata_") else "data",
                             format="json" if n.endswith(".json") else n.rsplit(".", 1)[-1])
                 for n, p in sources.items()]
        tasks = []
        for t in tree.tasks:
            if (t.kind, t.split, t.folder) != (folder.kind, folder.split, folder.name):
                continue
            g = (gold or {}).get(t.key) or (HypothesisGold(hypothesis=t.gold.text, workflow=t.gold.workflow,
                                                           source=t.gold.source) if t.gold else None)
            tasks.append(HypothesisTaskRelease(
                key=t.key, source=t.kind, split=t.split, metadata_k=t.metadata_k, qid=t.qid, query_field=t.field,
                question=t.question, question_type=t.question_type.value if t.question_type else None,
                question_type_raw=t.question_type_raw, domain=t.domain, data_files=t.datasets, gold=g,
                true_hypothesis_expr=t.gold.true_hypothesis_expr if t.gold else None,
                candidates=(candidates or {}).get(t.key, [])))
        main = folder.path / "data.csv"
        datasets.append(DatasetRelease(
            name=name, title=folder.name, research_question=f"DiscoveryBench {folder.relative}",
            data_file=f"data/{name}/data.csv", data_sha256=_sha(main.read_bytes()), num_rows=2, num_columns=2,
            files=files,
            extra={"discoverybench": {"kind": folder.kind, "split": folder.split, "folder": folder.name}},
        ).with_parts(hypotheses=HypothesesPart(tasks=tasks)))
        data_files[name] = main
        dataset_files[name] = {n: p for n, p in sources.items() if n != "data.csv"}
    release = Release(version=version, created_at=T0, app_version="0.1.0", licence="ODC-By 1.0 for the data.",
                      attribution="DiscoveryBench: Majumder et al. 2024.", datasets=datasets)
    return release, data_files, dataset_files


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


def _with(release: Release, name: str, *, hypothesis_tasks: list[HypothesisTaskRelease] | None = None,
          **update: object) -> Release:
    """``release`` with the dataset ``name`` updated (and its hypothesis tasks, when given)."""
    def changed(d: DatasetRelease) -> DatasetRelease:
        d = d.model_copy(update=update)
        return d if hypothesis_tasks is None else d.with_parts(hypotheses=HypothesesPart(tasks=hypothesis_tasks))
    return release.model_copy(update={"datasets": [changed(d) if d.name == name else d for d in release.datasets]})


def _bmi(release: Release) -> DatasetRelease:
    return next(d for d in release.datasets if d.name == "db_real_test_bmi")


def _consensus() -> tuple[dict[str, HypothesisGold], dict[str, list[HypothesisCandidate]]]:
    gold = {
        # a test query shipped without gold: the experts' gold becomes an answer-key row
        "real/test/bmi/metadata_0/q1": HypothesisGold(
            hypothesis="Age and income explain BMI.", context="US adults", variables=["AGE", "income"],
            relationship="positive", source="consensus", candidate_id="H1",
            provenance={"rule": "majority>=2/3", "tally": {"justifiable": 3}}),
        # a train query whose gold the experts replaced: the metadata's true_hypothesis changes
        "real/train/savings/metadata_0/q0": HypothesisGold(
            hypothesis="Among savers only.", source="consensus", candidate_id="H2", provenance={"rule": "meeting"}),
    }
    candidates = {"real/test/bmi/metadata_0/q1": [HypothesisCandidate(
        id="H1", author="A3", hypothesis="Age and income explain BMI.", context="US adults",
        variables=[HypothesisVariable(name="age", column="AGE"), HypothesisVariable(name="income", derived="wage*h")],
        relationship="positive", workflow="regress BMI on AGE and income", code="df.BMI.corr(df.AGE)",
        check={"ok": True, "stdout": "0.4"})]}
    return gold, candidates


# --- on disk ----------------------------------------------------------------------------------------------


def test_write_then_read_gives_the_same_release_and_every_file(tree: Path, tmp_path: Path) -> None:
    gold, candidates = _consensus()
    release, data_files, dataset_files = release_of_tree(tree, gold=gold, candidates=candidates)
    folder = write_release(release, data_files, tmp_path / "rel", dataset_files=dataset_files)
    assert read_release(folder) == release
    assert read_release(tmp_path / "rel" / "1.0.0.zip") == release
    manifest, _ = parse_manifest((folder / MANIFEST_NAME).read_text())
    for ds in release.datasets:
        for file in ds.files:
            assert manifest[file.path] == file.sha256  # every file of the folder, checksummed
            assert (folder / file.path).read_bytes() == (tree / ds.extra["discoverybench"]["kind"]
                                                         / ds.extra["discoverybench"]["split"]
                                                         / ds.extra["discoverybench"]["folder"] / file.name).read_bytes()
    savings = next(d for d in release.datasets if d.name == "db_real_train_savings")
    assert (folder / "data/db_real_train_savings/notes.txt").read_bytes() == b"kept as is\n"
    assert parse_release_json(dump_release_json(release)) == release
    bmi = next(d for d in read_release(folder).datasets if d.name == "db_real_test_bmi")
    tasks = HypothesesPart.of(bmi).tasks
    assert [t.gold.source if t.gold else None for t in tasks] == ["answer_key", "consensus", None]
    assert tasks[1].candidates[0].variables[1].derived == "wage*h"
    assert HypothesesPart.of(savings).tasks[0].gold is not None


@pytest.mark.parametrize("name", ["release.json", "README.md", "CHANGELOG.md", "MANIFEST"])
def test_golden_files(tree: Path, tmp_path: Path, name: str) -> None:
    first, data_files, dataset_files = release_of_tree(tree)
    gold, candidates = _consensus()
    nxt, _, _ = release_of_tree(tree, version="1.1.0", gold=gold, candidates=candidates)
    nxt = nxt.model_copy(update={"previous_version": "1.0.0", "notes": "Consensus gold for two queries."})
    folder = write_release(nxt, data_files, tmp_path / "rel", previous=first, dataset_files=dataset_files)
    produced = (folder / name).read_bytes()
    golden = GOLDEN / name
    if name == "release.json":  # the committed golden is a format 1.x document: it is what reading upgrades
        assert json.loads(golden.read_text(encoding="utf-8"))["format_version"].startswith("1.")
        assert produced.decode("utf-8") == dump_release_json(parse_release_json(golden.read_bytes()))
        return
    if UPDATE_GOLDEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_bytes(produced)
    assert golden.is_file(), f"missing {golden}; run with FORKPATHS_UPDATE_GOLDEN=1 to create it"
    assert produced == golden.read_bytes(), f"{name} differs from {golden}; if intended, regenerate and review"


def test_golden_release_json_reads_back(tree: Path) -> None:
    gold, candidates = _consensus()
    nxt, _, _ = release_of_tree(tree, version="1.1.0", gold=gold, candidates=candidates)
    nxt = nxt.model_copy(update={"previous_version": "1.0.0", "notes": "Consensus gold for two queries."})
    assert parse_release_json((GOLDEN / "release.json").read_bytes()) == nxt


def test_card_and_changelog_speak_of_hypothesis_tasks(tree: Path) -> None:
    card = (GOLDEN / "README.md").read_text()
    assert "| `db_real_test_bmi` | 2 | 3 | 2 | 1 | 1 | 0 |" in card  # files, tasks, gold, to curate, candidates
    assert "still to curate (no gold): 1" in card
    assert "Variables | Transforms" not in card  # no BLADE columns for datasets of hypothesis tasks
    assert "1 from the answer key, 1 decided by consensus" in card
    first, _, _ = release_of_tree(tree)
    gold, _ = _consensus()
    nxt, _, _ = release_of_tree(tree, version="1.1.0", gold=gold)
    text = render_changelog(diff_releases(first, nxt.model_copy(update={"previous_version": "1.0.0"})))
    assert "### Hypothesis tasks" in text
    assert "- changed `real/test/bmi/metadata_0/q1` (gold from consensus): `gold`" in text
    assert "- changed `real/train/savings/metadata_0/q0` (gold from consensus): `gold.hypothesis`" in text
    assert "First release" in render_changelog(diff_releases(None, first))
    assert "3 hypothesis tasks, 2 files" in render_changelog(diff_releases(None, first))


# --- bad input --------------------------------------------------------------------------------------------


def test_an_altered_folder_file_is_refused_naming_it(tree: Path, tmp_path: Path) -> None:
    release, data_files, dataset_files = release_of_tree(tree)
    folder = write_release(release, data_files, tmp_path / "rel", dataset_files=dataset_files)
    meta = folder / "data/db_real_test_bmi/metadata_0.json"
    meta.write_bytes(meta.read_bytes().replace(b"How does", b"Why does"))
    with pytest.raises(ReleaseIntegrityError, match=r"data/db_real_test_bmi/metadata_0\.json: content differs"):
        read_release(folder)
    # an editor who also rewrote MANIFEST is caught by release.json's own checksum of the file
    digests, _ = parse_manifest((folder / MANIFEST_NAME).read_text())
    digests["data/db_real_test_bmi/metadata_0.json"] = _sha(meta.read_bytes())
    (folder / MANIFEST_NAME).write_text(render_manifest(digests))
    problems = verify_release(folder)
    assert len(problems) == 1 and problems[0].startswith("data/db_real_test_bmi/metadata_0.json: SHA-256")
    assert "file 'metadata_0.json' of dataset 'db_real_test_bmi'" in problems[0]
    with pytest.raises(ReleaseIntegrityError, match="metadata_0.json"):
        read_release(folder)
    # a missing folder file is named too
    meta.unlink()
    assert any("metadata_0.json" in p and "missing" in p for p in verify_release(folder))


def test_a_source_file_that_changed_is_refused_at_write_and_nothing_is_left(tree: Path, tmp_path: Path) -> None:
    release, data_files, dataset_files = release_of_tree(tree)
    (tree / "real/train/savings/notes.txt").write_bytes(b"changed\n")
    with pytest.raises(FormatError, match=r"dataset 'db_real_train_savings': file 'notes.txt' .* has SHA-256"):
        write_release(release, data_files, tmp_path / "rel", dataset_files=dataset_files)
    assert not any((tmp_path / "rel").iterdir())
    missing = {k: {n: p for n, p in v.items() if n != "notes.txt"} for k, v in dataset_files.items()}
    with pytest.raises(FormatError, match="no source given for its file 'notes.txt'"):
        write_release(release, data_files, tmp_path / "rel", dataset_files=missing)


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.model_copy(update={"path": "data/elsewhere/x.csv"}), "must lie under data/db_real_test_bmi/"),
    (lambda f: f.model_copy(update={"path": "data/db_real_test_bmi/../../MANIFEST"}), "path"),
    (lambda f: f.model_copy(update={"sha256": "abc"}), "is not 64 lowercase hex digits"),
])
def test_release_documents_with_bad_files_are_refused(tree: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    release, _, _ = release_of_tree(tree)
    bmi = _bmi(release)
    text = dump_release_json(_with(release, bmi.name, files=[change(bmi.files[0]), *bmi.files[1:]]))
    with pytest.raises(FormatError, match=message):
        parse_release_json(text)


def test_a_file_listed_twice_and_a_task_listed_twice_are_refused(tree: Path) -> None:
    release, _, _ = release_of_tree(tree)
    bmi = _bmi(release)
    text = dump_release_json(_with(release, bmi.name, files=[*bmi.files, bmi.files[0]],
                                   hypothesis_tasks=[*HypothesesPart.of(bmi).tasks, HypothesesPart.of(bmi).tasks[0]]))
    with pytest.raises(FormatError, match=r"(?s)file 'metadata_0.json' is listed twice.*appear twice"):
        parse_release_json(text)


# --- DiscoveryBench's layout ------------------------------------------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_export_of_an_unchanged_release_equals_the_tree_it_came_from(tree: Path, tmp_path: Path) -> None:
    release, data_files, dataset_files = release_of_tree(tree)
    folder = write_release(release, data_files, tmp_path / "rel", dataset_files=dataset_files)
    done = write_discoverybench_release(read_release(folder), folder, tmp_path / "out")
    written = _files(tmp_path / "out")
    assert written.pop(ATTRIBUTION_NAME).decode().count("DiscoveryBench: Majumder") == 1
    assert written == _files(tree)
    assert done.answer_key_rows == {"real": 1} and done.rewritten_metadata == [] and done.skipped == {}
    assert [t.model_dump() for t in read_discoverybench(tmp_path / "out").tasks] == [
        t.model_dump() for t in read_discoverybench(tree).tasks]


def test_consensus_gold_adds_answer_key_rows_and_replaces_shipped_gold(tree: Path, tmp_path: Path) -> None:
    gold, candidates = _consensus()
    release, data_files, dataset_files = release_of_tree(tree, gold=gold, candidates=candidates)
    folder = write_release(release, data_files, tmp_path / "rel", dataset_files=dataset_files)
    done = write_discoverybench_release(release, folder, tmp_path / "out")
    assert done.rewritten_metadata == ["real/train/savings/metadata_0.json"]
    key = (tmp_path / "out" / "answer_key_real.csv").read_bytes()
    assert key == ANSWER_KEY + b"bmi,0,1,Age and income explain BMI.\r\n"
    again = {t.key: t for t in read_discoverybench(tmp_path / "out").tasks}
    assert again["real/test/bmi/metadata_0/q1"].gold.text == "Age and income explain BMI."  # type: ignore[union-attr]
    assert again["real/train/savings/metadata_0/q0"].gold.text == "Among savers only."  # type: ignore[union-attr]
    # the rewritten metadata keeps upstream's layout (indent 4, CRLF, no final newline) and its other content
    meta = (tmp_path / "out" / "real/train/savings/metadata_0.json").read_bytes()
    original = (tree / "real/train/savings/metadata_0.json").read_bytes()
    assert meta == original.replace(b'"Everywhere."', b'"Among savers only."')


def test_blade_datasets_are_named_as_left_out_and_a_release_without_discoverybench_is_refused(
        tree: Path, tmp_path: Path) -> None:
    release, data_files, dataset_files = release_of_tree(tree)
    csv = tmp_path / "boxes.csv"
    csv.write_bytes(b"x\n1\n")
    blade = DatasetRelease(name="boxes", research_question="Do boxes matter?", data_file="data/boxes/data.csv",
                           data_sha256=_sha(csv.read_bytes()), num_rows=1, num_columns=1)
    mixed = release.model_copy(update={"datasets": [*release.datasets, blade]})
    folder = write_release(mixed, {**data_files, "boxes": csv}, tmp_path / "rel", dataset_files=dataset_files)
    assert set(not_in_layout(mixed, "blade")) == {d.name for d in release.datasets}
    assert set(not_in_layout(mixed, "discoverybench")) == {"boxes"}
    done = write_discoverybench_release(mixed, folder, tmp_path / "out")
    assert list(done.skipped) == ["boxes"]
    note = (tmp_path / "out" / NOT_EXPORTED_NAME).read_text()
    assert "'boxes' is not a DiscoveryBench folder" in note and "--format blade" in note
    only_blade = mixed.model_copy(update={"datasets": [blade]})
    with pytest.raises(FormatError, match="holds no DiscoveryBench dataset"):
        write_discoverybench_release(only_blade, folder, tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_a_task_that_is_not_a_query_of_its_folder_is_refused(tree: Path, tmp_path: Path) -> None:
    release, data_files, dataset_files = release_of_tree(tree)
    folder = write_release(release, data_files, tmp_path / "rel", dataset_files=dataset_files)
    bmi = _bmi(release)
    ghost = HypothesesPart.of(bmi).tasks[0].model_copy(update={"key": "real/test/bmi/metadata_0/q9", "qid": 9})
    changed = _with(release, bmi.name, hypothesis_tasks=[*HypothesesPart.of(bmi).tasks, ghost])
    with pytest.raises(FormatError, match=r"hypothesis task real/test/bmi/metadata_0/q9 is not a query of "
                                          r"metadata_0\.json \(no qid 9\)"):
        write_discoverybench_release(changed, folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_folder_file_outside_the_flat_folder_is_refused_by_the_export(tree: Path, tmp_path: Path) -> None:
    release, data_files, dataset_files = release_of_tree(tree)
    bmi = _bmi(release)
    extra = tmp_path / "nested.csv"
    extra.write_bytes(b"a\n1\n")
    nested = ReleaseFile(name="sub/nested.csv", path=f"data/{bmi.name}/sub/nested.csv", sha256=_sha(extra.read_bytes()),
                         size=4)
    changed = _with(release, bmi.name, files=[*bmi.files, nested])
    files = {**dataset_files, bmi.name: {**dataset_files[bmi.name], "sub/nested.csv": extra}}
    folder = write_release(changed, data_files, tmp_path / "rel", dataset_files=files)
    assert read_release(folder) == changed  # the native format holds it
    with pytest.raises(FormatError, match=r"data/db_real_test_bmi/sub/nested\.csv are not where a DiscoveryBench "
                                          r"folder keeps them"):
        write_discoverybench_release(changed, folder, tmp_path / "out")
