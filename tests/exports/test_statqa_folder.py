"""Reading a StatQA folder (the shared subset, ``../shared/statqa``, and broken copies of it): one dataset per
table with its file, the licence and its questions; ids are upstream's indexes; a broken folder is refused with a
sentence naming the file, the record and the field. The part round-trips, blinds and hashes by its gold."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evaluation.tasks import task_kind
from evaluation.tasks.parts import PartError, part_of, validate_parts, with_part
from exports.statqa import (
    StatQAFormatError,
    StatQAPart,
    blind_part,
    dataset_name_for,
    part_counts,
    part_hash_input,
    read_statqa_folder,
)
from tests.evaluation.statqa_world import shared_statqa, statqa_release


@pytest.fixture
def shared() -> Path:
    return shared_statqa()


def test_the_shared_subset_reads_into_one_dataset_per_table(shared):
    got = read_statqa_folder(shared)
    records = json.loads((shared / "mini-StatQA.json").read_text(encoding="utf-8"))
    index = json.loads((shared / "upstream_index.json").read_text(encoding="utf-8"))
    assert got.questions == len(records) == len(index)
    assert len(got.datasets) == len({r["dataset"] for r in records})
    by_id = {q.id: (d, q) for d in got.datasets for q in d.part.questions}
    assert sorted(by_id, key=int) == [str(i) for i in sorted(index)]  # ids are upstream's indexes
    for record, upstream_id in zip(records, index, strict=True):
        d, q = by_id[str(upstream_id)]
        assert d.part.dataset == record["dataset"] and d.name == dataset_name_for(record["dataset"])
        assert q.question == record["refined_question"] and q.task == record["task"]
        assert q.gold is not None and q.gold.text == record["ground_truth"]
        assert json.loads(record["ground_truth"]) == {"columns": q.gold.columns, "methods": q.gold.methods}
        assert [r.model_dump() for r in q.results or []] == json.loads(record["results"])
    crop = next(d for d in got.datasets if d.part.dataset == "Crop Production Dataset")
    assert crop.name == "statqa_crop_production_dataset" and crop.data_file == "Crop_Production_Dataset.csv"
    data, licence = crop.files
    assert data.sha256 == hashlib.sha256((shared / "processed_dataset" / data.name).read_bytes()).hexdigest()
    assert licence.name == "LICENSE" and licence.role == "other"
    assert crop.part.source.licence == "GPL-3.0" and crop.part.source.commit.startswith("31ca981")
    years = next(c for c in crop.part.columns if c.column_header == "Year")
    assert (years.data_type, years.num_of_rows, years.is_normality) == ("Other", 4, False)
    assert crop.description.startswith("This dataset provides a comprehensive record of annual crop production")
    assert [c["name"] for c in data.columns][:2] == ["Year", "Nigeria"]


def test_without_an_index_file_a_record_is_its_position(shared, tmp_path):
    folder = _copy(shared, tmp_path)
    (folder / "upstream_index.json").unlink()
    got = read_statqa_folder(folder)
    assert sorted(int(q.id) for d in got.datasets for q in d.part.questions) == list(range(got.questions))


def _copy(shared: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "statqa"
    shutil.copytree(shared, folder)
    for p in folder.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    folder.chmod(0o755)
    return folder


def _edit_record(folder: Path, n: int, **changes) -> None:
    path = folder / "mini-StatQA.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    for k, v in changes.items():
        if v is None:
            records[n].pop(k)
        else:
            records[n][k] = v
    path.write_text(json.dumps(records), encoding="utf-8")


@pytest.mark.parametrize(("change", "expected"), [
    ({"task": "Regression"}, "record 3 (upstream id 9): its task 'Regression' is none of StatQA's five"),
    ({"difficulty": "medium"}, "record 3 (upstream id 9): its difficulty 'medium' is neither easy nor hard"),
    ({"ground_truth": '{"columns": "a"}'}, "record 3 (upstream id 9): its ground_truth is not an object with"),
    ({"results": "[{"}, "record 3 (upstream id 9): its field 'results' is not JSON text"),
    ({"refined_question": None}, "record 3 (upstream id 9): its field 'refined_question' is missing"),
    ({"relevant_column": '[{"is_strata": false}]'}, "record 3 (upstream id 9): its field 'relevant_column' does "
                                                    "not fit"),
    ({"dataset": "No Such Dataset"}, "dataset_metadata.csv has no row for dataset 'No Such Dataset'"),
])
def test_a_broken_record_is_refused_naming_the_record_and_the_field(shared, tmp_path, change, expected):
    folder = _copy(shared, tmp_path)
    _edit_record(folder, 2, **change)
    with pytest.raises(StatQAFormatError) as err:
        read_statqa_folder(folder)
    assert expected in str(err.value)


def test_missing_files_and_a_bad_index_are_refused(shared, tmp_path):
    folder = _copy(shared, tmp_path)
    (folder / "processed_dataset" / "Crop_Production_Dataset.csv").unlink()
    with pytest.raises(StatQAFormatError, match="The table of dataset 'Crop Production Dataset' is missing"):
        read_statqa_folder(folder)
    folder = _copy(shared, tmp_path / "b")
    (folder / "LICENSE").unlink()
    with pytest.raises(StatQAFormatError, match="GPL-3.0, and its licence goes with every copy"):
        read_statqa_folder(folder)
    folder = _copy(shared, tmp_path / "c")
    index = json.loads((folder / "upstream_index.json").read_text())
    (folder / "upstream_index.json").write_text(json.dumps([index[0], *index[:-1]]))
    with pytest.raises(StatQAFormatError, match=f"gives index {index[0]} to records 1 and 2"):
        read_statqa_folder(folder)
    (folder / "upstream_index.json").write_text(json.dumps(index[:-1]))
    with pytest.raises(StatQAFormatError, match="gives 39 indexes for the 40 records"):
        read_statqa_folder(folder)
    (folder / "column_metadata" / "Crop Production Dataset_col_meta.csv").unlink()
    (folder / "upstream_index.json").write_text(json.dumps(index))
    with pytest.raises(StatQAFormatError, match="column metadata of dataset 'Crop Production Dataset' is missing"):
        read_statqa_folder(folder)
    with pytest.raises(StatQAFormatError, match="is not a folder"):
        read_statqa_folder(tmp_path / "nowhere")


def test_the_part_round_trips_blinds_and_hashes_by_its_gold(shared, tmp_path):
    kind = task_kind("statqa")
    release = statqa_release(tmp_path)
    again = type(release).model_validate_json(release.model_dump_json())
    validate_parts(again, source="release.json")
    ds = again.datasets[0]
    part = part_of(ds, kind)
    assert isinstance(part, StatQAPart) and part == read_statqa_folder(shared).datasets[0].part
    assert kind.release_part is not None and kind.release_part.counts(part) == part_counts(part) == \
        {"questions": len(part.questions), "with gold": len(part.questions)}
    blind = blind_part(part)
    assert all(q.gold is None and q.results is None and q.relevant_columns is None for q in blind.questions)
    assert [q.question for q in blind.questions] == [q.question for q in part.questions]
    dumped = json.dumps(blind.model_dump(mode="json"))
    assert all(q.gold.text not in dumped for q in part.questions if q.gold)
    before = part_hash_input(part)
    changed = part.model_copy(deep=True)
    assert changed.questions[0].gold is not None
    changed.questions[0].gold.text = changed.questions[0].gold.text.replace("]", ', "Median"]', 1)
    assert part_hash_input(changed) != before
    assert part_hash_input(part.model_copy(deep=True)) == before
    # read afresh (a model_copy would share the dataset's cache of parsed parts)
    broken = type(ds).model_validate({**ds.model_dump(mode="json"),
                                      "parts": {"statqa": {**ds.parts["statqa"], "questions": [{"id": "x"}]}}})
    with pytest.raises(PartError, match=r"The statqa part of dataset 'statqa_\w+' in r.json is malformed at "
                                        r"questions\.0\.id"):
        validate_parts(type(again).model_validate({**again.model_dump(mode="json"),
                                                   "datasets": [broken.model_dump(mode="json")]}), source="r.json")
    assert with_part(ds, kind, None).parts == {}
