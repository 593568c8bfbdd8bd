"""BLADE import → database → BLADE export, over all nine shared datasets, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from sqlmodel import func, select

from curation.db import session_scope
from curation.errors import DatasetImportError, PermissionDenied
from curation.models import (
    IMPORTED_USERNAME,
    Alternative,
    ConceptualVariable,
    CuratedItem,
    Dataset,
    Role,
    StatModel,
    Transform,
    User,
    Vote,
)
from curation.services.accounts import authenticate
from curation.services.blade_import import import_blade
from curation.services.release_data import dataset_release
from exports.blade_annotations import read_annotations
from exports.blade_export import write_blade_dataset_from_release
from exports.mcq_part import MCQPart
from tests import factories as f

NINE = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]
# blade-reference §6: cv, t, m, ann_cvar, ann_transform, MCQ cvar, MCQ transform
COUNTS = {
    "affairs": (9, 9, 11, 4, 77, 1, 32), "amtl": (7, 13, 4, 0, 47, 0, 12), "boxes": (5, 7, 5, 8, 74, 0, 17),
    "caschools": (7, 5, 6, 16, 85, 2, 3), "crofoot": (8, 14, 11, 4, 22, 0, 11), "fish": (6, 12, 10, 4, 31, 0, 15),
    "hurricane": (4, 6, 18, 9, 35, 2, 3), "panda_nuts": (10, 11, 73, 6, 70, 1, 23),
    "reading": (18, 23, 12, 15, 31, 6, 14),
}


def _specs(path: Path) -> dict[str, tuple[str, dict]]:
    return {r.spec_id: (r.kind, r.data) for r in read_annotations(path).rows}


@pytest.fixture
def imported(engine, store, shared_blade):
    with session_scope(engine) as s:
        reports = import_blade(session=s, actor=None, path=shared_blade / "datasets", store=store,
                               max_bytes=200 * 2**20)
    return engine, {r.dataset: r for r in reports}


def test_import_counts_match_the_blade_reference(imported):
    engine, reports = imported
    assert set(NINE) <= set(reports)
    for name, (cv, t, m, ann_cvar, ann_t, mcq_cvar, mcq_t) in COUNTS.items():
        r = reports[name]
        assert (r.variables, r.transforms, r.models, r.alternatives, r.mcqs) == (cv, t, m, ann_cvar + ann_t,
                                                                                  mcq_cvar + mcq_t), name
    with session_scope(engine) as s:
        owner = s.exec(select(User).where(User.username == IMPORTED_USERNAME)).one()
        assert owner.is_system and not owner.is_active and "imported" in owner.display_name
        with pytest.raises(Exception, match="Wrong user name or password"):
            authenticate(session=s, username=IMPORTED_USERNAME, password="")
        # every judgement is a vote of that labelled annotator; conditional questions are skipped, not lost
        votes = s.exec(select(Vote)).all()
        assert {v.annotator_id for v in votes} == {owner.id}
        assert any(v.answer is None and v.skipped_reason.startswith("not asked") for v in votes)
        assert s.exec(select(func.count()).select_from(Alternative)).one() == sum(c[3] + c[4] for c in COUNTS.values())
        hurricane = s.exec(select(Dataset).where(Dataset.name == "hurricane")).one()
        masfem_mean = s.exec(select(Transform).where(Transform.spec_name == "masfem_mean")).one()
        assert len(masfem_mean.branches) == 2  # "can come after remove_Katrina or directly after ROOT"
        assert hurricane.num_rows == 94


def test_every_dataset_round_trips_to_blade_layout(imported, shared_blade, tmp_path, store):
    engine, _ = imported
    with session_scope(engine) as s:
        for name in NINE:
            dataset = s.exec(select(Dataset).where(Dataset.name == name)).one()
            release = dataset_release(session=s, dataset=dataset)
            out = write_blade_dataset_from_release(release, store / dataset.data_relpath, tmp_path / name)
            original = shared_blade / "datasets" / name
            assert _specs(out / "annotations.csv") == _specs(original / "annotations.csv"), name
            assert json.loads((out / "mcq_dataset.json").read_text()) == json.loads(
                (original / "mcq_dataset.json").read_text()), name
            assert json.loads((out / "info.json").read_text()) == json.loads((original / "info.json").read_text())
            assert (out / "data.csv").read_bytes() == (original / "data.csv").read_bytes()


def test_structured_fields_alone_rebuild_blade_specs(sqlite_engine, store, shared_blade, tmp_path):
    """Not just the kept originals: regenerate every spec from the structured fields and compare what BLADE's
    tooling reads (ids, names, verbs, code, mappings, branches, column sets, judgements, MCQs)."""
    with session_scope(sqlite_engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets", store=store, max_bytes=200 * 2**20)
    with session_scope(sqlite_engine) as s:
        for name in NINE:
            release = dataset_release(session=s,
                                      dataset=s.exec(select(Dataset).where(Dataset.name == name)).one())
            for item in [*release.transforms, *release.variables, *release.models, *release.alternatives,
                         *MCQPart.of(release).items]:
                item.extra.pop("blade_digest", None)  # forces regeneration
            dataset = s.exec(select(Dataset).where(Dataset.name == name)).one()
            out = write_blade_dataset_from_release(release, store / dataset.data_relpath, tmp_path / name)
            new, old = _specs(out / "annotations.csv"), _specs(shared_blade / "datasets" / name / "annotations.csv")
            assert new.keys() == old.keys()
            for sid, (kind, data) in old.items():
                got = new[sid][1]
                assert new[sid][0] == kind
                if kind == "transform" and sid != "ROOT_SPEC_ID":
                    for key in ("spec_name", "trans_verb", "code", "rationale", "input_cols_to_output_col_mapping"):
                        assert got[key] == data[key], (name, sid, key)
                    legacy = [b if isinstance(b, dict) else {"dependencies": b, "condition": ""}
                              for b in data["branches"]]
                    assert got["branches"] == legacy
                elif kind == "conceptual":
                    for key in ("variable_type", "concept", "interaction", "on", "rationale"):
                        assert got[key] == data[key], (name, sid, key)
                    for key in ("final_columns_orig", "final_columns_derived"):
                        assert set(got[key]) == set(data[key]), (name, sid, key)
                elif kind == "model":
                    for key in ("specification", "code", "rationale"):
                        assert got[key] == data[key]
                    for key in ("associated_columns_orig", "associated_columns_derived"):
                        assert set(got[key]) == set(data[key]), (name, sid, key)
                elif kind.startswith("annotate_"):
                    judgements = [k for k in data if k.startswith(("is_", "can_", "annotator_is")) or
                                  k == "annotator_explanation"]
                    assert {k: got[k] for k in judgements} == {k: data[k] for k in judgements}, (name, sid)
            mcq_file = shared_blade / "datasets" / name / "mcq_dataset.json"
            assert json.loads((out / "mcq_dataset.json").read_text()) == json.loads(mcq_file.read_text())


def _copy(shared_blade: Path, tmp_path: Path, name: str = "hurricane") -> Path:
    dest = tmp_path / "in" / name
    shutil.copytree(shared_blade / "datasets" / name, dest)
    return dest


def _corrupt_cell(folder: Path, old: str, new: str) -> None:
    """Replace JSON text inside a cell (cells are CSV-quoted, so their quotes are doubled)."""
    old, new = old.replace('"', '""'), new.replace('"', '""')
    path = folder / "annotations.csv"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(("damage", "message"), [
    ("bad_json", r"annotations\.csv.*row \d+.*JSON"),
    ("dangling_dependency", r"annotations\.csv.*row \d+.*names no"),
    ("missing_column", r"masfem.*data\.csv|data\.csv.*masfem"),
    ("missing_file", r"data\.csv"),
    ("cycle", r"cycle"),
])
def test_malformed_blade_input_is_refused_and_nothing_is_stored(engine, store, shared_blade, tmp_path, damage,
                                                                 message):
    folder = _copy(shared_blade, tmp_path)
    ok = _copy(shared_blade, tmp_path, "fish")  # a good folder beside it: the import is all or nothing
    if damage == "bad_json":
        _corrupt_cell(folder, '"spec_name": "remove_Katrina"', '"spec_name": "remove_Katrina",,')
    elif damage == "dangling_dependency":
        ann = read_annotations(folder / "annotations.csv")
        dep = ann.row("1aa384acb32e449bb67e616cac8a76e5") if any(
            r.spec_id == "1aa384acb32e449bb67e616cac8a76e5" for r in ann.rows) else None
        assert dep is not None
        parent = dep.data["branches"][0]["dependencies"][0]
        _corrupt_cell(folder, f'"dependencies": ["{parent}"]', '"dependencies": ["feedfacefeedfacefeedfacefeedface"]')
    elif damage == "missing_column":
        import pandas as pd

        frame = pd.read_csv(folder / "data.csv")
        frame.drop(columns=["masfem"]).to_csv(folder / "data.csv", index=False)
    elif damage == "missing_file":
        (folder / "data.csv").unlink()
    elif damage == "cycle":
        ann = read_annotations(folder / "annotations.csv")
        multi = next(r for r in ann.rows if r.kind == "transform" and r.spec_id != "ROOT_SPEC_ID"
                     and any(d != "ROOT_SPEC_ID" for b in r.data.get("branches", []) for d in b["dependencies"]))
        parent = next(d for b in multi.data["branches"] for d in b["dependencies"] if d != "ROOT_SPEC_ID")
        text = (folder / "annotations.csv").read_text(encoding="utf-8")
        start = text.index(parent + ",")  # the parent's own row: make it depend on its child
        row_end = text.index("\n", start)
        row = text[start:row_end]
        assert '"dependencies": [\\"' not in row
        new_row = row.replace('""ROOT_SPEC_ID""', f'""{multi.spec_id}""', 1)
        assert new_row != row
        (folder / "annotations.csv").write_text(text[:start] + new_row + text[row_end:], encoding="utf-8")
    with session_scope(engine) as s, pytest.raises(DatasetImportError, match=message):
        import_blade(session=s, actor=None, path=tmp_path / "in", store=store, max_bytes=200 * 2**20)
    assert ok.exists()
    with session_scope(engine) as s:
        for model in (Dataset, Transform, ConceptualVariable, StatModel, Alternative, Vote, CuratedItem):
            assert s.exec(select(func.count()).select_from(model)).one() == 0, model.__name__


def test_reimport_is_refused_and_analysts_cannot_import(engine, store, shared_blade, tmp_path):
    folder = _copy(shared_blade, tmp_path, "fish")
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=folder, store=store, max_bytes=200 * 2**20)
    with session_scope(engine) as s, pytest.raises(DatasetImportError, match="Already registered: fish"):
        import_blade(session=s, actor=None, path=folder, store=store, max_bytes=200 * 2**20)
    renamed = tmp_path / "again" / "fish2"
    shutil.copytree(folder, renamed)
    with session_scope(engine) as s, pytest.raises(DatasetImportError, match="already exist in this database"):
        import_blade(session=s, actor=None, path=renamed, store=store, max_bytes=200 * 2**20)
    analyst = f.user(engine, "ana", Role.ANALYST)
    with session_scope(engine) as s, pytest.raises(PermissionDenied):
        import_blade(session=s, actor=analyst, path=folder, store=store, max_bytes=200 * 2**20)


@pytest.mark.parametrize("name", NINE)
def test_every_dataset_with_a_broken_cell_is_refused_by_file_row_and_field(engine, store, shared_blade, tmp_path,
                                                                            name):
    folder = _copy(shared_blade, tmp_path, name)
    rows = read_annotations(folder / "annotations.csv").rows
    victim = next(r for r in rows if r.kind == "transform" and r.spec_id != "ROOT_SPEC_ID")
    code = json.dumps(victim.data["code"])[1:-1]  # as it appears inside the JSON text
    _corrupt_cell(folder, f'"code": "{code}"', f'"code": "{code}" "oops"')
    with session_scope(engine) as s, pytest.raises(DatasetImportError) as info:
        import_blade(session=s, actor=None, path=folder, store=store, max_bytes=200 * 2**20)
    message = str(info.value)
    assert "annotations.csv" in message and victim.spec_id in message and "transform_spec_json" in message
    assert re.search(r"row \d+", message)
    with session_scope(engine) as s:
        assert s.exec(select(func.count()).select_from(Dataset)).one() == 0
