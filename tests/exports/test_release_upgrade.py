"""Release format 2.0: every committed golden release (format 1.x) is upgraded on read, losslessly; a malformed
1.x part is refused with a sentence naming the file, the dataset and the field; the ground-truth hashes of the
golden releases' datasets stay what format 1.x's code made them (MCQs aside, which only MCQ runs hash)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evaluation.tasks  # noqa: F401 - registers the kinds, whose parts the release format reads
from curation.services.scoring import dataset_gt_hash
from exports.errors import FormatError
from exports.native import dump_release_json, parse_release_json
from exports.programmatic_part import ProgrammaticPart
from exports.schema import FORMAT_VERSION

TESTS = Path(__file__).resolve().parents[1]


def _golden_releases() -> list[Path]:
    """Every committed golden file that is a release document (found, not listed: a new golden is covered)."""
    found = []
    for path in sorted(TESTS.glob("**/golden/**/*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(doc, dict) and "datasets" in doc and "app_version" in doc and "format_version" in doc:
            found.append(path)
    return found


GOLDEN = _golden_releases()
# format 1.x field of a dataset -> (kind, key of its items in the kind's part): what the test checks moved
MOVED = {"mcqs": ("mcq", "items"), "hypothesis_tasks": ("hypotheses", "tasks"),
         "programmatic_tasks": ("programmatic", "tasks")}


def test_the_golden_releases_are_found() -> None:
    names = {p.relative_to(TESTS).as_posix() for p in GOLDEN}
    assert {"exports/golden/native/release.json", "exports/golden/hypotheses/release.json",
            "exports/golden/datascibench/release-with-programmatic-task.json"} <= names


def _lossless(raw: dict, upgraded: dict) -> None:
    assert upgraded["format_version"] == FORMAT_VERSION == "2.0"
    assert {k: v for k, v in raw.items() if k not in ("format_version", "datasets")} == \
        {k: v for k, v in upgraded.items() if k not in ("format_version", "datasets")}
    assert [d["name"] for d in raw["datasets"]] == [d["name"] for d in upgraded["datasets"]]
    for before, after in zip(raw["datasets"], upgraded["datasets"], strict=True):
        # a field an older 1.x version did not have reads as its empty default
        assert {k: v for k, v in before.items() if k not in MOVED} == \
            {k: v for k, v in after.items() if k != "parts" and (k in before or v not in ([], {}))}
        expected = {kind: {key: before[field]} for field, (kind, key) in MOVED.items() if before.get(field)}
        assert after["parts"] == expected, before["name"]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.relative_to(TESTS).as_posix())
def test_every_golden_1x_release_upgrades_losslessly(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["format_version"].startswith("1."), "a committed golden release stays as it was written"
    release = parse_release_json(path.read_bytes(), source=str(path))
    upgraded = json.loads(dump_release_json(release))
    _lossless(raw, upgraded)
    assert parse_release_json(dump_release_json(release)) == release  # 2.0 reads back as itself


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_each_1x_version_is_upgraded(version: str) -> None:
    raw = json.loads((TESTS / "exports/golden/native/release.json").read_text(encoding="utf-8"))
    raw["format_version"] = version
    if version != "1.2":  # 1.0 and 1.1 had no files, hypothesis tasks nor programmatic tasks
        for ds in raw["datasets"]:
            for field in ("files", "hypothesis_tasks", "programmatic_tasks"):
                ds.pop(field)
    release = parse_release_json(json.dumps(raw), source="old/release.json")
    assert sum(len(d.parts["mcq"]["items"]) for d in release.datasets) == 3
    _lossless(raw, json.loads(dump_release_json(release)))


@pytest.mark.parametrize(("field", "index", "change", "where"), [
    ("mcqs", 1, {"correct_index": "the second"}, "field mcqs[1].correct_index"),
    ("mcqs", 0, {"options": None}, "field mcqs[0].options"),
])
def test_a_malformed_1x_part_is_refused_naming_file_dataset_and_field(field: str, index: int, change: dict,
                                                                      where: str) -> None:
    raw = json.loads((TESTS / "exports/golden/native/release.json").read_text(encoding="utf-8"))
    raw["datasets"][0][field][index].update(change)
    with pytest.raises(FormatError) as caught:
        parse_release_json(json.dumps(raw), source="releases/1.0.1/release.json")
    message = str(caught.value)
    assert message.startswith("releases/1.0.1/release.json: dataset 'boxes': " + where), message
    assert "nothing was read" in message


def test_a_1x_kind_field_that_is_not_a_list_is_refused() -> None:
    raw = json.loads((TESTS / "exports/golden/hypotheses/release.json").read_text(encoding="utf-8"))
    raw["datasets"][1]["hypothesis_tasks"] = {"q0": "?"}
    with pytest.raises(FormatError, match=r"x/release.json: dataset 'db_real_test_bmi': field hypothesis_tasks is "
                                          r"dict, not a list"):
        parse_release_json(json.dumps(raw), source="x/release.json")


def test_a_2_0_part_of_a_known_kind_that_does_not_fit_is_refused() -> None:
    release = parse_release_json((TESTS / "exports/golden/native/release.json").read_bytes())
    doc = json.loads(dump_release_json(release))
    doc["datasets"][1]["parts"]["mcq"]["items"][0]["mc_type"] = "select_all"
    with pytest.raises(FormatError, match=r"The mcq part of dataset 'dice' is malformed at items\.0\.mc_type"):
        parse_release_json(json.dumps(doc), source="r/release.json")


# The hashes format 1.x's code (before release parts) gave the golden releases' datasets: every run but an MCQ
# run records them, so a change here flags runs stale for nothing. (MCQs were in no hash: see test_mcq_hash.)
HASHES_1X = {
    ("datascibench/release-with-programmatic-task.json", "sales"):
        "5904a9c502f77d92ca42a0b7599cf59d653d4911b7ca0036768b3a42a093e5aa",
    ("hypotheses/release.json", "db_real_train_savings"):
        "3d91f0b7055bfe948134113f1ce8c9769b3462946db58dacc30f86efbdf90fd0",
    ("hypotheses/release.json", "db_real_test_bmi"): "956674f3d376d6ccd5f7158f96da3b58d0a7b51a435e44bdc7e296c640a19ff5",
    ("hypotheses/release.json", "db_synth_dev_jazz_0_0"):
        "b65b29a69a08d39143b0e24443743ce8234996135a4edc1c9a9073d8fc02bfe9",
    ("native/release.json", "boxes"): "affa8972a3da8d5519efbdabff24ebe7e0e4455f02f6fc1e7042eb6d112808d1",
    ("native/release.json", "dice"): "b4ea09e64a16330914023b7757de67808d46bbd9ed0f240988844a166e5e29d6",
}


@pytest.mark.parametrize("kind", ["analyses", "hypotheses", "programmatic", "reproducibility"])
def test_ground_truth_hashes_of_the_golden_releases_are_format_1x_ones(kind: str) -> None:
    for (name, dataset), expected in HASHES_1X.items():
        release = parse_release_json((TESTS / "exports/golden" / name).read_bytes())
        ds = next(d for d in release.datasets if d.name == dataset)
        assert dataset_gt_hash(ds, kind) == expected, (name, dataset, kind)


def test_an_mcq_runs_hash_covers_the_mcqs() -> None:
    release = parse_release_json((TESTS / "exports/golden/native/release.json").read_bytes())
    boxes = release.datasets[0]
    assert dataset_gt_hash(boxes, "mcq") != dataset_gt_hash(boxes, "analyses") == HASHES_1X[("native/release.json",
                                                                                               "boxes")]
    assert dataset_gt_hash(boxes) == dataset_gt_hash(boxes, "mcq")  # the whole ground truth: MCQs included


@pytest.mark.parametrize("kind", [None, "analyses", "programmatic", "mcq"])
def test_a_changed_programmatic_check_changes_the_hash_of_every_run_on_the_dataset(kind: str | None) -> None:
    release = parse_release_json((TESTS / "exports/golden/datascibench/release-with-programmatic-task.json")
                                 .read_bytes())
    (sales,) = release.datasets
    part = ProgrammaticPart.of(sales)
    task = part.tasks[0]
    check = task.checks[0].model_copy(update={"code": task.checks[0].code + "\n# changed\n"})
    edited = sales.with_parts(programmatic=ProgrammaticPart(tasks=[task.model_copy(update={"checks": [check]})]))
    assert dataset_gt_hash(edited, kind) != dataset_gt_hash(sales, kind)
